// Small synchronous file helpers for the bridge's state directory: atomic replace, bounded reads, and
// append-only NDJSON record logs.
import {
  closeSync,
  fstatSync,
  fsyncSync,
  openSync,
  readSync,
  renameSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import path from "node:path";

/** Replaces `file` atomically: temp file in the same directory, fsync, rename, fsync the directory. */
export function writeFileAtomic(file: string, text: string): void {
  const temp = `${file}.tmp-${process.pid}`;
  const fd = openSync(temp, "w", 0o600);
  try {
    writeFileSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
  fsyncDir(path.dirname(file));
}

export function fsyncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic.
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads a regular file of at most `maxBytes`; undefined if it does not exist. Larger files, and anything that
 * is not a regular file, throw: state files are small and ours, so either is a sign of tampering.
 */
export function readBounded(file: string, maxBytes: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error(`${file} is not a regular file`);
    if (stat.size > maxBytes) throw new Error(`${file} is ${stat.size} bytes (at most ${maxBytes} expected)`);
    const buffer = Buffer.alloc(stat.size);
    let read = 0;
    while (read < stat.size) {
      const n = readSync(fd, buffer, read, stat.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

/** Complete lines of an NDJSON buffer, and the byte length they cover (a torn last line is left out). */
export function completeLines(buffer: Buffer): { lines: string[]; bytes: number } {
  const end = buffer.lastIndexOf(0x0a);
  if (end < 0) return { lines: [], bytes: 0 };
  const lines = buffer.subarray(0, end).toString("utf8").split("\n");
  return { lines, bytes: end + 1 };
}

/**
 * An append-only NDJSON file of records, written through to the OS on every append (a crash of the process
 * loses nothing that was appended), and compacted by an atomic rewrite.
 */
export class RecordLog<T> {
  private fd: number;
  private sizeBytes: number;

  readonly file: string;

  constructor(file: string) {
    this.file = file;
    this.fd = openSync(file, "a", 0o600);
    this.sizeBytes = fstatSync(this.fd).size;
  }

  /** Reads back every complete record (a torn last line, from a crash mid-write, is dropped). */
  static read<T>(file: string, maxBytes: number, parse: (value: unknown) => T | undefined): T[] {
    const buffer = readBounded(file, maxBytes);
    if (!buffer) return [];
    const records: T[] = [];
    for (const line of completeLines(buffer).lines) {
      if (line.length === 0) continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw new Error(`${file}: a record is not JSON`);
      }
      const record = parse(value);
      if (record === undefined) throw new Error(`${file}: a record has an unexpected shape`);
      records.push(record);
    }
    return records;
  }

  append(record: T): void {
    const text = `${JSON.stringify(record)}\n`;
    const bytes = Buffer.byteLength(text);
    writeSync(this.fd, text);
    this.sizeBytes += bytes;
  }

  get size(): number {
    return this.sizeBytes;
  }

  /** Replaces the file with exactly these records (atomic), and appends to the new file from then on. */
  rewrite(records: Iterable<T>): void {
    const parts: string[] = [];
    for (const r of records) parts.push(`${JSON.stringify(r)}\n`);
    writeFileAtomic(this.file, parts.join(""));
    closeSync(this.fd);
    this.fd = openSync(this.file, "a", 0o600);
    this.sizeBytes = fstatSync(this.fd).size;
  }

  close(): void {
    try {
      closeSync(this.fd);
    } catch {}
  }
}
