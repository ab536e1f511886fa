// A size-bounded, rotated log file (pino-roll) beside stderr, for processes whose stderr goes nowhere
// (sbx-server reads and discards the output of what it starts). Kept apart from log.ts so only the bridge
// bundles the rotation code.
import path from "node:path";
import roll from "pino-roll";
import { type Logger, streamsOf } from "./log.ts";

export interface LogFileOptions {
  /** The log file, e.g. `<state>/logs/bridge.log`: written as bridge.1.log, bridge.2.log… */
  file: string;
  /** Bytes per file before it rolls over. */
  maxFileBytes?: number;
  /** Rolled-over files kept besides the current one (older ones are deleted). */
  keepFiles?: number;
}

export interface LogFileInfo {
  /** A symlink to the file being written (pino-roll names it current.log, beside the files). */
  current: string;
  directory: string;
  maxFileBytes: number;
  keepFiles: number;
}

/**
 * Adds a rotated file to a logger made by createLogger: at most keepFiles + 1 files of maxFileBytes each, so
 * the total is bounded. Writes are synchronous, so a line logged just before a crash is on disk.
 */
export async function addLogFile(logger: Logger, options: LogFileOptions): Promise<LogFileInfo> {
  const multi = streamsOf(logger);
  if (!multi) throw new Error("addLogFile: the logger was not made by createLogger");
  const maxFileBytes = options.maxFileBytes ?? 10 * 1024 * 1024;
  const keepFiles = options.keepFiles ?? 4;
  const stream = await roll({
    file: options.file,
    size: `${Math.max(1, Math.floor(maxFileBytes / 1024))}k`,
    limit: { count: keepFiles, removeOtherLogFiles: true },
    symlink: true,
    mkdir: true,
    sync: true,
    mode: 0o600,
    // A full disk (the tools can fill the one the state dir shares) must never make logging throw into the
    // caller, nor pile lines up in memory: failed writes are retried with the next line, beyond 8 MiB dropped.
    maxLength: 8 * 1024 * 1024,
  });
  let failing = false;
  stream.on("write", () => {
    failing = false;
  });
  stream.on("error", (err: Error) => {
    if (failing) return;
    failing = true;
    process.stderr.write(
      `${JSON.stringify({ level: 50, msg: "log file write failed", err: err.message })}\n`,
    );
  });
  multi.add({ level: "trace" as const, stream });
  const directory = path.dirname(path.resolve(options.file));
  return { current: path.join(directory, "current.log"), directory, maxFileBytes, keepFiles };
}
