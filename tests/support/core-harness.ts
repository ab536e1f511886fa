// The composed bridge core (bridge/core.ts) in memory, after VS Code's PersistentProtocol tests: a fake
// clock, a fake frame sink and fake agent units that speak the patched Pi's RPC for what the core relies on.
// Nothing here runs a process or a real timer; a test drives every event itself.
import pino from "pino";
import type { Clock, TimerHandle } from "../../bridge/core/clock.ts";
import type { WatchdogOptions } from "../../bridge/core/watchdog.ts";
import { BridgeCore, type Frame, type FrameSink } from "../../bridge/core.ts";
import type { AgentUnit, PiExitInfo } from "../../bridge/pi-child.ts";
import type { Isolation } from "../../bridge/protocol.ts";

export class FakeClock implements Clock {
  private current = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private nextId = 1;

  now = (): number => this.current;

  set = (ms: number, fn: () => void): TimerHandle => {
    const id = this.nextId++;
    this.timers.set(id, { at: this.current + ms, fn });
    return id;
  };

  clear = (handle: TimerHandle): void => {
    if (typeof handle === "number") this.timers.delete(handle);
  };

  /** Moves time forward by `ms`, firing due timers in order and letting promises settle after each. */
  async advance(ms: number): Promise<void> {
    const until = this.current + ms;
    await settle(); // timers that settling promises set now count from now
    for (;;) {
      const due = [...this.timers]
        .filter(([, t]) => t.at <= until)
        .sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.current = due[1].at;
      due[1].fn();
      await settle();
    }
    this.current = until;
    await settle();
  }

  get pending(): number {
    return this.timers.size;
  }
}

/** Lets every pending promise continuation run (the core's parts chain a few). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Numbers frames like the ring does and keeps them, as a client would receive them. */
export class FakeSink implements FrameSink {
  readonly frames: Frame[] = [];
  stalled = 0;

  publish(frame: Frame, raw?: string): void {
    const wire = JSON.parse(raw ?? JSON.stringify(frame)) as Frame;
    this.frames.push({ ...wire, seq: this.frames.length + 1 });
  }

  get headSeq(): number {
    return this.frames.length;
  }

  get firstSeq(): number {
    return 1;
  }

  stalledMs(): number {
    return this.stalled;
  }

  of(type: string): Frame[] {
    return this.frames.filter((f) => f.type === type);
  }

  responses(id: string): Frame[] {
    return this.frames.filter((f) => f.type === "response" && f.id === id);
  }
}

export type PiMode = "patched" | "unpatched" | "silent";

let nextPid = 1000;

/**
 * A fake agent unit: answers the patch probes as a patched (or unpatched) Pi does, get_state with a session,
 * any other command with success, and holds dialogs it asked until answered. `silent` answers nothing (hung).
 * Its lines wait in an outbox until the test delivers them.
 */
export class FakePi implements AgentUnit {
  readonly pid = nextPid++;
  exitInfo: PiExitInfo | undefined;
  readonly exited: Promise<PiExitInfo>;
  /** Every line the bridge wrote to it. */
  readonly received: Frame[] = [];
  /** Dialogs it asked and still holds. */
  readonly dialogs = new Set<string>();
  /** Non-cancel answers it took for its dialogs: what it would act on. */
  readonly approvals: { dialogId: string; answer: Frame }[] = [];
  /** Commands it has not answered yet: all while silent, and those other than probes while `withhold` is on. */
  readonly withheld: Frame[] = [];
  withhold = false;
  killedTree = false;
  /** Survives SIGKILL (a process stuck in the kernel): its exit never comes. */
  unkillable = false;
  /** The session get_state reports (a test moves Pi to another one). */
  sessionId = "session-1";
  mode: PiMode;
  private resolveExit: (info: PiExitInfo) => void = () => {};
  private onLine: ((raw: string) => void) | undefined;
  private readonly outbox: string[] = [];

  constructor(mode: PiMode = "patched") {
    this.mode = mode;
    this.exited = new Promise((resolve) => {
      this.resolveExit = resolve;
    });
  }

  bind(onLine: (raw: string) => void): void {
    this.onLine = onLine;
  }

  write(line: string): void {
    if (this.exitInfo) return;
    const command = JSON.parse(line) as Frame;
    this.received.push(command);
    // A silent (hung) Pi reads nothing: what it was sent waits for it to come back.
    if (this.mode === "silent") this.withheld.push(command);
    else this.react(command);
  }

  /** Pi asks a dialog. */
  ask(
    dialogId: string,
    method: "confirm" | "select" = "confirm",
    options: readonly string[] = ["yes", "no"],
  ): void {
    this.dialogs.add(dialogId);
    this.emit({
      type: "extension_ui_request",
      id: dialogId,
      method,
      title: "Allow?",
      ...(method === "select" ? { options } : {}),
    });
  }

  /** Lines Pi writes of its own (events). */
  emit(frame: Frame): void {
    this.outbox.push(JSON.stringify(frame));
  }

  /** Answers what it withheld (a hung Pi comes back, or one that was holding its answers lets them go). */
  release(): void {
    this.withhold = false;
    if (this.mode === "silent") this.mode = "patched";
    for (const command of this.withheld.splice(0)) this.react(command);
  }

  /** Hands its pending lines to the bridge. */
  deliver(): void {
    while (this.onLine && !this.exitInfo && this.outbox.length > 0)
      this.onLine(this.outbox.shift() as string);
  }

  crash(info: PiExitInfo = { code: 1, signal: null }): void {
    if (this.exitInfo) return;
    this.exitInfo = info;
    this.outbox.length = 0;
    this.resolveExit(info);
  }

  terminate(): Promise<PiExitInfo> {
    this.crash({ code: null, signal: "SIGTERM" });
    return this.exited;
  }

  killTree(): Promise<{ found: number; left: number }> {
    this.killedTree = true;
    if (!this.unkillable) this.crash({ code: null, signal: "SIGKILL" });
    return Promise.resolve({ found: 0, left: 0 });
  }

  signalGroup(): boolean {
    return !this.exitInfo;
  }

  get alive(): boolean {
    return this.exitInfo === undefined;
  }

  private react(command: Frame): void {
    const respond = (extra: Frame, id = command.id) =>
      this.emit({ type: "response", id, command: command.type, ...extra });
    switch (command.type) {
      case "replace_queue":
        respond(
          this.mode === "patched"
            ? { success: false, error: "invalid_request: malformed", code: "invalid_request" }
            : { success: false, error: "Unknown command: replace_queue" },
        );
        return;
      case "extension_ui_response": {
        // An unpatched Pi stays silent on correlated answers.
        if (this.mode !== "patched" || typeof command.commandId !== "string") return;
        const dialogId = String(command.id);
        if (!this.dialogs.has(dialogId)) {
          respond(
            {
              success: false,
              error: "ui_request_not_pending: not pending",
              code: "ui_request_not_pending",
              data: { requestId: dialogId, reason: "unknown" },
            },
            command.commandId,
          );
          return;
        }
        this.dialogs.delete(dialogId);
        if (command.cancelled !== true) this.approvals.push({ dialogId, answer: command });
        respond({ success: true }, command.commandId);
        return;
      }
      case "get_state":
        respond({ success: true, data: { sessionId: this.sessionId, sessionFile: null } });
        return;
      default:
        if (this.withhold) this.withheld.push(command);
        else respond({ success: true });
    }
  }
}

export const ISOLATION: Isolation = {
  mode: "degraded",
  user: null,
  uid: 1000,
  gid: 1000,
  reason: "uid separation: not root",
  reasons: ["uid separation: not root"],
  notes: [],
  principals: {
    bridge: { uid: 1000 },
    pi: { user: null, uid: 1000, gid: 1000 },
    tools: { user: null, uid: 1000, gid: 1000, home: "/home/agent" },
  },
  protections: {
    uidSeparation: { active: false, detail: "not root" },
    landlock: { active: true, abi: 7, scopes: ["signal", "abstract_unix_socket"], detail: "test" },
    toolEnvScrubbed: { active: true, detail: "test" },
    tokenScrubbed: { active: true, detail: "test" },
    executorRouting: { active: true, detail: "test" },
    egress: {
      active: true,
      guard: "enforcing",
      mode: "registries",
      filter: "notify",
      kernel: {
        landlockAbi: 7,
        landlockNet: true,
        seccompFilter: true,
        seccompNotify: true,
        notifyAddfd: true,
      },
      detail: "test",
    },
    toolProcesses: { active: true, nproc: 1000, containerPids: 2000, oomScoreAdj: 1000, detail: "test" },
  },
};

export interface HarnessOptions {
  idleExitMs?: number;
  lingerMs?: number;
  detachedGraceMs?: number;
  watchdog?: Partial<WatchdogOptions>;
  /** Mode of the first Pi. */
  firstMode?: PiMode;
}

export interface Harness {
  core: BridgeCore;
  clock: FakeClock;
  sink: FakeSink;
  /** Every agent unit started, the first one included; the last is the current one. */
  pis: FakePi[];
  readonly pi: FakePi;
  /** requestShutdown calls. */
  shutdowns: { reason: string; exitCode: number | undefined }[];
  /** How the next restarted Pi behaves; and how many restarts throw first (spawn EAGAIN). */
  next: { mode: PiMode; spawnFailures: number };
  send(frame: Frame): void;
  /** The current Pi's lines reach the bridge, then promises settle. */
  deliver(): Promise<void>;
}

export const EPOCH = "e".repeat(32);

/** A network-mode core (ids required, Pi restarted, a linger) over a fake Pi that has been started. */
export function coreHarness(options: HarnessOptions = {}): Harness {
  const clock = new FakeClock();
  const sink = new FakeSink();
  const pis: FakePi[] = [new FakePi(options.firstMode ?? "patched")];
  const shutdowns: Harness["shutdowns"] = [];
  const next = { mode: "patched" as PiMode, spawnFailures: 0 };
  let policy: "ask" | "auto" | "read-only" = "ask";
  const core = new BridgeCore(sink, {
    epoch: EPOCH,
    transport: "network",
    requireIds: true,
    detachedGraceMs: options.detachedGraceMs ?? 600_000,
    idleExitMs: options.idleExitMs ?? 30 * 60_000,
    maxFrameBytes: 1024 * 1024,
    lingerMs: options.lingerMs ?? 60_000,
    isolation: () => ISOLATION,
    policy: {
      read: () => ({ policy, source: "file", path: "/run/policy" }),
      set: async (o) => {
        const previous = { policy, source: "file" as const, path: "/run/policy" };
        policy = o.policy;
        return { ok: true, previous, current: { policy, source: "file", path: "/run/policy" } };
      },
    },
    log: pino({ level: "silent" }),
    clock,
    // What run.ts does: the core stops taking commands, the agent unit is ended.
    requestShutdown: (reason, exitCode) => {
      shutdowns.push({ reason, exitCode });
      core.beginShutdown();
      void core.agent?.terminate(0);
    },
    restartAgent: () => {
      if (next.spawnFailures > 0) {
        next.spawnFailures--;
        throw new Error("spawn EAGAIN");
      }
      const pi = new FakePi(next.mode);
      pis.push(pi);
      return pi;
    },
    ...(options.watchdog ? { watchdog: options.watchdog } : {}),
    durability: () => ({ stateDir: null, journal: "off", problem: null, logFile: null, session: null }),
  });
  core.attachPi(pis[0] as FakePi);
  return {
    core,
    clock,
    sink,
    pis,
    get pi() {
      return pis.at(-1) as FakePi;
    },
    shutdowns,
    next,
    send: (frame) => core.handleClientText(JSON.stringify(frame)),
    deliver: async () => {
      (pis.at(-1) as FakePi).deliver();
      await settle();
    },
  };
}
