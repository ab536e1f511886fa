// Commands that wait while Pi starts or restarts: bounded by count and bytes, released in order once a Pi
// serves, or failed together when none will.
import type { Frame } from "./frames.ts";

export interface HeldCommand {
  command: Frame;
  clientId: string | undefined;
  type: string;
  bytes: number;
}

export const MAX_HELD_COMMANDS = 256;
export const MAX_HELD_BYTES = 64 * 1024 * 1024;

export class HeldQueue {
  private held: HeldCommand[] = [];
  private bytes = 0;

  /** Holds a command; false when the queue is full (the caller answers `agent_starting`). */
  push(command: Frame, clientId: string | undefined, type: string): boolean {
    const bytes = approximateBytes(command);
    if (this.held.length >= MAX_HELD_COMMANDS || this.bytes + bytes > MAX_HELD_BYTES) return false;
    this.held.push({ command, clientId, type, bytes });
    this.bytes += bytes;
    return true;
  }

  /** Every held command, oldest first; the queue is empty afterwards. */
  drain(): HeldCommand[] {
    this.bytes = 0;
    return this.held.splice(0);
  }

  get size(): number {
    return this.held.length;
  }
}

/** A cheap upper-bound estimate of a parsed frame's size (its largest strings dominate). */
export function approximateBytes(frame: Frame): number {
  let bytes = 64;
  for (const value of Object.values(frame)) {
    if (typeof value === "string") bytes += value.length * 2;
    else if (value !== null && typeof value === "object") bytes += JSON.stringify(value).length * 2;
  }
  return bytes;
}
