// The operator's network mode (lockdown | registries | open), kept as one word in a file beside the policy file:
// the bridge's --network-mode, `set_network_mode` and `chat-ui-agent-policy network` write it; the gate rereads it
// before each call; this store watches it, so an operator's change applies at once. A file that cannot be read as
// a mode changes nothing (the mode in force is kept, the problem is reported), and nothing is ever `open` unless
// someone wrote `open`.
import type { Logger } from "../agent-runtime/log.ts";
import {
  DEFAULT_NETWORK_MODE,
  type NetworkMode,
  readNetworkModeFile,
  writeNetworkModeFile,
} from "../agent-runtime/policy/network-mode-file.ts";
import { type FileWatch, watchFile } from "./file-watch.ts";

export type NetworkModeCause = "set_network_mode" | "file";

export interface NetworkModeReport {
  mode: NetworkMode;
  path: string;
  /** Why the file does not hold the mode in force (unreadable, not a mode…); null when it does. */
  problem: string | null;
}

export interface NetworkModeChange {
  previous: NetworkMode;
  current: NetworkModeReport;
  cause: NetworkModeCause;
}

export type SetNetworkModeResult =
  | { ok: true; previous: NetworkModeReport; current: NetworkModeReport }
  | { ok: false; error: "io_error"; message: string };

/**
 * The mode at start, before Pi and the tools' supervisor start (prestart: no logger yet, so the caller logs the
 * `warning`). `initial` (the --network-mode option) is written to the file and wins; otherwise the file's mode, else
 * the default. A missing file is written (the gate reads the same file). Throws when `initial` cannot be written:
 * the gate would not learn the mode the supervisor applies.
 */
export async function settleNetworkModeAtStart(
  file: string,
  initial: NetworkMode | undefined,
): Promise<{ report: NetworkModeReport; warning: string | null }> {
  if (initial !== undefined) {
    await writeNetworkModeFile(file, initial);
    return { report: { mode: initial, path: file, problem: null }, warning: null };
  }
  const read = readNetworkModeFile(file);
  if (read.ok) return { report: { mode: read.mode, path: file, problem: null }, warning: null };
  const mode = DEFAULT_NETWORK_MODE;
  if (read.problem === "missing") {
    try {
      await writeNetworkModeFile(file, mode);
      return { report: { mode, path: file, problem: null }, warning: null };
    } catch (err) {
      const problem = `missing, and cannot be written: ${(err as Error).message}`;
      return { report: { mode, path: file, problem }, warning: problem };
    }
  }
  return {
    report: { mode, path: file, problem: read.problem },
    warning: `the network mode file is not usable (${read.problem}): the default ${mode} applies, and the gate asks as if unguarded until the file is fixed`,
  };
}

export class NetworkModeStore {
  readonly path: string;
  private mode: NetworkMode;
  private problem: string | null;
  private readonly log: Logger;
  private readonly listeners = new Set<(change: NetworkModeChange) => void>();
  private watcher: FileWatch | undefined;
  /** Writes run one at a time, in order. */
  private writes: Promise<unknown> = Promise.resolve();

  /** `start`: what settleAtStart found (the mode the first pair was started in). */
  constructor(options: { start: NetworkModeReport; log: Logger }) {
    this.path = options.start.path;
    this.mode = options.start.mode;
    this.problem = options.start.problem;
    this.log = options.log;
  }

  get(): NetworkMode {
    return this.mode;
  }

  report(): NetworkModeReport {
    return { mode: this.mode, path: this.path, problem: this.problem };
  }

  onChange(listener: (change: NetworkModeChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Writes the mode and applies it (a client's set_network_mode, or a test). */
  set(mode: NetworkMode): Promise<SetNetworkModeResult> {
    const run = async (): Promise<SetNetworkModeResult> => {
      const previous = this.report();
      try {
        await writeNetworkModeFile(this.path, mode);
      } catch (err) {
        return { ok: false, error: "io_error", message: (err as Error).message };
      }
      this.problem = null;
      this.apply(mode, "set_network_mode");
      return { ok: true, previous, current: this.report() };
    };
    const result = this.writes.then(run, run);
    this.writes = result;
    return result;
  }

  /** Rereads the file (the watch calls this): a valid mode applies, anything else keeps the mode in force. */
  reread(): void {
    const read = readNetworkModeFile(this.path);
    if (read.ok) {
      this.problem = null;
      this.apply(read.mode, "file");
      return;
    }
    if (read.problem === "missing") {
      // The gate reads a missing file as the default: put the mode in force back so both agree.
      void this.writes.then(() => this.writeCurrent("the network mode file disappeared"));
      return;
    }
    if (this.problem !== read.problem)
      this.log.error(
        { file: this.path, problem: read.problem, mode: this.mode },
        "the network mode file is not usable: the mode in force is kept",
      );
    this.problem = read.problem;
  }

  /** Watches the file: an operator's change (CLI, editor) applies at once. */
  watch(): void {
    if (this.watcher) return;
    this.watcher = watchFile(
      this.path,
      () => this.reread(),
      (message) => this.log.warn({ file: this.path }, message),
    );
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  private apply(mode: NetworkMode, cause: NetworkModeCause): void {
    const previous = this.mode;
    if (previous === mode) return;
    this.mode = mode;
    const change = { previous, current: this.report(), cause };
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (err) {
        this.log.error({ err: (err as Error).message }, "a network mode listener failed");
      }
    }
  }

  private async writeCurrent(why: string): Promise<void> {
    try {
      await writeNetworkModeFile(this.path, this.mode);
      this.problem = null;
      this.log.warn({ file: this.path, mode: this.mode }, `${why}: wrote the mode in force`);
    } catch (err) {
      this.problem = `missing, and cannot be written: ${(err as Error).message}`;
      this.log.error({ file: this.path, mode: this.mode, err: (err as Error).message }, why);
    }
  }
}
