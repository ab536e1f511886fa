// The bridge proper, loaded by bridge/main.ts after prestart has checked the command line and started Pi.
import { createLogger } from "../agent-runtime/log.ts";
import { readEffectivePolicy, setPolicy } from "../agent-runtime/policy/policy-store.ts";
import { BridgeCore, type FrameSink } from "./core.ts";
import { NetworkServer, RingSink } from "./network.ts";
import type { Prestart } from "./prestart.ts";
import { ReplayRing } from "./replay-ring.ts";
import { attachStdin, StdioSink } from "./stdio.ts";

export const log = createLogger("bridge");

export async function runBridge(prestart: Prestart): Promise<void> {
  if (!prestart.ok) {
    log.fatal({ err: prestart.error.message }, "bridge failed to start");
    process.exit(prestart.exitCode);
  }
  const { options, token, gate, pi, isolation, epoch, child, agent } = prestart;
  agent.executor.bindLog(log);
  const report = isolation();
  for (const note of report.notes) log.warn({ note }, "the bridge refused an unsafe setting");
  if (report.mode === "degraded") {
    log.warn({ reasons: report.reasons, protections: report.protections }, "isolation degraded");
  } else {
    log.info({ protections: report.protections }, "isolation: bridge, Pi and tools are three principals");
  }
  void agent.executor.exited.then((exit) => {
    if (shutdownStarted) return;
    log.error(
      { code: exit.code, signal: exit.signal, landlock: exit.landlockFailure },
      "tool executor exited: tool calls now fail",
    );
  });

  let shutdownStarted = false;
  const piChild = child;
  let network: NetworkServer | undefined;
  let stdioSink: StdioSink | undefined;
  const requestShutdown = (reason: string): void => {
    if (shutdownStarted) return;
    shutdownStarted = true;
    void (async () => {
      log.info({ reason }, "shutting down");
      core.beginShutdown();
      await piChild.terminate(options.killGraceMs);
      await agent.executor.terminate(options.killGraceMs);
      if (network) await network.close();
      if (stdioSink) await stdioSink.flush();
      process.exit(0);
    })();
  };

  let sink: FrameSink;
  let ring: ReplayRing | undefined;
  if (options.listen) {
    ring = new ReplayRing(options.replayFrames, options.replayBytes);
    sink = new RingSink(ring);
  } else {
    stdioSink = new StdioSink(process.stdout);
    stdioSink.onBroken = () => requestShutdown("stdout closed");
    sink = stdioSink;
  }
  const core = new BridgeCore(sink, {
    mode: options.listen ? "network" : "stdio",
    detachedGraceMs: options.detachedGraceMs,
    idleExitMs: options.idleExitMs,
    lingerMs: options.lingerMs,
    maxFrameBytes: options.maxFrameBytes,
    isolation,
    policy: { read: () => readEffectivePolicy(), set: (o) => setPolicy(o) },
    log,
    requestShutdown,
    epoch,
  });
  if (ring) {
    const theRing = ring;
    core.firstSeq = () => theRing.firstSeq;
  }

  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    process.on(signal, () => requestShutdown(signal));
  }
  process.on("uncaughtException", (err) => {
    log.fatal({ err: err.stack ?? String(err) }, "uncaught exception");
    piChild.signalGroup("SIGKILL");
    agent.executor.signalGroup("SIGKILL");
    process.exit(1);
  });

  // Pi was started by prestart (warm before the first client); from here on the core reads it.
  piChild.bind((line) => core.onPiLine(line), log);
  core.attachPi(piChild);
  log.info(
    {
      piPid: piChild.pid,
      pi: pi.version,
      gate,
      isolation: report.mode,
      executorPid: agent.executor.pid,
      mode: options.listen ? "network" : "stdio",
    },
    "Pi started",
  );

  if (options.listen && ring && token) {
    network = new NetworkServer(
      core,
      ring,
      {
        host: options.listen.host,
        port: options.listen.port,
        token,
        helloTimeoutMs: options.helloTimeoutMs,
        authFailureDelayMs: options.authFailureDelayMs,
        maxFrameBytes: options.maxFrameBytes,
        maxSendQueueBytes: options.maxSendQueueBytes,
      },
      log,
    );
    const theNetwork = network;
    (sink as RingSink).onAppend = () => theNetwork.notify();
    const address = await network.listen();
    log.info({ host: address.address, port: address.port, epoch: core.epoch }, "listening");
  } else {
    attachStdin(core, process.stdin, options.maxFrameBytes, () => requestShutdown("stdin closed"), log);
  }
}
