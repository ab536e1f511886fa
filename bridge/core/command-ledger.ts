// Every client command's id is its idempotency key: a new id runs once, a retry of a running one waits for its
// one response, a retry of a finished one gets the recorded response again, and the same id with another
// payload is a conflict. Every response to a client command leaves through `finish`.
import type { Logger } from "../../agent-runtime/log.ts";
import type { IdempotencyStore } from "../idempotency.ts";
import { type Frame, type FrameSink, failure } from "./frames.ts";

export class CommandLedger {
  private readonly store: IdempotencyStore;
  private readonly sink: FrameSink;
  private readonly finished: () => void;

  constructor(options: { store: IdempotencyStore; sink: FrameSink; finished: () => void }) {
    this.store = options.store;
    this.sink = options.sink;
    this.finished = options.finished;
  }

  /** True if the command is new and should run; otherwise its answer is handled here (or on its way). */
  begin(id: string, payload: Frame, type: string): boolean {
    const decision = this.store.begin(id, payload, type);
    switch (decision.kind) {
      case "new":
        return true;
      case "conflict":
        this.sink.publish(
          failure(id, type, "idempotency_conflict", "this id was used before with a different payload"),
        );
        return false;
      case "running":
        return false; // it completes once; its response is on the way
      case "done":
        this.sink.publish(decision.response);
        return false;
    }
  }

  /** Records (for retries) and publishes a command's one response. */
  finish(clientId: string | undefined, response: Frame): void {
    if (clientId !== undefined) this.store.complete(clientId, response, this.sink.headSeq + 1);
    this.sink.publish(response);
    this.finished();
  }

  /**
   * Commands in flight when the previous bridge on this state dir stopped answer `outcome_unknown`: they are
   * never run again.
   */
  recoverInterrupted(log: Logger): void {
    for (const { id, command } of this.store.running()) {
      log.warn({ id, command }, "command in flight when the bridge stopped: outcome unknown");
      this.finish(
        id,
        failure(
          id,
          command,
          "outcome_unknown",
          "the bridge restarted while this command was in flight; it may or may not have taken effect, and it was not run again",
        ),
      );
    }
  }
}
