// The policy as data: mode × effect kind → decision. A tool call's decision is the strictest row among the
// effects it has; `explain` and the audit line print the rows that applied. The one cell that depends on more
// than the mode is "guarded": code the gate cannot model is confirmed, unless the egress guard is enforcing
// (then it cannot send anything out without a dialog, and its output still passes the secret filter).
import type { EgressGuardState } from "../policy/egress-guard.ts";
import { guardEnforcing } from "../policy/egress-guard.ts";
import type { PolicyMode } from "../policy/policy-modes.ts";
import { EFFECT_KINDS, type EffectKind } from "./effects.ts";

export type GateDecision = "allow" | "confirm" | "block";
type Cell = GateDecision | "guarded";

export const DECISION_TABLE: Readonly<Record<EffectKind, Readonly<Record<PolicyMode, Cell>>>> = {
  "runs-shell": { auto: "allow", ask: "confirm", "read-only": "block" },
  reads: { auto: "allow", ask: "allow", "read-only": "allow" },
  "reads-secret": { auto: "confirm", ask: "confirm", "read-only": "confirm" },
  writes: { auto: "allow", ask: "confirm", "read-only": "block" },
  "writes-runs-later": { auto: "confirm", ask: "confirm", "read-only": "block" },
  "writes-unlisted": { auto: "confirm", ask: "confirm", "read-only": "block" },
  "changes-gate": { auto: "block", ask: "block", "read-only": "block" },
  sends: { auto: "confirm", ask: "confirm", "read-only": "block" },
  "runs-file": { auto: "allow", ask: "confirm", "read-only": "block" },
  "runs-unmodeled": { auto: "guarded", ask: "confirm", "read-only": "block" },
  undecidable: { auto: "confirm", ask: "confirm", "read-only": "block" },
  "custom-tool": { auto: "confirm", ask: "confirm", "read-only": "block" },
  malformed: { auto: "block", ask: "block", "read-only": "block" },
};

/** What each row is about, for the sentence that tells the model and the person which rule decided. */
export const EFFECT_NOUNS: Readonly<Record<EffectKind, string>> = {
  "runs-shell": "shell commands",
  reads: "reads",
  "reads-secret": "credential reads",
  writes: "writes and edits",
  "writes-runs-later": "writes of files other programs run later",
  "writes-unlisted": "writes to files the gate cannot name",
  "changes-gate": "changes to the gate itself",
  sends: "what may send data out",
  "runs-file": "running local code",
  "runs-unmodeled": "code the gate cannot model",
  undecidable: "commands the gate cannot decide on",
  "custom-tool": "custom tools",
  malformed: "calls it cannot decide on",
};

/** "the read-only policy blocks shell commands": the deciding row as a sentence. */
export function ruleSentence(mode: PolicyMode, row: AppliedRow): string {
  const verb = { allow: "allows", confirm: "asks before", block: "blocks" }[row.decision];
  return `${mode} policy ${verb} ${EFFECT_NOUNS[row.effect]}`;
}

const RANK: Record<GateDecision, number> = { allow: 0, confirm: 1, block: 2 };

/** One row of the table as it applied to this call. */
export interface AppliedRow {
  effect: EffectKind;
  /** What the table says for this mode ("guarded" is resolved in `decision`). */
  cell: Cell;
  decision: GateDecision;
}

export interface TableVerdict {
  decision: GateDecision;
  /** Every row that applied, in table order. */
  rows: AppliedRow[];
  /** The row that decided (the first strictest one). */
  deciding: AppliedRow | undefined;
  /**
   * Which case of "code the gate cannot model" applied: `confirmed` (no enforcing guard), `guard` (the enforcing
   * egress guard let it run), or absent when no such code runs.
   */
  unmodeled?: "confirmed" | "guard";
}

export function applyTable(
  mode: PolicyMode,
  kinds: ReadonlySet<EffectKind>,
  guard: EgressGuardState,
): TableVerdict {
  const rows: AppliedRow[] = [];
  for (const effect of EFFECT_KINDS) {
    if (!kinds.has(effect)) continue;
    const cell = DECISION_TABLE[effect][mode];
    const decision = cell === "guarded" ? (guardEnforcing(guard) ? "allow" : "confirm") : cell;
    rows.push({ effect, cell, decision });
  }
  let deciding: AppliedRow | undefined;
  for (const row of rows) if (!deciding || RANK[row.decision] > RANK[deciding.decision]) deciding = row;
  const guarded = rows.find((row) => row.cell === "guarded");
  return {
    decision: deciding?.decision ?? "allow",
    rows,
    deciding,
    ...(guarded ? { unmodeled: guarded.decision === "allow" ? "guard" : "confirmed" } : {}),
  };
}
