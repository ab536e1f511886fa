// Frames as the core handles them (parsed JSON objects) and the responses the bridge makes itself.
import type { Frame } from "../idempotency.ts";
import type { BridgeResponseError } from "../protocol.ts";

export type { Frame };

/** Where numbered frames go: the replay ring and journal (network) or stdout (stdio). */
export interface FrameSink {
  /** `raw` is Pi's own JSON text for `frame` when it passes through unchanged. */
  publish(frame: Frame, raw?: string): void;
  readonly headSeq: number;
  /** The oldest frame a client can still be sent again (headSeq + 1 when none is kept). */
  readonly firstSeq: number;
  /** How long the oldest published frame that may not be sent yet has waited (0: none waits). */
  stalledMs?(): number;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The frame with `id` set to the client's id, or without `id` if the client sent none. */
export function withId(frame: Frame, id: string | undefined): Frame {
  const { id: _piId, ...rest } = frame;
  return id === undefined ? rest : { ...rest, id };
}

/** A failed response the bridge makes: `code` exact, `error` in the patched Pi's "<code>: <message>" style. */
export function failure(
  id: string | undefined,
  command: string,
  code: BridgeResponseError,
  message: string,
): Frame {
  return {
    type: "response",
    ...(id !== undefined ? { id } : {}),
    command,
    success: false,
    error: `${code}: ${message}`,
    code,
  };
}

export function errorFrame(code: string, message: string, id?: string): Frame {
  return { type: "error", code, message, ...(id !== undefined ? { id } : {}) };
}
