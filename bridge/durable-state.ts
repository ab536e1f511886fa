// Reading back and keeping the bridge's durable state in network mode: the journal (frames), the command
// records (idempotency: digest + result), the dialogs open at the last stop, and the epoch they all belong
// to. Whatever cannot be trusted retires the epoch: clients then get `epoch_changed` and rebuild from the
// snapshot, and the typed client does not resend commands that could run twice.
import { randomBytes } from "node:crypto";
import { readdirSync, unlinkSync } from "node:fs";
import path from "node:path";
import type { Logger } from "../agent-runtime/log.ts";
import { type CommandRecord, IdempotencyStore } from "./idempotency.ts";
import { Journal, type JournalLimits, type RecoveredFrame } from "./journal.ts";
import type { Durability } from "./protocol.ts";
import { type OpenedState, retireEpoch } from "./state-dir.ts";
import { RecordLog, readBounded, writeFileAtomic } from "./state-files.ts";

/** The command log is compacted once it is this much larger than what it describes. */
const COMPACT_SLACK_BYTES = 4 * 1024 * 1024;
const MAX_COMMAND_LOG_BYTES = 256 * 1024 * 1024;

export interface DurableState {
  epoch: string;
  journal: Journal;
  frames: RecoveredFrame[];
  idempotency: IdempotencyStore;
  /** Dialogs that were open when the previous bridge stopped (Pi is new: they are closed at start). */
  openDialogs: string[];
  /** Persists the ids of the dialogs open now. */
  saveOpenDialogs(ids: string[]): void;
  /** What `bridge_status.durability` reports. */
  status(): Pick<Durability, "journal" | "problem">;
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

export function openDurableState(state: OpenedState, limits: JournalLimits, log: Logger): DurableState {
  const { paths } = state;
  let epoch = state.identity.epoch;
  let problem: string | undefined;
  const dialogsFile = path.join(paths.bridgeDir, "dialogs.json");

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
    writeFileAtomic(
      path.join(paths.bridgeDir, "identity.json"),
      JSON.stringify({ ...state.identity, epoch }),
    );
    frames = [];
    for (const name of readdirSync(paths.journalDir)) unlinkSync(path.join(paths.journalDir, name));
    commandRecords = [];
    try {
      unlinkSync(paths.commandsFile);
    } catch {}
    log.error({ problem: lost, epoch }, "durable state could not be trusted: a new epoch starts");
  }
  const headSeq = frames.at(-1)?.seq ?? 0;
  const journal = new Journal(paths.journalDir, limits, headSeq);

  const idempotency = new IdempotencyStore();
  idempotency.restore(commandRecords);
  const commandLog = new RecordLog<CommandRecord>(paths.commandsFile);
  if (commandRecords.length > 0) commandLog.rewrite(idempotency.records()); // start from a compact log

  let failure: string | undefined;
  const fail = (reason: string) => {
    if (failure) return;
    failure = reason;
    log.error({ reason }, "durable state failed: this epoch will not be resumed after a restart");
    try {
      retireEpoch(paths, { stateId: state.identity.stateId, epoch });
    } catch (err) {
      log.error({ err: (err as Error).message }, "could not retire the epoch either");
    }
  };
  journal.onFailure = fail;
  idempotency.onRecord = (record) => {
    if (failure) return;
    try {
      commandLog.append(record);
      if (commandLog.size > 2 * idempotency.bytes + COMPACT_SLACK_BYTES)
        commandLog.rewrite(idempotency.records());
    } catch (err) {
      fail(`command record write failed: ${(err as Error).message}`);
    }
  };

  return {
    epoch,
    journal,
    frames,
    idempotency,
    openDialogs: readOpenDialogs(dialogsFile),
    saveOpenDialogs(ids) {
      if (failure) return;
      try {
        writeFileAtomic(dialogsFile, JSON.stringify(ids));
      } catch (err) {
        fail(`dialog record write failed: ${(err as Error).message}`);
      }
    },
    status: () =>
      failure ? { journal: "failed", problem: failure } : { journal: "ok", problem: problem ?? null },
  };
}
