// Reading back and keeping the bridge's durable state in network mode: the journal (frames), the command
// records (idempotency: digest + result), the dialogs open at the last stop, and the epoch they all belong
// to. Whatever cannot be trusted retires the epoch: clients then get `epoch_changed` and rebuild from the
// snapshot, and the typed client does not resend commands that could run twice.
//
// A write that fails (ENOSPC when the tools fill the disk the state dir shares, EIO) degrades durability; it
// never stops delivery. The epoch is retired at once (a crash now could lose frames clients saw), frames are
// sent from the replay ring meanwhile, and every durable file is rewritten from memory with a growing delay
// until the disk takes it again; then the epoch is restored and durability is back.
import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import type { Logger } from "../agent-runtime/log.ts";
import { type Clock, systemClock, type TimerHandle } from "./core/clock.ts";
import { ensureReserve as ensureDiskReserve } from "./disk-reserve.ts";
import { type CommandRecord, IdempotencyStore } from "./idempotency.ts";
import { Journal, type JournalLimits, type Writev } from "./journal.ts";
import type { Durability } from "./protocol.ts";
import { ReplayRing } from "./replay-ring.ts";
import {
  type BridgeIdentity,
  type OpenedState,
  retireEpoch,
  type SessionRecord,
  saveSession,
} from "./state-dir.ts";
import { RecordLog, readBounded, writeFileAtomic } from "./state-files.ts";

/** The command log is compacted once it is this much larger than what it describes. */
const COMPACT_SLACK_BYTES = 4 * 1024 * 1024;
const MAX_COMMAND_LOG_BYTES = 256 * 1024 * 1024;
/** Rewrites after a failed write: after 1 s, doubling up to a minute. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;

export interface DurableState {
  epoch: string;
  /** The replay ring, holding what the journal gave back. */
  ring: ReplayRing;
  journal: Journal;
  idempotency: IdempotencyStore;
  /** Dialogs that were open when the previous bridge stopped (Pi is new: they are closed at start). */
  openDialogs: string[];
  /** Persists the ids of the dialogs open now. */
  saveOpenDialogs(ids: string[]): void;
  /** Persists Pi's current session (the next bridge resumes it); rewritten at recovery if the disk refused it. */
  saveSession(record: SessionRecord): void;
  /** What `bridge_status.durability` reports. */
  status(): Pick<Durability, "journal" | "problem">;
  /** Stops retrying and closes the journal (shutdown). */
  close(): void;
}

function parseCommandRecord(value: unknown): CommandRecord | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const r = value as Record<string, unknown>;
  if (typeof r.id !== "string") return undefined;
  if (r.op === "begin" && typeof r.digest === "string" && typeof r.command === "string") {
    return { op: "begin", id: r.id, digest: r.digest, command: r.command };
  }
  if (r.op === "done" && typeof r.response === "object" && r.response !== null) {
    return { op: "done", id: r.id, response: r.response as Record<string, unknown> };
  }
  return undefined;
}

function readOpenDialogs(file: string): string[] {
  try {
    const value: unknown = JSON.parse(readBounded(file, 1024 * 1024)?.toString("utf8") ?? "[]");
    return Array.isArray(value)
      ? value.filter((v): v is string => typeof v === "string" && v.length <= 256)
      : [];
  } catch {
    return [];
  }
}

/**
 * Retires the epoch without needing a free block: the epoch's hex digits in identity.json are overwritten in
 * place (same length), so the next start reads no valid epoch and takes a new one (state-dir.ts readIdentity).
 */
function retireEpochInPlace(file: string, epoch: string): void {
  const fd = openSync(file, "r+");
  try {
    const text = readFileSync(fd, "utf8");
    const at = text.indexOf(`"${epoch}"`);
    if (at < 0) throw new Error("the epoch is not in identity.json");
    writeSync(fd, "x".repeat(epoch.length), Buffer.byteLength(text.slice(0, at + 1)), "utf8");
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function openDurableState(
  state: OpenedState,
  limits: JournalLimits,
  log: Logger,
  options: {
    clock?: Clock;
    writev?: Writev;
    /** Writes session.json (a test injects failures). */
    writeSession?: (record: SessionRecord) => void;
    /** Makes the disk reserve if it is missing (disk-reserve.ts; a test injects failures). */
    ensureReserve?: () => void;
  } = {},
): DurableState {
  const clock = options.clock ?? systemClock;
  const { paths } = state;
  let epoch = state.identity.epoch;
  let problem: string | undefined;
  const dialogsFile = path.join(paths.bridgeDir, "dialogs.json");
  const identityFile = path.join(paths.bridgeDir, "identity.json");

  const recovery = Journal.recover(paths.journalDir, limits);
  let commandRecords: CommandRecord[] = [];
  let commandsProblem: string | undefined;
  try {
    commandRecords = RecordLog.read(paths.commandsFile, MAX_COMMAND_LOG_BYTES, parseCommandRecord);
  } catch (err) {
    commandsProblem = `command records unreadable: ${(err as Error).message}`;
  }
  const lost = state.epochProblem ?? recovery.problem ?? commandsProblem;
  let frames = recovery.frames;
  if (lost) {
    // The previous epoch's promises (no gap, no second run) cannot be kept: start a new one, clean.
    problem = lost;
    epoch = randomBytes(16).toString("hex");
    writeFileAtomic(identityFile, JSON.stringify({ ...state.identity, epoch }));
    frames = [];
    for (const name of readdirSync(paths.journalDir)) unlinkSync(path.join(paths.journalDir, name));
    commandRecords = [];
    try {
      unlinkSync(paths.commandsFile);
    } catch {}
    log.error({ problem: lost, epoch }, "durable state could not be trusted: a new epoch starts");
  }
  const identity: BridgeIdentity = { stateId: state.identity.stateId, epoch };
  const ring = new ReplayRing(limits.maxFrames, limits.maxBytes);
  for (const frame of frames) ring.restore(frame.seq, frame.data);

  let failure: string | undefined;
  let retryMs = RETRY_FIRST_MS;
  let retryTimer: TimerHandle;
  let closed = false;
  let dialogIds: string[] = [];
  /** The session Pi reported last, once it changed (written again at recovery: a failed write loses nothing). */
  let session: SessionRecord | undefined;
  const writeSession = options.writeSession ?? ((record: SessionRecord) => saveSession(paths, record));
  const ensureReserve = options.ensureReserve ?? (() => ensureDiskReserve(paths.bridgeDir));

  const journal = new Journal(paths.journalDir, limits, ring.headSeq, {
    onFailure: (r) => degrade(r),
    ...(options.writev ? { writev: options.writev } : {}),
  });
  const idempotency = new IdempotencyStore();
  idempotency.restore(commandRecords);
  const commandLog = new RecordLog<CommandRecord>(paths.commandsFile);
  if (commandRecords.length > 0) commandLog.rewrite(idempotency.records()); // start from a compact log

  /** A write failed: sending goes on from memory, the epoch is retired, the rewrite is retried. */
  function degrade(reason: string): void {
    if (failure || closed) return;
    failure = reason;
    log.error({ reason }, "durable state write failed: frames are sent from memory; retrying");
    try {
      retireEpoch(paths, identity);
    } catch {
      try {
        retireEpochInPlace(identityFile, epoch);
      } catch (err) {
        failure = `${reason}; the epoch could not be retired (${(err as Error).message}): a restart now could resume on a journal without the latest frames`;
        log.error({ err: (err as Error).message }, "could not retire the epoch either");
      }
    }
    retryMs = RETRY_FIRST_MS;
    retryTimer = clock.set(retryMs, retry);
  }

  /** Every durable file again from memory, the epoch last: until that write, a restart takes a new epoch. */
  function retry(): void {
    if (closed || !failure) return;
    try {
      // Room for the reserve first: without it the disk is about full, and the next start could not write.
      ensureReserve();
      journal.rewrite(ring.held(), ring.headSeq);
      commandLog.rewrite(idempotency.records());
      writeFileAtomic(dialogsFile, JSON.stringify(dialogIds));
      if (session) writeSession(session);
      writeFileAtomic(identityFile, JSON.stringify(identity));
    } catch (err) {
      retryMs = Math.min(2 * retryMs, RETRY_MAX_MS);
      log.warn({ err: (err as Error).message, retryMs }, "durable state still cannot be written");
      retryTimer = clock.set(retryMs, retry);
      return;
    }
    log.info({ headSeq: ring.headSeq }, "durable state written again: the journal is back");
    failure = undefined;
  }

  idempotency.onRecord = (record) => {
    if (failure) return; // the rewrite at recovery writes the whole store
    try {
      commandLog.append(record);
      if (commandLog.size > 2 * idempotency.bytes + COMPACT_SLACK_BYTES)
        commandLog.rewrite(idempotency.records());
    } catch (err) {
      degrade(`command record write failed: ${(err as Error).message}`);
    }
  };

  // A disk without room for the reserve (a start that found it full and freed it) is reported from the start.
  try {
    ensureReserve();
  } catch (err) {
    degrade(`the disk is full: no room for the bridge's reserve (${(err as Error).message})`);
  }

  return {
    epoch,
    ring,
    journal,
    idempotency,
    openDialogs: readOpenDialogs(dialogsFile),
    saveOpenDialogs(ids) {
      dialogIds = ids;
      if (failure) return;
      try {
        writeFileAtomic(dialogsFile, JSON.stringify(ids));
      } catch (err) {
        degrade(`dialog record write failed: ${(err as Error).message}`);
      }
    },
    saveSession(record) {
      session = record;
      if (failure) return;
      try {
        writeSession(record);
      } catch (err) {
        degrade(`session record write failed: ${(err as Error).message}`);
      }
    },
    status: () =>
      failure ? { journal: "degraded", problem: failure } : { journal: "ok", problem: problem ?? null },
    close() {
      closed = true;
      clock.clear(retryTimer);
      journal.close();
    },
  };
}
