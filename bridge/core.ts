// The bridge's state machine, independent of the transport: Pi's lines in, numbered frames out;
// client commands checked, deduplicated and forwarded with the bridge's own ids; dialogs tracked
// and refused (never approved) on every path that cannot get a real answer.
import { randomBytes } from "node:crypto";
import type { Logger } from "../agent-runtime/log.ts";
import type { EffectivePolicy, PolicyMode, SetPolicyResult } from "../agent-runtime/policy/policy-store.ts";
import { checkAnswer, toPendingDialog } from "./dialogs.ts";
import { IdempotencyStore } from "./idempotency.ts";
import type { PiChild, PiExitInfo } from "./pi-child.ts";
import {
  type BridgeStatus,
  CLIENT_FRAME_TYPES,
  ClientFrame,
  type Isolation,
  type PendingDialog,
  PiCommandFrame,
  type PiStatus,
  type PolicyReport,
  type QueueSnapshot,
  SESSION_REPLACING_COMMANDS,
  type Snapshot,
} from "./protocol.ts";

export type Frame = Record<string, unknown>;

/** Where numbered frames go: the replay ring (network) or stdout (stdio). */
export interface FrameSink {
  /** `raw` is Pi's own JSON text for `frame` when it passes through unchanged. */
  publish(frame: Frame, raw?: string): void;
  readonly headSeq: number;
}

export interface PolicyAccess {
  read(): EffectivePolicy;
  set(options: { policy: PolicyMode; expected?: PolicyMode }): Promise<SetPolicyResult>;
}

export interface CoreOptions {
  mode: "network" | "stdio";
  detachedGraceMs: number;
  idleExitMs: number;
  maxFrameBytes: number;
  /** The live isolation report (it changes if the tool executor stops). */
  isolation: () => Isolation;
  policy: PolicyAccess;
  log: Logger;
  /** Called when the bridge should shut down (idle exit, Pi exit after linger). */
  requestShutdown: (reason: string) => void;
  /** Network mode: how long to keep serving replay after Pi exited. */
  lingerMs: number;
  /** Random 128-bit hex; generated here if not given. */
  epoch?: string;
}

type Route =
  | { kind: "client"; clientId: string | undefined; command: string }
  | { kind: "internal"; resolve: (response: Frame) => void }
  | { kind: "ignore" };

interface TrackedDialog {
  dialog: PendingDialog;
  timeoutTimer: NodeJS.Timeout | undefined;
  graceTimer: NodeJS.Timeout | undefined;
}

const MAX_TOMBSTONES = 4096;

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

export class BridgeCore {
  readonly epoch: string;
  private pi: PiChild | undefined;
  private piState: PiStatus["state"] = "starting";
  private piPatched: boolean | null = null;
  private readonly routes = new Map<string, Route>();
  private nextPiId = 1;
  private readonly idempotency = new IdempotencyStore();
  private readonly dialogs = new Map<string, TrackedDialog>();
  private readonly tombstones = new Map<string, string>();
  private queue: QueueSnapshot = { steering: [], followUp: [] };
  private lastState: Record<string, unknown> | null = null;
  private agentRunning = false;
  /** The policy clients last saw (welcome snapshot or policy_changed). */
  private announcedPolicy: PolicyReport["policy"] | undefined;
  private attachedClient: string | undefined;
  private ackedSeq: number | null = null;
  private idleTimer: NodeJS.Timeout | undefined;
  private lingerTimer: NodeJS.Timeout | undefined;
  private shuttingDown = false;

  private readonly sink: FrameSink;
  private readonly options: CoreOptions;

  constructor(sink: FrameSink, options: CoreOptions) {
    this.sink = sink;
    this.options = options;
    this.epoch = options.epoch ?? randomBytes(16).toString("hex");
    this.announcedPolicy = this.policyReport()?.policy;
  }

  // ------------------------------------------------------------------ Pi side

  /** Binds the spawned Pi; probes for the correlated-answer patch and caches Pi's state. */
  attachPi(pi: PiChild): void {
    this.pi = pi;
    this.piState = "running";
    void pi.exited.then((exit) => this.onPiExit(exit));
    // A patched Pi answers a correlated response for an unknown dialog; an unpatched one stays silent.
    const probeId = this.allocPiId();
    this.routes.set(probeId, { kind: "internal", resolve: () => this.setPatched(true) });
    this.writePi({
      type: "extension_ui_response",
      id: `bridge-probe-${this.epoch}`,
      commandId: probeId,
      cancelled: true,
    });
    void this.refreshState(60_000).then((answered) => {
      // Pi handles its input in order: get_state answered with no probe verdict means no patch.
      if (answered && this.piPatched === null) {
        this.routes.delete(probeId);
        this.setPatched(false);
      }
    });
    this.updateIdleTimer();
  }

  private setPatched(patched: boolean): void {
    if (this.piPatched !== null) return;
    this.piPatched = patched;
    if (!patched) {
      this.options.log.warn(
        "Pi does not answer correlated extension_ui_response (patch missing): dialog answers are forwarded unverified",
      );
    }
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
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
      line = parsed as Frame;
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
    if (route.kind === "internal") {
      route.resolve(line);
      return;
    }
    if (route.kind === "ignore") return;
    if (line.success === true && SESSION_REPLACING_COMMANDS.has(String(line.command))) {
      // Pi discards the old queues without a queue_update.
      this.queue = { steering: [], followUp: [] };
    }
    if (line.command === "get_state" && line.success === true && isRecord(line.data))
      this.lastState = line.data;
    this.finishCommand(route.clientId, withId(line, route.clientId));
  }

  private onDialogRequest(line: Frame, raw: string): void {
    const seqOfRequest = this.sink.headSeq + 1;
    const dialog = toPendingDialog(line, seqOfRequest);
    this.sink.publish(line, raw);
    if (!dialog) return;
    if (this.shuttingDown) {
      this.refuseDialog(dialog.id, "shutdown");
      return;
    }
    const tracked: TrackedDialog = { dialog, timeoutTimer: undefined, graceTimer: undefined };
    if (typeof line.timeout === "number" && line.timeout > 0) {
      // Pi resolves it with the default when its timer fires; mirror that so the pending list stays true.
      tracked.timeoutTimer = setTimeout(() => this.closeDialog(dialog.id, "timed_out", false), line.timeout);
    }
    this.dialogs.set(dialog.id, tracked);
    if (this.attachedClient === undefined) this.startGrace(tracked);
    this.updateIdleTimer();
  }

  private onPiExit(exit: PiExitInfo): void {
    this.piState = "exited";
    this.options.log.warn({ code: exit.code, signal: exit.signal }, "Pi exited");
    this.sink.publish({ type: "agent_exited", code: exit.code, signal: exit.signal });
    for (const id of [...this.dialogs.keys()]) this.closeDialog(id, "agent_exited", false);
    for (const [piId, route] of this.routes) {
      this.routes.delete(piId);
      if (route.kind === "client") {
        this.finishCommand(
          route.clientId,
          failure(route.clientId, route.command, "agent_exited", "Pi exited"),
        );
      } else if (route.kind === "internal") {
        route.resolve(failure(undefined, "internal", "agent_exited", "Pi exited"));
      }
    }
    this.updateIdleTimer();
    if (this.shuttingDown) return;
    if (this.options.mode === "stdio") {
      this.options.requestShutdown("agent exited");
    } else {
      this.lingerTimer = setTimeout(
        () => this.options.requestShutdown("agent exited; linger over"),
        this.options.lingerMs,
      );
    }
  }

  // ------------------------------------------------------------------ client side

  /** One frame of text from the attached client (or stdin). */
  handleClientText(text: string): void {
    if (Buffer.byteLength(text) > this.options.maxFrameBytes) {
      this.publishError("frame_too_large", `frame exceeds --max-frame-bytes (${this.options.maxFrameBytes})`);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      this.publishError("invalid_json", `frame is not JSON: ${(err as Error).message}`);
      return;
    }
    this.handleClientFrame(parsed);
  }

  /** Reports an over-long stdin line (stdio mode). */
  rejectOversized(): void {
    this.publishError("frame_too_large", `frame exceeds --max-frame-bytes (${this.options.maxFrameBytes})`);
  }

  handleClientFrame(parsed: unknown): void {
    if (!isRecord(parsed) || typeof parsed.type !== "string") {
      this.publishError("invalid_frame", "a frame is a JSON object with a string `type`");
      return;
    }
    const type = parsed.type;
    const id = typeof parsed.id === "string" ? parsed.id : undefined;
    if (!CLIENT_FRAME_TYPES.includes(type)) {
      this.publishError("unknown_type", `unknown frame type "${type.slice(0, 64)}"`, id);
      return;
    }
    if (type === "extension_ui_response") {
      this.handleDialogAnswer(parsed);
      return;
    }
    if (type === "hello") {
      this.publishError("invalid_frame", "hello is only valid as the first frame of a connection");
      return;
    }
    const check = ClientFrame.safeParse(parsed);
    if (!check.success) {
      const problem = check.error.issues
        .map((i) => `${i.path.join(".") || "frame"}: ${i.message}`)
        .join("; ");
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
    if (id !== undefined) {
      const decision = this.idempotency.begin(id, parsed);
      if (decision.kind === "conflict") {
        this.sink.publish(conflict(id, type));
        return;
      }
      if (decision.kind === "running") return; // it completes once; its response is on the way
      if (decision.kind === "done") {
        this.sink.publish(decision.response);
        return;
      }
    }
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
    if (PiCommandFrame.safeParse(parsed).success) this.forwardCommand(parsed, id, type);
  }

  private forwardCommand(command: Frame, clientId: string | undefined, type: string): void {
    if (this.piState === "exited" || !this.pi) {
      this.finishCommand(clientId, failure(clientId, type, "agent_exited", "Pi is not running"));
      return;
    }
    if (type === "bash" && this.policyReport()?.policy === "read-only") {
      // A person's `!` command is a shell like any other: read-only stops it here too (the gate refuses it as well).
      this.finishCommand(
        clientId,
        failure(clientId, type, "policy_blocks_bash", "the policy is read-only: `!` commands do not run"),
      );
      return;
    }
    if (type === "abort" || SESSION_REPLACING_COMMANDS.has(type)) {
      // Cancel means refused; and Pi would block a session swap on an open dialog.
      for (const dialogId of [...this.dialogs.keys()]) this.refuseDialog(dialogId, "cancelled");
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
    const dialogId = typeof frame.id === "string" ? frame.id : undefined;
    const rawCommandId = frame.commandId;
    const commandId = typeof rawCommandId === "string" && rawCommandId.length > 0 ? rawCommandId : undefined;
    const command = "extension_ui_response";
    if (rawCommandId !== undefined && (commandId === undefined || commandId.length > 256)) {
      this.declineMalformed(dialogId, undefined, "commandId must be a non-empty string of at most 256 chars");
      return;
    }
    if (commandId === undefined && this.options.mode === "network") {
      this.declineMalformed(dialogId, undefined, 'an answer needs a "commandId" (its idempotency key)');
      return;
    }
    if (commandId !== undefined) {
      const decision = this.idempotency.begin(commandId, frame);
      if (decision.kind === "conflict") {
        this.sink.publish(conflict(commandId, command));
        return;
      }
      if (decision.kind === "running") return;
      if (decision.kind === "done") {
        this.sink.publish(decision.response);
        return;
      }
    }
    const tracked = dialogId !== undefined ? this.dialogs.get(dialogId) : undefined;
    if (!tracked || dialogId === undefined) {
      const reason = (dialogId && this.tombstones.get(dialogId)) ?? "unknown";
      this.finishCommand(commandId, {
        ...failure(
          commandId,
          command,
          "ui_request_not_pending",
          `extension UI request is not pending (${reason})`,
        ),
        data: { requestId: dialogId ?? null, reason },
      });
      return;
    }
    const check = checkAnswer(tracked.dialog, frame);
    if (!check.ok) {
      this.declineMalformed(dialogId, commandId, check.problem);
      return;
    }
    this.forgetDialog(dialogId, "answered");
    if (this.piState === "exited") {
      this.finishCommand(commandId, failure(commandId, command, "agent_exited", "Pi is not running"));
      return;
    }
    const piId = this.allocPiId();
    if (this.piPatched === false) {
      // No verdict will come back from an unpatched Pi: say so rather than claim a verified answer.
      this.routes.set(piId, { kind: "ignore" });
      this.writePi({ type: command, id: dialogId, commandId: piId, ...check.answer });
      this.finishCommand(commandId, {
        type: "response",
        id: commandId,
        command,
        success: true,
        data: { requestId: dialogId, method: tracked.dialog.method, resolved: true, verified: false },
      });
      return;
    }
    this.routes.set(piId, commandId ? { kind: "client", clientId: commandId, command } : { kind: "ignore" });
    this.writePi({ type: command, id: dialogId, commandId: piId, ...check.answer });
  }

  /** A malformed answer declines a pending dialog; it never approves anything. */
  private declineMalformed(
    dialogId: string | undefined,
    commandId: string | undefined,
    problem: string,
  ): void {
    const pending = dialogId !== undefined && this.dialogs.has(dialogId);
    const message = pending ? `${problem}; the dialog was declined` : problem;
    if (commandId !== undefined) {
      this.finishCommand(commandId, {
        ...failure(commandId, "extension_ui_response", "invalid_ui_response", message),
        data: { requestId: dialogId ?? null, declined: pending },
      });
    } else {
      this.publishError("invalid_frame", message, dialogId);
    }
    if (pending) this.refuseDialog(dialogId, "malformed_answer");
  }

  /** Answers Pi with cancelled (the gate blocks) and announces the refusal. */
  private refuseDialog(dialogId: string, reason: DialogCloseReason): void {
    if (this.piState !== "exited") {
      const piId = this.allocPiId();
      this.routes.set(piId, { kind: "ignore" });
      this.writePi({ type: "extension_ui_response", id: dialogId, commandId: piId, cancelled: true });
    }
    this.closeDialog(dialogId, reason, true);
  }

  private closeDialog(dialogId: string, reason: DialogCloseReason, announceEvenIfUnknown: boolean): void {
    const known = this.dialogs.has(dialogId);
    if (!known && !announceEvenIfUnknown) return;
    this.forgetDialog(dialogId, reason === "timed_out" ? "timed_out" : "refused");
    this.sink.publish({ type: "dialog_closed", id: dialogId, outcome: "refused", reason });
    this.updateIdleTimer();
  }

  private forgetDialog(dialogId: string, tombstone: string): void {
    const tracked = this.dialogs.get(dialogId);
    if (tracked) {
      clearTimeout(tracked.timeoutTimer);
      clearTimeout(tracked.graceTimer);
      this.dialogs.delete(dialogId);
    }
    this.tombstones.set(dialogId, tombstone);
    if (this.tombstones.size > MAX_TOMBSTONES) {
      const oldest = this.tombstones.keys().next().value;
      if (oldest !== undefined) this.tombstones.delete(oldest);
    }
  }

  private startGrace(tracked: TrackedDialog): void {
    clearTimeout(tracked.graceTimer);
    tracked.graceTimer = setTimeout(() => {
      if (this.attachedClient === undefined && this.dialogs.has(tracked.dialog.id)) {
        this.options.log.warn(
          { dialog: tracked.dialog.id },
          "no client within the detached grace: dialog refused",
        );
        this.refuseDialog(tracked.dialog.id, "detached_grace");
      }
    }, this.options.detachedGraceMs);
  }

  // ------------------------------------------------------------------ attachment & snapshot

  attach(clientId: string): void {
    this.attachedClient = clientId;
    this.ackedSeq = null;
    for (const tracked of this.dialogs.values()) {
      clearTimeout(tracked.graceTimer);
      tracked.graceTimer = undefined;
    }
    this.updateIdleTimer();
  }

  detach(clientId: string): void {
    if (this.attachedClient !== clientId) return;
    this.attachedClient = undefined;
    for (const tracked of this.dialogs.values()) this.startGrace(tracked);
    this.updateIdleTimer();
  }

  get attached(): string | undefined {
    return this.attachedClient;
  }

  pendingDialogs(): PendingDialog[] {
    return [...this.dialogs.values()].map((t) => t.dialog);
  }

  /** Asks Pi for its state (bounded wait; longer while Pi is still starting); falls back to the last known state. */
  async refreshState(timeoutMs = this.lastState ? 2_000 : 30_000): Promise<boolean> {
    if (this.piState !== "running" || !this.pi) return false;
    const piId = this.allocPiId();
    const response = await new Promise<Frame | undefined>((resolve) => {
      const timer = setTimeout(() => {
        this.routes.delete(piId);
        resolve(undefined);
      }, timeoutMs);
      this.routes.set(piId, {
        kind: "internal",
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
      });
      this.writePi({ type: "get_state", id: piId });
    });
    if (response?.success === true && isRecord(response.data)) this.lastState = response.data;
    return response?.type === "response" && response.command === "get_state";
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
    };
  }

  /** Set by the transport that knows the ring. */
  firstSeq: () => number = () => 1;

  piStatus(): PiStatus {
    return {
      pid: this.pi?.pid ?? null,
      state: this.piState,
      exit: this.pi?.exitInfo ? { code: this.pi.exitInfo.code, signal: this.pi.exitInfo.signal } : null,
      patched: this.piPatched,
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
    for (const dialogId of [...this.dialogs.keys()]) this.refuseDialog(dialogId, "shutdown");
  }

  private updateIdleTimer(): void {
    const idle =
      !this.shuttingDown &&
      this.attachedClient === undefined &&
      !this.agentRunning &&
      this.dialogs.size === 0 &&
      ![...this.routes.values()].some((r) => r.kind === "client");
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
    if (clientId !== undefined) this.idempotency.complete(clientId, response);
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

type DialogCloseReason =
  | "malformed_answer"
  | "detached_grace"
  | "cancelled"
  | "timed_out"
  | "shutdown"
  | "agent_exited";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
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
