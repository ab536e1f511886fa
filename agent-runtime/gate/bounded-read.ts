// The one way the gate, the router and the executor's checks read a file the tools may have written (issue 17
// item 6): opened non-blocking (a FIFO or a device never hangs the reader), checked to be a regular file with
// fstat, and read up to a byte bound. tests/unit/gate-bounded-reads.test.ts fails if a raw read of a file is added
// anywhere else in these modules.
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

export type ReadProblem = "missing" | "not_a_file" | "too_large" | "unreadable";

export type BoundedRead =
  | {
      ok: true;
      bytes: Buffer;
      /** The file's size when it was opened. */
      size: number;
      /** Only the first `max` bytes were read (prefix reads of a larger file). */
      truncated: boolean;
    }
  | { ok: false; reason: ReadProblem };

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * Reads a regular file of at most `max` bytes (a larger one is `too_large`), or with `prefix` its first `max`
 * bytes whatever its size. With `offset`, reads from there (a zip's central directory at the end of the file).
 */
export function readBounded(
  file: string,
  max: number,
  options: { prefix?: boolean; offset?: number } = {},
): BoundedRead {
  let fd: number;
  try {
    fd = openSync(file, OPEN_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { ok: false, reason: code === "ENOENT" || code === "ENOTDIR" ? "missing" : "unreadable" };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { ok: false, reason: "not_a_file" };
    const offset = Math.max(0, Math.min(options.offset ?? 0, stat.size));
    if (!options.prefix && stat.size - offset > max) return { ok: false, reason: "too_large" };
    // One byte more than allowed tells a file that grew since fstat from one that fits.
    const buffer = Buffer.allocUnsafe(Math.min(max, Math.max(0, stat.size - offset)) + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, offset + length);
      if (n === 0) break;
      length += n;
    }
    if (length > max) {
      if (!options.prefix) return { ok: false, reason: "too_large" };
      length = max;
    }
    return {
      ok: true,
      bytes: buffer.subarray(0, length),
      size: stat.size,
      truncated: offset + length < stat.size,
    };
  } catch {
    return { ok: false, reason: "unreadable" };
  } finally {
    closeSync(fd);
  }
}

/** A bounded read as UTF-8 text, or undefined when the file is missing, not a regular file, too large or unreadable. */
export function readBoundedText(file: string, max: number): string | undefined {
  const read = readBounded(file, max);
  return read.ok ? read.bytes.toString("utf8") : undefined;
}

/**
 * A regular file opened once, non-blocking, for reads at offsets (a git pack, an archive): at most `maxSize`
 * bytes long, at most `maxRead` bytes read in all. Undefined when it is not a readable regular file in bounds.
 */
export class BoundedFile {
  readonly size: number;
  private readonly fd: number;
  private remaining: number;

  private constructor(fd: number, size: number, maxRead: number) {
    this.fd = fd;
    this.size = size;
    this.remaining = maxRead;
  }

  static open(file: string, maxSize: number, maxRead: number): BoundedFile | ReadProblem {
    let fd: number;
    try {
      fd = openSync(file, OPEN_FLAGS);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      return code === "ENOENT" || code === "ENOTDIR" ? "missing" : "unreadable";
    }
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile()) throw Object.assign(new Error(), { problem: "not_a_file" });
      if (stat.size > maxSize) throw Object.assign(new Error(), { problem: "too_large" });
      return new BoundedFile(fd, stat.size, maxRead);
    } catch (error) {
      closeSync(fd);
      return ((error as { problem?: ReadProblem }).problem ?? "unreadable") as ReadProblem;
    }
  }

  /** Up to `length` bytes at `offset` (fewer at the end of the file); throws past the read budget. */
  readAt(offset: number, length: number): Buffer {
    const wanted = Math.max(0, Math.min(length, this.size - offset));
    if (wanted > this.remaining) throw new Error("read budget exhausted");
    this.remaining -= wanted;
    const buffer = Buffer.allocUnsafe(wanted);
    let done = 0;
    while (done < wanted) {
      const n = readSync(this.fd, buffer, done, wanted - done, offset + done);
      if (n === 0) break;
      done += n;
    }
    return buffer.subarray(0, done);
  }

  close(): void {
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
  }
}
