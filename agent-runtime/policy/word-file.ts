// A one-word setting as a file (the policy, the network mode): read the way every tool-reachable file is read
// (never blocking: O_NONBLOCK, regular files only, bounded), written atomically and readable by Pi's gate.
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { lstat, open, rename, rm } from "node:fs/promises";
import path from "node:path";

export type WordRead<W extends string> = { ok: true; word: W } | { ok: false; problem: string };

export interface WordFile<W extends string> {
  /** One of the words, surrounding whitespace ignored, nothing else. */
  parse(bytes: Uint8Array): WordRead<W>;
  /** The file's word, or why there is none ("missing", "oversized", "invalid: …"). */
  read(file: string): WordRead<W>;
}

export function wordFile<W extends string>(spec: {
  words: readonly W[];
  /** Largest file accepted (one byte more is read to detect an oversized one). */
  maxBytes: number;
  /** Refuse a symlink at the path itself (O_NOFOLLOW). */
  noFollow?: boolean;
  /** Name the accepted words in the problem of an unknown one. */
  listWords?: boolean;
}): WordFile<W> {
  const isWord = (value: string): value is W => (spec.words as readonly string[]).includes(value);
  // Reused by every (synchronous, so never overlapping) read: one allocation, not one per tool call.
  const buffer = Buffer.alloc(spec.maxBytes + 1);
  const parse = (bytes: Uint8Array): WordRead<W> => {
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      return { ok: false, problem: "invalid: not UTF-8 text" };
    }
    const value = text.trim();
    if (value.length === 0) return { ok: false, problem: "invalid: empty" };
    if (!isWord(value)) {
      // Only printable ASCII, capped: logs and frames never carry odd bytes.
      const shown = JSON.stringify(value.replace(/[^\x20-\x7e]/g, "?").slice(0, 32));
      const use = spec.listWords ? ` (use ${spec.words.join(", ")})` : "";
      return { ok: false, problem: `invalid: unknown value ${shown}${use}` };
    }
    return { ok: true, word: value };
  };
  const read = (file: string): WordRead<W> => {
    let fd: number;
    try {
      fd = openSync(
        file,
        constants.O_RDONLY |
          constants.O_NONBLOCK |
          constants.O_NOCTTY |
          (spec.noFollow ? constants.O_NOFOLLOW : 0),
      );
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return { ok: false, problem: "missing" };
      if (code === "ELOOP" && spec.noFollow) return { ok: false, problem: "invalid: a symlink" };
      return { ok: false, problem: `invalid: cannot open (${code ?? "error"})` };
    }
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile()) return { ok: false, problem: "invalid: not a regular file" };
      if (stat.size > spec.maxBytes) return { ok: false, problem: "oversized" };
      let length = 0;
      // The size can change between fstat and read; the buffer bound is what counts.
      while (length < buffer.length) {
        const n = readSync(fd, buffer, length, buffer.length - length, null);
        if (n === 0) break;
        length += n;
      }
      if (length > spec.maxBytes) return { ok: false, problem: "oversized" };
      return parse(buffer.subarray(0, length));
    } catch (error) {
      return {
        ok: false,
        problem: `invalid: cannot read (${(error as NodeJS.ErrnoException).code ?? "error"})`,
      };
    } finally {
      closeSync(fd);
    }
  };
  return { parse, read };
}

/** Why a word file cannot be replaced: a symlink at its path, or anything but a regular file. */
export class ReplaceRefused extends Error {
  readonly symlink: boolean;
  constructor(message: string, symlink: boolean) {
    super(message);
    this.symlink = symlink;
  }
}

/** Throws ReplaceRefused when `file` exists and is not a regular file (a symlink included); other errors as they come. */
export async function assertReplaceable(file: string): Promise<void> {
  try {
    const stat = await lstat(file);
    if (stat.isSymbolicLink()) throw new ReplaceRefused(`refusing to replace a symlink: ${file}`, true);
    if (!stat.isFile()) throw new ReplaceRefused(`refusing to replace a non-regular file: ${file}`, false);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}

/**
 * Writes `word` and a newline atomically (temp file in the same directory, fsync, rename, fsync the directory),
 * mode 0644 whatever the umask (a launcher's `umask 077`): Pi's gate, another uid, reads it. Throws the failing
 * call's error; the temp file is removed.
 */
export async function writeWordAtomically(file: string, word: string): Promise<void> {
  const dir = path.dirname(file);
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  try {
    const handle = await open(temp, "wx", 0o644);
    try {
      await handle.chmod(0o644);
      await handle.writeFile(`${word}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
    const dirHandle = await open(dir, "r");
    try {
      await dirHandle.sync();
    } finally {
      await dirHandle.close();
    }
  } catch (error) {
    await rm(temp, { force: true }).catch(() => {});
    throw error;
  }
}
