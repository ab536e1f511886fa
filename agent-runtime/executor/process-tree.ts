// Ending a tool's whole process tree. A tool shell is started detached (its own session and process group, id =
// its pid); its descendants may leave the group (setpgid), the session (setsid) or the tree (double fork).
// So a kill takes, from one /proc snapshot, every process in that session or group or descended from the
// root, stops them all first (a stopped process cannot fork again), repeats until a snapshot finds nothing
// new, then kills them. Bounded: a fixed number of rounds over a bounded /proc listing. A process that left
// both the session and the ancestry before the kill (setsid + double fork) is found by the environment marker
// every tool process inherits (the executor gives each shell its own); one that also cleared its environment
// is beyond this, and still runs only as the tools' principal (docs/threat-model.md).
import { readdirSync, readFileSync } from "node:fs";

export interface ProcStat {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
}

/** Parses /proc/<pid>/stat: the command name may hold spaces and parentheses, so fields start after the last ')'. */
export function parseProcStat(text: string): ProcStat | undefined {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const pid = Number(text.slice(0, open).trim());
  const fields = text
    .slice(close + 2)
    .split(" ", 4)
    .map((f) => Number(f));
  const [, ppid, pgrp, session] = fields;
  if (!Number.isInteger(pid) || ppid === undefined || pgrp === undefined || session === undefined)
    return undefined;
  if (![ppid, pgrp, session].every(Number.isInteger)) return undefined;
  return { pid, ppid, pgrp, session };
}

const MAX_PROCESSES = 1 << 16;

export function snapshotProcesses(procDir = "/proc"): ProcStat[] {
  const stats: ProcStat[] = [];
  let entries: string[];
  try {
    entries = readdirSync(procDir);
  } catch {
    return stats;
  }
  for (const entry of entries) {
    if (stats.length >= MAX_PROCESSES) break;
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = parseProcStat(readFileSync(`${procDir}/${entry}/stat`, "latin1"));
      if (stat) stats.push(stat);
    } catch {
      // gone already
    }
  }
  return stats;
}

/** Pids in `roots`' sessions or groups, or descended from a root; never `exclude` (ourselves). */
export function treeMembers(
  stats: readonly ProcStat[],
  roots: ReadonlySet<number>,
  exclude: number,
): Set<number> {
  const members = new Set<number>();
  const children = new Map<number, number[]>();
  for (const s of stats) {
    const list = children.get(s.ppid);
    if (list) list.push(s.pid);
    else children.set(s.ppid, [s.pid]);
    if (roots.has(s.session) || roots.has(s.pgrp) || roots.has(s.pid)) members.add(s.pid);
  }
  // Descendants of any member (iterative: no recursion over outside input).
  const queue = [...members];
  for (let i = 0; i < queue.length; i++) {
    for (const child of children.get(queue[i] as number) ?? []) {
      if (!members.has(child)) {
        members.add(child);
        queue.push(child);
      }
    }
  }
  members.delete(exclude);
  members.delete(0);
  members.delete(1);
  return members;
}

function send(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone, or not ours to signal
  }
}

/** Pids whose environment has an entry starting with `prefix` (e.g. "NAME=value"); unreadable ones are skipped. */
export function pidsWithEnv(stats: readonly ProcStat[], prefix: string, procDir = "/proc"): number[] {
  const found: number[] = [];
  for (const s of stats) {
    try {
      const environ = readFileSync(`${procDir}/${s.pid}/environ`, "latin1");
      if (environ.startsWith(prefix) || environ.includes(`\0${prefix}`)) found.push(s.pid);
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/**
 * Stops, then kills, every process of the trees rooted at `roots` (session/group leaders), and every process
 * whose environment carries `envMarker` (an entry prefix). Returns how many processes it ended.
 */
export function killTrees(
  roots: Iterable<number>,
  options: { rounds?: number; procDir?: string; envMarker?: string } = {},
): number {
  const rootSet = new Set([...roots].filter((pid) => Number.isInteger(pid) && pid > 1));
  if (rootSet.size === 0 && options.envMarker === undefined) return 0;
  for (const root of rootSet) {
    send(-root, "SIGSTOP");
  }
  const doomed = new Set<number>();
  const rounds = options.rounds ?? 8;
  for (let round = 0; round < rounds; round++) {
    const stats = snapshotProcesses(options.procDir);
    const found = treeMembers(stats, new Set([...rootSet, ...doomed]), process.pid);
    if (options.envMarker !== undefined) {
      for (const pid of pidsWithEnv(stats, options.envMarker, options.procDir))
        if (pid !== process.pid) found.add(pid);
    }
    let fresh = 0;
    for (const pid of found) {
      if (doomed.has(pid)) continue;
      doomed.add(pid);
      fresh++;
      send(pid, "SIGSTOP");
    }
    if (fresh === 0) break;
  }
  for (const root of rootSet) send(-root, "SIGKILL");
  for (const pid of doomed) send(pid, "SIGKILL");
  return doomed.size;
}

/** Kills every descendant of `pid` (not `pid` itself): what a process leaves behind when it stops. */
export function killDescendants(pid: number, procDir?: string): number {
  const stats = snapshotProcesses(procDir);
  const children = new Map<number, number[]>();
  for (const s of stats) {
    const list = children.get(s.ppid);
    if (list) list.push(s.pid);
    else children.set(s.ppid, [s.pid]);
  }
  const found = new Set<number>();
  const queue = [pid];
  for (let i = 0; i < queue.length; i++) {
    for (const child of children.get(queue[i] as number) ?? []) {
      if (child === pid || found.has(child)) continue;
      found.add(child);
      queue.push(child);
    }
  }
  for (const child of found) send(child, "SIGKILL");
  return found.size;
}
