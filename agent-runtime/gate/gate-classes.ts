// The vocabulary every decision speaks: what a tool call might do, with human-readable reasons.
export const GATE_CLASSES = ["EXIT", "SECRET", "WRITE", "READ", "UNKNOWN", "TAMPER"] as const;
export type GateClass = (typeof GATE_CLASSES)[number];

const MAX_REASONS = 24;

export class Findings {
  readonly classes = new Set<GateClass>();
  readonly reasons: string[] = [];

  add(cls: GateClass, reason?: string): void {
    this.classes.add(cls);
    if (reason && this.reasons.length < MAX_REASONS && !this.reasons.includes(reason))
      this.reasons.push(reason);
  }

  /** Something the parser cannot see statically: count it as a possible exit and a possible secret read. */
  opaque(reason: string): void {
    this.add("UNKNOWN", reason);
    this.add("EXIT");
    this.add("SECRET");
  }

  has(cls: GateClass): boolean {
    return this.classes.has(cls);
  }

  /** Classes in a stable order (the order of GATE_CLASSES). */
  sortedClasses(): GateClass[] {
    return GATE_CLASSES.filter((cls) => this.classes.has(cls));
  }
}
