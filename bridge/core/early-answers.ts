// Read-only commands that arrive while a Pi is being probed go to it at once, behind the probe lines, instead
// of waiting for the verdict: Pi answers them right after the probes, in order, and the first get_state a
// client sends at connect costs no extra round trip. Nothing an unverified Pi says reaches a client: their
// answers wait here until the verdict. A pass delivers them in order; a refusal or an exit fails them as a
// held command would fail. Which commands may go early is a table (READ_ONLY_COMMANDS): running one changes
// nothing, so an unverified Pi running it changes nothing either.
import { READ_ONLY_COMMANDS } from "../protocol.ts";
import type { CommandLedger } from "./command-ledger.ts";
import { type Frame, failure } from "./frames.ts";
import { approximateBytes, MAX_HELD_BYTES, MAX_HELD_COMMANDS } from "./held-queue.ts";

type Verdict = "pending" | "serving" | { code: "agent_unverified" | "agent_exited"; message: string };

export class EarlyAnswers {
  private parked: { clientId: string | undefined; command: string; frame: Frame }[] = [];
  /** Bytes of the answers kept (bounded like the held queue: a long session's get_messages is large). */
  private parkedBytes = 0;
  /** Early commands sent to the Pi being probed and not settled yet (bounded like the held queue). */
  private inFlight = 0;
  private readonly ledger: CommandLedger;
  private readonly verdict: () => Verdict;

  constructor(options: { ledger: CommandLedger; verdict: () => Verdict }) {
    this.ledger = options.ledger;
    this.verdict = options.verdict;
  }

  /** Whether this command may go to the Pi being probed now (the caller sends it with an `early` route). */
  admit(type: string): boolean {
    if (!READ_ONLY_COMMANDS.has(type) || this.inFlight >= MAX_HELD_COMMANDS) return false;
    this.inFlight++;
    return true;
  }

  /** Pi answered an early command: delivered now if the Pi serves, kept until the verdict, or failed. */
  answer(clientId: string | undefined, command: string, frame: Frame): void {
    const verdict = this.verdict();
    if (verdict === "pending") {
      const bytes = approximateBytes(frame);
      if (this.parkedBytes + bytes <= MAX_HELD_BYTES) {
        this.parkedBytes += bytes;
        this.parked.push({ clientId, command, frame });
        return;
      }
      // Read-only: the client may simply ask again once Pi serves.
      this.settle(1);
      this.ledger.finish(
        clientId,
        failure(clientId, command, "agent_starting", "Pi is starting and too many answers are waiting"),
      );
      return;
    }
    this.settle(1);
    if (verdict === "serving") this.ledger.finish(clientId, frame);
    else this.ledger.finish(clientId, failure(clientId, command, verdict.code, verdict.message));
  }

  /** An early command's route failed with its unit (the caller answered it). */
  lost(): void {
    this.settle(1);
  }

  /** The Pi passed its probes: the answers kept, oldest first (before any held command is forwarded). */
  deliver(): void {
    const parked = this.parked.splice(0);
    this.parkedBytes = 0;
    this.settle(parked.length);
    for (const p of parked) this.ledger.finish(p.clientId, p.frame);
  }

  /** No Pi will serve them: every answer kept fails with this code. */
  fail(code: "agent_unverified" | "agent_exited", message: string): void {
    const parked = this.parked.splice(0);
    this.parkedBytes = 0;
    this.settle(parked.length);
    for (const p of parked) this.ledger.finish(p.clientId, failure(p.clientId, p.command, code, message));
  }

  get size(): number {
    return this.parked.length;
  }

  private settle(count: number): void {
    this.inFlight = Math.max(0, this.inFlight - count);
  }
}
