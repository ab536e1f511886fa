// The bridge's state machine, independent of the transport: Pi's lines in, numbered frames out; client
// commands checked, deduplicated and forwarded with the bridge's own ids; Pi proved patched before anything
// is forwarded, and restarted on the same session when it dies. Dialogs live in dialog-book.ts.
import type { Logger } from "../agent-runtime/log.ts";
import { createProbeExchange } from "../agent-runtime/pi-patch-behaviour.ts";
import type { ProbeVerdict } from "../agent-runtime/pi-patch-probe.ts";
import type { EffectivePolicy, PolicyMode, SetPolicyResult } from "../agent-runtime/policy/policy-store.ts";
import { userBashRefusal } from "../agent-runtime/policy/user-bash-rule.ts";
import { DialogBook, type DialogCloseReason, type Verdict } from "./dialog-book.ts";
import { toPendingDialog } from "./dialogs.ts";
import { capText, MAX_FRAME_DEPTH, nestsDeeperThan, usableId } from "./frame-input.ts";
import { type Frame, IdempotencyStore } from "./idempotency.ts";
import type { AgentUnit, PiExitInfo } from "./pi-child.ts";
import {
  type BridgeStatus,
  CLIENT_FRAME_TYPES,
  ClientFrame,
  type Durability,
  type Isolation,
  type PendingDialog,
  PiCommandFrame,
  type PiStatus,
  type PolicyReport,
  type QueueSnapshot,
  SESSION_REPLACING_COMMANDS,
  type Snapshot,
} from "./protocol.ts";
import { RestartPolicy } from "./restart-policy.ts";

export type { Frame };

/** Where numbered frames go: the replay ring and journal (network) or stdout (stdio). */
export interface FrameSink {
  /** `raw` is Pi's own JSON text for `frame` when it passes through unchanged. */
  publish(frame: Frame, raw?: string): void;
  readonly headSeq: number;
}

export interface PolicyAccess {
  read(): EffectivePolicy;
  set(options: { policy: PolicyMode; expected?: PolicyMode }): Promise<SetPolicyResult>;
}

export interface SessionInfo {
  sessionId: string;
  sessionFile: string | null;
}

export interface CoreOptions {
  mode: "network" | "stdio";
  epoch: string;
  detachedGraceMs: number;
  idleExitMs: number;
  maxFrameBytes: number;
  /** The live isolation report (it changes if the tool executor stops). */
  isolation: () => Isolation;
  policy: PolicyAccess;
  log: Logger;
  /** Called when the bridge should shut down (idle exit, Pi gone for good after linger). */
  requestShutdown: (reason: string, exitCode?: number) => void;
  /** Network mode: how long to keep serving replay after Pi is gone for good. */
  lingerMs: number;
  /** Command records (restored from the state dir by the caller, if durable). */
  idempotency?: IdempotencyStore;
  /** Starts a new agent unit on the current session; without it, Pi is never restarted (stdio mode). */
  restartAgent?: () => AgentUnit;
  restartPolicy?: RestartPolicy;
  /** How long a started Pi may take to answer the patch probes. */
  probeTimeoutMs?: number;
  /** Pi reported another session (new_session, switch_session…): the caller persists it. */
  onSession?: (session: SessionInfo) => void;
  /** The set of open dialog ids changed: the caller persists it (closed at the next start). */
  onOpenDialogs?: (ids: string[]) => void;
  durability: () => Durability;
}

type Route =
  | { kind: "client"; clientId: string | undefined; command: string }
  | { kind: "dialog"; dialogId: string; clientId: string | undefined }
  | { kind: "internal"; resolve: (response: Frame | undefined) => void }
  | { kind: "ignore" };

interface HeldCommand {
  command: Frame;
  clientId: string | undefined;
  type: string;
  bytes: number;
}

/** Commands waiting while Pi starts or restarts. */
const MAX_HELD_COMMANDS = 256;
const MAX_HELD_BYTES = 64 * 1024 * 1024;

/** Pi writes every line with JSON.stringify, so an event's text starts with its type. */
const TYPE_PREFIX = '{"type":"';

/** Pi line types the bridge looks into; every other line is relayed as is. */
const ROUTED_PI_TYPES: ReadonlySet<string> = new Set([
  "response",
  "extension_ui_request",
  "queue_update",
  "agent_start",
  "agent_settled",
  "bash_execution_update",
]);

const DIALOG_ANSWER = "extension_ui_response";

export class BridgeCore {
  readonly epoch: string;
  private pi: AgentUnit | undefined;
  private piState: PiStatus["state"] = "starting";
  private piPatched: boolean | null = null;
  private piProblem: string | null = null;
  private readonly routes = new Map<string, Route>();
  private nextPiId = 1;
  private readonly idempotency: IdempotencyStore;
  private readonly dialogs: DialogBook;
  private openDialogIds = "";
  private held: HeldCommand[] = [];
  private heldBytes = 0;
  private readonly settledWaiters: (() => void)[] = [];
  private queue: QueueSnapshot = { steering: [], followUp: [] };
  private lastState: Record<string, unknown> | null = null;
  private session: SessionInfo | undefined;
  private agentRunning = false;
  /** The policy clients last saw (welcome snapshot or policy_changed). */
  private announcedPolicy: PolicyReport["policy"] | undefined;
  private attachedClient: string | undefined;
  private ackedSeq: number | null = null;
  private idleTimer: NodeJS.Timeout | undefined;
  private lingerTimer: NodeJS.Timeout | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private shuttingDown = false;
  private readonly restartPolicy: RestartPolicy;

  private readonly sink: FrameSink;
  private readonly options: CoreOptions;

  constructor(sink: FrameSink, options: CoreOptions) {
    this.sink = sink;
    this.options = options;
    this.epoch = options.epoch;
    this.idempotency = options.idempotency ?? new IdempotencyStore();
    this.restartPolicy = options.restartPolicy ?? new RestartPolicy();
    this.announcedPolicy = this.policyReport()?.policy;
    this.dialogs = new DialogBook({
      detachedGraceMs: options.detachedGraceMs,
      timers: {
        set: (ms, fn) => setTimeout(fn, ms),
        clear: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
      },
      effects: {
        cancelInPi: (dialogId) => this.cancelDialogInPi(dialogId),
        announceClosed: (dialogId, reason) =>
          this.sink.publish({ type: "dialog_closed", id: dialogId, outcome: "refused", reason }),
        changed: () => this.dialogsChanged(),
        warn: (fields, message) => this.options.log.warn(fields, message),
      },
    });
  }

  // ------------------------------------------------------------------ recovery (a restart on a state dir)

  /**
   * Settles what the previous bridge left open: commands in flight at its crash answer `outcome_unknown`
   * (they are never run again), and dialogs it had open are closed (the Pi that asked is gone).
   */
  recoverInterrupted(openDialogIds: readonly string[]): void {
    for (const { id, command } of this.idempotency.running()) {
      this.options.log.warn({ id, command }, "command in flight when the bridge stopped: outcome unknown");
      this.finishCommand(
        id,
        failure(
          id,
          command,
          "outcome_unknown",
          "the bridge restarted while this command was in flight; it may or may not have taken effect, and it was not run again",
        ),
      );
    }
    for (const id of openDialogIds) {
      this.sink.publish({ type: "dialog_closed", id, outcome: "refused", reason: "agent_exited" });
    }
  }

  // ------------------------------------------------------------------ Pi side

  /**
   * Binds a started Pi and proves it patched before anything is forwarded to it. `cause` is set when this
   * Pi replaces another one (announced with agent_restarted once it passes the probes).
   */
  attachPi(
    pi: AgentUnit,
    cause?: { kind: "agent_exited" | "bridge_restarted"; previous: PiExitInfo | null },
  ): void {
    this.pi = pi;
    this.piState = "starting";
    this.piPatched = null;
    this.piProblem = null;
    this.agentRunning = false;
    pi.bind((line) => this.onPiLine(line), this.options.log);
    void pi.exited.then((exit) => this.onPiExit(pi, exit));
    void this.verify(pi).then((verdict) => {
      if (this.pi !== pi || this.piState !== "starting") return;
      if (!verdict.ok) {
        this.refuse(pi, verdict.reason);
        return;
      }
      this.piPatched = true;
      this.piState = "running";
      this.options.log.info({ pid: pi.pid }, "Pi passed the patch probes");
      if (cause) {
        this.sink.publish({
          type: "agent_restarted",
          cause: cause.kind,
          previous: cause.previous ? { code: cause.previous.code, signal: cause.previous.signal } : null,
          pid: pi.pid ?? null,
          restarts: this.restartPolicy.count,
          sessionId: this.session?.sessionId ?? null,
        });
      }
      this.releaseHeld();
      this.wakeSettled();
      this.updateIdleTimer();
    });
    this.updateIdleTimer();
  }

  /** Drives the one patch-probe exchange (pi-patch-behaviour.ts) over Pi's routes, with the bridge's own ids. */
  private async verify(pi: AgentUnit): Promise<ProbeVerdict> {
    const timeoutMs = this.options.probeTimeoutMs ?? 60_000;
    const exchange = createProbeExchange(() => this.allocPiId());
    const complete = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      const finish = (done: boolean) => {
        clearTimeout(timer);
        resolve(done);
      };
      for (const id of exchange.answerIds) {
        this.routes.set(id, {
          kind: "internal",
          // No response: Pi exited before completing the exchange.
          resolve: (response) => {
            if (response === undefined) finish(false);
            else if (exchange.accept(response)) finish(true);
          },
        });
      }
      for (const line of exchange.lines) this.writePi(line);
    });
    // A probe Pi stayed silent on keeps no route.
    for (const id of exchange.answerIds) this.routes.delete(id);
    if (this.pi !== pi) return { ok: false, reason: "replaced" };
    if (!complete) return { ok: false, reason: `Pi did not answer within ${timeoutMs} ms` };
    const state = exchange.sentinelAnswer;
    if (state?.success === true && isRecord(state.data)) this.noteState(state.data);
    return exchange.verdict();
  }

  /** Fail closed: this Pi lacks the patched behaviour, so nothing is served through it. */
  private refuse(pi: AgentUnit, reason: string): void {
    this.piState = "refused";
    this.piPatched = false;
    this.piProblem = `Pi failed the patch probe: ${reason}`;
    this.options.log.error({ reason }, "Pi failed the patch probe: refusing to serve");
    this.failHeld("agent_unverified", this.piProblem);
    this.wakeSettled();
    this.sink.publish({ type: "agent_exited", code: null, signal: null, reason: `unverified: ${reason}` });
    void pi.terminate(1_000);
    this.finalExit(1);
  }

  /** One stdout line of Pi. */
  onPiLine(raw: string): void {
    // Fast path for the bulk (message_update and other events the bridge only relays): no parse.
    if (raw.startsWith(TYPE_PREFIX)) {
      const type = raw.slice(TYPE_PREFIX.length, raw.indexOf('"', TYPE_PREFIX.length));
      if (!ROUTED_PI_TYPES.has(type) && !raw.includes('"seq":')) {
        // The gate rereads the policy for this call: tell the client first if it changed behind our back.
        if (type === "tool_execution_start") this.notePolicy(this.policyReport(), "observed");
        this.sink.publish({ type }, raw);
        return;
      }
    }
    let line: Frame;
    try {
      const parsed: unknown = JSON.parse(raw);
      if (!isRecord(parsed)) throw new Error("not an object");
      line = parsed;
    } catch {
      this.options.log.warn({ line: raw.slice(0, 200) }, "unparseable line on Pi's stdout");
      return;
    }
    switch (line.type) {
      case "response":
        this.onPiResponse(line);
        return;
      case "extension_ui_request":
        this.onDialogRequest(line, raw);
        return;
      case "queue_update":
        if (Array.isArray(line.steering) && Array.isArray(line.followUp)) {
          this.queue = { steering: line.steering as string[], followUp: line.followUp as string[] };
        }
        break;
      case "agent_start":
        this.agentRunning = true;
        this.updateIdleTimer();
        break;
      case "agent_settled":
        this.agentRunning = false;
        this.updateIdleTimer();
        break;
      case "bash_execution_update": {
        // Its id is the id of the bash command: Pi saw ours, the client must see its own.
        const route = typeof line.id === "string" ? this.routes.get(line.id) : undefined;
        if (route?.kind === "client") {
          this.sink.publish(withId(line, route.clientId));
          return;
        }
        break;
      }
    }
    this.sink.publish(line, raw);
  }

  private onPiResponse(line: Frame): void {
    const piId = typeof line.id === "string" ? line.id : undefined;
    const route = piId ? this.routes.get(piId) : undefined;
    if (!piId || !route) {
      this.options.log.warn({ command: line.command }, "Pi response with no matching command; dropped");
      return;
    }
    this.routes.delete(piId);
    switch (route.kind) {
      case "internal":
        route.resolve(line);
        return;
      case "ignore":
        return;
      case "dialog":
        this.onDialogVerdict(route, line);
        return;
      case "client":
        break;
    }
    if (line.success === true && SESSION_REPLACING_COMMANDS.has(String(line.command))) {
      // Pi discards the old queues without a queue_update, and now writes another session.
      this.queue = { steering: [], followUp: [] };
      void this.refreshState();
    }
    if (line.command === "get_state" && line.success === true && isRecord(line.data))
      this.noteState(line.data);
    this.finishCommand(route.clientId, withId(line, route.clientId));
  }

  private onDialogRequest(line: Frame, raw: string): void {
    const dialog = toPendingDialog(line, this.sink.headSeq + 1);
    this.sink.publish(line, raw);
    if (!dialog) return;
    const timeout = typeof line.timeout === "number" && line.timeout > 0 ? line.timeout : undefined;
    this.dialogs.request(dialog, timeout);
  }

  private onPiExit(pi: AgentUnit, exit: PiExitInfo): void {
    if (this.pi !== pi) return;
    const wasRefused = this.piState === "refused";
    this.agentRunning = false;
    for (const [piId, route] of this.routes) {
      this.routes.delete(piId);
      if (route.kind === "client") {
        this.finishCommand(
          route.clientId,
          failure(route.clientId, route.command, "agent_exited", "Pi exited"),
        );
      } else if (route.kind === "dialog") {
        // An answer racing Pi's death: the client learns it was not taken, then the dialog is closed.
        this.finishCommand(
          route.clientId,
          failure(route.clientId, DIALOG_ANSWER, "agent_exited", "Pi exited"),
        );
        this.dialogs.verdict(route.dialogId, { kind: "agent_gone" });
      } else if (route.kind === "internal") {
        route.resolve(undefined);
      }
    }
    this.dialogs.agentGone();
    this.updateIdleTimer();
    if (wasRefused) return;
    if (this.shuttingDown) {
      this.piState = "exited";
      this.sink.publish({ type: "agent_exited", code: exit.code, signal: exit.signal, reason: "exited" });
      this.wakeSettled();
      return;
    }
    this.options.log.warn({ code: exit.code, signal: exit.signal, pid: pi.pid }, "Pi exited unexpectedly");
    const delay = this.options.restartAgent ? this.restartPolicy.next() : undefined;
    if (delay === undefined || !this.options.restartAgent) {
      const crashLoop = this.options.restartAgent !== undefined;
      this.piState = "exited";
      this.piProblem = crashLoop
        ? `Pi exited ${this.restartPolicy.options.maxRestarts + 1} times within ${this.restartPolicy.options.windowMs / 60_000} minutes`
        : "Pi exited";
      this.sink.publish({
        type: "agent_exited",
        code: exit.code,
        signal: exit.signal,
        reason: crashLoop ? "crash_loop" : "exited",
      });
      this.failHeld("agent_exited", this.piProblem);
      this.wakeSettled();
      void pi.killTree();
      this.finalExit(0);
      return;
    }
    this.piState = "restarting";
    const restartAgent = this.options.restartAgent;
    // Its tools must not finish their side effects: end the whole tree, then start a new Pi on the session.
    void pi.killTree().then((ended) => {
      if (ended.found > 0) this.options.log.warn({ ...ended }, "ended the tool processes Pi left behind");
      this.restartTimer = setTimeout(() => {
        if (this.shuttingDown || this.pi !== pi) return;
        let next: AgentUnit;
        try {
          next = restartAgent();
        } catch (err) {
          this.piState = "exited";
          this.piProblem = `restarting Pi failed: ${(err as Error).message}`;
          this.options.log.error({ err: (err as Error).message }, "restarting Pi failed");
          this.sink.publish({ type: "agent_exited", code: null, signal: null, reason: "restart_failed" });
          this.failHeld("agent_exited", this.piProblem);
          this.wakeSettled();
          this.finalExit(1);
          return;
        }
        this.options.log.info({ pid: next.pid, restarts: this.restartPolicy.count }, "Pi restarted");
        this.attachPi(next, { kind: "agent_exited", previous: exit });
      }, delay);
    });
  }

  /** Pi is gone for good: keep serving replay (network) for the linger, then exit; stdio exits now. */
  private finalExit(exitCode: number): void {
    if (this.shuttingDown) return;
    const reason = this.piState === "refused" ? "Pi failed the patch probe" : "agent exited";
    if (this.options.mode === "stdio") {
      this.options.requestShutdown(reason, exitCode);
      return;
    }
    clearTimeout(this.lingerTimer);
    this.lingerTimer = setTimeout(
      () => this.options.requestShutdown(`${reason}; linger over`, exitCode),
      this.options.lingerMs,
    );
  }

  /** Resolves once Pi is serving, refused or gone (never while it is starting or restarting), or at the deadline. */
  agentSettled(timeoutMs: number): Promise<void> {
    if (this.piState !== "starting" && this.piState !== "restarting") return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.settledWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private wakeSettled(): void {
    for (const wake of this.settledWaiters.splice(0)) wake();
  }

  // ------------------------------------------------------------------ client side

  /** One frame of text from the attached client (or stdin). */
  handleClientText(text: string): void {
    if (Buffer.byteLength(text) > this.options.maxFrameBytes) {
      this.rejectOversized();
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      this.publishError("invalid_json", capText(`frame is not JSON: ${(err as Error).message}`));
      return;
    }
    // JSON.parse is iterative; everything after it (schemas, digests, Pi) must never see deep data.
    if (nestsDeeperThan(text, MAX_FRAME_DEPTH)) {
      const problem = `frame nests deeper than ${MAX_FRAME_DEPTH} levels`;
      const id = isRecord(parsed) ? usableId(parsed.id) : undefined;
      const type = isRecord(parsed) && typeof parsed.type === "string" ? capText(parsed.type, 64) : "unknown";
      if (id !== undefined && type !== DIALOG_ANSWER)
        this.sink.publish(failure(id, type, "invalid_frame", problem));
      else this.publishError("invalid_frame", problem);
      return;
    }
    this.handleClientFrame(parsed);
  }

  /** Reports an over-long frame or stdin line. */
  rejectOversized(): void {
    this.publishError("frame_too_large", `frame exceeds --max-frame-bytes (${this.options.maxFrameBytes})`);
  }

  private handleClientFrame(parsed: unknown): void {
    if (!isRecord(parsed) || typeof parsed.type !== "string") {
      this.publishError("invalid_frame", "a frame is a JSON object with a string `type`");
      return;
    }
    const type = parsed.type;
    const rawId = parsed.id;
    const id = usableId(rawId);
    if (!CLIENT_FRAME_TYPES.includes(type)) {
      this.publishError("unknown_type", `unknown frame type "${capText(type, 64)}"`, id);
      return;
    }
    if (type === DIALOG_ANSWER) {
      this.handleDialogAnswer(parsed);
      return;
    }
    if (type === "hello") {
      this.publishError("invalid_frame", "hello is only valid as the first frame of a connection");
      return;
    }
    if (rawId !== undefined && id === undefined) {
      // Never echoed: an id of any length would come back as a frame of that length.
      this.publishError("invalid_frame", "`id` must be a string of 1 to 256 characters");
      return;
    }
    const check = ClientFrame.safeParse(parsed);
    if (!check.success) {
      const problem = capText(
        check.error.issues.map((i) => `${capText(i.path.join("."), 64) || "frame"}: ${i.message}`).join("; "),
      );
      if (id !== undefined) this.sink.publish(failure(id, type, "invalid_frame", problem));
      else this.publishError("invalid_frame", problem);
      return;
    }
    const frame = check.data;
    if (frame.type === "ack") {
      this.ackedSeq = Math.max(this.ackedSeq ?? 0, frame.seq);
      return;
    }
    if (id === undefined && this.options.mode === "network") {
      this.publishError("missing_id", `a ${type} command needs an "id" (its idempotency key)`);
      return;
    }
    if (id !== undefined && !this.beginCommand(id, parsed, type)) return;
    if (this.shuttingDown) {
      this.finishCommand(id, failure(id, type, "shutting_down", "the bridge is shutting down"));
      return;
    }
    switch (frame.type) {
      case "get_policy":
        this.finishCommand(id, {
          type: "response",
          id,
          command: type,
          success: true,
          data: this.policyReport(),
        });
        return;
      case "bridge_status":
        this.finishCommand(id, { type: "response", id, command: type, success: true, data: this.status() });
        return;
      case "set_policy":
        void this.setPolicy(id, frame.policy, frame.expected);
        return;
    }
    if (PiCommandFrame.safeParse(parsed).success) this.submitCommand(parsed, id, type);
  }

  /** Idempotency: true if the command is new and should run; otherwise the answer is already handled. */
  private beginCommand(id: string, payload: Frame, type: string): boolean {
    const decision = this.idempotency.begin(id, payload, type);
    switch (decision.kind) {
      case "new":
        return true;
      case "conflict":
        this.sink.publish(conflict(id, type));
        return false;
      case "running":
        return false; // it completes once; its response is on the way
      case "done":
        this.sink.publish(decision.response);
        return false;
    }
  }

  /** Forwards a Pi command now, holds it while Pi (re)starts, or fails it when Pi cannot serve. */
  private submitCommand(command: Frame, clientId: string | undefined, type: string): void {
    switch (this.piState) {
      case "running":
        this.forwardCommand(command, clientId, type);
        return;
      case "starting":
      case "restarting": {
        const bytes = approximateBytes(command);
        if (this.held.length >= MAX_HELD_COMMANDS || this.heldBytes + bytes > MAX_HELD_BYTES) {
          this.finishCommand(
            clientId,
            failure(clientId, type, "agent_starting", "Pi is starting and too many commands are waiting"),
          );
          return;
        }
        this.held.push({ command, clientId, type, bytes });
        this.heldBytes += bytes;
        this.updateIdleTimer();
        return;
      }
      case "refused":
        this.finishCommand(
          clientId,
          failure(clientId, type, "agent_unverified", this.piProblem ?? "refused"),
        );
        return;
      case "exited":
        this.finishCommand(clientId, failure(clientId, type, "agent_exited", "Pi is not running"));
        return;
    }
  }

  private releaseHeld(): void {
    const held = this.held.splice(0);
    this.heldBytes = 0;
    for (const h of held) this.forwardCommand(h.command, h.clientId, h.type);
  }

  private failHeld(code: string, message: string): void {
    const held = this.held.splice(0);
    this.heldBytes = 0;
    for (const h of held) this.finishCommand(h.clientId, failure(h.clientId, h.type, code, message));
  }

  private forwardCommand(command: Frame, clientId: string | undefined, type: string): void {
    const policy = type === "bash" ? this.policyReport()?.policy : undefined;
    const refused = policy ? userBashRefusal(policy) : undefined;
    if (refused) {
      // A person's `!` command is a shell like any other (the gate refuses it as well).
      this.finishCommand(clientId, failure(clientId, type, "policy_blocks_bash", refused));
      return;
    }
    if (type === "abort" || SESSION_REPLACING_COMMANDS.has(type)) {
      // Cancel means refused; and Pi would block a session swap on an open dialog.
      this.dialogs.refusePending("cancelled");
    }
    const piId = this.allocPiId();
    this.routes.set(piId, { kind: "client", clientId, command: type });
    this.writePi({ ...command, id: piId });
    this.updateIdleTimer();
  }

  private async setPolicy(
    id: string | undefined,
    policy: PolicyMode,
    expected: PolicyMode | undefined,
  ): Promise<void> {
    let result: SetPolicyResult;
    try {
      result = await this.options.policy.set({ policy, ...(expected ? { expected } : {}) });
    } catch (err) {
      result = { ok: false, error: "io_error", message: (err as Error).message };
    }
    if (result.ok) {
      this.options.log.info({ policy, previous: result.previous.policy }, "policy changed by the client");
      this.announcedPolicy = result.previous.policy;
      this.notePolicy(result.current, "set_policy");
      this.finishCommand(id, {
        type: "response",
        id,
        command: "set_policy",
        success: true,
        data: { previous: result.previous, current: result.current },
      });
    } else if (result.error === "policy_conflict") {
      this.finishCommand(id, {
        ...failure(
          id,
          "set_policy",
          "policy_conflict",
          `the policy is ${result.current.policy}, not ${expected}`,
        ),
        data: { current: result.current },
      });
    } else {
      this.finishCommand(id, failure(id, "set_policy", result.error, result.message));
    }
  }

  // ------------------------------------------------------------------ dialogs

  private handleDialogAnswer(frame: Frame): void {
    const rawDialogId = frame.id;
    const dialogId = usableId(rawDialogId);
    const rawCommandId = frame.commandId;
    const commandId = usableId(rawCommandId);
    if (rawCommandId !== undefined && commandId === undefined) {
      this.declineMalformed(dialogId, undefined, "commandId must be a non-empty string of at most 256 chars");
      return;
    }
    if (commandId === undefined && this.options.mode === "network") {
      this.declineMalformed(dialogId, undefined, 'an answer needs a "commandId" (its idempotency key)');
      return;
    }
    if (commandId !== undefined && !this.beginCommand(commandId, frame, DIALOG_ANSWER)) return;
    if (this.piState === "refused") {
      this.finishCommand(
        commandId,
        failure(commandId, DIALOG_ANSWER, "agent_unverified", this.piProblem ?? ""),
      );
      return;
    }
    const decision = this.dialogs.answer(dialogId, frame);
    switch (decision.kind) {
      case "not_pending":
        this.finishCommand(commandId, {
          ...failure(
            commandId,
            DIALOG_ANSWER,
            "ui_request_not_pending",
            `extension UI request is not pending (${decision.reason})`,
          ),
          data: { requestId: dialogId ?? null, reason: decision.reason },
        });
        return;
      case "malformed":
        this.reportMalformed(dialogId, commandId, decision.problem, decision.declined);
        return;
      case "forward": {
        const piId = this.allocPiId();
        this.routes.set(piId, { kind: "dialog", dialogId: decision.dialog.id, clientId: commandId });
        this.writePi({ type: DIALOG_ANSWER, id: decision.dialog.id, commandId: piId, ...decision.answer });
        return;
      }
    }
  }

  /** Pi's verdict on an answer we forwarded; the client gets it (with its own id), the book ends the dialog. */
  private onDialogVerdict(route: { dialogId: string; clientId: string | undefined }, line: Frame): void {
    const data = isRecord(line.data) ? line.data : {};
    const verdict: Verdict =
      line.success === true
        ? { kind: "accepted" }
        : line.code === "ui_request_not_pending"
          ? { kind: "not_pending", piReason: typeof data.reason === "string" ? data.reason : undefined }
          : { kind: "rejected" };
    // The response first: the client learns its answer's fate before any dialog_closed it causes.
    if (route.clientId !== undefined) this.finishCommand(route.clientId, withId(line, route.clientId));
    this.dialogs.verdict(route.dialogId, verdict);
  }

  /** A malformed answer declines a pending dialog; it never approves anything. */
  private declineMalformed(
    dialogId: string | undefined,
    commandId: string | undefined,
    problem: string,
  ): void {
    const pending = this.dialogs.isPending(dialogId);
    if (pending && dialogId !== undefined) this.dialogs.refuse(dialogId, "malformed_answer");
    this.reportMalformed(dialogId, commandId, problem, pending);
  }

  private reportMalformed(
    dialogId: string | undefined,
    commandId: string | undefined,
    problem: string,
    declined: boolean,
  ): void {
    const message = declined ? `${problem}; the dialog was declined` : problem;
    if (commandId !== undefined) {
      this.finishCommand(commandId, {
        ...failure(commandId, DIALOG_ANSWER, "invalid_ui_response", message),
        data: { requestId: dialogId ?? null, declined },
      });
    } else {
      this.publishError("invalid_frame", message, dialogId);
    }
  }

  private cancelDialogInPi(dialogId: string): void {
    if (this.piState !== "running" && this.piState !== "starting") return;
    const piId = this.allocPiId();
    this.routes.set(piId, { kind: "ignore" });
    this.writePi({ type: DIALOG_ANSWER, id: dialogId, commandId: piId, cancelled: true });
  }

  private dialogsChanged(): void {
    this.updateIdleTimer();
    if (!this.options.onOpenDialogs) return;
    const ids = this.dialogs.pending().map((d) => d.id);
    const key = ids.join("\n");
    if (key === this.openDialogIds) return;
    this.openDialogIds = key;
    this.options.onOpenDialogs(ids);
  }

  // ------------------------------------------------------------------ attachment & snapshot

  attach(clientId: string): void {
    this.attachedClient = clientId;
    this.ackedSeq = null;
    this.dialogs.attach();
    this.updateIdleTimer();
  }

  detach(clientId: string): void {
    if (this.attachedClient !== clientId) return;
    this.attachedClient = undefined;
    this.dialogs.detach();
    this.updateIdleTimer();
  }

  get attached(): string | undefined {
    return this.attachedClient;
  }

  pendingDialogs(): PendingDialog[] {
    return this.dialogs.pending();
  }

  /** Asks Pi for its state (bounded wait); falls back to the last known state. */
  async refreshState(timeoutMs = 5_000): Promise<boolean> {
    if (this.piState !== "running") return false;
    const response = await this.internalRequest({ type: "get_state" }, timeoutMs);
    if (response?.success === true && isRecord(response.data)) this.noteState(response.data);
    return response?.type === "response" && response.command === "get_state";
  }

  private internalRequest(command: Frame, timeoutMs: number): Promise<Frame | undefined> {
    const piId = this.allocPiId();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.routes.delete(piId);
        resolve(undefined);
      }, timeoutMs);
      this.routes.set(piId, {
        kind: "internal",
        resolve: (response) => {
          clearTimeout(timer);
          resolve(response);
        },
      });
      this.writePi({ ...command, id: piId });
    });
  }

  /** Keeps Pi's state, and tells the caller when Pi is on another session than last reported. */
  private noteState(data: Record<string, unknown>): void {
    this.lastState = data;
    const sessionId = typeof data.sessionId === "string" ? data.sessionId : undefined;
    if (!sessionId) return;
    const sessionFile = typeof data.sessionFile === "string" ? data.sessionFile : null;
    if (this.session?.sessionId === sessionId && this.session.sessionFile === sessionFile) return;
    this.session = { sessionId, sessionFile };
    this.options.onSession?.(this.session);
  }

  snapshot(): Snapshot {
    return {
      state: this.lastState,
      queue: { steering: [...this.queue.steering], followUp: [...this.queue.followUp] },
      pendingDialogs: this.pendingDialogs(),
      policy: this.policyReport(),
      pi: this.piStatus(),
      agentBusy: this.agentRunning,
      isolation: this.options.isolation(),
    };
  }

  status(): BridgeStatus {
    return {
      epoch: this.epoch,
      headSeq: this.sink.headSeq,
      firstSeq: this.firstSeq(),
      mode: this.options.mode,
      pi: this.piStatus(),
      isolation: this.options.isolation(),
      policy: this.policyReport(),
      pendingDialogs: this.pendingDialogs(),
      client: {
        attached: this.attachedClient !== undefined,
        clientId: this.attachedClient ?? null,
        ackedSeq: this.ackedSeq,
      },
      agentBusy: this.agentRunning,
      shuttingDown: this.shuttingDown,
      durability: this.options.durability(),
    };
  }

  /** Set by the transport that knows the ring. */
  firstSeq: () => number = () => 1;

  piStatus(): PiStatus {
    const exit = this.piState === "exited" || this.piState === "restarting" ? this.pi?.exitInfo : undefined;
    return {
      pid: this.pi?.pid ?? null,
      state: this.piState,
      exit: exit ? { code: exit.code, signal: exit.signal } : null,
      patched: this.piPatched,
      problem: this.piProblem,
      restarts: this.restartPolicy.count,
    };
  }

  /** Publishes policy_changed when the effective policy differs from the last one clients were told about. */
  private notePolicy(current: PolicyReport | null, cause: "set_policy" | "observed"): void {
    if (!current) return;
    const previous = this.announcedPolicy;
    this.announcedPolicy = current.policy;
    if (previous === current.policy) return;
    // The first reading is the baseline (it is in every welcome snapshot); only set_policy announces from none.
    if (previous === undefined && cause === "observed") return;
    this.sink.publish({ type: "policy_changed", previous: previous ?? null, current, cause });
  }

  private policyReport(): PolicyReport | null {
    try {
      return this.options.policy.read();
    } catch (err) {
      this.options.log.error({ err: (err as Error).message }, "cannot read the policy");
      return null;
    }
  }

  // ------------------------------------------------------------------ lifecycle

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Stops taking commands and refuses every pending dialog (Pi gets cancelled answers first). */
  beginShutdown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    clearTimeout(this.idleTimer);
    clearTimeout(this.lingerTimer);
    clearTimeout(this.restartTimer);
    this.failHeld("shutting_down", "the bridge is shutting down");
    this.dialogs.close();
  }

  /** The Pi currently bound (for shutdown). */
  get agent(): AgentUnit | undefined {
    return this.pi;
  }

  private updateIdleTimer(): void {
    const idle =
      !this.shuttingDown &&
      this.attachedClient === undefined &&
      !this.agentRunning &&
      this.dialogs.size === 0 &&
      this.held.length === 0 &&
      ![...this.routes.values()].some((r) => r.kind === "client" || r.kind === "dialog");
    if (idle && !this.idleTimer) {
      this.idleTimer = setTimeout(() => {
        this.idleTimer = undefined;
        this.options.requestShutdown("idle: no client and no agent activity");
      }, this.options.idleExitMs);
      this.idleTimer.unref();
    } else if (!idle && this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.idleTimer = undefined;
    }
  }

  // ------------------------------------------------------------------ helpers

  private finishCommand(clientId: string | undefined, response: Frame): void {
    if (clientId !== undefined) this.idempotency.complete(clientId, response, this.sink.headSeq + 1);
    this.sink.publish(response);
    this.updateIdleTimer();
  }

  publishError(code: string, message: string, id?: string): void {
    this.sink.publish({ type: "error", code, message, ...(id !== undefined ? { id } : {}) });
  }

  private allocPiId(): string {
    return `b${this.nextPiId++}`;
  }

  private writePi(command: Frame): void {
    this.pi?.write(`${JSON.stringify(command)}\n`);
  }
}

export type { DialogCloseReason };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A cheap upper-bound estimate of a parsed frame's size (its largest strings dominate). */
function approximateBytes(frame: Frame): number {
  let bytes = 64;
  for (const value of Object.values(frame)) {
    if (typeof value === "string") bytes += value.length * 2;
    else if (value !== null && typeof value === "object") bytes += JSON.stringify(value).length * 2;
  }
  return bytes;
}

/** The frame with `id` set to the client's id, or without `id` if the client sent none. */
function withId(frame: Frame, id: string | undefined): Frame {
  const { id: _piId, ...rest } = frame;
  return id === undefined ? rest : { ...rest, id };
}

function failure(id: string | undefined, command: string, code: string, message: string): Frame {
  return {
    type: "response",
    ...(id !== undefined ? { id } : {}),
    command,
    success: false,
    error: `${code}: ${message}`,
    code,
  };
}

/** `code` is exactly "idempotency_conflict"; `error` follows the patched Pi's "<code>: <message>" style. */
function conflict(id: string, command: string): Frame {
  return failure(id, command, "idempotency_conflict", "this id was used before with a different payload");
}
