// Ending a process tree: the bridge's (Pi's and the executor's trees, an earlier bridge's leftovers) and the tool
// executor's (a tool shell's tree). Members come from one /proc snapshot per round: named processes, process
// groups, sessions, and processes whose environment carries a marker (an exact value, or a prefix naming every
// run of one state dir or executor); then, to a fixpoint, every child of a member and every process in a group
// or session a member leads. So a tool that left the group (setpgid), the session (setsid) or the ancestry
// (double fork) is still found, unless it did all of that and also cleared its environment: that one is beyond
// this, and still runs only as the tools' principal (docs/threat-model.md).
//
// Ending is freeze then kill: SIGSTOP every member (a stopped process cannot fork), snapshot again until a round
// finds nothing new, then SIGKILL them all. A graceful end sends SIGTERM first and waits a grace period, because
// Pi and the executor have shutdown work to do (Pi ends its tools, the executor ends its own tree) and a frozen
// process cannot run its handler; whatever is left after the grace is frozen and killed. Bounded: a fixed number
// of rounds, a bounded /proc listing, no recursion. (pid, start time) names one process: every signal to a
// single process is preceded by a fresh read of its start time, so a reused pid is never signalled.
import { opendirSync, readFileSync, readlinkSync } from "node:fs";
import path from "node:path";

export interface ProcInfo {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
  /** Start time in clock ticks since boot: (pid, startTime) names one process, even after pid reuse. */
  startTime: number;
  /** Z (zombie) and X (dead) are only waiting to be reaped: never signalled, never counted. */
  state: string;
  /** Values of the asked marker variable in the process's initial environment (empty if none or unreadable). */
  markers: readonly string[];
}

/** Parses /proc/<pid>/stat: the command name may hold spaces and parentheses, so fields start after the last ')'. */
export function parseProcStat(text: string): Omit<ProcInfo, "markers"> | undefined {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const pid = Number(text.slice(0, open).trim());
  // From field 3 (state): ppid is field 4, pgrp 5, session 6, starttime 22.
  const fields = text.slice(close + 2).split(" ", 20);
  const state = fields[0];
  if (state?.length !== 1) return undefined;
  const num = (field: string | undefined) =>
    field === undefined || field === "" ? Number.NaN : Number(field);
  const [ppid, pgrp, session, startTime] = [num(fields[1]), num(fields[2]), num(fields[3]), num(fields[19])];
  if (![pid, ppid, pgrp, session, startTime].every((n) => Number.isSafeInteger(n))) return undefined;
  return { pid, ppid, pgrp, session, startTime, state };
}

/** Values of `name` in a NUL-separated environment block (every entry: a repeated name is still a marker). */
export function envValues(environ: string, name: string): string[] {
  const key = `${name}=`;
  const values: string[] = [];
  for (let at = 0; at < environ.length; ) {
    const nul = environ.indexOf("\0", at);
    const end = nul < 0 ? environ.length : nul;
    if (environ.startsWith(key, at)) values.push(environ.slice(at + key.length, end));
    at = end + 1;
  }
  return values;
}

/** Most /proc entries one snapshot reads. */
const MAX_PROCESSES = 1 << 16;

/** Every process in /proc (at most `maxProcesses`), with the values of `markerName` when one is asked for. */
export function snapshotProcesses(
  options: { procDir?: string; markerName?: string; maxProcesses?: number } = {},
): ProcInfo[] {
  const procDir = options.procDir ?? "/proc";
  const max = options.maxProcesses ?? MAX_PROCESSES;
  const infos: ProcInfo[] = [];
  let dir: ReturnType<typeof opendirSync>;
  try {
    dir = opendirSync(procDir);
  } catch {
    return infos;
  }
  try {
    for (let entry = dir.readSync(); entry !== null && infos.length < max; entry = dir.readSync()) {
      if (!/^[1-9]\d*$/.test(entry.name)) continue;
      let stat: Omit<ProcInfo, "markers"> | undefined;
      try {
        stat = parseProcStat(readFileSync(`${procDir}/${entry.name}/stat`, "latin1"));
      } catch {
        continue; // gone already
      }
      if (!stat) continue;
      let markers: string[] = [];
      if (options.markerName !== undefined) {
        try {
          markers = envValues(readFileSync(`${procDir}/${entry.name}/environ`, "latin1"), options.markerName);
        } catch {
          // gone, or not ours to read
        }
      }
      infos.push({ ...stat, markers });
    }
  } finally {
    dir.closeSync();
  }
  return infos;
}

/** What belongs to a tree. Every member brings its children and the groups and sessions it leads. */
export interface TreeSelector {
  /** These processes (and so their descendants). */
  pids?: readonly number[];
  /** Descendants of these processes, not the processes themselves (what a process leaves behind). */
  childrenOf?: readonly number[];
  groups?: readonly number[];
  sessions?: readonly number[];
  /** Processes whose environment has `name` equal to one of `values` or starting with one of `prefixes`. */
  marker?: { name: string; values?: readonly string[]; prefixes?: readonly string[] };
}

const isLive = (info: ProcInfo) => info.state !== "Z" && info.state !== "X";

function indexBy(infos: readonly ProcInfo[], key: (info: ProcInfo) => number): Map<number, ProcInfo[]> {
  const index = new Map<number, ProcInfo[]>();
  for (const info of infos) {
    const list = index.get(key(info));
    if (list) list.push(info);
    else index.set(key(info), [info]);
  }
  return index;
}

/**
 * The members of a tree in one snapshot (zombies included: a dead leader's group and session still count).
 * `protect` (ourselves, our ancestors) are never members and bring nothing, unless named in `childrenOf`.
 */
export function selectMembers(
  snapshot: readonly ProcInfo[],
  selector: TreeSelector,
  protect: ReadonlySet<number>,
): ProcInfo[] {
  // 0 and 1 name no tree of ours (session 0 holds the kernel's threads; everything orphaned is 1's child).
  const ids = (list: readonly number[] | undefined) =>
    new Set((list ?? []).filter((id) => Number.isSafeInteger(id) && id > 1));
  const pids = ids(selector.pids);
  const groups = ids(selector.groups);
  const sessions = ids(selector.sessions);
  const parents = ids(selector.childrenOf);
  // An empty value or prefix would name every carrier of the variable: never a tree.
  const values = new Set((selector.marker?.values ?? []).filter((v) => v.length > 0));
  const prefixes = (selector.marker?.prefixes ?? []).filter((p) => p.length > 0);
  const marked = (info: ProcInfo) =>
    info.markers.some((m) => values.has(m) || prefixes.some((prefix) => m.startsWith(prefix)));
  const byParent = indexBy(snapshot, (info) => info.ppid);
  const byGroup = indexBy(snapshot, (info) => info.pgrp);
  const bySession = indexBy(snapshot, (info) => info.session);
  const members = new Map<number, ProcInfo>();
  const queue: ProcInfo[] = [];
  const add = (info: ProcInfo) => {
    if (protect.has(info.pid) || members.has(info.pid)) return;
    members.set(info.pid, info);
    queue.push(info);
  };
  for (const info of snapshot) {
    if (
      pids.has(info.pid) ||
      parents.has(info.ppid) ||
      groups.has(info.pgrp) ||
      sessions.has(info.session) ||
      marked(info)
    )
      add(info);
  }
  // Iterative fixpoint: no recursion over what /proc holds.
  for (let i = 0; i < queue.length; i++) {
    const pid = (queue[i] as ProcInfo).pid;
    for (const info of byParent.get(pid) ?? []) add(info);
    for (const info of byGroup.get(pid) ?? []) add(info);
    for (const info of bySession.get(pid) ?? []) add(info);
  }
  return [...members.values()];
}

/** The tree's members in a fresh snapshot (environments read only when the selector names a marker). */
function findMembers(selector: TreeSelector, protect: ReadonlySet<number>): ProcInfo[] {
  const markerName = selector.marker?.name;
  return selectMembers(snapshotProcesses(markerName === undefined ? {} : { markerName }), selector, protect);
}

/** /proc/<pid>/stat of one process now, if it is alive. */
function readLive(pid: number): Omit<ProcInfo, "markers"> | undefined {
  try {
    const stat = parseProcStat(readFileSync(`/proc/${pid}/stat`, "latin1"));
    return stat && stat.state !== "Z" && stat.state !== "X" ? stat : undefined;
  } catch {
    return undefined;
  }
}

/** Signals one process if it is still the one we saw (same start time, not dead). */
export function signalProcess(info: Pick<ProcInfo, "pid" | "startTime">, signal: NodeJS.Signals): boolean {
  if (readLive(info.pid)?.startTime !== info.startTime) return false;
  try {
    process.kill(info.pid, signal);
    return true;
  } catch {
    return false; // gone, or not ours to signal
  }
}

/** Our own pid and our ancestors' (and 0, 1): never part of a tree we end. */
function protectedPids(): Set<number> {
  const keep = new Set<number>([0, 1, process.pid]);
  let pid = process.ppid;
  for (let i = 0; i < 64 && pid > 1 && !keep.has(pid); i++) {
    keep.add(pid);
    pid = readLive(pid)?.ppid ?? 0;
  }
  return keep;
}

/** Groups we may signal as a whole: never 0, 1 or ours (kill(0) and kill(-1) mean "everything"). */
function signallableGroups(groups: readonly number[] | undefined): number[] {
  const own = readLive(process.pid)?.pgrp;
  return (groups ?? []).filter((g) => Number.isSafeInteger(g) && g > 1 && g !== own);
}

function signalGroup(group: number, signal: NodeJS.Signals): void {
  // A group id is not reused while the group has a member, so no start-time check is needed.
  try {
    process.kill(-group, signal);
  } catch {
    // gone, or not ours to signal
  }
}

/** Rounds of snapshot-and-freeze in one kill. */
const FREEZE_ROUNDS = 8;

/**
 * Freezes every member (rounds until a snapshot finds nothing new, at most FREEZE_ROUNDS), then kills them all.
 * Synchronous: the executor calls it on its way out. Returns the live members it found.
 */
function freezeThenKill(selector: TreeSelector, protect: ReadonlySet<number>): ProcInfo[] {
  const groups = signallableGroups(selector.groups);
  for (const group of groups) signalGroup(group, "SIGSTOP");
  const doomed = new Map<number, ProcInfo>();
  for (let round = 0; round < FREEZE_ROUNDS; round++) {
    // Members of an earlier round may have died (and been reaped) since; their groups and sessions still count.
    const seen = [...doomed.keys()];
    const members = findMembers(
      {
        ...selector,
        groups: [...(selector.groups ?? []), ...seen],
        sessions: [...(selector.sessions ?? []), ...seen],
      },
      protect,
    );
    let fresh = 0;
    for (const info of members) {
      if (doomed.has(info.pid)) continue;
      doomed.set(info.pid, info);
      fresh++;
      if (isLive(info)) signalProcess(info, "SIGSTOP");
    }
    if (fresh === 0) break;
  }
  for (const group of groups) signalGroup(group, "SIGKILL");
  const live = [...doomed.values()].filter(isLive);
  for (const info of live) signalProcess(info, "SIGKILL");
  return live;
}

/** Ends the tree now (freeze, then kill); returns how many processes it ended. */
export function killTree(selector: TreeSelector): number {
  return freezeThenKill(selector, protectedPids()).length;
}

export interface EndTreeResult {
  /** Processes found at the first look. */
  found: number;
  /** Processes still alive when we gave up (0 on success). */
  left: number;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const POLL_MS = 25;

/**
 * Ends the tree and waits for it to be gone. With `termGraceMs`, SIGTERM to every member (and to newcomers)
 * first, and up to that long for them to exit; then freeze and kill, again for anything that appears meanwhile,
 * until nothing is left or `deadlineMs` (default 2 s) more has passed.
 */
export async function endTree(
  selector: TreeSelector,
  options: { termGraceMs?: number; deadlineMs?: number } = {},
): Promise<EndTreeResult> {
  const start = Date.now();
  const graceMs = Math.max(options.termGraceMs ?? 0, 0);
  const deadline = start + graceMs + (options.deadlineMs ?? 2_000);
  const protect = protectedPids();
  let found: number | undefined;
  if (graceMs > 0) {
    const termed = new Set<string>();
    for (;;) {
      const members = findMembers(selector, protect).filter(isLive);
      found ??= members.length;
      if (members.length === 0) return { found, left: 0 };
      for (const info of members) {
        const key = `${info.pid}:${info.startTime}`;
        if (termed.has(key)) continue;
        termed.add(key);
        signalProcess(info, "SIGTERM");
      }
      if (Date.now() - start >= graceMs) break;
      await pause(POLL_MS);
    }
  }
  for (;;) {
    const live = freezeThenKill(selector, protect);
    found ??= live.length;
    if (live.length === 0 || Date.now() >= deadline) return { found, left: live.length };
    await pause(POLL_MS);
  }
}

// ---------------------------------------------------------------- tools whose supervisor is gone

/** The real uid and the seccomp filter count of a process, from /proc/<pid>/status (undefined: gone). */
export function parseStatus(text: string): { uid: number; filters: number | undefined } | undefined {
  const uid = /^Uid:\s+(\d+)/m.exec(text);
  if (!uid) return undefined;
  const filters = /^Seccomp_filters:\s+(\d+)/m.exec(text);
  return { uid: Number(uid[1]), filters: filters ? Number(filters[1]) : undefined };
}

/** argv of a process (NUL-separated /proc/<pid>/cmdline), at most the first `max` entries. */
function argvOf(procDir: string, pid: number, max = 2): string[] {
  try {
    return readFileSync(`${procDir}/${pid}/cmdline`, "latin1").split("\0").slice(0, max);
  } catch {
    return [];
  }
}

export interface OrphanSweep {
  toolsUid: number;
  /** The score every tool carries (the supervisor sets it; in their domain they cannot lower it). */
  oomScoreAdj: number;
  /** The tools have a uid of their own (root start): every process of that uid is a tool. */
  wholeUid: boolean;
  /** The helper binary: a live supervisor is `…/<its name> --supervise …` (any install of it). */
  helper: string;
}

/**
 * Tool processes no live supervisor holds any more (their supervisor was killed: an earlier bridge's, or one
 * that died with its pair) are ended. A tool is a process of the tools' uid, in our pid namespace (tools cannot
 * leave it; another container's processes on a shared host are in theirs), with the tools' OOM score, that
 * carries more seccomp filters than this process (every tool inherits the supervisor's filter, which the bridge
 * never has; no tool can drop a filter) or has a uid that is theirs alone. It is held when one of its ancestors
 * is a live supervisor (this bridge's or another's): the helper run with `--supervise` and no more filters than
 * us (a tool can run the helper, not shed its filter). Returns how many processes were ended.
 */
export function sweepOrphanTools(sweep: OrphanSweep, procDir = "/proc"): number {
  const own = parseStatus(readText(`${procDir}/self/status`) ?? "");
  const mine = own?.filters;
  const snapshot = snapshotProcesses({ procDir });
  const status = new Map<number, { uid: number; filters: number | undefined }>();
  for (const info of snapshot) {
    const parsed = parseStatus(readText(`${procDir}/${info.pid}/status`) ?? "");
    if (parsed) status.set(info.pid, parsed);
  }
  // Any helper's supervisor counts, whatever its install path (another bridge's on a shared host): what a tool
  // cannot fake is the filter count, not the path (it can run the helper itself).
  const helperName = path.basename(sweep.helper);
  const isSupervisor = (pid: number) => {
    const s = status.get(pid);
    if (!s || (mine !== undefined && s.filters !== undefined && s.filters > mine)) return false;
    const [argv0, argv1] = argvOf(procDir, pid);
    return argv0 !== undefined && path.basename(argv0) === helperName && argv1 === "--supervise";
  };
  const ownNamespace = readLink(`${procDir}/self/ns/pid`);
  const isTool = (pid: number) => {
    const s = status.get(pid);
    if (!s || s.uid !== sweep.toolsUid || isSupervisor(pid)) return false;
    if (!sweep.wholeUid && (mine === undefined || s.filters === undefined || s.filters <= mine)) return false;
    if (readText(`${procDir}/${pid}/oom_score_adj`)?.trim() !== String(sweep.oomScoreAdj)) return false;
    return ownNamespace !== undefined && readLink(`${procDir}/${pid}/ns/pid`) === ownNamespace;
  };
  const protect = protectedPids();
  const orphans: number[] = [];
  for (const info of snapshot) {
    if (!isLive(info) || protect.has(info.pid) || !isTool(info.pid)) continue;
    // Walked on fresh reads: a parent seen in the snapshot may have exited and its children been reparented
    // since. Only a chain read whole, up to pid 1, with no supervisor on it, makes an orphan; anything else is
    // left for the next sweep (a live pair's tool must never be taken for one).
    let verdict: "held" | "orphan" | "unknown" = "unknown";
    let current = info.pid;
    for (let depth = 0; depth < 64; depth++) {
      const parent = readLive(current)?.ppid;
      if (parent === undefined) break;
      if (parent <= 1) {
        verdict = "orphan";
        break;
      }
      if (isSupervisor(parent)) {
        verdict = "held";
        break;
      }
      current = parent;
    }
    if (verdict === "orphan") orphans.push(info.pid);
  }
  return orphans.length === 0 ? 0 : freezeThenKill({ pids: orphans }, protect).length;
}

function readLink(file: string): string | undefined {
  try {
    return readlinkSync(file);
  } catch {
    return undefined;
  }
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "latin1");
  } catch {
    return undefined;
  }
}
