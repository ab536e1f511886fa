// "Vetted-content approval releases only the displayed bytes once": when the gate shows a script in a dialog
// (write, then run), the person's yes covers those exact bytes for that one tool call. The gate records what it
// showed under the tool call's id; whoever executes the call takes the record (once) and verifies every file
// again immediately before running it. A file that changed, vanished or grew past the bound refuses the run.
import { createHash } from "node:crypto";
import { readBounded } from "./gate/bounded-read.ts";

/** The largest file the gate reads to show and hash (larger files are not vetted: the call is refused). */
export const MAX_VETTED_BYTES = 256 * 1024;

export interface VettedFile {
  /** Absolute path as the executing code will open it. */
  path: string;
  sha256: string;
  bytes: number;
}

export type VettedRead =
  | { ok: true; file: VettedFile; text: string }
  | { ok: false; reason: "missing" | "not_a_file" | "too_large" | "unreadable" };

/** Reads a regular file for vetting, bounded, never blocking on a FIFO or device (symlinks are followed, as the run will). */
export function readForVetting(file: string): VettedRead {
  const read = readBounded(file, MAX_VETTED_BYTES);
  if (!read.ok) return { ok: false, reason: read.reason };
  return {
    ok: true,
    file: {
      path: file,
      sha256: createHash("sha256").update(read.bytes).digest("hex"),
      bytes: read.bytes.length,
    },
    text: read.bytes.toString("utf8"),
  };
}

export type VettedCheck = { ok: true } | { ok: false; path: string; reason: string };

/** Re-reads every vetted file: all must still hold exactly the bytes that were shown. */
export function verifyVetted(files: readonly VettedFile[]): VettedCheck {
  for (const expected of files) {
    const now = readForVetting(expected.path);
    if (!now.ok)
      return { ok: false, path: expected.path, reason: `it is now ${now.reason.replace("_", " ")}` };
    if (now.file.sha256 !== expected.sha256) {
      return {
        ok: false,
        path: expected.path,
        reason: "its content changed after it was shown for approval",
      };
    }
  }
  return { ok: true };
}

/**
 * Approved vetted content, keyed by tool call id, in the one Pi process. `take` removes the record: an approval
 * is used once. Bounded: a record nobody takes (the call failed before running) is dropped oldest first.
 */
export class VettedApprovals {
  private readonly records = new Map<string, readonly VettedFile[]>();
  private readonly maxRecords: number;

  constructor(maxRecords = 256) {
    this.maxRecords = maxRecords;
  }

  record(toolCallId: string, files: readonly VettedFile[]): void {
    this.records.delete(toolCallId);
    this.records.set(toolCallId, files);
    while (this.records.size > this.maxRecords) {
      const oldest = this.records.keys().next().value;
      if (oldest === undefined) break;
      this.records.delete(oldest);
    }
  }

  /** The files approved for this call (empty when nothing was vetted), removed on the way out. */
  take(toolCallId: string): readonly VettedFile[] {
    const files = this.records.get(toolCallId) ?? [];
    this.records.delete(toolCallId);
    return files;
  }
}

/** The one registry the gate writes and the tool executor path reads (both live in the gate's bundle). */
export const vettedApprovals = new VettedApprovals();
