// "The person approved this call": when the gate confirmed a bash call that sends (and that it read entirely) and
// the person answered yes, the call may run with the network, for that call only (issue 18 item 4). The gate records the approval under the tool call's
// id, bound to the exact command it showed; the router takes it (once) when it sends that call to the executor,
// which starts the call's helper marked approved for the tools' supervisor. Only this process's gate records
// approvals: nothing the model sends (tool input, ids, text) can make one.
import { createHash } from "node:crypto";
import type { EffectKind } from "./gate/effects.ts";

/**
 * Which approved calls get the network, by what the gate found in them: a command the gate read entirely (no
 * agent-written file, no program it cannot model, nothing undecidable) that it showed as sending to a remote
 * (`git push`, `ssh`, `curl URL`). A yes to running a script or an unknown program is a yes to run it, not to let it
 * reach anywhere: its connects stay refused (the egress proxy asks per destination).
 */
export const NETWORK_GRANT = {
  needs: ["sends"],
  never: ["runs-file", "runs-unmodeled", "undecidable", "writes-runs-later", "custom-tool", "malformed"],
} as const satisfies { needs: readonly EffectKind[]; never: readonly EffectKind[] };

/** Whether a bash call with these effects, once the person approved it, runs with the network. */
export function networkGrantFor(effects: readonly EffectKind[]): boolean {
  return (
    NETWORK_GRANT.needs.every((kind) => effects.includes(kind)) &&
    !NETWORK_GRANT.never.some((kind) => effects.includes(kind))
  );
}

const digest = (command: string) => createHash("sha256").update(command, "utf8").digest("hex");

export class PersonApprovals {
  private readonly records = new Map<string, string>();
  private readonly maxRecords: number;

  constructor(maxRecords = 256) {
    this.maxRecords = maxRecords;
  }

  /** The person approved the bash call `toolCallId` running exactly `command`. */
  record(toolCallId: string, command: string): void {
    this.records.delete(toolCallId);
    this.records.set(toolCallId, digest(command));
    // A record nobody takes (the call failed before running) is dropped, oldest first.
    while (this.records.size > this.maxRecords) {
      const oldest = this.records.keys().next().value;
      if (oldest === undefined) break;
      this.records.delete(oldest);
    }
  }

  /** Whether the call about to run is the one the person approved (removed on the way out: used once). */
  take(toolCallId: string, command: unknown): boolean {
    const recorded = this.records.get(toolCallId);
    this.records.delete(toolCallId);
    return recorded !== undefined && typeof command === "string" && recorded === digest(command);
  }

  /** A new turn: approvals of the last one are gone (tool call ids are the model's, and may come again). */
  clear(): void {
    this.records.clear();
  }
}

/** The one record in Pi's process: the gate and the router load in the same bundle. */
export const personApprovals = new PersonApprovals();
