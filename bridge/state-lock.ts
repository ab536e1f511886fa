// One bridge per state dir: a lock file in <state>/bridge/, which is private (0700, outside the tools' Landlock
// domain), so no tool can take it, hold it or plant it — unlike a name in a shared namespace (the abstract unix
// socket this replaces, which any process could bind once the bridge had exited).
//
// Node has no flock(2). The lock is a small JSON record (the holder's pid, its start time from /proc, its pid
// namespace and the boot id), created complete and atomically (written to a private temp file, then link(2)ed
// to the lock's name, which fails if the name exists). A lock whose holder is gone, or whose pid now belongs to
// another process, is stale: it is renamed away (atomic) and checked to be the very file that was judged
// stale before the new lock is made, so two bridges taking over the same stale lock cannot both win.
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  linkSync,
  lstatSync,
  openSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import path from "node:path";

export const LOCK_NAME = "lock";

export class LockHeldError extends Error {}

export interface LockHolder {
  pid: number;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat, field 22). */
  start: string;
  /** The pid namespace the pid belongs to (/proc/self/ns/pid). */
  pidns: string;
  boot: string;
}

export interface StateLock {
  file: string;
  holder: LockHolder;
  /** Removes the lock if it is still this one (idempotent; also done at exit). */
  release(): void;
}

function readOr(read: () => string, fallback: string): string {
  try {
    return read().trim();
  } catch {
    return fallback;
  }
}

/** A process's start time, or undefined when it does not exist (or cannot be seen: then it counts as alive). */
export function processStart(pid: number): string | undefined | "unknown" {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT" ? undefined : "unknown";
  }
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields[19] ?? "unknown";
}

export function currentHolder(pid = process.pid): LockHolder {
  return {
    pid,
    start: String(processStart(pid) ?? "unknown"),
    pidns: readOr(() => readlinkSync("/proc/self/ns/pid"), "unknown"),
    boot: readOr(() => readFileSync("/proc/sys/kernel/random/boot_id", "latin1"), "unknown"),
  };
}

/** Whether `holder` still runs: the same boot and pid namespace, and its pid is still the same process. */
export function holderAlive(holder: LockHolder, self: LockHolder): boolean {
  if (holder.boot !== self.boot || holder.pidns !== self.pidns) return false;
  const start = processStart(holder.pid);
  if (start === undefined) return false;
  return start === "unknown" || start === holder.start;
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const v = JSON.parse(text) as Partial<LockHolder>;
    if (
      typeof v.pid === "number" &&
      Number.isInteger(v.pid) &&
      v.pid > 0 &&
      typeof v.start === "string" &&
      typeof v.pidns === "string" &&
      typeof v.boot === "string"
    ) {
      return { pid: v.pid, start: v.start, pidns: v.pidns, boot: v.boot };
    }
  } catch {}
  return undefined;
}

/** The lock as it is now: its text, its record (undefined if unreadable) and inode; undefined if there is none. */
function readLock(file: string): { text: string; holder: LockHolder | undefined; ino: number } | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > 4096) return { text: "", holder: undefined, ino: st.ino };
    const buffer = Buffer.alloc(st.size);
    const text = buffer.subarray(0, readSync(fd, buffer, 0, st.size, 0)).toString("utf8");
    return { text, holder: parseHolder(text), ino: st.ino };
  } finally {
    closeSync(fd);
  }
}

/** Creates the lock complete or not at all: a private temp file, linked to the lock's name. */
function createLock(file: string, holder: LockHolder): number | undefined {
  const temp = `${file}.new-${randomBytes(8).toString("hex")}`;
  const fd = openSync(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    writeSync(fd, JSON.stringify(holder));
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temp, file);
    return lstatSync(file).ino;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return undefined;
    throw err;
  } finally {
    unlinkSync(temp);
  }
}

/** Takes the lock in `bridgeDir` (which must be private), or throws LockHeldError naming the live holder. */
export function takeStateLock(bridgeDir: string, self: LockHolder = currentHolder()): StateLock {
  const file = path.join(bridgeDir, LOCK_NAME);
  for (let attempt = 0; attempt < 8; attempt++) {
    const ino = createLock(file, self);
    if (ino !== undefined) return held(file, self, ino);
    const existing = readLock(file);
    if (!existing) continue;
    if (existing.holder && holderAlive(existing.holder, self)) {
      throw new LockHeldError(
        `another bridge is using this state dir (pid ${existing.holder.pid}; give each bridge its own --state-dir)`,
      );
    }
    // Stale: move it away, then make sure what moved is the lock judged stale (not one made meanwhile).
    const aside = `${file}.stale-${randomBytes(8).toString("hex")}`;
    try {
      renameSync(file, aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw err;
    }
    const moved = readLock(aside);
    // The same inode and the same text: an inode number can be reused at once by a lock made meanwhile.
    if (moved?.ino !== existing.ino || moved.text !== existing.text) {
      // Another bridge took over first: give its lock back (link fails if yet another name took its place).
      try {
        linkSync(aside, file);
      } catch {}
    }
    unlinkSync(aside);
  }
  throw new LockHeldError("the state dir lock is contended by several bridges starting at once: try again");
}

function held(file: string, holder: LockHolder, ino: number): StateLock {
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.off("exit", release);
    try {
      // The same inode and the same record (an inode number can be reused at once by a new lock).
      const now = readLock(file);
      if (now?.ino === ino && now.text === JSON.stringify(holder)) unlinkSync(file);
    } catch {}
  };
  process.on("exit", release);
  return { file, holder, release };
}
