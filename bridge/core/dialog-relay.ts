// Dialogs between Pi and the client: Pi's requests go into the dialog book (dialog-book.ts, the lifecycle and
// its rules), client answers come out of it checked, go to Pi under the bridge's ids, and Pi's verdict ends
// them. Nothing here approves: a malformed answer declines, a gone Pi closes, a refused Pi answers nothing.
// The bridge asks its own dialogs (an egress destination) through the same book: same frames for clients, ids
// in a namespace Pi's UUIDs never take, answered here and never sent to Pi; every refusal is a "no".
import { randomBytes } from "node:crypto";
import type { Logger } from "../../agent-runtime/log.ts";
import { DialogBook, type DialogCloseReason, type Verdict } from "../dialog-book.ts";
import { toPendingDialog } from "../dialogs.ts";
import type { Clock } from "./clock.ts";
import type { CommandLedger } from "./command-ledger.ts";
import { errorFrame, type Frame, type FrameSink, failure, isRecord, withId } from "./frames.ts";
import { DIALOG_ANSWER } from "./intake.ts";
import type { PiLink } from "./pi-link.ts";

export interface DialogRelayOptions {
  clock: Clock;
  detachedGraceMs: number;
  link: PiLink;
  ledger: CommandLedger;
  sink: FrameSink;
  log: Logger;
  /** Pi is up (starting or running): a cancelled answer can reach it. */
  piUp: () => boolean;
  /** Why no answer can be taken now (Pi refused), or undefined. */
  refusal: () => string | undefined;
  /** The set of open dialogs changed (idle accounting). */
  changed: () => void;
  /** The ids of the open dialogs changed: persist them (they are closed at the next start). */
  onOpenDialogs?: (ids: string[]) => void;
}

/** How many answers Pi took are remembered (a grant request follows its answer at once). */
const REMEMBERED_ANSWERS = 64;

/** The ids of the bridge's own dialogs start with this (Pi's are UUIDs: no colon). */
export const BRIDGE_DIALOG_PREFIX = "bridge:";

/** The bridge's own dialogs waiting at once; more are refused before they are shown. */
export const MAX_BRIDGE_DIALOGS = 16;

/** A select dialog the bridge itself asks (the options are what the person may answer). */
export interface BridgeQuestion {
  /** Short kind in the id (`bridge:<topic>:<random>`), e.g. "egress". */
  topic: string;
  title: string;
  message: string;
  options: readonly string[];
  /** Extra fields clients may show (plain data, bounded by the caller). */
  details?: Record<string, unknown>;
}

/** The person's answer (`choice`), or why there is none (`refused`): a refusal always means "no". */
export type BridgeAnswer =
  | { dialogId: string; choice: string; by: string | null }
  | { dialogId: string; choice: null; refused: DialogCloseReason | "too_many" };

export class DialogRelay {
  readonly book: DialogBook;
  private openIds = "";
  /** Select answers on their way to Pi, and the last ones Pi took: dialog id → the chosen option. */
  private readonly forwarded = new Map<string, string>();
  private readonly taken = new Map<string, string>();
  /** The bridge's own open dialogs: dialog id → who waits for the answer. */
  private readonly own = new Map<string, (answer: BridgeAnswer) => void>();
  private readonly options: DialogRelayOptions;

  constructor(options: DialogRelayOptions) {
    this.options = options;
    this.book = new DialogBook({
      detachedGraceMs: options.detachedGraceMs,
      timers: options.clock,
      effects: {
        cancelInPi: (dialogId) => this.cancelInPi(dialogId),
        refusedOwn: (dialogId, reason) => this.settleOwn({ dialogId, choice: null, refused: reason }),
        announceClosed: (dialogId, reason) =>
          options.sink.publish({ type: "dialog_closed", id: dialogId, outcome: "refused", reason }),
        changed: () => this.bookChanged(),
        warn: (fields, message) => options.log.warn(fields, message),
      },
    });
  }

  /** Pi's extension_ui_request: relayed to clients; a dialog (it waits for an answer) is tracked. */
  request(line: Frame, raw: string): void {
    const { sink } = this.options;
    if (typeof line.id === "string" && line.id.startsWith(BRIDGE_DIALOG_PREFIX)) {
      // Only the bridge names its own dialogs: one from Pi in that namespace is cancelled and never shown.
      this.options.log.warn({ dialog: line.id.slice(0, 256) }, "Pi used a bridge dialog id: cancelled");
      if (toPendingDialog(line, 0)) this.cancelInPi(line.id);
      return;
    }
    const dialog = toPendingDialog(line, sink.headSeq + 1);
    sink.publish(line, raw);
    if (!dialog) return;
    const timeout = typeof line.timeout === "number" && line.timeout > 0 ? line.timeout : undefined;
    this.book.request(dialog, timeout);
  }

  /** A client's answer (intake checked its ids). */
  answer(frame: Frame, dialogId: string | undefined, commandId: string | undefined): void {
    const { ledger, link } = this.options;
    if (commandId !== undefined && !ledger.begin(commandId, frame, DIALOG_ANSWER)) return;
    const refused = this.options.refusal();
    if (refused !== undefined) {
      ledger.finish(commandId, failure(commandId, DIALOG_ANSWER, "agent_unverified", refused));
      return;
    }
    const decision = this.book.answer(dialogId, frame);
    switch (decision.kind) {
      case "not_pending":
        ledger.finish(commandId, {
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
        if (decision.owner === "bridge") {
          this.answerOwn(decision.dialog.id, decision.answer, commandId);
          return;
        }
        const piId = link.allocId();
        link.track(piId, { kind: "dialog", dialogId: decision.dialog.id, clientId: commandId });
        if ("value" in decision.answer) this.forwarded.set(decision.dialog.id, decision.answer.value);
        link.write({ type: DIALOG_ANSWER, id: decision.dialog.id, commandId: piId, ...decision.answer });
        return;
      }
    }
  }

  /** An answer that cannot be taken declines the pending dialog it names; it never approves anything. */
  badAnswer(dialogId: string | undefined, problem: string): void {
    const pending = this.book.isPending(dialogId);
    if (pending && dialogId !== undefined) this.book.refuse(dialogId, "malformed_answer");
    this.reportMalformed(dialogId, undefined, problem, pending);
  }

  /** Pi's verdict on an answer we forwarded; the client gets it (with its own id), the book ends the dialog. */
  verdict(route: { dialogId: string; clientId: string | undefined }, line: Frame): void {
    const data = isRecord(line.data) ? line.data : {};
    const verdict: Verdict =
      line.success === true
        ? { kind: "accepted" }
        : line.code === "ui_request_not_pending"
          ? { kind: "not_pending", piReason: typeof data.reason === "string" ? data.reason : undefined }
          : { kind: "rejected" };
    const chosen = this.forwarded.get(route.dialogId);
    this.forwarded.delete(route.dialogId);
    if (verdict.kind === "accepted" && chosen !== undefined) this.remember(route.dialogId, chosen);
    // The response first: the client learns its answer's fate before any dialog_closed it causes.
    if (route.clientId !== undefined)
      this.options.ledger.finish(route.clientId, withId(line, route.clientId));
    this.book.verdict(route.dialogId, verdict);
  }

  /** Pi went while an answer was on its way: the client learns it was not taken, then the dialog closes. */
  answerLost(route: { dialogId: string; clientId: string | undefined }): void {
    this.forwarded.delete(route.dialogId);
    this.options.ledger.finish(
      route.clientId,
      failure(route.clientId, DIALOG_ANSWER, "agent_exited", "Pi exited"),
    );
    this.book.verdict(route.dialogId, { kind: "agent_gone" });
  }

  /**
   * Asks the person a select dialog of the bridge's own. It resolves with the client's choice, or with a refusal
   * (no client within the detached grace, a malformed answer, a cancel, shutdown, Pi gone, too many waiting):
   * never by a timeout of its own, and never with an option nobody chose.
   */
  ask(question: BridgeQuestion, by: () => string | undefined, signal?: AbortSignal): Promise<BridgeAnswer> {
    const dialogId = `${BRIDGE_DIALOG_PREFIX}${question.topic}:${randomBytes(12).toString("hex")}`;
    if (this.own.size >= MAX_BRIDGE_DIALOGS)
      return Promise.resolve({ dialogId, choice: null, refused: "too_many" });
    if (signal?.aborted) return Promise.resolve({ dialogId, choice: null, refused: "cancelled" });
    const { sink } = this.options;
    const line: Frame = {
      type: "extension_ui_request",
      id: dialogId,
      method: "select",
      title: question.title,
      message: question.message,
      options: [...question.options],
      origin: "bridge",
      ...(question.details ? { details: question.details } : {}),
    };
    const dialog = toPendingDialog(line, sink.headSeq + 1);
    if (!dialog) return Promise.resolve({ dialogId, choice: null, refused: "malformed_answer" });
    const answered = new Promise<BridgeAnswer>((resolve) => {
      this.own.set(dialogId, (answer) => {
        if (answer.choice !== null) resolve({ ...answer, by: by() ?? null });
        else resolve(answer);
      });
    });
    sink.publish(line);
    this.book.request(dialog, undefined, "bridge");
    // Whoever asked is gone: the dialog is withdrawn (announced as cancelled), never left for someone to answer.
    signal?.addEventListener("abort", () => this.book.refuse(dialogId, "cancelled"), { once: true });
    return answered;
  }

  /** A client's checked answer to one of the bridge's own dialogs: taken here, acknowledged, never sent to Pi. */
  private answerOwn(
    dialogId: string,
    answer: { cancelled: true } | { confirmed: boolean } | { value: string },
    commandId: string | undefined,
  ): void {
    this.options.ledger.finish(commandId, {
      type: "response",
      id: commandId,
      command: DIALOG_ANSWER,
      success: true,
    });
    if ("value" in answer) {
      // Settled before the book forgets it: the waiter gets the choice, not a refusal.
      this.settleOwn({ dialogId, choice: answer.value, by: null });
      this.book.verdict(dialogId, { kind: "accepted" });
    } else {
      // A cancel is a "no", announced like any refusal.
      this.book.refuse(dialogId, "cancelled");
    }
  }

  private settleOwn(answer: BridgeAnswer): void {
    const waiter = this.own.get(answer.dialogId);
    if (!waiter) return;
    this.own.delete(answer.dialogId);
    waiter(answer);
  }

  /** The option a client chose in the select dialog `dialogId`, when Pi took that answer (recent ones only). */
  takenChoice(dialogId: string): string | undefined {
    return this.taken.get(dialogId);
  }

  private remember(dialogId: string, chosen: string): void {
    this.taken.set(dialogId, chosen);
    if (this.taken.size > REMEMBERED_ANSWERS) {
      const oldest = this.taken.keys().next().value;
      if (oldest !== undefined) this.taken.delete(oldest);
    }
  }

  private reportMalformed(
    dialogId: string | undefined,
    commandId: string | undefined,
    problem: string,
    declined: boolean,
  ): void {
    const message = declined ? `${problem}; the dialog was declined` : problem;
    if (commandId !== undefined) {
      this.options.ledger.finish(commandId, {
        ...failure(commandId, DIALOG_ANSWER, "invalid_ui_response", message),
        data: { requestId: dialogId ?? null, declined },
      });
    } else {
      this.options.sink.publish(errorFrame("invalid_frame", message, dialogId));
    }
  }

  private cancelInPi(dialogId: string): void {
    if (!this.options.piUp()) return;
    const { link } = this.options;
    const piId = link.allocId();
    link.track(piId, { kind: "ignore" });
    link.write({ type: DIALOG_ANSWER, id: dialogId, commandId: piId, cancelled: true });
  }

  private bookChanged(): void {
    this.options.changed();
    if (!this.options.onOpenDialogs) return;
    const ids = this.book.pending().map((d) => d.id);
    const key = ids.join("\n");
    if (key === this.openIds) return;
    this.openIds = key;
    this.options.onOpenDialogs(ids);
  }
}
