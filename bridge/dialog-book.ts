// The dialog lifecycle on its own (no transport, no Pi, no clock of its own): Pi (or the bridge itself) asks, a
// client answers or something refuses it. Every dialog ends exactly once, either with its owner accepting one
// validated client answer, or with one `dialog_closed` (refused). Nothing here can approve: the only non-cancel
// answer that leaves this module is one a client sent for that dialog, checked against its kind. A dialog the
// bridge asks (an egress destination) follows the same rules; it is never Pi's to cancel or answer.
import { checkAnswer, type DialogAnswer } from "./dialogs.ts";
import type { PendingDialog } from "./protocol.ts";

export type DialogCloseReason =
  | "malformed_answer"
  | "detached_grace"
  | "cancelled"
  | "timed_out"
  | "shutdown"
  | "agent_exited";

/** Why an answer found no pending dialog (`data.reason` of `ui_request_not_pending`). */
export type NotPendingReason = "unknown" | "answered" | "refused" | "timed_out";

/** Who asked a dialog and takes its answer: Pi (its extension), or the bridge itself. */
export type DialogOwner = "pi" | "bridge";

export type AnswerDecision =
  /** Send this answer to its owner (Pi, or the bridge); the verdict comes back through `verdict()`. */
  | { kind: "forward"; dialog: PendingDialog; answer: DialogAnswer; owner: DialogOwner }
  | { kind: "not_pending"; reason: NotPendingReason }
  /** The answer does not fit the dialog; `declined` says the dialog was refused because of it. */
  | { kind: "malformed"; problem: string; declined: boolean };

/** Pi's reaction to a forwarded answer. */
export type Verdict =
  | { kind: "accepted" }
  /** Pi had already settled the dialog (e.g. its own timeout). */
  | { kind: "not_pending"; piReason: string | undefined }
  /** Pi refused the payload and still holds the dialog. */
  | { kind: "rejected" }
  /** Pi is gone; no verdict will come. */
  | { kind: "agent_gone" };

export interface TimerApi {
  set(ms: number, fn: () => void): unknown;
  clear(handle: unknown): void;
}

export interface DialogEffects {
  /** Answers Pi with `cancelled` (the gate blocks the call). Only called while Pi holds the dialog. */
  cancelInPi(dialogId: string): void;
  /** A dialog the bridge asked was refused (its question is answered "no"). */
  refusedOwn?(dialogId: string, reason: DialogCloseReason): void;
  /** Announces a refusal to clients (`dialog_closed`). */
  announceClosed(dialogId: string, reason: DialogCloseReason): void;
  /** The set of open dialogs changed (idle accounting). */
  changed(): void;
  warn(fields: object, message: string): void;
}

type Phase = "pending" | "answering";

interface Tracked {
  dialog: PendingDialog;
  owner: DialogOwner;
  phase: Phase;
  timeoutTimer: unknown;
  graceTimer: unknown;
}

export const MAX_TOMBSTONES = 4096;

export class DialogBook {
  private readonly open = new Map<string, Tracked>();
  private readonly tombstones = new Map<string, NotPendingReason>();
  private attached = false;
  private closing = false;

  private readonly effects: DialogEffects;
  private readonly timers: TimerApi;
  private readonly graceMs: number;

  constructor(options: { effects: DialogEffects; timers: TimerApi; detachedGraceMs: number }) {
    this.effects = options.effects;
    this.timers = options.timers;
    this.graceMs = options.detachedGraceMs;
  }

  /**
   * A dialog request: Pi's (`timeoutMs`: Pi's own timeout, after which Pi resolves it with a default), or the
   * bridge's own (`owner` "bridge": no timeout, nothing approves by one).
   */
  request(dialog: PendingDialog, timeoutMs?: number, owner: DialogOwner = "pi"): void {
    if (this.open.has(dialog.id) || this.tombstones.has(dialog.id)) {
      // Pi's ids are random UUIDs; a repeat is not a new dialog. Refuse it rather than track it twice.
      this.effects.warn({ dialog: dialog.id }, "dialog id seen before: refused");
      if (owner === "pi") this.effects.cancelInPi(dialog.id);
      else this.effects.refusedOwn?.(dialog.id, "cancelled");
      return;
    }
    const tracked: Tracked = {
      dialog,
      owner,
      phase: "pending",
      timeoutTimer: undefined,
      graceTimer: undefined,
    };
    this.open.set(dialog.id, tracked);
    if (this.closing) {
      this.refuse(dialog.id, "shutdown");
      return;
    }
    if (timeoutMs !== undefined && timeoutMs > 0) {
      tracked.timeoutTimer = this.timers.set(timeoutMs, () => {
        if (this.open.get(dialog.id)?.phase === "pending") this.end(dialog.id, "timed_out", false);
      });
    }
    if (!this.attached) this.startGrace(tracked);
    this.effects.changed();
  }

  /** A client answer (the frame's fields) for `dialogId`. */
  answer(dialogId: string | undefined, frame: Record<string, unknown>): AnswerDecision {
    const tracked = dialogId ? this.open.get(dialogId) : undefined;
    if (!dialogId || !tracked || tracked.phase !== "pending") {
      if (tracked) return { kind: "not_pending", reason: "answered" };
      return { kind: "not_pending", reason: (dialogId && this.tombstones.get(dialogId)) || "unknown" };
    }
    const check = checkAnswer(tracked.dialog, frame);
    if (!check.ok) {
      this.refuse(dialogId, "malformed_answer");
      return { kind: "malformed", problem: check.problem, declined: true };
    }
    tracked.phase = "answering";
    this.clearTimers(tracked);
    return { kind: "forward", dialog: tracked.dialog, answer: check.answer, owner: tracked.owner };
  }

  /** Pi's verdict on the answer forwarded for `dialogId`. */
  verdict(dialogId: string, verdict: Verdict): void {
    if (this.open.get(dialogId)?.phase !== "answering") return;
    switch (verdict.kind) {
      case "accepted":
        this.forget(dialogId, "answered");
        this.effects.changed();
        return;
      case "not_pending":
        this.end(dialogId, verdict.piReason === "timed_out" ? "timed_out" : "cancelled", false);
        return;
      case "rejected":
        this.refuse(dialogId, "malformed_answer");
        return;
      case "agent_gone":
        this.end(dialogId, "agent_exited", false);
        return;
    }
  }

  /** Refuses one open dialog: Pi gets `cancelled` if it still holds it, clients get `dialog_closed`. */
  refuse(dialogId: string, reason: DialogCloseReason): void {
    const tracked = this.open.get(dialogId);
    if (!tracked) return;
    this.end(dialogId, reason, tracked.phase === "pending");
  }

  /** Refuses every pending dialog (abort, session replacement). Answers already with Pi wait for its verdict. */
  refusePending(reason: DialogCloseReason): void {
    for (const [id, tracked] of [...this.open]) if (tracked.phase === "pending") this.refuse(id, reason);
  }

  /** Shutdown: every pending dialog is refused, and any that arrives later too. */
  close(): void {
    this.closing = true;
    this.refusePending("shutdown");
  }

  /** Pi exited: nothing it held can be answered any more. */
  agentGone(): void {
    for (const id of [...this.open.keys()]) this.end(id, "agent_exited", false);
  }

  attach(): void {
    this.attached = true;
    for (const tracked of this.open.values()) {
      this.timers.clear(tracked.graceTimer);
      tracked.graceTimer = undefined;
    }
  }

  detach(): void {
    this.attached = false;
    for (const tracked of this.open.values()) if (tracked.phase === "pending") this.startGrace(tracked);
  }

  /** Dialogs waiting for a client answer, oldest first. */
  pending(): PendingDialog[] {
    return [...this.open.values()].filter((t) => t.phase === "pending").map((t) => t.dialog);
  }

  isPending(dialogId: string | undefined): boolean {
    return dialogId !== undefined && this.open.get(dialogId)?.phase === "pending";
  }

  /** Open dialogs (pending or with an answer at Pi). */
  get size(): number {
    return this.open.size;
  }

  private startGrace(tracked: Tracked): void {
    this.timers.clear(tracked.graceTimer);
    tracked.graceTimer = this.timers.set(this.graceMs, () => {
      tracked.graceTimer = undefined;
      if (this.attached || this.open.get(tracked.dialog.id) !== tracked || tracked.phase !== "pending")
        return;
      this.effects.warn({ dialog: tracked.dialog.id }, "no client within the detached grace: dialog refused");
      this.refuse(tracked.dialog.id, "detached_grace");
    });
  }

  /** The one place a dialog is refused: forgotten first, so a re-entrant call cannot end it twice. */
  private end(dialogId: string, reason: DialogCloseReason, tellPi: boolean): void {
    const tracked = this.open.get(dialogId);
    if (!tracked) return;
    this.forget(dialogId, reason === "timed_out" ? "timed_out" : "refused");
    if (tracked.owner === "bridge") this.effects.refusedOwn?.(dialogId, reason);
    else if (tellPi) this.effects.cancelInPi(dialogId);
    this.effects.announceClosed(dialogId, reason);
    this.effects.changed();
  }

  private forget(dialogId: string, tombstone: NotPendingReason): void {
    const tracked = this.open.get(dialogId);
    if (tracked) this.clearTimers(tracked);
    this.open.delete(dialogId);
    this.tombstones.set(dialogId, tombstone);
    if (this.tombstones.size > MAX_TOMBSTONES) {
      const oldest = this.tombstones.keys().next().value;
      if (oldest !== undefined) this.tombstones.delete(oldest);
    }
  }

  private clearTimers(tracked: Tracked): void {
    this.timers.clear(tracked.timeoutTimer);
    this.timers.clear(tracked.graceTimer);
    tracked.timeoutTimer = undefined;
    tracked.graceTimer = undefined;
  }
}
