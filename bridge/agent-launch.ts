// "Start the agent": the tool executor (the tools' principal, in its Landlock domain) and Pi (its own
// principal), joined by one unix socket that only those two processes hold. Node makes the executor's extra
// 'pipe' stdio entry a socketpair; Pi gets the bridge's end as its stdio[3] (dup'd into the child), and the
// bridge closes its own copy at once, before its event loop could read from it. prestart starts the first
// pair; the supervisor in core.ts restarts through the same function, on the current session. A restart always
// restarts both: the channel belongs to the pair.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import type { Socket } from "node:net";
import { EXECUTOR_FD_ENV } from "../agent-runtime/executor/env-names.ts";
import { JsonlDecoder } from "../agent-runtime/jsonl.ts";
import type { Logger } from "../agent-runtime/log.ts";
import { endTree, sweepOrphanTools } from "../agent-runtime/process-tree.ts";
import type { NetworkMode } from "../agent-runtime/sandbox/egress.ts";
import {
  commandLine,
  type EgressEvent,
  type SupervisorCommand,
  SupervisorMessage,
  type SupervisorOptions,
  supervisorArgs,
} from "../agent-runtime/sandbox/supervisor.ts";
import { type AgentUnit, PiChild, type PiExitInfo, piArgv, RUN_MARKER_ENV } from "./pi-child.ts";
import type { SessionRecord } from "./state-dir.ts";

/** The executor under the tool supervisor (landlock-exec --supervise): what the plan decided once. */
export interface SupervisedSpawn {
  options: Omit<SupervisorOptions, "setenv" | "mode">;
  /** The network mode now: each new pair starts in it; AgentPair.setNetworkMode changes it for the next too. */
  network: { mode: NetworkMode };
  /** For the sweep of tools whose supervisor is gone (process-tree.ts sweepOrphanTools). */
  toolsUid: number;
  wholeUid: boolean;
}

export interface ExecutorSpawnSpec {
  /** argv[0]: the helper (the supervisor, or Landlock alone) when installed, otherwise Node itself. */
  file: string;
  /** The helper's Landlock rules, `--`, Node and the bundle (or Node's arguments without the helper). */
  args: string[];
  env: Record<string, string>;
  uid: number | undefined;
  gid: number | undefined;
  /** Present when the helper supervises the executor (always, when it is installed). */
  supervised?: SupervisedSpawn;
}

export interface AgentLaunchSpec {
  cwd: string;
  executor: ExecutorSpawnSpec;
  pi: {
    node: string;
    /** Pi's CLI entry, the gate bundle and the caller's own Pi flags (piArgv; session flags added per start). */
    entry: string;
    gate: string;
    forwarded: readonly string[];
    env: NodeJS.ProcessEnv;
    spawnAs: { uid: number; gid: number } | undefined;
  };
}

/** Everything needed to start the agent again and again the same way (prestart, then the supervisor). */
export interface AgentLaunch {
  spec: AgentLaunchSpec;
  /** `<stateId>.`: every run marker of this state dir starts with it (an earlier bridge's leftovers are found). */
  markerPrefix: string;
  /** Network mode: the session dir, and the session Pi is on now (updated when Pi reports another). */
  session: { dir: string; current: SessionRecord } | undefined;
  /** Told about every new pair, so the isolation report follows the executor that runs now. */
  onStart?: (agent: AgentPair) => void;
}

export interface ExecutorExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The helper's report when it refused to start the executor (Landlock or the filter could not be applied). */
  landlockFailure: string | undefined;
}

/** What the supervisor said when the executor was set up (null until then, and without a supervisor). */
export type SupervisorReady = Extract<SupervisorMessage, { type: "ready" }>;

const MAX_EGRESS_LISTENERS = 16;
/** Refused connects logged per second at most (a tool looping on refused connects must not flood the log). */
const REFUSED_LOGS_PER_SECOND = 20;

/**
 * The tool executor, under its supervisor when the helper is installed: stderr goes to the bridge's log; its
 * exit is observable. The supervisor's control channel (its fd 4) carries the bridge's commands (release the
 * executor, the network mode, per-call grants, end) and its reports (each connect it performed or refused).
 * Closing it (the bridge exits, even by SIGKILL) ends every tool process.
 */
export class ExecutorChild {
  readonly exited: Promise<ExecutorExit>;
  exitInfo: ExecutorExit | undefined;
  /** The helper's one-line Landlock report, once read. */
  landlock: { enforced: boolean; abi: number; error?: string; skipped?: string[] } | undefined;
  /** The supervisor's setup report (the executor's pid, the filter, the limits), once read. */
  supervisor: SupervisorReady | undefined;
  readonly supervised: boolean;
  private readonly child: ChildProcess;
  private readonly control: Socket | undefined;
  private log: Logger | undefined;
  private readonly early: { level: "debug" | "info" | "warn" | "error"; fields: object; msg: string }[] = [];
  private readonly egressListeners = new Set<(event: EgressEvent) => void>();
  private released = false;
  private refusedLog = { second: 0, logged: 0, suppressed: 0 };

  constructor(spec: ExecutorSpawnSpec, cwd: string, runMarker: { name: string; value: string }) {
    const supervised = spec.supervised;
    this.supervised = supervised !== undefined;
    // The run marker goes to the executor only: the supervisor must never match a marker sweep (it would be
    // frozen and killed before it could end the tools no marker names).
    const args = supervised
      ? [
          ...supervisorArgs({
            ...supervised.options,
            mode: supervised.network.mode,
            setenv: { [runMarker.name]: runMarker.value },
          }),
          ...spec.args,
        ]
      : spec.args;
    this.child = spawn(spec.file, args, {
      cwd,
      env: supervised ? spec.env : { ...spec.env, [runMarker.name]: runMarker.value },
      // stdio[3] is the channel (Node creates a unix socketpair for an extra 'pipe'); stdio[4] the control.
      stdio: supervised ? ["ignore", "pipe", "pipe", "pipe", "pipe"] : ["ignore", "pipe", "pipe", "pipe"],
      detached: true,
      ...(spec.uid !== undefined && spec.gid !== undefined ? { uid: spec.uid, gid: spec.gid } : {}),
    });
    const lines = new JsonlDecoder(64 * 1024);
    const onLine = (raw: string) => {
      if (raw.length === 0) return;
      if (this.landlock === undefined && raw.startsWith('{"landlock":')) {
        try {
          this.landlock = (JSON.parse(raw) as { landlock: NonNullable<ExecutorChild["landlock"]> }).landlock;
        } catch {}
      }
      this.logAs("info", { executor: raw.slice(0, 4000) }, "tool executor stderr");
    };
    this.child.stderr?.on("data", (chunk: Buffer) => {
      for (const raw of lines.push(chunk)) onLine(raw);
    });
    this.child.stdout?.on("data", (chunk: Buffer) => {
      this.logAs("warn", { executor: chunk.toString("utf8").slice(0, 4000) }, "tool executor stdout");
    });
    this.child.on("error", (err) => this.logAs("error", { err: err.message }, "tool executor spawn error"));
    if (supervised) {
      this.control = this.child.stdio[4] as Socket;
      const reports = new JsonlDecoder(16 * 1024);
      this.control.on("data", (chunk: Buffer) => {
        for (const raw of reports.push(chunk)) this.onReport(raw);
      });
      this.control.on("error", (err) =>
        this.logAs("warn", { err: err.message }, "tool supervisor control channel error"),
      );
    }
    this.exited = new Promise((resolve) => {
      const settle = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.exitInfo) return;
        const failure =
          this.landlock && !this.landlock.enforced ? (this.landlock.error ?? "not enforced") : undefined;
        this.exitInfo = { code, signal, landlockFailure: failure };
        resolve(this.exitInfo);
      };
      this.child.on("close", settle);
      // A supervisor killed before it could end its tools leaves them holding its stderr: its exit counts, after
      // a moment for the last report lines to arrive.
      this.child.on("exit", (code, signal) => setTimeout(() => settle(code, signal), 500).unref());
    });
  }

  private onReport(raw: string): void {
    let message: SupervisorMessage;
    try {
      message = SupervisorMessage.parse(JSON.parse(raw));
    } catch {
      this.logAs("warn", { report: raw.slice(0, 500) }, "unexpected report from the tool supervisor");
      return;
    }
    switch (message.type) {
      case "ready":
        this.supervisor = message;
        this.logAs(
          "debug",
          { filter: message.filter, landlockTcp: message.landlockTcp, syncWakeup: message.syncWakeup },
          "tool supervisor ready",
        );
        return;
      case "connect":
      case "datagram":
        for (const listener of this.egressListeners) listener(message);
        if (message.verdict === "refused") this.logRefused(message);
        return;
      case "dropped":
        this.logAs("warn", { events: message.events }, "the tool supervisor dropped egress events");
        return;
      case "error":
        this.logAs("error", { message: message.message }, "the tool supervisor refused a command");
        return;
      default:
        this.logAs("info", { supervisor: message }, "tool supervisor");
    }
  }

  private logRefused(event: EgressEvent): void {
    const second = Math.floor(Date.now() / 1000);
    const budget = this.refusedLog;
    if (budget.second !== second) {
      if (budget.suppressed > 0)
        this.logAs("warn", { suppressed: budget.suppressed }, "tool egress refused (more, not logged)");
      this.refusedLog = { second, logged: 0, suppressed: 0 };
    }
    if (this.refusedLog.logged >= REFUSED_LOGS_PER_SECOND) {
      this.refusedLog.suppressed++;
      return;
    }
    this.refusedLog.logged++;
    this.logAs("warn", { egress: event }, "tool egress refused");
  }

  /** The bridge's end of the channel (handed to Pi, then closed here). */
  get channel(): Socket {
    return this.child.stdio[3] as Socket;
  }

  /** The supervisor's pid when supervised (the executor is its child), else the executor's. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The tool executor's own pid (known once the supervisor reported it). */
  get executorPid(): number | undefined {
    return this.supervised ? this.supervisor?.executorPid : this.child.pid;
  }

  bindLog(log: Logger): void {
    this.log = log;
    for (const entry of this.early.splice(0)) log[entry.level](entry.fields, entry.msg);
  }

  private logAs(level: "debug" | "info" | "warn" | "error", fields: object, msg: string): void {
    if (this.log) this.log[level](fields, msg);
    else if (this.early.length < 1000) this.early.push({ level, fields, msg });
  }

  private send(command: SupervisorCommand): boolean {
    const control = this.control;
    if (!control || control.destroyed || this.exitInfo) return false;
    control.write(commandLine(command));
    return true;
  }

  /** Lets the held executor's Node start (once: after Pi answered, so it does not compete with Pi's boot). */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.send({ type: "go" });
  }

  /** The network mode the supervisor applies from now on (`open`: any TCP connect and datagram sockets). */
  setNetworkMode(mode: NetworkMode): boolean {
    return this.send({ type: "mode", mode });
  }

  /** Lets the processes of one approved call (by its label) connect anywhere over TCP, until revoked. */
  grantCall(call: string): boolean {
    return this.send({ type: "grant", call });
  }

  revokeCall(call: string): boolean {
    return this.send({ type: "revoke", call });
  }

  /** Every connect the supervisor performed or refused (and each datagram socket asked for). */
  onEgress(listener: (event: EgressEvent) => void): () => void {
    if (this.egressListeners.size < MAX_EGRESS_LISTENERS) this.egressListeners.add(listener);
    return () => this.egressListeners.delete(listener);
  }

  /** Ends the executor and every tool process now (the supervisor kills them all, then exits). */
  end(): boolean {
    return this.send({ type: "end" });
  }

  signalGroup(signal: NodeJS.Signals): boolean {
    const pid = this.child.pid;
    if (pid === undefined || this.exitInfo) return false;
    if (this.supervised) {
      // The supervisor ends what it holds, including what left the group: SIGKILL means "end now".
      if (signal === "SIGKILL" && this.end()) return true;
      if (signal !== "SIGKILL") {
        try {
          process.kill(pid, signal);
          return true;
        } catch {
          return false;
        }
      }
    }
    try {
      process.kill(-pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * SIGTERM (the executor ends its tools; under the supervisor, whatever is left goes after its grace), then
   * `end`, then SIGKILL; resolves when it has exited.
   */
  async terminate(graceMs: number): Promise<ExecutorExit> {
    if (this.exitInfo) return this.exitInfo;
    this.signalGroup("SIGTERM");
    const timers = [
      setTimeout(() => this.end(), graceMs),
      setTimeout(() => {
        try {
          if (this.child.pid !== undefined) process.kill(-this.child.pid, "SIGKILL");
        } catch {}
      }, graceMs + 3_000),
    ];
    const info = await this.exited;
    for (const timer of timers) clearTimeout(timer);
    return info;
  }
}

/** Pi's first answer (to the bridge's probes): from then on the executor's boot no longer delays Pi's. */
const isPiResponse = (raw: string) => raw.includes('"type":"response"');

/**
 * The pair as one agent unit: the bridge talks to Pi; the executor lives and dies with it. If the executor
 * dies while Pi runs, every tool call would fail: the unit ends Pi too, so the supervisor restarts both.
 */
export class AgentPair implements AgentUnit {
  readonly pi: PiChild;
  readonly executor: ExecutorChild;
  readonly runId: string;
  private ending = false;
  private log: Logger | undefined;
  private readonly launch: AgentLaunch | undefined;

  constructor(pi: PiChild, executor: ExecutorChild, runId: string, launch?: AgentLaunch) {
    this.pi = pi;
    this.executor = executor;
    this.runId = runId;
    this.launch = launch;
    void executor.exited.then((exit) => {
      if (this.ending || this.pi.exitInfo) return;
      this.log?.error(
        { code: exit.code, signal: exit.signal, landlock: exit.landlockFailure },
        "tool executor exited while Pi runs: ending Pi so the pair restarts",
      );
      this.pi.signalGroup("SIGKILL");
    });
  }

  get pid(): number | undefined {
    return this.pi.pid;
  }

  get exited(): Promise<PiExitInfo> {
    return this.pi.exited;
  }

  get exitInfo(): PiExitInfo | undefined {
    return this.pi.exitInfo;
  }

  bind(onLine: (raw: string) => void, log: Logger): void {
    this.log = log;
    this.executor.bindLog(log);
    this.pi.bind((raw) => {
      // Pi answered: its boot is done, the executor's Node may start (the bridge may also call releaseExecutor).
      if (isPiResponse(raw)) this.executor.release();
      onLine(raw);
    }, log);
  }

  write(line: string): void {
    this.pi.write(line);
  }

  /** Starts the held executor now (the bridge calls this once Pi passed its probes; Pi's first answer does too). */
  releaseExecutor(): void {
    this.executor.release();
  }

  /** The network mode for this pair's tools from now on, and for every pair started after it. */
  setNetworkMode(mode: NetworkMode): boolean {
    const supervised = this.launch?.spec.executor.supervised;
    if (supervised) supervised.network.mode = mode;
    return this.executor.setNetworkMode(mode);
  }

  /** An approved call (its label, as the executor names it to the supervisor) may connect anywhere over TCP. */
  grantCall(call: string): boolean {
    return this.executor.grantCall(call);
  }

  revokeCall(call: string): boolean {
    return this.executor.revokeCall(call);
  }

  /** Each connect the tools' supervisor performed or refused: pid, call, destination (attribution, audit). */
  onEgress(listener: (event: EgressEvent) => void): () => void {
    return this.executor.onEgress(listener);
  }

  signalGroup(signal: NodeJS.Signals): boolean {
    const pi = this.pi.signalGroup(signal);
    const executor = this.executor.signalGroup(signal);
    return pi || executor;
  }

  async terminate(graceMs: number): Promise<PiExitInfo> {
    this.ending = true;
    const info = await this.pi.terminate(graceMs);
    await this.executor.terminate(graceMs);
    // Tools the executor started carry the pair's marker: none may outlive it (the supervisor ended the rest).
    await endTree(
      { pids: this.executorPids(), marker: this.marker() },
      { termGraceMs: Math.min(graceMs, 1_000) },
    );
    this.sweep();
    return info;
  }

  async killTree(): Promise<{ found: number; left: number }> {
    this.ending = true;
    const pi = await this.pi.killTree();
    this.executor.signalGroup("SIGKILL");
    if (this.executor.supervised && !this.executor.exitInfo) {
      // The supervisor kills every tool process and exits; SIGKILL only if it does not within the deadline.
      const deadline = new Promise((resolve) => setTimeout(resolve, 2_000).unref());
      await Promise.race([this.executor.exited, deadline]);
    }
    const tools = await endTree(
      { pids: this.executorPids(), groups: this.executorPids(), marker: this.marker() },
      { deadlineMs: 2_000 },
    );
    const orphans = this.sweep();
    return { found: pi.found + tools.found + orphans, left: pi.left + tools.left };
  }

  private executorPids(): number[] {
    return [this.executor.pid, this.executor.executorPid].filter((pid): pid is number => pid !== undefined);
  }

  /** The pair's run marker: Pi, the executor and every tool carry it. */
  private marker() {
    return { name: RUN_MARKER_ENV, values: [this.runId] };
  }

  /** Tool processes no supervisor holds (this one was killed before it could end them). */
  private sweep(): number {
    return sweepLeftoverTools(this.launch);
  }
}

/** Ends tool processes no live supervisor holds (an earlier bridge's or pair's); 0 without a supervisor. */
export function sweepLeftoverTools(launch: AgentLaunch | undefined): number {
  const supervised = launch?.spec.executor.supervised;
  if (!launch || !supervised) return 0;
  return sweepOrphanTools({
    toolsUid: supervised.toolsUid,
    oomScoreAdj: supervised.options.oomScoreAdj,
    wholeUid: supervised.wholeUid,
    helper: launch.spec.executor.file,
  });
}

/** Pi's session flags: its exact session file when that exists, otherwise the session id (created if missing). */
export function sessionArgv(dir: string, record: SessionRecord): string[] {
  if (record.sessionFile && existsSync(record.sessionFile)) {
    return ["--session-dir", dir, "--session", record.sessionFile];
  }
  return ["--session-dir", dir, "--session-id", record.sessionId];
}

const bootNonce = randomBytes(6).toString("hex");
let generation = 0;

/** Starts the executor, then Pi with the executor's channel as its fd 3, both marked with one new run id. */
export function startAgent(launch: AgentLaunch): AgentPair {
  const runId = `${launch.markerPrefix}${bootNonce}-${generation++}`;
  const { spec } = launch;
  const executor = new ExecutorChild(spec.executor, spec.cwd, { name: RUN_MARKER_ENV, value: runId });
  const channel = executor.channel;
  const session = launch.session ? sessionArgv(launch.session.dir, launch.session.current) : [];
  const pi = new PiChild({
    node: spec.pi.node,
    args: piArgv(spec.pi.entry, spec.pi.gate, [...session, ...spec.pi.forwarded]),
    cwd: spec.cwd,
    env: { ...spec.pi.env, [EXECUTOR_FD_ENV]: "3" },
    spawnAs: spec.pi.spawnAs,
    runId,
    channel,
  });
  // Only Pi and the executor hold the channel from here on; the bridge never reads it.
  channel.destroy();
  // What an earlier bridge's (or pair's) tools left with no supervisor above them goes now, while Pi boots (the
  // new pair's tools are held by their live supervisor; the executor is not even started yet).
  sweepLeftoverTools(launch);
  const pair = new AgentPair(pi, executor, runId, launch);
  launch.onStart?.(pair);
  return pair;
}
