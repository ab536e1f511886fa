// The journal: every numbered frame the bridge sends, appended to segment files in the state directory,
// so a restarted bridge serves resume from where the last one stopped (same epoch, same seq).
//
// Format (stable; readable by offset through sbx-server's file API as a fallback for clients without a
// WebSocket): `<state>/bridge/journal/<first seq, 20 digits>.ndjson`, one frame per line exactly as sent on
// the wire (UTF-8 JSON that starts with `{"seq":N,`), seq contiguous across the segments in name order.
//
// Flush policy: frames are buffered while one batch of Pi's output is handled, and written (writev, one
// system call per batch) before any of them is handed to a client, so a client never sees a frame that a
// crash of the bridge could lose. The OS page cache holds them from then on; the files are not fsynced per
// frame (a kernel crash ends the sandbox as well), only when a segment is sealed.
//
// A failed write (ENOSPC, EIO) stops the journal: it drops what it has not written and says so (`healthy`
// false); the caller sends from memory meanwhile, and `rewrite` starts it again from the replay ring.
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  truncateSync,
  unlinkSync,
  writevSync,
} from "node:fs";
import path from "node:path";
import { completeLines, fsyncDir, readBounded } from "./state-files.ts";

export interface JournalLimits {
  /** Frames and bytes the replay ring holds: the journal keeps at least these, and one segment more. */
  maxFrames: number;
  maxBytes: number;
}

export interface RecoveredFrame {
  seq: number;
  data: Buffer;
}

export interface Recovery {
  frames: RecoveredFrame[];
  /** Seq of the last journaled frame (0 if none). */
  headSeq: number;
  /** Set when the journal could not be trusted (the caller must start a new epoch). */
  problem: string | undefined;
}

const SEGMENT_NAME = /^(\d{20})\.ndjson$/;
const SEQ_PREFIX = /^\{"seq":(\d+),/;
const MAX_IOVECS = 512;

const segmentName = (firstSeq: number) => `${String(firstSeq).padStart(20, "0")}.ndjson`;

function listSegments(dir: string): { firstSeq: number; file: string }[] {
  const segments: { firstSeq: number; file: string }[] = [];
  for (const name of readdirSync(dir)) {
    const match = SEGMENT_NAME.exec(name);
    if (match) segments.push({ firstSeq: Number(match[1]), file: path.join(dir, name) });
  }
  return segments.sort((a, b) => a.firstSeq - b.firstSeq);
}

/** The system call the journal writes with (a test injects failures: ENOSPC, EIO, short writes). */
export type Writev = (fd: number, buffers: Buffer[]) => number;

export interface JournalOptions {
  /** Called once when a write fails (the journal stops until `rewrite`). */
  onFailure?: (reason: string) => void;
  writev?: Writev;
}

/** Writes every byte of `buffers`, at most MAX_IOVECS at a time (writev may also write less than asked). */
function writevAll(fd: number, buffers: readonly Buffer[], writev: Writev): void {
  let at = 0;
  let offset = 0;
  while (at < buffers.length) {
    const chunk = buffers.slice(at, at + MAX_IOVECS);
    if (offset > 0) chunk[0] = (chunk[0] as Buffer).subarray(offset);
    let written = writev(fd, chunk);
    if (written === 0) throw new Error("writev wrote nothing");
    while (at < buffers.length && written >= (buffers[at] as Buffer).length - offset) {
      written -= (buffers[at] as Buffer).length - offset;
      at++;
      offset = 0;
    }
    offset += written;
  }
}

export class Journal {
  private fd: number | undefined;
  private segmentFirstSeq = 0;
  private segmentBytes = 0;
  private segmentFrames = 0;
  private segments: { firstSeq: number; file: string }[];
  private pending: Buffer[] = [];
  private pendingLastSeq = 0;
  private writtenSeq: number;
  private failure: string | undefined;

  readonly dir: string;
  readonly limits: JournalLimits;
  private readonly segmentLimitBytes: number;
  private readonly segmentLimitFrames: number;
  private readonly onFailure: (reason: string) => void;
  private readonly writev: Writev;

  /** Opens the journal for appending after `headSeq` (what `recover` returned). */
  constructor(dir: string, limits: JournalLimits, headSeq: number, options: JournalOptions = {}) {
    this.dir = dir;
    this.limits = limits;
    this.onFailure = options.onFailure ?? (() => {});
    this.writev = options.writev ?? writevSync;
    this.writtenSeq = headSeq;
    this.pendingLastSeq = headSeq;
    // About eight segments per ring: old frames are dropped a segment at a time.
    this.segmentLimitBytes = Math.max(256 * 1024, Math.ceil(limits.maxBytes / 8));
    this.segmentLimitFrames = Math.max(64, Math.ceil(limits.maxFrames / 8));
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.segments = listSegments(dir);
  }

  /**
   * Reads the journal back: the newest frames within the ring's bounds, contiguous by seq. A torn last line
   * (a crash mid-write) is cut off; anything else that does not fit (a gap, an unreadable segment) is reported
   * as a problem, and the journal is emptied so the new epoch starts clean.
   */
  static recover(dir: string, limits: JournalLimits): Recovery {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const segments = listSegments(dir);
    const kept: RecoveredFrame[][] = [];
    let frames = 0;
    let bytes = 0;
    let expectedNext: number | undefined;
    let problem: string | undefined;
    // Newest first, until the ring's bounds are met; then check contiguity oldest-first.
    for (let i = segments.length - 1; i >= 0 && frames < limits.maxFrames && bytes < limits.maxBytes; i--) {
      const segment = segments[i] as { firstSeq: number; file: string };
      let buffer: Buffer | undefined;
      try {
        buffer = readBounded(segment.file, limits.maxBytes + 64 * 1024 * 1024);
      } catch (err) {
        problem = `journal segment unreadable: ${(err as Error).message}`;
        break;
      }
      if (!buffer) continue;
      const { lines, bytes: complete } = completeLines(buffer);
      if (complete < buffer.length) {
        if (i !== segments.length - 1) {
          problem = `journal segment ${path.basename(segment.file)} ends mid-line`;
          break;
        }
        truncateSync(segment.file, complete); // a torn tail: that frame never reached a client
      }
      const parsed: RecoveredFrame[] = [];
      for (const line of lines) {
        const match = SEQ_PREFIX.exec(line);
        if (!match) {
          problem = `journal segment ${path.basename(segment.file)} holds a line that is not a frame`;
          break;
        }
        parsed.push({ seq: Number(match[1]), data: Buffer.from(line, "utf8") });
      }
      if (problem) break;
      kept.unshift(parsed);
      frames += parsed.length;
      for (const f of parsed) bytes += f.data.length;
    }
    const all = kept.flat();
    for (const frame of all) {
      if (expectedNext !== undefined && frame.seq !== expectedNext) {
        problem = `journal seq jumps from ${expectedNext - 1} to ${frame.seq}`;
        break;
      }
      expectedNext = frame.seq + 1;
    }
    if (problem) {
      for (const segment of segments) unlinkSync(segment.file);
      return { frames: [], headSeq: 0, problem };
    }
    return { frames: all, headSeq: all.at(-1)?.seq ?? 0, problem: undefined };
  }

  /** Queues one frame (its wire text) for the next flush. */
  append(seq: number, data: Buffer): void {
    if (this.failure) return;
    this.pending.push(data);
    this.pendingLastSeq = seq;
  }

  /** Seq up to which frames are written (safe to hand to a client while the journal is healthy). */
  get durableSeq(): number {
    return this.writtenSeq;
  }

  /** False after a failed write, until `rewrite` succeeds. */
  get healthy(): boolean {
    return this.failure === undefined;
  }

  get failed(): string | undefined {
    return this.failure;
  }

  /** Writes every queued frame; `firstHeldSeq` (the ring's oldest frame) lets old segments go. */
  flush(firstHeldSeq: number): void {
    if (this.failure || this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    try {
      let firstSeq = this.writtenSeq + 1;
      let i = 0;
      while (i < batch.length) {
        if (this.fd === undefined || this.segmentFull()) this.openSegment(firstSeq);
        const iovecs: Buffer[] = [];
        let n = 0;
        while (i < batch.length && n < MAX_IOVECS && !this.segmentFullAfter(n)) {
          const data = batch[i] as Buffer;
          iovecs.push(data, NEWLINE);
          this.segmentBytes += data.length + 1;
          n++;
          i++;
        }
        writevAll(this.fd as number, iovecs, this.writev);
        this.segmentFrames += n;
        firstSeq += n;
      }
      this.writtenSeq = this.pendingLastSeq;
      this.dropOldSegments(firstHeldSeq);
    } catch (err) {
      this.fail(`journal write failed: ${(err as Error).message}`);
    }
  }

  /**
   * Starts the journal again with exactly `frames` (the replay ring's, contiguous, ending at `headSeq`): every
   * segment goes, one new one holds them. Throws if the disk still fails (the journal stays stopped).
   */
  rewrite(frames: Iterable<{ seq: number; data: Buffer }>, headSeq: number): void {
    this.close();
    for (const segment of listSegments(this.dir)) unlinkSync(segment.file);
    this.segments = [];
    this.pending = [];
    this.writtenSeq = headSeq;
    this.pendingLastSeq = headSeq;
    let first: number | undefined;
    const batch: Buffer[] = [];
    for (const frame of frames) {
      first ??= frame.seq;
      batch.push(frame.data, NEWLINE);
    }
    this.openSegment(first ?? headSeq + 1);
    writevAll(this.fd as number, batch, this.writev);
    this.segmentFrames = batch.length / 2;
    this.segmentBytes = batch.reduce((n, b) => n + b.length, 0);
    fsyncSync(this.fd as number);
    this.failure = undefined;
  }

  close(): void {
    if (this.fd === undefined) return;
    try {
      fsyncSync(this.fd);
      closeSync(this.fd);
    } catch {}
    this.fd = undefined;
  }

  private segmentFull(): boolean {
    return this.segmentBytes >= this.segmentLimitBytes || this.segmentFrames >= this.segmentLimitFrames;
  }

  private segmentFullAfter(added: number): boolean {
    return (
      this.segmentBytes >= this.segmentLimitBytes || this.segmentFrames + added >= this.segmentLimitFrames
    );
  }

  private openSegment(firstSeq: number): void {
    this.close();
    const file = path.join(this.dir, segmentName(firstSeq));
    this.fd = openSync(file, "a", 0o600);
    this.segments.push({ firstSeq, file });
    fsyncDir(this.dir);
    this.segmentFirstSeq = firstSeq;
    this.segmentBytes = 0;
    this.segmentFrames = 0;
  }

  /** A segment goes once the next one starts at or before the oldest frame the ring still holds. */
  private dropOldSegments(firstHeldSeq: number): void {
    while (this.segments.length > 1 && (this.segments[1]?.firstSeq ?? Infinity) <= firstHeldSeq) {
      const old = this.segments.shift() as { firstSeq: number; file: string };
      try {
        unlinkSync(old.file);
      } catch {}
    }
  }

  private fail(reason: string): void {
    this.failure = reason;
    this.pending = [];
    this.onFailure(reason);
  }

  /** First seq of the segment being written (for tests and status). */
  get currentSegmentFirstSeq(): number {
    return this.segmentFirstSeq;
  }
}

const NEWLINE = Buffer.from("\n");
