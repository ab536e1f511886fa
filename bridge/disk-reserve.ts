// A reserve of disk space in the bridge's private state dir. The tools can fill the disk the state dir shares
// (a Space has one disk); a bridge that then starts again (after a crash, or restarted by chat-ui) must still
// write a few small files before it serves: the token hand-over, the lock, its logs and state. So while the disk
// has room the bridge keeps a file of RESERVE_BYTES there (outside the tools' reach), and a start that finds the
// disk full frees it first: the start succeeds and reports durability degraded (durable-state.ts), instead of
// exiting where nobody sees it (sbx-server discards stderr). The reserve is made again once the disk has room.
import { closeSync, constants, openSync, renameSync, statfsSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";

export const RESERVE_NAME = "disk-reserve";
export const RESERVE_BYTES = 1024 * 1024;

export const reserveFileOf = (bridgeDir: string) => path.join(bridgeDir, RESERVE_NAME);

/** Bytes an unprivileged writer may still use on the filesystem of `dir`, or undefined when unknown. */
export function freeBytes(dir: string): number | undefined {
  try {
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize;
  } catch {
    return undefined;
  }
}

/**
 * At a start, before anything is written: frees the reserve if the disk has less room than it holds.
 * Returns whether it did (never throws: a start goes on either way).
 */
export function releaseReserveIfFull(bridgeDir: string, free = freeBytes(bridgeDir)): boolean {
  if (free === undefined || free >= RESERVE_BYTES) return false;
  try {
    unlinkSync(reserveFileOf(bridgeDir));
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes the reserve if it is missing: written in full beside it, then renamed (a half reserve is never kept).
 * Throws (ENOSPC…) when the disk has no room for it: the caller reports the disk full and retries.
 */
export function ensureReserve(bridgeDir: string): void {
  const file = reserveFileOf(bridgeDir);
  try {
    closeSync(openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK));
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const temp = `${file}.tmp-${process.pid}`;
  const fd = openSync(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
    0o600,
  );
  let open = true;
  try {
    const block = Buffer.alloc(64 * 1024);
    // Written, not just sized: a sparse file would reserve nothing.
    for (let written = 0; written < RESERVE_BYTES; ) written += writeSync(fd, block, 0, block.length);
    open = false;
    closeSync(fd);
    renameSync(temp, file);
  } catch (err) {
    if (open) closeSync(fd);
    unlinkSync(temp);
    throw err;
  }
}
