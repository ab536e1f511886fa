// The one Pi process: spawned argv-only in its own process group, stdout drained always (Pi blocks
// its agent loop on stdout backpressure), stderr into our log, the whole group killed on shutdown.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import type { Socket } from "node:net";
import { JsonlDecoder } from "../agent-runtime/jsonl.ts";
import type { Logger } from "../agent-runtime/log.ts";

/** Environment variable that marks Pi and everything it starts (tools detach into their own sessions). */
export const RUN_MARKER_ENV = "CHAT_UI_AGENT_RUN_ID";

/**
 * Pi's argv behind the bridge: RPC mode, no discovered extensions, project-local trust ignored, and only our
 * gate loaded; the caller's own Pi flags come last. (The bench's raw-Pi baseline uses the same argv.)
 */
export function piArgv(entry: string, gate: string, forwarded: readonly string[]): string[] {
  return [entry, "--mode", "rpc", "--no-extensions", "--no-approve", "-e", gate, ...forwarded];
}

/** Pids (other than ours) whose initial environment carries `RUN_MARKER_ENV=<runId>`. */
export function markedProcesses(runId: string): number[] {
  const needle = `${RUN_MARKER_ENV}=${runId}`;
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, "latin1").split("\0").includes(needle))
        found.push(Number(entry));
    } catch {
      // gone already, or not ours to read
    }
  }
  return found;
}

export interface PiSpawnSpec {
  node: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  spawnAs: { uid: number; gid: number } | undefined;
  /** Value of RUN_MARKER_ENV given to Pi, so its detached tools can be found at shutdown. */
  runId: string;
  /** The tool executor's channel, given to Pi as its fd 3 (agent-launch.ts). */
  channel?: Socket;
}

export interface PiExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class PiChild {
  readonly exited: Promise<PiExitInfo>;
  exitInfo: PiExitInfo | undefined;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly runId: string;

  // Until bind(): Pi starts before the bridge's heavier modules load, so its early output waits here.
  private onLine: ((raw: string) => void) | undefined;
  private log: Logger | undefined;
  private readonly early: string[] = [];
  private readonly earlyLog: { level: "info" | "warn" | "error"; fields: object; msg: string }[] = [];

  constructor(spec: PiSpawnSpec) {
    this.runId = spec.runId;
    this.child = spawn(spec.node, spec.args, {
      cwd: spec.cwd,
      env: { ...spec.env, [RUN_MARKER_ENV]: spec.runId },
      stdio: spec.channel ? ["pipe", "pipe", "pipe", spec.channel] : ["pipe", "pipe", "pipe"],
      // Own process group: shutdown signals Pi and every tool process it started.
      detached: true,
      ...(spec.spawnAs ? { uid: spec.spawnAs.uid, gid: spec.spawnAs.gid } : {}),
    }) as ChildProcessWithoutNullStreams;
    const decoder = new JsonlDecoder();
    const line = (raw: string) => {
      if (this.onLine) this.onLine(raw);
      else this.early.push(raw);
    };
    this.child.stdout.on("data", (chunk: Buffer) => {
      for (const raw of decoder.push(chunk)) line(raw);
    });
    this.child.stdout.on("end", () => {
      const tail = decoder.end();
      if (tail !== undefined) line(tail);
    });
    const stderrLines = new JsonlDecoder(64 * 1024);
    this.child.stderr.on("data", (chunk: Buffer) => {
      for (const raw of stderrLines.push(chunk))
        if (raw.length > 0) this.logAs("info", { pi: raw }, "pi stderr");
    });
    this.child.stdin.on("error", (err) => this.logAs("warn", { err: err.message }, "pi stdin error"));
    this.child.on("error", (err) => this.logAs("error", { err: err.message }, "pi spawn error"));
    this.exited = new Promise((resolve) => {
      this.child.on("close", (code, signal) => {
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      });
    });
  }

  /** Starts delivering Pi's lines (the buffered ones first) and its log. */
  bind(onLine: (raw: string) => void, log: Logger): void {
    this.log = log;
    for (const entry of this.earlyLog.splice(0)) log[entry.level](entry.fields, entry.msg);
    for (const raw of this.early.splice(0)) onLine(raw);
    this.onLine = onLine;
  }

  private logAs(level: "info" | "warn" | "error", fields: object, msg: string): void {
    if (this.log) this.log[level](fields, msg);
    else if (this.earlyLog.length < 1000) this.earlyLog.push({ level, fields, msg });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  write(line: string): void {
    if (this.exitInfo || this.child.stdin.destroyed) return;
    this.child.stdin.write(line);
  }

  /** Signals Pi's whole process group (tools included). False if nothing was left to signal. */
  signalGroup(signal: NodeJS.Signals): boolean {
    const pid = this.child.pid;
    if (pid === undefined) return false;
    try {
      process.kill(-pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** SIGTERM the group, SIGKILL whatever is left after `graceMs`; resolves when Pi has exited. */
  async terminate(graceMs: number): Promise<PiExitInfo> {
    this.signalGroup("SIGTERM");
    const timer = setTimeout(() => this.signalGroup("SIGKILL"), graceMs);
    const info = await this.exited;
    clearTimeout(timer);
    // Tools Pi left behind (in its group, or detached into their own sessions) must not outlive us either.
    const leftovers = () => markedProcesses(this.runId);
    const anyGroup = this.signalGroup("SIGTERM");
    let marked = leftovers();
    for (const pid of marked) signal(pid, "SIGTERM");
    const deadline = Date.now() + Math.min(graceMs, 1_000);
    while ((marked.length > 0 || anyGroup) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      marked = leftovers();
      if (marked.length === 0) break;
    }
    this.signalGroup("SIGKILL");
    for (const pid of leftovers()) signal(pid, "SIGKILL");
    return info;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {}
}
