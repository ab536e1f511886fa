// Starts the agent as a pair: the tool executor (the tools' principal, in its Landlock domain) and Pi (its own
// principal), joined by one unix socket that only those two processes hold. Node makes the executor's extra
// 'pipe' stdio entry a socketpair; Pi gets the bridge's end as its stdio[3] (dup'd into the child), and the
// bridge closes its own copy at once, before its event loop could read from it. A restart must restart both:
// the channel belongs to the pair.
import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";
import { EXECUTOR_FD_ENV } from "../agent-runtime/executor/protocol.ts";
import { JsonlDecoder } from "../agent-runtime/jsonl.ts";
import type { Logger } from "../agent-runtime/log.ts";
import { PiChild, RUN_MARKER_ENV } from "./pi-child.ts";

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
  /** The run marker value (the bridge epoch) that marks every process of this agent. */
  runId: string;
  executor: ExecutorSpawnSpec;
  pi: {
    node: string;
    args: string[];
    env: NodeJS.ProcessEnv;
    spawnAs: { uid: number; gid: number } | undefined;
  };
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

export interface AgentPair {
  pi: PiChild;
  executor: ExecutorChild;
}

/** Starts the executor, then Pi with the executor's channel as its fd 3; returns both. */
export function startAgent(spec: AgentLaunchSpec): AgentPair {
  const executor = new ExecutorChild(
    { ...spec.executor, env: { ...spec.executor.env, [RUN_MARKER_ENV]: spec.runId } },
    spec.cwd,
  );
  const channel = executor.channel;
  const pi = new PiChild({
    node: spec.pi.node,
    args: spec.pi.args,
    cwd: spec.cwd,
    env: { ...spec.pi.env, [EXECUTOR_FD_ENV]: "3" },
    spawnAs: spec.pi.spawnAs,
    runId: spec.runId,
    channel,
  });
  // Only Pi and the executor hold the channel from here on; the bridge never reads it.
  channel.destroy();
  return { pi, executor };
}
