// The bridge's core, independent of the transport: the composition of its parts (bridge/core/*). Client
// frames come in through the intake and become commands; Pi's lines come back through the link; the
// supervisor owns Pi's lifecycle, the ledger every command's one answer, the dialog relay every dialog, the
// mirror Pi's state. Every dependency (clock, frame sink, policy, agent starter) is given at construction
// (core/core-options.ts), and the transports differ only in options (requireIds, lingerMs, restartAgent).
import { ClientCommands } from "./core/client-commands.ts";
import { IdleTimer, systemClock, Waiters } from "./core/clock.ts";
import { CommandLedger } from "./core/command-ledger.ts";
import type { CoreOptions } from "./core/core-options.ts";
import { type BridgeAnswer, type BridgeQuestion, DialogRelay } from "./core/dialog-relay.ts";
import { EarlyAnswers } from "./core/early-answers.ts";
import { errorFrame, type Frame, type FrameSink } from "./core/frames.ts";
import { GrantRelay } from "./core/grant-relay.ts";
import { HeldQueue } from "./core/held-queue.ts";
import { oversized, readClientFrame } from "./core/intake.ts";
import { Mirror, type SessionInfo } from "./core/mirror.ts";
import { type NetworkModeAccess, NetworkModeRelay } from "./core/network-mode-relay.ts";
import { PiLines } from "./core/pi-lines.ts";
import { PiLink } from "./core/pi-link.ts";
import { type PolicyAccess, PolicyRelay } from "./core/policy-relay.ts";
import { type StartCause, Supervisor } from "./core/supervisor.ts";
import { GrantStore } from "./grants/grant-store.ts";
import { IdempotencyStore } from "./idempotency.ts";
import type { AgentUnit } from "./pi-child.ts";
import type { BridgeStatus, Health, PendingDialog, PiStatus, Snapshot } from "./protocol.ts";

export type {
  BridgeAnswer,
  BridgeQuestion,
  CoreOptions,
  Frame,
  FrameSink,
  NetworkModeAccess,
  PolicyAccess,
  SessionInfo,
};

/** Delivery counts as frozen once a frame has waited this long to become sendable (the journal stuck). */
export const DELIVERY_FROZEN_MS = 5_000;

export class BridgeCore {
  readonly epoch: string;
  private readonly link: PiLink;
  private readonly ledger: CommandLedger;
  private readonly held = new HeldQueue();
  private readonly early: EarlyAnswers;
  private readonly mirror: Mirror;
  private readonly grants: GrantRelay;
  private readonly grantsStore: GrantStore;
  private readonly policy: PolicyRelay;
  private readonly supervisor: Supervisor;
  private readonly dialogs: DialogRelay;
  private readonly lines: PiLines;
  private readonly commands: ClientCommands;
  private readonly settledWaiters: Waiters;
  private readonly idleExit: IdleTimer;
  private attachedClient: string | undefined;
  private ackedSeq: number | null = null;
  private shuttingDown = false;
  private readonly sink: FrameSink;
  private readonly options: CoreOptions;

  constructor(sink: FrameSink, options: CoreOptions) {
    this.sink = sink;
    this.options = options;
    this.epoch = options.epoch;
    const { log } = options;
    const clock = options.clock ?? systemClock;
    const changed = () => this.updateIdleTimer();
    this.settledWaiters = new Waiters(clock);
    this.idleExit = new IdleTimer(clock, options.idleExitMs, () =>
      options.requestShutdown("idle: no client and no agent activity"),
    );
    this.link = new PiLink(clock);
    this.ledger = new CommandLedger({
      store: options.idempotency ?? new IdempotencyStore(),
      sink,
      finished: changed,
    });
    this.grantsStore = options.grants ?? new GrantStore({ sessionId: null });
    this.grants = new GrantRelay({
      store: this.grantsStore,
      sink,
      log,
      attachedClient: () => this.attachedClient,
      // The dialog relay is made below; a grant request comes only from a Pi line, after construction.
      takenChoice: (dialogId) => this.dialogs.takenChoice(dialogId),
    });
    this.mirror = new Mirror({
      onSession: (session) => {
        options.onSession?.(session);
        // Grants belong to the session they were made in.
        this.grants.session(session.sessionId);
      },
    });
    this.policy = new PolicyRelay({ access: options.policy, sink, log });
    // The hooks run only once a Pi is attached, after the constructor.
    this.supervisor = new Supervisor({
      clock,
      link: this.link,
      sink,
      log,
      lingerMs: options.lingerMs,
      requestShutdown: options.requestShutdown,
      ...(options.restartAgent ? { restart: options.restartAgent } : {}),
      ...(options.restartPolicy ? { restartPolicy: options.restartPolicy } : {}),
      ...(options.watchdog ? { watchdog: options.watchdog } : {}),
      hooks: {
        line: (raw) => this.lines.line(raw),
        serving: () => this.commands.release(),
        lost: () => this.lines.lost(),
        unavailable: (code, message) => this.commands.failHeld(code, message),
        changed: () => this.supervisorChanged(),
        idle: () => this.agentIdle(),
        noteState: (data) => this.mirror.noteState(data),
        sessionId: () => this.mirror.session?.sessionId ?? null,
      },
    });
    const supervisor = this.supervisor;
    this.early = new EarlyAnswers({ ledger: this.ledger, verdict: () => supervisor.verdict() });
    this.dialogs = new DialogRelay({
      clock,
      detachedGraceMs: options.detachedGraceMs,
      link: this.link,
      ledger: this.ledger,
      sink,
      log,
      piUp: () => supervisor.state === "running" || supervisor.state === "starting",
      refusal: () => (supervisor.state === "refused" ? (supervisor.health()?.detail ?? "") : undefined),
      changed,
      ...(options.onOpenDialogs ? { onOpenDialogs: options.onOpenDialogs } : {}),
    });
    const parts = {
      sink,
      link: this.link,
      ledger: this.ledger,
      early: this.early,
      dialogs: this.dialogs,
      policy: this.policy,
    };
    this.lines = new PiLines({
      ...parts,
      grants: this.grants,
      mirror: this.mirror,
      log,
      refreshState: () => void this.refreshState(),
      changed,
    });
    this.commands = new ClientCommands({
      ...parts,
      grants: this.grants,
      network: new NetworkModeRelay({ access: options.network, sink, log }),
      held: this.held,
      supervisor,
      status: () => this.status(),
      shuttingDown: () => this.shuttingDown,
      acked: (seq) => {
        this.ackedSeq = Math.max(this.ackedSeq ?? 0, seq);
      },
      changed,
    });
  }

  /** Settles what the previous bridge on this state dir left open: commands answered, dialogs closed. */
  recoverInterrupted(openDialogIds: readonly string[]): void {
    this.ledger.recoverInterrupted(this.options.log);
    for (const id of openDialogIds) {
      this.sink.publish({ type: "dialog_closed", id, outcome: "refused", reason: "agent_exited" });
    }
  }

  /** Binds a started agent unit; `cause` is set when it replaces another one (agent_restarted follows). */
  attachPi(unit: AgentUnit, cause?: StartCause): void {
    this.supervisor.start(unit, cause);
  }

  /** One frame of text from the attached client (or stdin). */
  handleClientText(text: string): void {
    const { maxFrameBytes, requireIds } = this.options;
    this.commands.handle(readClientFrame(text, { maxFrameBytes, requireIds }));
  }

  /** The policy file changed under the bridge (its watch): clients hear of it now (policy_changed). */
  policyFileChanged(): void {
    this.policy.observe();
  }

  /** Reports an over-long frame or stdin line (the transport's own bound). */
  rejectOversized(): void {
    this.sink.publish(oversized(this.options.maxFrameBytes));
  }

  // ------------------------------------------------------------------ attachment, state and health

  attach(clientId: string): void {
    this.attachedClient = clientId;
    this.ackedSeq = null;
    this.dialogs.book.attach();
    this.updateIdleTimer();
  }

  detach(clientId: string): void {
    if (this.attachedClient !== clientId) return;
    this.attachedClient = undefined;
    this.dialogs.book.detach();
    this.updateIdleTimer();
  }

  get attached(): string | undefined {
    return this.attachedClient;
  }

  pendingDialogs(): PendingDialog[] {
    return this.dialogs.book.pending();
  }

  /** A select dialog the bridge itself asks the person (the egress proxy's destinations); a refusal means no. */
  askPerson(question: BridgeQuestion, signal?: AbortSignal): Promise<BridgeAnswer> {
    return this.dialogs.ask(question, () => this.attachedClient, signal);
  }

  /** The session grants (the egress proxy reads and adds destination grants). */
  get grantStore(): GrantStore {
    return this.grantsStore;
  }

  /** Asks Pi for its state (bounded wait); the snapshot keeps the last known state otherwise. */
  async refreshState(timeoutMs = 5_000): Promise<boolean> {
    if (this.supervisor.state !== "running") return false;
    const response = await this.link.request({ type: "get_state" }, timeoutMs);
    if (response?.success === true) this.mirror.noteState(response.data);
    return response?.type === "response" && response.command === "get_state";
  }

  /** Resolves once Pi serves, is refused, gone or reported unwell (never while a start goes well), or at the deadline. */
  agentSettled(timeoutMs: number): Promise<void> {
    return this.supervisor.settled ? Promise.resolve() : this.settledWaiters.wait(timeoutMs);
  }

  snapshot(): Snapshot {
    return {
      state: this.mirror.state,
      queue: this.mirror.queueCopy(),
      pendingDialogs: this.pendingDialogs(),
      policy: this.policy.report(),
      pi: this.piStatus(),
      agentBusy: this.mirror.agentBusy,
      isolation: this.options.isolation(),
      grants: this.grants.list(),
    };
  }

  status(): BridgeStatus {
    return {
      epoch: this.epoch,
      headSeq: this.sink.headSeq,
      firstSeq: this.sink.firstSeq,
      mode: this.options.transport,
      pi: this.piStatus(),
      isolation: this.options.isolation(),
      policy: this.policy.report(),
      pendingDialogs: this.pendingDialogs(),
      client: {
        attached: this.attachedClient !== undefined,
        clientId: this.attachedClient ?? null,
        ackedSeq: this.ackedSeq,
      },
      agentBusy: this.mirror.agentBusy,
      shuttingDown: this.shuttingDown,
      durability: this.options.durability(),
      health: this.health(),
    };
  }

  /** Whether the bridge serves as it should; GET /v1/health answers 200 only when `ok`. */
  health(): Health {
    const stalledMs = this.sink.stalledMs?.() ?? 0;
    const report = this.shuttingDown
      ? { reason: "shutting_down" as const, detail: "the bridge is shutting down" }
      : stalledMs > DELIVERY_FROZEN_MS
        ? {
            reason: "delivery_frozen" as const,
            detail: `no frame could be sent for ${Math.round(stalledMs / 1000)} s`,
          }
        : this.supervisor.health();
    return report ? { ok: false, ...report } : { ok: true, reason: null, detail: null };
  }

  piStatus(): PiStatus {
    return this.supervisor.status();
  }

  publishError(code: string, message: string, id?: string): void {
    this.sink.publish(errorFrame(code, message, id));
  }

  // ------------------------------------------------------------------ lifecycle

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Stops taking commands and refuses every pending dialog (Pi gets cancelled answers first). */
  beginShutdown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.idleExit.update(false);
    this.supervisor.shutdown();
    this.commands.failHeld("shutting_down", "the bridge is shutting down");
    this.dialogs.book.close();
  }

  /** The agent unit bound now (for shutdown). */
  get agent(): AgentUnit | undefined {
    return this.supervisor.agent;
  }

  /** No turn runs and nothing waits for Pi (the watchdog's liveness check runs only then). */
  private agentIdle(): boolean {
    return (
      !this.mirror.agentBusy &&
      !this.link.busy &&
      this.held.size === 0 &&
      this.early.size === 0 &&
      this.dialogs.book.size === 0
    );
  }

  /** Pi's state or health changed: whoever waits for it to settle may go on. */
  private supervisorChanged(): void {
    if (this.supervisor.settled) this.settledWaiters.wake();
    this.updateIdleTimer();
  }

  /** The idle exit: no client attached and the agent idle for --idle-exit (the same shutdown as SIGTERM). */
  private updateIdleTimer(): void {
    this.idleExit.update(!this.shuttingDown && this.attachedClient === undefined && this.agentIdle());
  }
}
