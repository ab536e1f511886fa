// Command ids are idempotency keys: a repeated id with the same payload never runs twice. The store keeps
// `id → payload digest + result` (never a payload), bounded by count and bytes, and can be made durable
// (every change handed to a record log), so a restarted bridge still knows which ids ran.
import { createHash } from "node:crypto";

export type Frame = Record<string, unknown>;

export type IdempotencyDecision =
  | { kind: "new" }
  | { kind: "running" }
  | { kind: "done"; response: Frame }
  | { kind: "conflict" };

/** One durable change to the store: a command began, or got its final response. */
export type CommandRecord =
  | { op: "begin"; id: string; digest: string; command: string }
  | { op: "done"; id: string; response: Frame };

interface Entry {
  digest: string;
  command: string;
  response: Frame | undefined;
  bytes: number;
}

/** A recorded response larger than this is kept as a summary (success, code, error, its seq). */
export const MAX_RECORDED_RESPONSE_BYTES = 64 * 1024;
const ENTRY_OVERHEAD_BYTES = 160;

/** Sorted keys, so {a,b} and {b,a} are the same payload. Null-prototype copies keep "__proto__" a plain key. */
function sortKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const source = value as Record<string, unknown>;
  const sorted: Record<string, unknown> = Object.create(null);
  for (const key of Object.keys(source).sort()) sorted[key] = source[key];
  return sorted;
}

/**
 * sha256 (base64) of the payload's key-order independent JSON. Callers pass parsed client frames whose
 * depth the bridge has already capped (frame-input.ts), so JSON.stringify's own recursion stays shallow.
 */
export function payloadDigest(payload: unknown): string {
  const text = JSON.stringify(payload, sortKeys) ?? "null";
  return createHash("sha256").update(text).digest("base64");
}

/** The response as recorded: whole if small, otherwise what a retry needs to know and where the rest was. */
export function recordable(response: Frame, seq: number | undefined): { response: Frame; bytes: number } {
  const text = JSON.stringify(response);
  if (text.length <= MAX_RECORDED_RESPONSE_BYTES) return { response, bytes: text.length };
  const { type, id, command, success, code, error } = response;
  const summary: Frame = {
    type,
    id,
    command,
    success,
    ...(code !== undefined ? { code } : {}),
    ...(typeof error === "string" ? { error: error.slice(0, 1024) } : {}),
    data: { responseOmitted: true, ...(seq !== undefined ? { responseSeq: seq } : {}) },
  };
  return { response: summary, bytes: JSON.stringify(summary).length };
}

export interface IdempotencyLimits {
  maxEntries: number;
  maxBytes: number;
}

export class IdempotencyStore {
  // Map keeps insertion order: the first entries are the oldest.
  private readonly entries = new Map<string, Entry>();
  private totalBytes = 0;
  /** Called with every change, before begin/complete return (the durable log writes it through). */
  onRecord: (record: CommandRecord) => void = () => {};

  readonly limits: IdempotencyLimits;

  constructor(limits: Partial<IdempotencyLimits> = {}) {
    this.limits = { maxEntries: 10_000, maxBytes: 16 * 1024 * 1024, ...limits };
  }

  /** Looks the id up; if new, records it as running. */
  begin(id: string, payload: unknown, command: string): IdempotencyDecision {
    const digest = payloadDigest(payload);
    const entry = this.entries.get(id);
    if (entry) {
      if (entry.digest !== digest) return { kind: "conflict" };
      return entry.response ? { kind: "done", response: entry.response } : { kind: "running" };
    }
    this.add(id, { digest, command, response: undefined, bytes: id.length * 2 + ENTRY_OVERHEAD_BYTES });
    this.onRecord({ op: "begin", id, digest, command });
    return { kind: "new" };
  }

  /** Records the final response for an id (sent once; replayed for retries). `seq` is where it was sent. */
  complete(id: string, response: Frame, seq?: number): void {
    const entry = this.entries.get(id);
    if (!entry || entry.response) return;
    const kept = recordable(response, seq);
    entry.response = kept.response;
    entry.bytes += kept.bytes;
    this.totalBytes += kept.bytes;
    this.onRecord({ op: "done", id, response: kept.response });
    this.evict();
  }

  /** Ids still waiting for a response, oldest first. */
  running(): { id: string; command: string }[] {
    return [...this.entries].filter(([, e]) => !e.response).map(([id, e]) => ({ id, command: e.command }));
  }

  /** The current contents as records (for compacting the durable log). */
  *records(): Generator<CommandRecord> {
    for (const [id, e] of this.entries) {
      yield { op: "begin", id, digest: e.digest, command: e.command };
      if (e.response) yield { op: "done", id, response: e.response };
    }
  }

  /** Replays records read back from the durable log (no onRecord calls). */
  restore(records: Iterable<CommandRecord>): void {
    const saved = this.onRecord;
    this.onRecord = () => {};
    try {
      for (const r of records) {
        if (r.op === "begin") {
          if (!this.entries.has(r.id)) this.begin(r.id, undefined, r.command);
          const entry = this.entries.get(r.id);
          if (entry) entry.digest = r.digest;
        } else {
          this.complete(r.id, r.response);
        }
      }
    } finally {
      this.onRecord = saved;
    }
  }

  get size(): number {
    return this.entries.size;
  }

  get bytes(): number {
    return this.totalBytes;
  }

  private add(id: string, entry: Entry): void {
    this.entries.set(id, entry);
    this.totalBytes += entry.bytes;
    this.evict();
  }

  private evict(): void {
    if (this.entries.size <= this.limits.maxEntries && this.totalBytes <= this.limits.maxBytes) return;
    for (const [id, entry] of this.entries) {
      if (this.entries.size <= this.limits.maxEntries && this.totalBytes <= this.limits.maxBytes) break;
      // Never forget a running command: its retry must not execute it again.
      if (!entry.response) continue;
      this.entries.delete(id);
      this.totalBytes -= entry.bytes;
    }
  }
}
