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
import { EXECUTOR_FD_ENV } from "../agent-runtime/executor/protocol.ts";
import { JsonlDecoder } from "../agent-runtime/jsonl.ts";
import type { Logger } from "../agent-runtime/log.ts";
import { endTree } from "../agent-runtime/process-tree.ts";
import { type AgentUnit, PiChild, type PiExitInfo, piArgv, RUN_MARKER_ENV } from "./pi-child.ts";
import type { SessionRecord } from "./state-dir.ts";

export interface ExecutorSpawnSpec {
  /** argv[0]: the Landlock helper when the tools get a domain, otherwise Node itself. */
  file: string;
  args: string[];
  env: Record<string, string>;
  uid: number | undefined;
  gid: number | undefined;
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
  /** The helper's report when it refused to start the executor (Landlock could not be applied). */
  landlockFailure: string | undefined;
}

/** The tool executor process: its stderr goes to the bridge's log; its exit is observable. */
export class ExecutorChild {
  readonly exited: Promise<ExecutorExit>;
  exitInfo: ExecutorExit | undefined;
  /** The helper's one-line Landlock report, once read. */
  landlock: { enforced: boolean; abi: number; error?: string; skipped?: string[] } | undefined;
  private readonly child: ChildProcess;
  private log: Logger | undefined;
  private readonly early: { level: "info" | "warn" | "error"; fields: object; msg: string }[] = [];

  constructor(spec: ExecutorSpawnSpec, cwd: string) {
    this.child = spawn(spec.file, spec.args, {
      cwd,
      env: spec.env,
      // stdio[3] is the channel: Node creates a unix socketpair for an extra 'pipe'.
      stdio: ["ignore", "pipe", "pipe", "pipe"],
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
    this.exited = new Promise((resolve) => {
      this.child.on("close", (code, signal) => {
        const failure =
          this.landlock && !this.landlock.enforced ? (this.landlock.error ?? "not enforced") : undefined;
        this.exitInfo = { code, signal, landlockFailure: failure };
        resolve(this.exitInfo);
      });
    });
  }

  /** The bridge's end of the channel (handed to Pi, then closed here). */
  get channel(): Socket {
    return this.child.stdio[3] as Socket;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  bindLog(log: Logger): void {
    this.log = log;
    for (const entry of this.early.splice(0)) log[entry.level](entry.fields, entry.msg);
  }

  private logAs(level: "info" | "warn" | "error", fields: object, msg: string): void {
    if (this.log) this.log[level](fields, msg);
    else if (this.early.length < 1000) this.early.push({ level, fields, msg });
  }

  signalGroup(signal: NodeJS.Signals): boolean {
    const pid = this.child.pid;
    if (pid === undefined || this.exitInfo) return false;
    try {
      process.kill(-pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** SIGTERM (the executor ends its tools), SIGKILL after `graceMs`; resolves when it has exited. */
  async terminate(graceMs: number): Promise<ExecutorExit> {
    if (this.exitInfo) return this.exitInfo;
    this.signalGroup("SIGTERM");
    const timer = setTimeout(() => this.signalGroup("SIGKILL"), graceMs);
    const info = await this.exited;
    clearTimeout(timer);
    return info;
  }
}

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

  constructor(pi: PiChild, executor: ExecutorChild, runId: string) {
    this.pi = pi;
    this.executor = executor;
    this.runId = runId;
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
    this.pi.bind(onLine, log);
  }

  write(line: string): void {
    this.pi.write(line);
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
    // Tools the executor started carry the pair's marker: none may outlive it.
    await endTree(
      { pids: this.executorPids(), marker: this.marker() },
      { termGraceMs: Math.min(graceMs, 1_000) },
    );
    return info;
  }

  async killTree(): Promise<{ found: number; left: number }> {
    this.ending = true;
    const pi = await this.pi.killTree();
    this.executor.signalGroup("SIGKILL");
    const tools = await endTree(
      { pids: this.executorPids(), groups: this.executorPids(), marker: this.marker() },
      { deadlineMs: 2_000 },
    );
    return { found: pi.found + tools.found, left: pi.left + tools.left };
  }

  private executorPids(): number[] {
    return this.executor.pid === undefined ? [] : [this.executor.pid];
  }

  /** The pair's run marker: Pi, the executor and every tool carry it. */
  private marker() {
    return { name: RUN_MARKER_ENV, values: [this.runId] };
  }
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
  const executor = new ExecutorChild(
    { ...spec.executor, env: { ...spec.executor.env, [RUN_MARKER_ENV]: runId } },
    spec.cwd,
  );
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
  const pair = new AgentPair(pi, executor, runId);
  launch.onStart?.(pair);
  return pair;
}
