// Command ids are idempotency keys: a repeated id with the same payload never runs twice.

export type IdempotencyDecision =
  | { kind: "new" }
  | { kind: "running" }
  | { kind: "done"; response: Record<string, unknown> }
  | { kind: "conflict" };

interface Entry {
  payload: string;
  response: Record<string, unknown> | undefined;
}

/** Key-order independent JSON text of a value, so {a,b} and {b,a} count as the same payload. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value).sort();
    const obj = value as Record<string, unknown>;
    return `{${keys
      .filter((k) => obj[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export class IdempotencyStore {
  // Map keeps insertion order: the first entries are the oldest.
  private readonly entries = new Map<string, Entry>();

  readonly maxEntries: number;

  constructor(maxEntries = 10_000) {
    this.maxEntries = maxEntries;
  }

  /** Looks the id up; if new, records it as running. */
  begin(id: string, payload: unknown): IdempotencyDecision {
    const text = canonicalJson(payload);
    const entry = this.entries.get(id);
    if (entry) {
      if (entry.payload !== text) return { kind: "conflict" };
      return entry.response ? { kind: "done", response: entry.response } : { kind: "running" };
    }
    this.entries.set(id, { payload: text, response: undefined });
    this.evict();
    return { kind: "new" };
  }

  /** Records the final response for an id (sent once; replayed for retries). */
  complete(id: string, response: Record<string, unknown>): void {
    const entry = this.entries.get(id);
    if (entry) entry.response = response;
  }

  /** Ids still waiting for a response. */
  running(): string[] {
    return [...this.entries].filter(([, e]) => !e.response).map(([id]) => id);
  }

  get size(): number {
    return this.entries.size;
  }

  private evict(): void {
    if (this.entries.size <= this.maxEntries) return;
    for (const [id, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries) break;
      // Never forget a running command: its retry must not execute it again.
      if (entry.response) this.entries.delete(id);
    }
  }
}
