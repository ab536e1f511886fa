// The one Pi process: spawned argv-only in its own process group, stdout drained always (Pi blocks
// its agent loop on stdout backpressure), stderr into our log, the whole group killed on shutdown.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import type { Socket } from "node:net";
import { JsonlDecoder } from "../agent-runtime/jsonl.ts";
import type { Logger } from "../agent-runtime/log.ts";
import { endTree, type TreeSelector } from "../agent-runtime/process-tree.ts";

/** Environment variable that marks a child and everything it starts (the executor keeps it in tools' env). */
export const RUN_MARKER_ENV = "CHAT_UI_AGENT_RUN_ID";

/** Pi's argv behind the bridge, defined in agent-runtime/pi-argv.ts (the bench's raw-Pi baseline uses it too). */
export { bridgePiArgv as piArgv } from "../agent-runtime/pi-argv.ts";

export interface PiSpawnSpec {
  node: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  spawnAs: { uid: number; gid: number } | undefined;
  /** Value of RUN_MARKER_ENV given to Pi, so its detached tools can be found when it ends. */
  runId: string;
  /** The tool executor's channel, given to Pi as its fd 3 (agent-launch.ts). */
  channel?: Socket;
}

export interface PiExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * What "start the agent" returns and the supervisor restarts as a unit: Pi (and, with the isolation work,
 * the processes started beside it). The bridge talks to Pi through `write` and the lines given to `bind`.
 */
export interface AgentUnit {
  readonly pid: number | undefined;
  readonly exited: Promise<PiExitInfo>;
  readonly exitInfo: PiExitInfo | undefined;
  bind(onLine: (raw: string) => void, log: Logger): void;
  write(line: string): void;
  /** Ends the unit and every process it started: SIGTERM, SIGKILL after `graceMs`. */
  terminate(graceMs: number): Promise<PiExitInfo>;
  /** Ends whatever is left of the unit at once (SIGKILL), after it died on its own. */
  killTree(): Promise<{ found: number; left: number }>;
  signalGroup(signal: NodeJS.Signals): boolean;
}

export class PiChild implements AgentUnit {
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

  /** What belongs to this Pi: its group, its descendants, and everything carrying its run marker. */
  tree(): TreeSelector {
    const pid = this.child.pid === undefined ? [] : [this.child.pid];
    return { pids: pid, groups: pid, marker: { name: RUN_MARKER_ENV, values: [this.runId] } };
  }

  /** SIGTERM the tree, SIGKILL whatever is left after `graceMs`; resolves when Pi and its tools are gone. */
  async terminate(graceMs: number): Promise<PiExitInfo> {
    const tree = this.tree();
    const ending = endTree(tree, { termGraceMs: graceMs, deadlineMs: 2_000 });
    const timer = setTimeout(() => this.signalGroup("SIGKILL"), graceMs);
    const info = await this.exited;
    clearTimeout(timer);
    await ending;
    // Tools Pi left behind while exiting (detached into their own sessions) must not outlive it either.
    await endTree(tree, { termGraceMs: Math.min(graceMs, 1_000) });
    return info;
  }

  /** After Pi died on its own: its tools must not finish their side effects. SIGKILL, now. */
  killTree(): Promise<{ found: number; left: number }> {
    return endTree(this.tree(), { deadlineMs: 2_000 });
  }
}
