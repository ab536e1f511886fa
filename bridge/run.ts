// The bridge proper, loaded by bridge/main.ts after prestart has checked the command line, opened the state
// dir and started Pi.
import path from "node:path";
import { createLogger } from "../agent-runtime/log.ts";
import { addLogFile, type LogFileInfo } from "../agent-runtime/log-file.ts";
import type { NetworkMode } from "../agent-runtime/policy/network-mode-file.ts";
import { policyPath, readEffectivePolicy, setPolicy } from "../agent-runtime/policy/policy-store.ts";
import { AgentPair, startAgent } from "./agent-launch.ts";
import { BridgeCore, type FrameSink } from "./core.ts";
import { type DurableState, openDurableState } from "./durable-state.ts";
import { EgressService } from "./egress/egress-service.ts";
import { watchFile } from "./file-watch.ts";
import { GrantStore } from "./grants/grant-store.ts";
import { grantsPathOf } from "./launch-plan.ts";
import { NetworkServer } from "./network.ts";
import { NetworkModeStore } from "./network-mode.ts";
import type { Prestart } from "./prestart.ts";
import type { Durability } from "./protocol.ts";
import { RingSink } from "./ring-sink.ts";
import { saveSession } from "./state-dir.ts";
import { attachStdin, StdioSink } from "./stdio.ts";

export const log = createLogger("bridge");

let networkModes: NetworkModeStore | undefined;

/**
 * The tools' network mode now (the operator's; the egress proxy's decisions read it). Before the bridge has its
 * store, the strictest: nothing leaves.
 */
export function networkMode(): NetworkMode {
  return networkModes?.get() ?? "lockdown";
}

export async function runBridge(prestart: Prestart): Promise<void> {
  if (!prestart.ok) {
    log.fatal({ err: prestart.error.message }, "bridge failed to start");
    process.exit(prestart.exitCode);
  }
  const {
    options,
    token,
    listener,
    gate,
    pi,
    isolation,
    state,
    leftovers,
    launch,
    agent,
    protections,
    egress,
  } = prestart;
  let logFile: LogFileInfo | undefined;
  try {
    logFile = await addLogFile(log, {
      file: options.logFile ?? path.join(state.paths.logsDir, "bridge.log"),
    });
  } catch (err) {
    // Degraded, and said so (status and health carry logFile: null); stderr still has everything.
    log.error({ err: (err as Error).message }, "cannot open the log file: logging to stderr only");
  }
  if (leftovers.found > 0) {
    log.warn({ ...leftovers }, "ended processes an earlier bridge on this state dir left running");
  }
  const report = isolation();
  for (const note of report.notes) log.warn({ note }, "the bridge refused an unsafe setting");
  const { compileCache } = prestart.plan;
  log.info({ compileCache: compileCache.use ? compileCache.dir : null }, "Pi's compile cache");
  if (report.mode === "degraded") {
    log.warn({ reasons: report.reasons, protections: report.protections }, "isolation degraded");
  } else {
    log.info({ protections: report.protections }, "isolation: bridge, Pi and tools are three principals");
  }
  if (prestart.networkMode.warning)
    log.error({ file: prestart.networkMode.report.path }, prestart.networkMode.warning);
  const modes = new NetworkModeStore({ start: prestart.networkMode.report, log });
  networkModes = modes;
  let shutdownStarted = false;
  let network: NetworkServer | undefined;
  let stdioSink: StdioSink | undefined;
  let durable: DurableState | undefined;
  let egressService: EgressService | undefined;
  const requestShutdown = (reason: string, exitCode = 0): void => {
    if (shutdownStarted) return;
    shutdownStarted = true;
    void (async () => {
      log.info({ reason }, "shutting down");
      core.beginShutdown();
      modes.close();
      policyWatch.close();
      await core.agent?.terminate(options.killGraceMs);
      await egressService?.close();
      if (network) await network.close();
      if (stdioSink) await stdioSink.flush();
      durable?.close();
      process.exit(exitCode);
    })();
  };

  let sink: FrameSink;
  let ringSink: RingSink | undefined;
  if (options.listen) {
    durable = openDurableState(
      state,
      { maxFrames: options.replayFrames, maxBytes: options.replayBytes },
      log,
    );
    // Frames reach the client once journaled; the server is made below, after the core it serves.
    ringSink = new RingSink(durable.ring, { journal: durable.journal, onAppend: () => network?.notify() });
    sink = ringSink;
  } else {
    stdioSink = new StdioSink(process.stdout, () => requestShutdown("stdout closed"));
    sink = stdioSink;
  }
  const session = launch.session;
  const durability = (): Durability => ({
    stateDir: state.paths.root,
    ...(durable ? durable.status() : { journal: "off" as const, problem: null }),
    logFile: logFile?.current ?? null,
    session: session ? { id: session.current.sessionId, file: session.current.sessionFile } : null,
  });
  // The transports differ only in these options: network mode requires ids, restarts Pi and lingers; stdio
  // mode exits with Pi, as `pi --mode rpc` would.
  // Grants of Pi's current session survive a restart of the bridge on the same state dir.
  const grants = new GrantStore({
    file: grantsPathOf(state.paths.root),
    sessionId: launch.session?.current.sessionId ?? null,
  });
  const core = new BridgeCore(sink, {
    grants,
    transport: options.listen ? "network" : "stdio",
    requireIds: options.listen !== undefined,
    epoch: durable?.epoch ?? state.identity.epoch,
    detachedGraceMs: options.detachedGraceMs,
    idleExitMs: options.idleExitMs,
    lingerMs: options.listen ? options.lingerMs : 0,
    maxFrameBytes: options.maxFrameBytes,
    isolation,
    policy: { read: () => readEffectivePolicy(), set: (o) => setPolicy(o) },
    network: modes,
    log,
    requestShutdown,
    ...(durable
      ? {
          idempotency: durable.idempotency,
          onOpenDialogs: (ids: string[]) => durable?.saveOpenDialogs(ids),
        }
      : {}),
    ...(options.listen
      ? {
          restartAgent: () => {
            const pair = startAgent(launch);
            egressService?.watch(pair);
            return pair;
          },
        }
      : {}),
    ...(session
      ? {
          onSession: (next: { sessionId: string; sessionFile: string | null }) => {
            session.current = next;
            // Durable (network) mode: a write the disk refuses degrades durability and is retried with the rest.
            if (durable) durable.saveSession(next);
            else {
              try {
                saveSession(state.paths, next);
              } catch (err) {
                log.error({ err: (err as Error).message }, "cannot record Pi's session");
              }
            }
          },
        }
      : {}),
    durability,
  });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    process.on(signal, () => requestShutdown(signal));
  }
  process.on("uncaughtException", (err) => {
    log.fatal({ err: err.stack ?? String(err) }, "uncaught exception");
    core.agent?.signalGroup("SIGKILL");
    process.exit(1);
  });

  // The operator's network mode applies at once: the tools' supervisor (this pair's and the next's), the
  // isolation report (open: degraded, said loudly), the gate (it rereads the same file before each call).
  modes.onChange(({ previous, current, cause }) => {
    protections.network = { mode: current.mode };
    const supervised = launch.spec.executor.supervised;
    if (supervised) supervised.network.mode = current.mode;
    const pair = core.agent;
    const applied = pair instanceof AgentPair ? pair.setNetworkMode(current.mode) : false;
    const fields = { previous, mode: current.mode, cause, applied, egress: isolation().protections.egress };
    if (current.mode === "open")
      log.warn(fields, "network mode open: the tools may connect anywhere (egress protection degraded)");
    else log.info(fields, "network mode changed");
  });
  modes.watch();
  // An operator's `chat-ui-agent-policy set` (or an edit) reaches clients at once, not at the next tool call.
  const policyWatch = watchFile(
    policyPath(),
    () => core.policyFileChanged(),
    (message) => log.warn({ file: policyPath() }, message),
  );
  // The egress proxy on the listener prestart bound (its port is in the tools' environment).
  if (egress.listener) {
    egressService = new EgressService({
      listener: egress.listener,
      // Read on each request: the operator's change applies to the next one.
      networkMode: () => modes.get(),
      policy: () => readEffectivePolicy().policy,
      registries: egress.registries,
      grants,
      ask: (question, signal) => core.askPerson(question, signal),
      log: log.child({ component: "egress" }),
    });
    egressService.watch(agent);
    log.info(
      {
        port: egressService.port,
        registries: egress.registries.map((r) => r.name),
        supervised: agent.executor.supervised,
      },
      "egress proxy listening",
    );
  } else {
    log.error({ problem: egress.problem }, "egress protection degraded: no egress proxy");
  }
  // What the previous bridge on this state dir left open is settled before anything new happens.
  if (durable) core.recoverInterrupted(durable.openDialogs);
  // Pi was started by prestart (warm before the first client); from here on the core reads it.
  const restarted = options.listen !== undefined && !state.fresh;
  core.attachPi(agent, restarted ? { kind: "bridge_restarted", previous: null } : undefined);
  log.info(
    {
      piPid: agent.pid,
      pi: pi.version,
      gate,
      isolation: report.mode,
      executorPid: agent.executor.pid,
      mode: options.listen ? "network" : "stdio",
      stateDir: state.paths.root,
      logFile: logFile?.current ?? null,
      epoch: core.epoch,
      headSeq: sink.headSeq,
    },
    "Pi started",
  );

  if (options.listen && ringSink && token) {
    network = new NetworkServer(
      core,
      ringSink,
      {
        host: options.listen.host,
        port: options.listen.port,
        token,
        helloTimeoutMs: options.helloTimeoutMs,
        authFailureDelayMs: options.authFailureDelayMs,
        maxFrameBytes: options.maxFrameBytes,
        maxSendQueueBytes: options.maxSendQueueBytes,
        listener,
      },
      log,
    );
    const address = await network.listen();
    log.info({ host: address.address, port: address.port, epoch: core.epoch }, "listening");
  } else {
    attachStdin(core, process.stdin, options.maxFrameBytes, () => requestShutdown("stdin closed"), log);
  }
}
