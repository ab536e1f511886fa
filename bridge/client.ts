// The typed bridge client: chat-ui, our tests, the terminal client and the demo all drive the bridge
// through this. It reconnects by itself, resumes from its last seq, retries every command with the
// same id until it is answered (the bridge runs each id once), and builds dialog answers that match
// the dialog's kind, so a caller cannot send a malformed approval by accident.
// It authenticates the bridge before anything else (protocol 2): an endpoint that cannot prove it knows the token
// gets nothing but the hello's proof, and the client stops and reports it as an impostor. Failures that retrying
// cannot fix (a wrong address, path or token) stop it too, with their cause.

import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import WebSocket from "ws";
import type { z } from "zod";
import {
  BridgeConnectionError,
  BridgeImpostorError,
  classifyClose,
  classifyError,
  classifyStatus,
} from "./connection-failure.ts";
import { type AuthKey, bridgeProof, clientProof, deriveKey, newNonce, proofMatches } from "./handshake.ts";
import { isPiEvent, type PiAssistantMessage, type PiEventFrame, type PiMessage } from "./pi-events.ts";
import {
  AgentExitedFrame,
  AgentRestartedFrame,
  ChallengeFrame,
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

/** How a prompt's run ended (promptAndWait). */
export interface PromptOutcome {
  /** Pi's events of the run, in order, from after the prompt's response to agent_settled. */
  events: PiEventFrame[];
  /** The messages of the run's last agent_end (what the run added to the conversation). */
  messages: PiMessage[];
  /** The last assistant message's stop reason ("stop", "aborted"…), if the run produced one. */
  stopReason: PiAssistantMessage["stopReason"] | undefined;
}

/** promptAndWait failed: `cause` says why; `events` holds what the run emitted until then. */
export class PromptError extends Error {
  readonly events: readonly PiEventFrame[];
  constructor(message: string, events: readonly PiEventFrame[], options?: ErrorOptions) {
    super(message, options);
    this.name = "PromptError";
    this.events = events;
  }
}

export type * from "./pi-events.ts";
export { isPiEvent, PI_EVENT_TYPES } from "./pi-events.ts";

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

export {
  BridgeConnectionError,
  BridgeImpostorError,
  type FailureKind,
} from "./connection-failure.ts";

export interface BridgeClientOptions {
  /** ws://127.0.0.1:<port>/v1/rpc, or sbx-server's proxy URL (https:// is turned into wss://). */
  url: string;
  /** The bridge token: only a key derived from it is kept, and only proofs made with that key are sent. */
  token: string;
  /** Extra handshake headers, e.g. sbx-server's X-Sandbox-Token. */
  headers?: Record<string, string>;
  clientId?: string;
  backoff?: Partial<BackoffOptions>;
  /** Give up reconnecting after this many consecutive failed attempts (default: never). */
  maxAttempts?: number;
  /** How long the endpoint has to send its challenge once connected (default 10 s); then it is an impostor. */
  challengeTimeoutMs?: number;
  /** How long the welcome may take after the hello (the bridge may wait for Pi; default 120 s), then a retry. */
  welcomeTimeoutMs?: number;
  /**
   * How long a first connection keeps trying while nothing listens yet (a bridge still starting binds its port
   * within a moment); past it, a refused first connection is a permanent failure. Default 10 s; 0: at once.
   */
  startGraceMs?: number;
}

type StateDetail = {
  attempt: number;
  closeCode?: number;
  reason?: string;
  /** Why the connection ended: on "resuming" what failed, on "closed" why the client stopped (if it failed). */
  failure?: BridgeConnectionError;
};

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
  state: [state: ConnectionState, detail: StateDetail];
  welcome: [welcome: Welcome];
  /** The bridge could not replay: the caller must rebuild its view from the snapshot. */
  reset: [info: { reason: NonNullable<Welcome["reset"]>; snapshot: Snapshot }];
  /** Resumed from `fromSeq`; `replayed` frames follow through `frame` as usual. */
  resumed: [info: { fromSeq: number; headSeq: number }];
  frame: [frame: BridgeFrame];
  /** One of Pi's events (typed: bridge/pi-events.ts), after its "frame". */
  piEvent: [event: PiEventFrame];
  dialog: [dialog: PendingDialog];
  dialogClosed: [info: { id: string; outcome: string; reason: string }];
  queue: [queue: QueueSnapshot];
  agentExited: [info: AgentExited];
  /** A new Pi took over on the same session (its queues and any running turn are gone). */
  agentRestarted: [info: AgentRestarted];
  protocolError: [frame: BridgeErrorFrame];
  /** The client stopped on a failure retrying cannot fix (impostor, wrong address or token…), with its cause. */
  failure: [error: BridgeConnectionError];
}

export class BridgeClientClosedError extends Error {}

/**
 * One connection: challenge (nothing sent yet) → welcome (the hello went out; nothing else will until the
 * welcome's proof checks) → live.
 */
interface Attempt {
  ws: WebSocket;
  phase: "challenge" | "welcome" | "live";
  bridgeNonce?: string;
  clientNonce?: string;
  timer?: NodeJS.Timeout;
  /** The first thing that went wrong on this connection (its close then only confirms it). */
  failure?: BridgeConnectionError;
}

export class BridgeClient extends EventEmitter<ClientEvents> {
  readonly clientId: string;
  /** Dialogs Pi is waiting on, by dialog id. */
  readonly dialogs = new Map<string, PendingDialog>();
  private queueSnapshot: QueueSnapshot = { steering: [], followUp: [] };
  private current: Attempt | undefined;
  private currentState: ConnectionState = "closed";
  /** Whether a welcome was ever verified: a refused reconnect then means a restart, not a wrong address. */
  private everLive = false;
  private readonly key: Promise<AuthKey>;
  private derivedKey: AuthKey | undefined;
  private readonly url: string;
  private readonly headers: Record<string, string> | undefined;
  private epoch: string | undefined;
  private seq = 0;
  private attempt = 0;
  private stopped = false;
  /** The failure the client stopped on, if it did. */
  private stoppedBy: BridgeConnectionError | undefined;
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

  private readonly maxAttempts: number | undefined;
  private readonly challengeTimeoutMs: number;
  private readonly welcomeTimeoutMs: number;
  private readonly startGraceMs: number;
  private connectStartedAt = 0;

  constructor(options: BridgeClientOptions) {
    super();
    this.url = options.url.replace(/^http(s?):/, "ws$1:");
    this.headers = options.headers;
    this.clientId = options.clientId ?? `client-${randomUUID()}`;
    this.backoff = { initialMs: 100, maxMs: 5_000, ...options.backoff };
    this.maxAttempts = options.maxAttempts;
    this.challengeTimeoutMs = options.challengeTimeoutMs ?? 10_000;
    this.welcomeTimeoutMs = options.welcomeTimeoutMs ?? 120_000;
    this.startGraceMs = options.startGraceMs ?? 10_000;
    // Derived once per client, off the event loop; the token itself is not kept.
    this.key = deriveKey(options.token);
    this.key.then(
      (key) => {
        this.derivedKey = key;
      },
      () => {},
    );
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
    this.stoppedBy = undefined;
    this.connectStartedAt = Date.now();
    return new Promise((resolve, reject) => {
      this.firstLive = { resolve, reject };
      this.open();
    });
  }

  /** Closes for good: pending commands are rejected (they may or may not have run). */
  close(): void {
    this.shutdown({ attempt: this.attempt });
  }

  /** Stops for good; `detail` says why (the failure, with the bridge's close code when it ended the session). */
  private shutdown(detail: StateDetail): void {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    const current = this.current;
    this.current = undefined;
    if (current) {
      clearTimeout(current.timer);
      current.ws.close(1000, "client closed");
    }
    this.setState("closed", detail);
    for (const [id, command] of this.pending) {
      this.pending.delete(id);
      command.reject(
        new BridgeClientClosedError(
          detail.failure
            ? `client stopped before a response to ${id}: ${detail.failure.message}`
            : `client closed before a response to ${id}`,
          detail.failure ? { cause: detail.failure } : undefined,
        ),
      );
    }
  }

  /**
   * Drops the current connection as a network failure would; the client resumes by itself, no sooner
   * than `pauseMs` later (so frames pile up at the bridge meanwhile, as in a real outage).
   */
  dropConnection(pauseMs = 0): void {
    this.notBefore = Date.now() + pauseMs;
    this.current?.ws.terminate();
  }

  /**
   * Sends a command and resolves with its response. The id is kept across reconnects and the
   * command is re-sent until answered; the bridge's idempotency makes it take effect once.
   */
  command(frame: Record<string, unknown> & { type: string; id?: string }): Promise<BridgeResponse> {
    if (this.stopped && this.currentState === "closed") {
      const failure = this.stoppedBy;
      return Promise.reject(
        failure
          ? new BridgeClientClosedError(`client stopped: ${failure.message}`, { cause: failure })
          : new BridgeClientClosedError("client is closed"),
      );
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
  /**
   * Sends a prompt and waits until the agent settles (Pi's agent_settled: the run, its retries and whatever was
   * queued are done). Resolves with the Pi events of the run and its outcome; dialogs it raises still arrive as
   * "dialog" events for the caller to answer. Rejects with a PromptError whose cause says why: Pi refused the
   * prompt, the model failed, the agent exited or restarted mid-run, the bridge lost the run's frames (a reset),
   * the client stopped, or `timeoutMs` passed.
   */
  promptAndWait(
    message: string,
    options: { images?: unknown[]; streamingBehavior?: "steer" | "followUp"; timeoutMs?: number } = {},
  ): Promise<PromptOutcome> {
    const { timeoutMs, ...extra } = options;
    const events: PiEventFrame[] = [];
    let responseSeq: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    const listeners: (() => void)[] = [];
    const listen = <E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void) => {
      this.on(event as keyof ClientEvents, listener as never);
      listeners.push(() => this.off(event as keyof ClientEvents, listener as never));
    };
    const settled = new Promise<PromptOutcome>((resolve, reject) => {
      const fail = (reason: string, cause: unknown) => reject(new PromptError(reason, events, { cause }));
      /** Once the prompt is answered: settled when an agent_settled follows its response. */
      const checkSettled = () => {
        if (responseSeq === undefined) return;
        const after = responseSeq;
        const end = events.findIndex((e) => e.type === "agent_settled" && e.seq > after);
        if (end < 0) return;
        const run = events.slice(0, end + 1).filter((e) => e.seq > after);
        const ended = run.findLast((e) => e.type === "agent_end");
        const messages = ended?.type === "agent_end" ? ended.messages : [];
        const last = messages.findLast((m): m is PiAssistantMessage => m.role === "assistant");
        if (last?.stopReason === "error")
          fail(`the model failed: ${last.errorMessage ?? "no message"}`, last);
        else resolve({ events: run, messages, stopReason: last?.stopReason });
      };
      // Listening before the prompt is sent: the run's first events may arrive in the same read as its response.
      listen("piEvent", (event) => {
        events.push(event);
        if (event.type === "agent_settled") checkSettled();
      });
      // Before the prompt's response these concern an earlier run (the prompt's own fate is its response).
      const inRun = (seq: number) => responseSeq !== undefined && seq > responseSeq;
      listen("agentExited", (info) => {
        if (inRun(info.seq)) fail(`the agent exited mid-run (${info.reason ?? "exit"})`, info);
      });
      listen("agentRestarted", (info) => {
        if (inRun(info.seq)) fail("the agent restarted mid-run: the run is gone", info);
      });
      // A reset after a first welcome ("new" is the first) may have lost the prompt's response or its events.
      listen("reset", (info) => {
        if (responseSeq !== undefined || info.reason !== "new")
          fail(`the bridge could not replay the run's events (${info.reason})`, info);
      });
      listen("state", (state, detail) => {
        if (state !== "closed") return;
        if (detail.failure) fail(`the client stopped: ${detail.failure.message}`, detail.failure);
        else fail("the client closed before the agent settled", undefined);
      });
      if (timeoutMs !== undefined) {
        timer = setTimeout(
          () => fail(`the agent did not settle within ${timeoutMs} ms`, undefined),
          timeoutMs,
        );
      }
      this.prompt(message, extra).then(
        (response) => {
          if (!response.success) {
            fail(`the prompt was refused: ${response.error ?? response.code ?? "no reason given"}`, response);
            return;
          }
          responseSeq = response.seq;
          checkSettled();
        },
        (error: unknown) => fail(`the prompt was not answered: ${(error as Error).message}`, error),
      );
    });
    return settled.finally(() => {
      clearTimeout(timer);
      for (const off of listeners) off();
    });
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
    const ws = new WebSocket(this.url, { headers: this.headers, perMessageDeflate: false });
    const attempt: Attempt = { ws, phase: "challenge" };
    this.current = attempt;
    ws.on("open", () => {
      // Nothing is sent before the bridge's challenge; an endpoint that never sends one is not the bridge.
      attempt.timer = setTimeout(
        () =>
          this.abandon(
            attempt,
            new BridgeImpostorError(
              this.url,
              `no challenge within ${this.challengeTimeoutMs} ms: not a protocol-${PROTOCOL_VERSION} bridge`,
            ),
          ),
        this.challengeTimeoutMs,
      );
    });
    ws.on("unexpected-response", (_req, res) => {
      this.abandon(attempt, classifyStatus(this.url, res.statusCode ?? 0));
    });
    ws.on("message", (data) => {
      if (this.current !== attempt || attempt.failure) return;
      const text = data.toString();
      if (attempt.phase === "live") this.onMessage(text);
      else if (attempt.phase === "welcome") this.onWelcomeFrame(attempt, text);
      else void this.onChallenge(attempt, text);
    });
    ws.on("error", (error: NodeJS.ErrnoException) => {
      attempt.failure ??= classifyError(this.url, error);
    });
    ws.on("close", (code, reason) => {
      clearTimeout(attempt.timer);
      if (this.current !== attempt) return;
      this.current = undefined;
      this.onClose(attempt, code, reason.toString());
    });
  }

  /** Ends a connection that failed; its close then reports `failure`. */
  private abandon(attempt: Attempt, failure: BridgeConnectionError): void {
    attempt.failure ??= failure;
    clearTimeout(attempt.timer);
    attempt.ws.terminate();
  }

  /** The endpoint's first frame must be a challenge; the hello answers it with a proof (and nothing else). */
  private async onChallenge(attempt: Attempt, text: string): Promise<void> {
    const frame = parseObject(text);
    if (attempt.bridgeNonce !== undefined) {
      // The bridge says nothing more until it has checked the hello.
      this.abandon(attempt, new BridgeImpostorError(this.url, `it sent ${describe(frame)} before the hello`));
      return;
    }
    const challenge = ChallengeFrame.safeParse(frame);
    if (!challenge.success) {
      const claimed = frame?.type === "challenge" && typeof frame.protocol === "number";
      this.abandon(
        attempt,
        claimed
          ? new BridgeConnectionError(
              "protocol",
              this.url,
              `it speaks protocol ${frame?.protocol}; this client speaks ${PROTOCOL_VERSION}`,
            )
          : new BridgeImpostorError(this.url, `its first frame is ${describe(frame)}, not a challenge`),
      );
      return;
    }
    const bridgeNonce = challenge.data.nonce;
    attempt.bridgeNonce = bridgeNonce;
    let key: AuthKey;
    try {
      key = this.derivedKey ?? (await this.key);
    } catch (error) {
      this.abandon(
        attempt,
        new BridgeConnectionError(
          "unauthorized",
          this.url,
          `no key from the token: ${(error as Error).message}`,
        ),
      );
      return;
    }
    if (this.current !== attempt || attempt.failure) return;
    const clientNonce = newNonce();
    attempt.clientNonce = clientNonce;
    attempt.phase = "welcome";
    clearTimeout(attempt.timer);
    // A bridge may make the welcome wait for Pi; past this it is a lost connection (retried), not an impostor.
    attempt.timer = setTimeout(
      () => this.abandon(attempt, new BridgeConnectionError("network", this.url, "no welcome in time")),
      this.welcomeTimeoutMs,
    );
    attempt.ws.send(
      JSON.stringify({
        type: "hello",
        protocol: PROTOCOL_VERSION,
        clientId: this.clientId,
        ...(this.epoch ? { resume: { epoch: this.epoch, lastSeq: this.seq } } : {}),
        nonce: clientNonce,
        proof: clientProof(key, { bridgeNonce, clientNonce, clientId: this.clientId }),
      }),
    );
  }

  /** The answer to the hello must be a welcome whose proof checks; none of it is believed before that. */
  private onWelcomeFrame(attempt: Attempt, text: string): void {
    const frame = parseObject(text);
    // The hello went out with this key, so it is derived.
    const key = this.derivedKey as AuthKey;
    const expected = bridgeProof(key, {
      bridgeNonce: attempt.bridgeNonce ?? "",
      clientNonce: attempt.clientNonce ?? "",
      clientId: this.clientId,
      epoch: typeof frame?.epoch === "string" ? frame.epoch : "",
    });
    if (frame?.type !== "welcome" || !proofMatches(expected, frame.proof)) {
      this.abandon(
        attempt,
        new BridgeImpostorError(
          this.url,
          frame?.type === "welcome"
            ? "its welcome carries a wrong proof"
            : `it answered the hello with ${describe(frame)}, not a proved welcome`,
        ),
      );
      return;
    }
    const welcome = WelcomeFrame.safeParse(frame);
    if (!welcome.success) {
      this.abandon(
        attempt,
        new BridgeConnectionError("protocol", this.url, "its welcome does not match this client's schema"),
      );
      return;
    }
    clearTimeout(attempt.timer);
    attempt.phase = "live";
    this.onWelcome(welcome.data);
  }

  private onClose(attempt: Attempt, code: number, reason: string): void {
    if (this.stopped) return;
    const failure = attempt.failure ?? classifyClose(this.url, code, reason);
    const starting =
      failure.kind === "refused" && !this.everLive && Date.now() - this.connectStartedAt < this.startGraceMs;
    if (failure.permanent(this.everLive) && !starting) {
      this.stop(failure, { attempt: this.attempt, closeCode: code, reason, failure });
      return;
    }
    this.attempt += 1;
    if (this.maxAttempts !== undefined && this.attempt > this.maxAttempts) {
      const gaveUp = new BridgeConnectionError(
        failure.kind,
        this.url,
        `gave up after ${this.maxAttempts} attempts; last: ${failure.message}`,
        { cause: failure },
      );
      this.stop(gaveUp, { attempt: this.attempt, closeCode: code, reason, failure: gaveUp });
      return;
    }
    // Before the first welcome it is still connecting (nothing was lost); afterwards it is resuming.
    this.setState(this.everLive ? "resuming" : "connecting", {
      attempt: this.attempt,
      closeCode: code,
      reason,
      failure,
    });
    // Capped exponential backoff with full jitter, so many clients do not reconnect in lockstep.
    const ceiling = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** (this.attempt - 1));
    const delay = Math.max(Math.random() * ceiling, this.notBefore - Date.now());
    this.reconnectTimer = setTimeout(() => this.open(), delay);
  }

  /** Stops for good on a failure: the first connect rejects with it, and the "failure" event carries it. */
  private stop(failure: BridgeConnectionError, detail: StateDetail): void {
    this.stoppedBy = failure;
    this.firstLive?.reject(failure);
    this.firstLive = undefined;
    // One "closed" state, carrying the failure (attach prints it) and the bridge's code if it closed.
    this.shutdown(detail);
    this.emit("failure", failure);
  }

  private onMessage(text: string): void {
    let frame: BridgeFrame;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof frame.seq !== "number") return;
    // Replay after a resume can overlap what we already have: each seq is delivered once, in order.
    if (frame.seq <= this.seq) return;
    this.seq = frame.seq;
    this.track(frame);
    this.emit("frame", frame);
    if (isPiEvent(frame)) this.emit("piEvent", frame);
  }

  private onWelcome(welcome: Welcome): void {
    const resumedFrom = this.seq;
    this.epoch = welcome.epoch;
    this.attempt = 0;
    this.everLive = true;
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

  /** Sends a tracked command (counted: see `echoing`), only on a connection whose welcome was proved. */
  private sendCommand(command: PendingCommand): void {
    if (this.current?.phase !== "live") return;
    command.lastSend = ++this.sendCounter;
    command.firstSend ||= command.lastSend;
    command.sends += 1;
    this.send(command.frame);
  }

  /** Only on a connection whose welcome was proved: nothing reaches an endpoint that did not authenticate. */
  private send(frame: Record<string, unknown>): void {
    if (this.current?.phase === "live") this.current.ws.send(JSON.stringify(frame));
  }

  private setState(state: ConnectionState, detail: StateDetail): void {
    if (this.currentState === state && state !== "resuming") return;
    this.currentState = state;
    this.emit("state", state, detail);
  }
}

type FrameFields = { type?: unknown; protocol?: unknown; proof?: unknown; epoch?: unknown };

function parseObject(text: string): FrameFields | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? (value as FrameFields) : null;
  } catch {
    return null;
  }
}

/** What an unexpected frame was, for the error (its type, cut short; never its content). */
function describe(frame: FrameFields | null): string {
  return frame === null
    ? "something that is not a JSON object"
    : JSON.stringify(String(frame.type).slice(0, 32));
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
