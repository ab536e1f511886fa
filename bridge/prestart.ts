// What bridge.mjs runs first, once its compile cache is on: check the command line, move the token out of the
// environment, open the state dir, bind the listening address and start the agent (the tool executor and Pi),
// before the heavier modules (logger, schemas, WebSocket) load, so Pi boots in parallel with them. Nothing is
// started unless every check passes (fail closed): a refusal is one sentence on stderr here, and a JSON line once
// the logger exists.
import { readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { findPiInstall, type PiInstall } from "../agent-runtime/pi-install.ts";
import { APPROVAL_TIMEOUT_ENV, approvalTimeout } from "../agent-runtime/policy/approval-timeout.ts";
import { networkModePathOf } from "../agent-runtime/policy/network-mode-file.ts";
import { type EndTreeResult, endTree } from "../agent-runtime/process-tree.ts";
import { findLandlockHelper, probeLandlockAsync } from "../agent-runtime/sandbox/landlock.ts";
import { versionLine } from "../agent-runtime/version.ts";
import { type AgentLaunch, type AgentPair, startAgent } from "./agent-launch.ts";
import { releaseReserveIfFull } from "./disk-reserve.ts";
import { bindEgressListener, type EgressListener } from "./egress/egress-listener.ts";
import { DEFAULT_REGISTRIES, type Registry, readRegistriesFile } from "./egress/registries.ts";
import { decideProcessPrincipals, isolationReport, type ProtectionState } from "./isolation.ts";
import { type LaunchPlan, planLaunch, RefusedConfigError } from "./launch-plan.ts";
import { type BoundListener, bindListener, ListenError } from "./listener.ts";
import { type NetworkModeReport, settleNetworkModeAtStart } from "./network-mode.ts";
import { type BridgeOptions, bridgeHelp, OptionsError, parseCommand } from "./options.ts";
import { type PiChild, RUN_MARKER_ENV } from "./pi-child.ts";
import {
  LAUNCHER_HOME_ENV,
  modulePathsArePrivate,
  privateHomeOf,
  recomputeModulePaths,
  withPrivateHome,
} from "./private-home.ts";
import type { Isolation } from "./protocol.ts";
import { type OpenedState, openStateDir } from "./state-dir.ts";
import { bridgeSecretNames, nodeExecve, reexecWithoutSecrets, TOKEN_ENV } from "./token-handover.ts";

export { TOKEN_ENV };

export class StartupError extends Error {}
/** The token is missing, too short or unreadable: a usage error (exit 2). */
export class TokenError extends StartupError {}
/** The registries file is missing, unreadable or invalid: a usage error (exit 2). */
export class RegistriesFileError extends StartupError {}

/** Shortest token the bridge accepts; use a random one (the handshake's security rests on it). */
export const MIN_TOKEN_LENGTH = 16;

/** Exit codes by refusal: the caller's mistakes are usage errors (2); everything else is 1. */
const EXIT_CODES: readonly [new (...args: never[]) => Error, number][] = [
  [OptionsError, 2],
  [TokenError, 2],
  [ListenError, 2],
  [RegistriesFileError, 2],
  [RefusedConfigError, 2],
];

export interface Started {
  ok: true;
  options: BridgeOptions;
  token: string | undefined;
  gate: string;
  pi: PiInstall;
  plan: LaunchPlan;
  /** The listening address (network mode), bound before Pi starts; the network side takes it over. */
  listener: BoundListener | undefined;
  /** What holds between the principals, now (live: it follows the executor of the current pair). */
  isolation: () => Isolation;
  protections: ProtectionState;
  state: OpenedState;
  /** Processes of an earlier bridge on this state dir that were still running (and were ended). */
  leftovers: EndTreeResult;
  /** How to start the agent again (the supervisor restarts the pair with it, on the current session). */
  launch: AgentLaunch;
  agent: AgentPair;
  /** Pi (the same as agent.pi). */
  child: PiChild;
  /** The network mode the first pair started in (the file beside the policy file), and what to log about it. */
  networkMode: { report: NetworkModeReport; warning: string | null };
  /** The egress proxy's listener (bound before Pi: the tools' environment names it), or why there is none. */
  egress: {
    listener: EgressListener | undefined;
    problem: string | undefined;
    registries: readonly Registry[];
  };
}

export type Prestart = Started | { ok: false; error: Error; exitCode: number };

const FILE_PROBLEMS: Record<string, string> = {
  ENOENT: "does not exist",
  EACCES: "is not readable by the bridge",
  EISDIR: "is a directory",
  ELOOP: "is a symbolic link loop",
};

/** Reads the token (env or --token-file, which is then removed); says whether a tool could have read it. */
function readToken(options: BridgeOptions): { token: string; exposure: string | undefined } {
  let token = process.env[TOKEN_ENV];
  let exposure: string | undefined;
  if (options.tokenFile) {
    const file = path.resolve(options.tokenFile);
    try {
      const st = statSync(file);
      token = readFileSync(file, "utf8").trim();
      try {
        unlinkSync(file);
      } catch (err) {
        exposure = `the token file ${file} could not be removed (${(err as NodeJS.ErrnoException).code})`;
      }
      if ((st.mode & 0o044) !== 0) {
        exposure ??= `the token file ${file} was readable by other users (mode ${(st.mode & 0o777).toString(8)}) until the bridge removed it`;
      }
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "";
      throw new TokenError(
        `the token file ${file} ${FILE_PROBLEMS[code] ?? `cannot be read (${code || err})`}`,
      );
    }
  }
  if (!token || token.trim().length === 0) {
    throw new TokenError(
      `network mode needs a token of at least ${MIN_TOKEN_LENGTH} characters: set ${TOKEN_ENV} or pass --token-file`,
    );
  }
  if (token.length < MIN_TOKEN_LENGTH) {
    throw new TokenError(
      `the bridge token has ${token.length} characters; it must have at least ${MIN_TOKEN_LENGTH} (use a random one)`,
    );
  }
  return { token, exposure };
}

function resolveGate(options: BridgeOptions, bundleDir: string): string {
  // A gate missing from the bundle dir refuses the start (tested in bridge-stdio).
  const gate = path.resolve(options.gate ?? path.join(bundleDir, "approval-gate.mjs"));
  try {
    if (statSync(gate).isFile()) return gate;
  } catch {}
  throw new StartupError(`approval gate not found at ${gate}: refusing to start Pi without it`);
}

/** Checks the command line and starts Pi; `bundleDir` is bridge.mjs's own directory (the gate, the executor). */
export async function prestart(bundleDir: string): Promise<Prestart> {
  let listener: BoundListener | undefined;
  let egressListener: EgressListener | undefined;
  try {
    const command = parseCommand(process.argv.slice(2));
    // --help and --version answer and exit here: nothing is started, no state dir is touched.
    if (command.kind !== "run") {
      writeSync(1, command.kind === "help" ? bridgeHelp() : `${versionLine("bridge.mjs")}\n`);
      process.exit(0);
    }
    const { options } = command;
    // The operator's approval timeout reaches Pi (the gate) through this environment, so the flag's value (it wins
    // over the variable's) is put there; a bad value refuses the start.
    if (options.approvalTimeoutMinutes !== undefined)
      process.env[APPROVAL_TIMEOUT_ENV] = options.approvalTimeoutMinutes;
    const approval = approvalTimeout(process.env);
    if (approval.problem) throw new OptionsError(approval.problem);
    const stateDir = path.resolve(options.stateDir);
    // The token must not stay in the initial environment (/proc/<pid>/environ): re-exec without it. This call
    // does not return when it re-executes; the new image finds the token in a private --token-file.
    const secretsAtStart = bridgeSecretNames(process.env).length > 0;
    // Before anything could load: a private HOME, no NODE_PATH, and Node's module search path computed again
    // from them (or, where this Node cannot, computed at a new start: the re-exec).
    const bridgeStateDir = path.join(stateDir, "bridge");
    // The tools may have filled the disk: free the bridge's reserve so this start can write what it must.
    releaseReserveIfFull(bridgeStateDir);
    const homeProblem = withPrivateHome(process.env, bridgeStateDir);
    const launcherHome = homeProblem ? process.env.HOME : process.env[LAUNCHER_HOME_ENV];
    const home = privateHomeOf(bridgeStateDir);
    const searched = homeProblem ? undefined : recomputeModulePaths();
    const restart = !homeProblem && !(searched && modulePathsArePrivate(searched, home, process.execPath));
    const reexecProblem = reexecWithoutSecrets({
      argv: process.argv.slice(1),
      env: process.env,
      bridgeStateDir,
      handOverToken: options.listen !== undefined && options.tokenFile === undefined,
      execve: nodeExecve(),
      always: restart,
    });
    const read = options.listen ? readToken(options) : undefined;
    // Bound before anything is started: an address in use stops the start here, before Pi.
    if (options.listen) listener = await bindListener(options.listen.host, options.listen.port);
    for (const name of bridgeSecretNames(process.env)) delete process.env[name];
    // The kernel probe runs (a child process) while the state dir is opened and leftovers are ended.
    const probing = probeLandlockAsync(findLandlockHelper(bundleDir));
    const gate = resolveGate(options, bundleDir);
    const cwd = path.resolve(options.cwd);
    if (!statSync(cwd, { throwIfNoEntry: false })?.isDirectory()) {
      throw new StartupError(`--cwd ${cwd} is not a directory`);
    }
    const pi = findPiInstall(bundleDir);
    const principals = decideProcessPrincipals(options.agentUser, options.piUser, launcherHome);
    delete process.env[LAUNCHER_HOME_ENV];
    const state = await openStateDir(stateDir, { workspace: cwd });
    const markerPrefix = `${state.identity.stateId}.`;
    // A bridge that died (kill -9, OOM) could not end its agent: its Pi, executor and tools go before a new Pi
    // opens the session.
    const leftovers = await endTree({ marker: { name: RUN_MARKER_ENV, prefixes: [markerPrefix] } });
    let registries: readonly Registry[] = DEFAULT_REGISTRIES;
    try {
      if (options.registriesFile) registries = readRegistriesFile(path.resolve(options.registriesFile));
    } catch (err) {
      throw new RegistriesFileError((err as Error).message);
    }
    // Without the proxy the tools still have no direct route out (the supervisor refuses it): degraded, said so.
    let egressProblem: string | undefined;
    try {
      egressListener = await bindEgressListener();
    } catch (err) {
      egressProblem = `the egress proxy could not listen on 127.0.0.1 (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
      process.stderr.write(`chat-ui-agent bridge: ${egressProblem}\n`);
    }
    const probe = await probing;
    const plan = planLaunch({
      cwd,
      stateDir: state.paths.root,
      principals,
      landlock: options.landlock,
      toolEnvNames: options.toolEnv,
      bundleDir,
      piPackageDir: pi.packageDir,
      pi: {
        entry: options.piCommand ? path.resolve(options.piCommand) : pi.cliPath,
        gate,
        forwarded: options.piArgs,
      },
      runId: markerPrefix,
      env: process.env,
      node: process.execPath,
      probe,
      ...(egressListener ? { egressProxy: `http://127.0.0.1:${egressListener.address.port}` } : {}),
    });
    // The bridge reads and writes the same policy file it tells Pi about.
    process.env.AGENT_POLICY_PATH = plan.policyPath;
    // The operator's network mode, before the tools' supervisor starts in it (the gate reads the same file).
    let networkMode: Awaited<ReturnType<typeof settleNetworkModeAtStart>>;
    try {
      networkMode = await settleNetworkModeAtStart(networkModePathOf(plan.policyPath), options.networkMode);
    } catch (err) {
      throw new StartupError(`--network-mode: ${(err as Error).message}`);
    }
    const supervisedNetwork = plan.spec.executor.supervised?.network;
    if (supervisedNetwork) supervisedNetwork.mode = networkMode.report.mode;
    const tokenProblem = secretsAtStart ? reexecProblem : undefined;
    const privateProblem = homeProblem ?? (restart ? reexecProblem : undefined);
    const tokenDetail =
      tokenProblem ??
      read?.exposure ??
      (secretsAtStart
        ? "the bridge re-executed itself without its secrets; the token lives only in its memory"
        : options.listen
          ? "the token came from --token-file, which the bridge removed; it lives only in the bridge's memory"
          : "stdio mode: no token");
    const protections: ProtectionState = {
      principals,
      landlock: { requested: plan.landlock.requested, probe: plan.landlock.probe, failure: undefined },
      toolEnv: { passThrough: options.toolEnv },
      token: { scrubbed: tokenProblem === undefined && read?.exposure === undefined, detail: tokenDetail },
      executor: { running: true, detail: "built-in tools and `!` commands run in the tool executor" },
      // A bridge HOME that could not be made private degrades the report (and is logged at start).
      placement: privateProblem ? [...plan.placement, privateProblem] : plan.placement,
      notes: plan.notes,
      network: { mode: networkMode.report.mode },
      egressProxy: egressListener
        ? { running: true, detail: `the egress proxy listens on 127.0.0.1:${egressListener.address.port}` }
        : { running: false, detail: egressProblem ?? "the egress proxy is not running" },
    };
    let current: AgentPair | undefined;
    const launch: AgentLaunch = {
      spec: plan.spec,
      markerPrefix,
      session: options.listen ? { dir: plan.piTree.sessions, current: state.session } : undefined,
      // The report follows the executor of the pair that runs now (a restart starts a new one).
      onStart: (pair) => {
        protections.executor = {
          running: true,
          detail: "built-in tools and `!` commands run in the tool executor",
        };
        void pair.executor.exited.then((exit) => {
          if (current !== pair) return;
          protections.executor = {
            running: false,
            detail: `the tool executor exited (${exit.signal ?? `code ${exit.code}`}): tool calls fail, nothing runs in Pi's process instead`,
          };
          if (exit.landlockFailure)
            protections.landlock.failure = `the helper could not apply the domain: ${exit.landlockFailure}`;
        });
        current = pair;
      },
    };
    const agent = startAgent(launch);
    return {
      ok: true,
      options,
      token: read?.token,
      listener,
      gate,
      pi,
      plan,
      isolation: () => isolationReport(protections),
      protections,
      state,
      leftovers,
      launch,
      agent,
      child: agent.pi,
      networkMode,
      egress: { listener: egressListener, problem: egressProblem, registries },
    };
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    // One sentence a person reads first; the JSON line follows once the logger exists.
    process.stderr.write(`chat-ui-agent bridge: ${error.message}\n`);
    listener?.server.close();
    egressListener?.server.close();
    const exitCode = EXIT_CODES.find(([kind]) => error instanceof kind)?.[1] ?? 1;
    return { ok: false, error, exitCode };
  }
}
