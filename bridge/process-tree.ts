// Ending a child's whole process tree: its process group, its descendants found through /proc (while their
// parents live), and every process carrying the run marker in its environment (tools that detached into
// sessions of their own, or were reparented after their parent died). Used for Pi, and for any other child
// the bridge starts (the tool executor): each gets a marker value and a group.
import { readdirSync, readFileSync } from "node:fs";

/** Environment variable that marks a child and everything it starts (the executor keeps it in tools' env). */
export const RUN_MARKER_ENV = "CHAT_UI_AGENT_RUN_ID";

export interface ProcInfo {
  pid: number;
  ppid: number;
  pgrp: number;
  /** Start time in clock ticks since boot: (pid, startTime) names one process, even after pid reuse. */
  startTime: number;
}

/** /proc/<pid>/stat, parsed after the last ")" (the command name may contain spaces and parentheses). */
export function readProc(pid: number): ProcInfo | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // fields[0] is the state (field 3); ppid is field 4, pgrp 5, starttime 22.
  const ppid = Number(fields[1]);
  const pgrp = Number(fields[2]);
  const startTime = Number(fields[19]);
  if (!Number.isInteger(ppid) || !Number.isInteger(pgrp) || !Number.isFinite(startTime)) return undefined;
  if (fields[0] === "Z" || fields[0] === "X") return undefined; // already dead, only waiting to be reaped
  return { pid, ppid, pgrp, startTime };
}

function allPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (Number.isInteger(pid) && pid > 0) pids.push(pid);
  }
  return pids;
}

/** The value of RUN_MARKER_ENV in a process's initial environment, if readable. */
function markerOf(pid: number): string | undefined {
  let environ: string;
  try {
    environ = readFileSync(`/proc/${pid}/environ`, "latin1");
  } catch {
    return undefined;
  }
  const key = `${RUN_MARKER_ENV}=`;
  const at = environ.startsWith(key) ? 0 : environ.indexOf(`\0${key}`);
  if (at < 0) return undefined;
  const start = at === 0 ? key.length : at + 1 + key.length;
  const end = environ.indexOf("\0", start);
  return environ.slice(start, end < 0 ? undefined : end);
}

/** What belongs to a tree. */
export interface TreeSpec {
  /** The child itself (its descendants are found through their ppid while they are alive). */
  rootPid?: number | undefined;
  /** Process groups to include (the child's own, since it was spawned detached). */
  groups?: readonly number[];
  /** Marker values: an exact value, or a prefix ending in "." that matches every run of one state dir. */
  markers?: readonly string[];
}

const matchesMarker = (value: string, markers: readonly string[]) =>
  markers.some((m) => (m.endsWith(".") ? value.startsWith(m) : value === m));

/** Our own pid and our ancestors': never part of a tree we end. */
function protectedPids(): Set<number> {
  const keep = new Set<number>([0, 1, process.pid]);
  let pid = process.ppid;
  for (let i = 0; i < 64 && pid > 1 && !keep.has(pid); i++) {
    keep.add(pid);
    pid = readProc(pid)?.ppid ?? 0;
  }
  return keep;
}

/** Every live process of the tree (no recursion: a fixpoint over one /proc snapshot). */
export function findTree(spec: TreeSpec): ProcInfo[] {
  const keep = protectedPids();
  const infos = new Map<number, ProcInfo>();
  for (const pid of allPids()) {
    if (keep.has(pid)) continue;
    const info = readProc(pid);
    if (info) infos.set(pid, info);
  }
  const groups = new Set(spec.groups ?? []);
  const markers = spec.markers ?? [];
  const members = new Set<number>();
  for (const info of infos.values()) {
    if (info.pid === spec.rootPid || groups.has(info.pgrp)) members.add(info.pid);
    else if (markers.length > 0) {
      const value = markerOf(info.pid);
      if (value !== undefined && matchesMarker(value, markers)) members.add(info.pid);
    }
  }
  // Descendants of members (a tool that dropped the marker, e.g. `env -i`, is still its parent's child).
  let grew = true;
  while (grew) {
    grew = false;
    for (const info of infos.values()) {
      if (!members.has(info.pid) && members.has(info.ppid)) {
        members.add(info.pid);
        grew = true;
      }
    }
  }
  return [...members].map((pid) => infos.get(pid) as ProcInfo);
}

function signalOne(info: ProcInfo, signal: NodeJS.Signals): void {
  // Re-read just before signalling: a pid reused by an unrelated process has another start time.
  if (readProc(info.pid)?.startTime !== info.startTime) return;
  try {
    process.kill(info.pid, signal);
  } catch {}
}

export interface EndTreeResult {
  /** Processes found at the first look. */
  found: number;
  /** Processes still alive when we gave up (0 on success). */
  left: number;
}

/**
 * Ends the tree: `signal` to every member, SIGKILL to whatever is left after `graceMs`, and again for
 * anything that appears meanwhile (a fork racing the kill), until nothing is found or `deadlineMs` passes.
 */
export async function endTree(
  spec: TreeSpec,
  options: { signal?: NodeJS.Signals; graceMs?: number; deadlineMs?: number } = {},
): Promise<EndTreeResult> {
  const first = options.signal ?? "SIGKILL";
  const start = Date.now();
  const graceMs = first === "SIGKILL" ? 0 : (options.graceMs ?? 1_000);
  const deadline = start + Math.max(graceMs, 0) + (options.deadlineMs ?? 2_000);
  let members = findTree(spec);
  const found = members.length;
  for (const info of members) signalOne(info, first);
  while (members.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    members = findTree(spec);
    const signal = Date.now() - start >= graceMs ? "SIGKILL" : first;
    for (const info of members) signalOne(info, signal);
  }
  return { found, left: members.length };
}
