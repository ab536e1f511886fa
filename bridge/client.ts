// The typed bridge client: chat-ui, our tests, the terminal client and the demo all drive the bridge
// through this. It reconnects by itself, resumes from its last seq, retries every command with the
// same id until it is answered (the bridge runs each id once), and builds dialog answers that match
// the dialog's kind, so a caller cannot send a malformed approval by accident.

import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import WebSocket from "ws";
import type { z } from "zod";
import {
  AgentExitedFrame,
  AgentRestartedFrame,
  DIALOG_METHODS,
  DialogClosedFrame,
  ErrorFrame,
  PendingDialog,
  type PolicyName,
  PROTOCOL_VERSION,
  type QueueSnapshot,
  READ_ONLY_COMMANDS,
  ResponseFrame,
  type Snapshot,
  WelcomeFrame,
} from "./protocol.ts";

export type ConnectionState = "connecting" | "live" | "resuming" | "closed";
export type BridgeResponse = z.infer<typeof ResponseFrame>;
export type BridgeErrorFrame = z.infer<typeof ErrorFrame>;
export type DialogClosed = z.infer<typeof DialogClosedFrame>;
export type AgentExited = z.infer<typeof AgentExitedFrame>;
export type AgentRestarted = z.infer<typeof AgentRestartedFrame>;
export type Welcome = z.infer<typeof WelcomeFrame>;
/** Any numbered frame after the welcome: Pi events, responses, dialog_closed, agent_exited… */
export type BridgeFrame = { type: string; seq: number; [key: string]: unknown };

/** What the person decided; `answer` turns it into the right wire shape for the dialog's kind. */
export type DialogDecision =
  | { kind: "confirm"; confirmed: boolean }
  | { kind: "select"; value: string }
  | { kind: "text"; value: string }
  | { kind: "cancel" };

export interface AnswerResult {
  /** True only if Pi still had the dialog pending and took this answer. */
  delivered: boolean;
  response: BridgeResponse;
}

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
}

export interface BridgeClientOptions {
  /** ws://127.0.0.1:<port>/v1/rpc, or sbx-server's proxy URL (https:// is turned into wss://). */
  url: string;
  /** The bridge token; sent in the hello frame, never in the URL. */
  token: string;
  /** Extra handshake headers, e.g. sbx-server's X-Sandbox-Token. */
  headers?: Record<string, string>;
  clientId?: string;
  backoff?: Partial<BackoffOptions>;
  /** Give up reconnecting after this many consecutive failed attempts (default: never). */
  maxAttempts?: number;
}

interface PendingCommand {
  frame: Record<string, unknown>;
  resolve: (response: BridgeResponse) => void;
  reject: (error: Error) => void;
  /** Numbers (this client's send counter) of its first and latest send, and how many sends; 0 before any. */
  firstSend: number;
  lastSend: number;
  sends: number;
}

interface ClientEvents {
  state: [state: ConnectionState, detail: { attempt: number; closeCode?: number; reason?: string }];
  welcome: [welcome: Welcome];
  /** The bridge could not replay: the caller must rebuild its view from the snapshot. */
  reset: [info: { reason: NonNullable<Welcome["reset"]>; snapshot: Snapshot }];
  /** Resumed from `fromSeq`; `replayed` frames follow through `frame` as usual. */
  resumed: [info: { fromSeq: number; headSeq: number }];
  frame: [frame: BridgeFrame];
  dialog: [dialog: PendingDialog];
  dialogClosed: [info: { id: string; outcome: string; reason: string }];
  queue: [queue: QueueSnapshot];
  agentExited: [info: AgentExited];
  /** A new Pi took over on the same session (its queues and any running turn are gone). */
  agentRestarted: [info: AgentRestarted];
  protocolError: [frame: BridgeErrorFrame];
}

const CLOSE_UNAUTHORIZED = 4001;
const CLOSE_SUPERSEDED = 4002;

/** Close codes after which reconnecting would not help (or would fight another controller). */
const FATAL_CLOSE_CODES = new Set([CLOSE_UNAUTHORIZED, CLOSE_SUPERSEDED]);

export class BridgeClientClosedError extends Error {}

export class BridgeClient extends EventEmitter<ClientEvents> {
  readonly clientId: string;
  /** Dialogs Pi is waiting on, by dialog id. */
  readonly dialogs = new Map<string, PendingDialog>();
  private queueSnapshot: QueueSnapshot = { steering: [], followUp: [] };
  private ws: WebSocket | undefined;
  private currentState: ConnectionState = "closed";
  private epoch: string | undefined;
  private seq = 0;
  private attempt = 0;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private notBefore = 0;
  private readonly pending = new Map<string, PendingCommand>();
  private sendCounter = 0;
  /**
   * Ids answered after being sent more than once, with their latest send number. The bridge answers each send
   * it handles (a resend of a finished command gets the recorded response again), so another answer to that
   * id may still be on its way. It arrives before the answer to anything sent later: an id leaves this map once
   * such an answer arrives, and reusing it before that waits for one (see `command`).
   */
  private readonly echoing = new Map<string, number>();
  private readonly backoff: BackoffOptions;
  private firstLive: { resolve: () => void; reject: (error: Error) => void } | undefined;

  private readonly options: BridgeClientOptions;

  constructor(options: BridgeClientOptions) {
    super();
    this.options = options;
    this.clientId = options.clientId ?? `client-${randomUUID()}`;
    this.backoff = { initialMs: 100, maxMs: 5_000, ...options.backoff };
  }

  get state(): ConnectionState {
    return this.currentState;
  }

  /** Last seq received (the resume cursor). */
  get lastSeq(): number {
    return this.seq;
  }

  get bridgeEpoch(): string | undefined {
    return this.epoch;
  }

  get queue(): QueueSnapshot {
    return this.queueSnapshot;
  }

  /** Connects; resolves once the first welcome arrives. Reconnects on its own afterwards. */
  connect(): Promise<void> {
    this.stopped = false;
    return new Promise((resolve, reject) => {
      this.firstLive = { resolve, reject };
      this.open();
    });
  }

  /** Closes for good: pending commands are rejected (they may or may not have run). */
  close(): void {
    this.shutdown({ attempt: this.attempt });
  }

  /** Stops for good; `detail` says why (the bridge's close code when it ended the session). */
  private shutdown(detail: ClientEvents["state"][1]): void {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    this.ws?.close(1000, "client closed");
    this.ws = undefined;
    this.setState("closed", detail);
    for (const [id, command] of this.pending) {
      this.pending.delete(id);
      command.reject(new BridgeClientClosedError(`client closed before a response to ${id}`));
    }
  }

  /**
   * Drops the current connection as a network failure would; the client resumes by itself, no sooner
   * than `pauseMs` later (so frames pile up at the bridge meanwhile, as in a real outage).
   */
  dropConnection(pauseMs = 0): void {
    this.notBefore = Date.now() + pauseMs;
    this.ws?.terminate();
  }

  /**
   * Sends a command and resolves with its response. The id is kept across reconnects and the
   * command is re-sent until answered; the bridge's idempotency makes it take effect once.
   */
  command(frame: Record<string, unknown> & { type: string; id?: string }): Promise<BridgeResponse> {
    if (this.stopped && this.currentState === "closed") {
      return Promise.reject(new BridgeClientClosedError("client is closed"));
    }
    const id = frame.id ?? randomUUID();
    if (this.echoing.has(id)) {
      // An earlier answer to this id may still arrive: a read-only command's answer comes after it, so it
      // cannot be taken for this command's.
      const barrier = randomUUID();
      return this.sendTracked(barrier, { type: "get_policy", id: barrier }).then(() =>
        this.command({ ...frame, id }),
      );
    }
    return this.sendTracked(id, { ...frame, id });
  }

  /** Registers a frame under its correlation key (the id its response will carry) and sends it when live. */
  private sendTracked(key: string, frame: Record<string, unknown>): Promise<BridgeResponse> {
    if (this.pending.has(key)) {
      return Promise.reject(new Error(`a command with id ${key} is already waiting for its response`));
    }
    return new Promise((resolve, reject) => {
      const command = { frame, resolve, reject, firstSend: 0, lastSend: 0, sends: 0 };
      this.pending.set(key, command);
      if (this.currentState === "live") this.sendCommand(command);
    });
  }

  prompt(message: string, extra: { images?: unknown[]; streamingBehavior?: "steer" | "followUp" } = {}) {
    return this.command({ type: "prompt", message, ...extra });
  }
  steer(message: string, images?: unknown[]) {
    return this.command({ type: "steer", message, ...(images ? { images } : {}) });
  }
  followUp(message: string, images?: unknown[]) {
    return this.command({ type: "follow_up", message, ...(images ? { images } : {}) });
  }
  abort() {
    return this.command({ type: "abort" });
  }
  getState() {
    return this.command({ type: "get_state" });
  }
  getMessages() {
    return this.command({ type: "get_messages" });
  }
  setModel(provider: string, modelId: string) {
    return this.command({ type: "set_model", provider, modelId });
  }
  newSession() {
    return this.command({ type: "new_session" });
  }
  /** Atomic compare-and-swap over both queues (the patched Pi's replace_queue). */
  replaceQueue(expected: QueueSnapshot, replacement: ReplacementQueue) {
    return this.command({ type: "replace_queue", expected, replacement });
  }
  setPolicy(policy: PolicyName, expected?: PolicyName) {
    return this.command({ type: "set_policy", policy, ...(expected ? { expected } : {}) });
  }
  getPolicy() {
    return this.command({ type: "get_policy" });
  }
  status() {
    return this.command({ type: "bridge_status" });
  }

  /**
   * Answers a pending dialog. The decision must fit the dialog's kind (confirm → yes/no, select → one
   * of the offered options, input/editor → text, or cancel); anything else throws before sending.
   */
  async answer(dialogId: string, decision: DialogDecision): Promise<AnswerResult> {
    const dialog = this.dialogs.get(dialogId);
    if (!dialog) throw new Error(`no pending dialog ${dialogId}`);
    // The frame's `id` is the dialog's; `commandId` correlates Pi's verdict (and makes retries idempotent).
    const commandId = randomUUID();
    const response = await this.sendTracked(commandId, {
      type: "extension_ui_response",
      ...answerFields(dialog, decision),
      commandId,
    });
    if (response.success) this.dialogs.delete(dialogId);
    return { delivered: response.success, response };
  }

  private open(): void {
    clearTimeout(this.reconnectTimer);
    // After a drop, onClose already announced "resuming"; a first connection is "connecting".
    if (this.epoch === undefined) this.setState("connecting", { attempt: this.attempt });
    const url = this.options.url.replace(/^http(s?):/, "ws$1:");
    const ws = new WebSocket(url, { headers: this.options.headers, perMessageDeflate: false });
    this.ws = ws;
    ws.on("open", () => {
      ws.send(
        JSON.stringify({
          type: "hello",
          protocol: PROTOCOL_VERSION,
          token: this.options.token,
          clientId: this.clientId,
          ...(this.epoch ? { resume: { epoch: this.epoch, lastSeq: this.seq } } : {}),
        }),
      );
    });
    ws.on("message", (data) => {
      if (this.ws !== ws) return;
      this.onMessage(data.toString());
    });
    ws.on("error", () => {
      // "close" follows and drives the reconnect.
    });
    ws.on("close", (code, reason) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.onClose(code, reason.toString());
    });
  }

  private onClose(code: number, reason: string): void {
    if (this.stopped) return;
    if (FATAL_CLOSE_CODES.has(code)) {
      const error = new Error(`bridge closed the connection: ${code} ${reason}`);
      this.firstLive?.reject(error);
      this.firstLive = undefined;
      // One "closed" state, carrying the bridge's code (attach prints "closed by the bridge" from it).
      this.shutdown({ attempt: this.attempt, closeCode: code, reason });
      return;
    }
    this.attempt += 1;
    if (this.options.maxAttempts !== undefined && this.attempt > this.options.maxAttempts) {
      this.firstLive?.reject(new Error(`gave up after ${this.options.maxAttempts} attempts`));
      this.firstLive = undefined;
      this.close();
      return;
    }
    this.setState("resuming", { attempt: this.attempt, closeCode: code, reason });
    // Capped exponential backoff with full jitter, so many clients do not reconnect in lockstep.
    const ceiling = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** (this.attempt - 1));
    const delay = Math.max(Math.random() * ceiling, this.notBefore - Date.now());
    this.reconnectTimer = setTimeout(() => this.open(), delay);
  }

  private onMessage(text: string): void {
    let frame: BridgeFrame;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (frame.type === "welcome") {
      this.onWelcome(WelcomeFrame.parse(frame));
      return;
    }
    if (typeof frame.seq !== "number") return;
    // Replay after a resume can overlap what we already have: each seq is delivered once, in order.
    if (frame.seq <= this.seq) return;
    this.seq = frame.seq;
    this.track(frame);
    this.emit("frame", frame);
  }

  private onWelcome(welcome: Welcome): void {
    const resumedFrom = this.seq;
    this.epoch = welcome.epoch;
    this.attempt = 0;
    if (welcome.resumed) {
      this.emit("resumed", { fromSeq: resumedFrom, headSeq: welcome.headSeq });
    } else {
      // Not resumable: start over from the snapshot, never silently skip.
      this.seq = welcome.headSeq;
      this.dialogs.clear();
      for (const dialog of welcome.snapshot.pendingDialogs) this.dialogs.set(dialog.id, dialog);
      this.queueSnapshot = welcome.snapshot.queue;
      if (welcome.reset) this.emit("reset", { reason: welcome.reset, snapshot: welcome.snapshot });
    }
    this.emit("welcome", welcome);
    this.setState("live", { attempt: 0 });
    if (welcome.reset === "epoch_changed") this.settleUnknowable();
    for (const command of this.pending.values()) this.sendCommand(command);
    this.firstLive?.resolve();
    this.firstLive = undefined;
  }

  /**
   * The bridge's state was lost (a new epoch): it cannot know whether a pending command ran. Reads are resent;
   * every other command resolves with `outcome_unknown` (seq 0: made here, never sent by the bridge) instead of
   * being run a second time.
   */
  private settleUnknowable(): void {
    for (const [id, command] of this.pending) {
      const type = String(command.frame.type);
      if (READ_ONLY_COMMANDS.has(type)) continue;
      this.pending.delete(id);
      command.resolve({
        type: "response",
        seq: 0,
        id,
        command: type,
        success: false,
        code: "outcome_unknown",
        error:
          "outcome_unknown: the bridge lost its state (a new epoch) before this command was answered; it may or may not have run, and it was not resent",
      });
    }
  }

  private track(frame: BridgeFrame): void {
    switch (frame.type) {
      case "response": {
        const response = ResponseFrame.safeParse(frame);
        if (!response.success || response.data.id === undefined) return;
        const command = this.pending.get(response.data.id);
        if (!command) return;
        this.pending.delete(response.data.id);
        // This answers a send after the latest send of these ids: their other answers came before it.
        for (const [id, lastSend] of this.echoing) if (lastSend < command.firstSend) this.echoing.delete(id);
        if (command.sends > 1) this.echoing.set(response.data.id, command.lastSend);
        command.resolve(response.data);
        return;
      }
      case "extension_ui_request": {
        if (!(DIALOG_METHODS as readonly unknown[]).includes(frame.method)) return;
        const dialog = PendingDialog.safeParse(frame);
        if (!dialog.success) return;
        this.dialogs.set(dialog.data.id, dialog.data);
        this.emit("dialog", dialog.data);
        return;
      }
      case "dialog_closed": {
        const closed = DialogClosedFrame.safeParse(frame);
        if (!closed.success) return;
        this.dialogs.delete(closed.data.id);
        this.emit("dialogClosed", closed.data);
        return;
      }
      case "queue_update": {
        const { steering, followUp } = frame as unknown as QueueSnapshot;
        if (Array.isArray(steering) && Array.isArray(followUp)) {
          this.queueSnapshot = { steering, followUp };
          this.emit("queue", this.queueSnapshot);
        }
        return;
      }
      case "agent_restarted": {
        const restarted = AgentRestartedFrame.safeParse(frame);
        if (!restarted.success) return;
        // The Pi that held the queues is gone (its dialogs were closed by dialog_closed frames before this).
        this.queueSnapshot = { steering: [], followUp: [] };
        this.emit("queue", this.queueSnapshot);
        this.emit("agentRestarted", restarted.data);
        return;
      }
      case "agent_exited": {
        const exited = AgentExitedFrame.safeParse(frame);
        if (!exited.success) return;
        this.dialogs.clear();
        this.emit("agentExited", exited.data);
        return;
      }
      case "error": {
        const error = ErrorFrame.safeParse(frame);
        if (error.success) this.emit("protocolError", error.data);
        return;
      }
    }
  }

  private sendCommand(command: PendingCommand): void {
    command.lastSend = ++this.sendCounter;
    command.firstSend ||= command.lastSend;
    command.sends += 1;
    this.ws?.send(JSON.stringify(command.frame));
  }

  private setState(state: ConnectionState, detail: ClientEvents["state"][1]): void {
    if (this.currentState === state && state !== "resuming") return;
    this.currentState = state;
    this.emit("state", state, detail);
  }
}

export type ReplacementEntry =
  | { from: "steering" | "followUp"; index: number }
  | { text: string; images?: unknown[] };
export interface ReplacementQueue {
  steering: ReplacementEntry[];
  followUp: ReplacementEntry[];
}

/** The wire fields of an answer, checked against the dialog's kind before anything is sent. */
export function answerFields(dialog: PendingDialog, decision: DialogDecision): Record<string, unknown> {
  const base = { id: dialog.id };
  if (decision.kind === "cancel") return { ...base, cancelled: true };
  switch (dialog.method) {
    case "confirm":
      if (decision.kind !== "confirm") break;
      return { ...base, confirmed: decision.confirmed };
    case "select":
      if (decision.kind !== "select") break;
      if (!(dialog.options ?? []).includes(decision.value)) {
        throw new Error(`"${decision.value}" is not one of the offered options`);
      }
      return { ...base, value: decision.value };
    case "input":
    case "editor":
      if (decision.kind !== "text") break;
      return { ...base, value: decision.value };
  }
  throw new Error(`a ${decision.kind} answer does not fit a ${dialog.method} dialog`);
}
