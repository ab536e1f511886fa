// The bridge's durable state directory: `<state>/bridge/` (identity and epoch, journal,
// command records, Pi's session), `<state>/logs/`, `<state>/pi/` (Pi's session dir). The bridge creates
// what is missing, private (0700), and refuses a directory that someone else owns, that others can write,
// that is a symlink, or that lies inside the agent's workspace. One bridge per state directory: a second
// one is refused while the first lives (a lock file in the private <state>/bridge/, see state-lock.ts: no tool
// can take or hold it, and a restart after kill -9 takes a stale one over at once).
import { randomBytes, randomUUID } from "node:crypto";
import { lstatSync, mkdirSync, realpathSync, type Stats } from "node:fs";
import path from "node:path";
import { readBounded, writeFileAtomic } from "./state-files.ts";
import { LockHeldError, type StateLock, takeStateLock } from "./state-lock.ts";

export class StateDirError extends Error {}

export interface BridgeIdentity {
  /** Random, fixed for the life of the state dir: the prefix of every run marker it hands out. */
  stateId: string;
  /** The epoch clients resume against; replaced when durability was lost (see `retireEpoch`). */
  epoch: string;
}

export interface SessionRecord {
  /** Pi's session id (`--session-id`). */
  sessionId: string;
  /** Pi's session file, once Pi has reported it (`--session`, preferred when the file exists). */
  sessionFile: string | null;
}

const HEX32 = /^[0-9a-f]{32}$/;
/** Pi's own rule for a session id (session-manager.js assertValidSessionId). */
const SESSION_ID = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$/;

export interface StateDirLayout {
  root: string;
  bridgeDir: string;
  logsDir: string;
  journalDir: string;
  commandsFile: string;
  piDir: string;
  piSessionsDir: string;
}

export function layout(root: string): StateDirLayout {
  const bridgeDir = path.join(root, "bridge");
  const piDir = path.join(root, "pi");
  return {
    root,
    bridgeDir,
    logsDir: path.join(root, "logs"),
    journalDir: path.join(bridgeDir, "journal"),
    commandsFile: path.join(bridgeDir, "commands.ndjson"),
    piDir,
    piSessionsDir: path.join(piDir, "sessions"),
  };
}

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** Creates `dir` (0700) if missing; refuses one that is a symlink, not ours, or writable by others. */
function ensurePrivateDir(dir: string, euid: number): Stats {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  if (stat.isSymbolicLink()) throw new StateDirError(`${dir} is a symlink`);
  if (!stat.isDirectory()) throw new StateDirError(`${dir} is not a directory`);
  if (stat.uid !== euid)
    throw new StateDirError(`${dir} belongs to uid ${stat.uid}, not to the bridge (${euid})`);
  if ((stat.mode & 0o022) !== 0) {
    throw new StateDirError(
      `${dir} is writable by group or others (mode ${(stat.mode & 0o777).toString(8)})`,
    );
  }
  return stat;
}

export interface OpenedState {
  paths: StateDirLayout;
  identity: BridgeIdentity;
  /** True when this state dir had no identity yet (a first start, not a restart). */
  fresh: boolean;
  /** Why the previous epoch was not kept, if it was not. */
  epochProblem: string | undefined;
  session: SessionRecord;
  lock: StateLock;
}

/** Validates and opens the state dir, takes the lock, reads identity and session. */
export async function openStateDir(
  rootOption: string,
  options: { workspace: string; euid?: number },
): Promise<OpenedState> {
  const euid = options.euid ?? process.geteuid?.() ?? 0;
  const root = path.resolve(rootOption);
  ensurePrivateDir(root, euid);
  const real = realpathSync(root);
  const workspace = realpathSync(options.workspace);
  if (isInside(real, workspace)) {
    throw new StateDirError(
      `the state dir ${real} is inside the workspace ${workspace}, which the agent can write`,
    );
  }
  const paths = layout(real);
  ensurePrivateDir(paths.bridgeDir, euid);
  let lock: StateLock;
  try {
    lock = takeStateLock(paths.bridgeDir);
  } catch (err) {
    if (err instanceof LockHeldError) throw new StateDirError(err.message);
    throw err;
  }
  try {
    ensurePrivateDir(paths.logsDir, euid);
    const { identity, fresh, problem } = readIdentity(paths.bridgeDir);
    const session = readSession(paths.bridgeDir);
    return { paths, identity, fresh, epochProblem: problem, session, lock };
  } catch (err) {
    lock.release();
    throw err;
  }
}

function readJson(file: string): unknown {
  const buffer = readBounded(file, 64 * 1024);
  if (!buffer) return undefined;
  return JSON.parse(buffer.toString("utf8"));
}

function readIdentity(bridgeDir: string): { identity: BridgeIdentity; fresh: boolean; problem?: string } {
  const file = path.join(bridgeDir, "identity.json");
  let value: unknown;
  let problem: string | undefined;
  try {
    value = readJson(file);
  } catch (err) {
    problem = `identity unreadable: ${(err as Error).message}`;
  }
  const v = value as Partial<BridgeIdentity> | undefined;
  if (v && typeof v.stateId === "string" && HEX32.test(v.stateId)) {
    if (typeof v.epoch === "string" && HEX32.test(v.epoch)) {
      return { identity: { stateId: v.stateId, epoch: v.epoch }, fresh: false };
    }
    // The epoch was retired (durability lost): same state, new epoch.
    const identity = { stateId: v.stateId, epoch: randomBytes(16).toString("hex") };
    writeFileAtomic(file, JSON.stringify(identity));
    return { identity, fresh: false, problem: problem ?? "the previous epoch was retired" };
  }
  if (value !== undefined && !problem) problem = "identity has an unexpected shape";
  const identity = { stateId: randomBytes(16).toString("hex"), epoch: randomBytes(16).toString("hex") };
  writeFileAtomic(file, JSON.stringify(identity));
  return { identity, fresh: true, ...(problem ? { problem } : {}) };
}

/** Marks the epoch unusable: a bridge started later on this state dir takes a new one. */
export function retireEpoch(paths: StateDirLayout, identity: BridgeIdentity): void {
  writeFileAtomic(path.join(paths.bridgeDir, "identity.json"), JSON.stringify({ stateId: identity.stateId }));
}

function readSession(bridgeDir: string): SessionRecord {
  const file = path.join(bridgeDir, "session.json");
  let value: unknown;
  try {
    value = readJson(file);
  } catch {
    value = undefined;
  }
  const v = value as Partial<SessionRecord> | undefined;
  if (v && typeof v.sessionId === "string" && SESSION_ID.test(v.sessionId)) {
    const sessionFile =
      typeof v.sessionFile === "string" && path.isAbsolute(v.sessionFile) && v.sessionFile.length < 4096
        ? v.sessionFile
        : null;
    return { sessionId: v.sessionId, sessionFile };
  }
  const record = { sessionId: randomUUID(), sessionFile: null };
  writeFileAtomic(file, JSON.stringify(record));
  return record;
}

export function isValidSessionId(id: unknown): id is string {
  return typeof id === "string" && SESSION_ID.test(id);
}

export function saveSession(paths: StateDirLayout, record: SessionRecord): void {
  writeFileAtomic(path.join(paths.bridgeDir, "session.json"), JSON.stringify(record));
}
