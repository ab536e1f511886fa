// The watchdog over one Pi: a Pi that has not passed its probes within a bound (it hangs in its own start-up,
// e.g. a blocking read of a FIFO the tools planted in the workspace's .git) or that stops answering a cheap
// liveness request while idle is reported hung; the supervisor kills its whole tree and starts another.
// Liveness is only asked while nothing else is in flight, so a long tool call or turn is never mistaken for
// a hang.
import type { Clock, TimerHandle } from "./clock.ts";

export type HangReason = "starting_too_long" | "pi_hung";

export interface WatchdogOptions {
  /** Health says `starting_too_long` once a Pi has not passed its probes for this long… */
  startReportMs: number;
  /** …and it is killed as hung (and started again through the restart policy) after this long. */
  startTimeoutMs: number;
  /** While the agent is idle, a running Pi is asked for its state this often… */
  livenessIntervalMs: number;
  /** …and killed as hung if it does not answer within this long. */
  livenessTimeoutMs: number;
}

export const DEFAULT_WATCHDOG: WatchdogOptions = {
  startReportMs: 20_000,
  startTimeoutMs: 60_000,
  livenessIntervalMs: 30_000,
  livenessTimeoutMs: 10_000,
};

export interface WatchdogHooks {
  /** Asks Pi something cheap; resolves false when no answer came within `timeoutMs`. */
  ping(timeoutMs: number): Promise<boolean>;
  /** Nothing is in flight and no turn runs (only then is silence a hang). */
  idle(): boolean;
  /** The start takes long (reported; Pi is left to finish). */
  slow(detail: string): void;
  /** Pi is hung: report it and kill it. */
  hung(reason: HangReason, detail: string): void;
}

export class Watchdog {
  private timers: TimerHandle[] = [];
  /** Bumped whenever the watch changes, so an answer to an older ping is ignored. */
  private generation = 0;
  readonly options: WatchdogOptions;
  private readonly clock: Clock;
  private readonly hooks: WatchdogHooks;

  constructor(clock: Clock, hooks: WatchdogHooks, options: Partial<WatchdogOptions> = {}) {
    this.clock = clock;
    this.hooks = hooks;
    this.options = { ...DEFAULT_WATCHDOG, ...options };
  }

  /** A new Pi was started: it must pass its probes in time. */
  starting(): void {
    this.stop();
    const { startReportMs, startTimeoutMs } = this.options;
    const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;
    this.timers.push(
      this.clock.set(startReportMs, () =>
        this.hooks.slow(`Pi has not passed its start-up probes for ${seconds(startReportMs)}`),
      ),
      this.clock.set(startTimeoutMs, () =>
        this.hooks.hung(
          "starting_too_long",
          `Pi did not pass its start-up probes within ${seconds(startTimeoutMs)}: killed and started again`,
        ),
      ),
    );
  }

  /** Pi serves: from now on it must answer while idle. */
  running(): void {
    this.stop();
    this.scheduleLiveness(this.generation);
  }

  stop(): void {
    this.generation++;
    for (const timer of this.timers.splice(0)) this.clock.clear(timer);
  }

  private scheduleLiveness(generation: number): void {
    this.timers.push(this.clock.set(this.options.livenessIntervalMs, () => void this.check(generation)));
  }

  private async check(generation: number): Promise<void> {
    if (generation !== this.generation) return;
    this.timers = [];
    if (this.hooks.idle()) {
      const { livenessTimeoutMs } = this.options;
      const answered = await this.hooks.ping(livenessTimeoutMs);
      if (generation !== this.generation) return;
      if (!answered) {
        this.hooks.hung(
          "pi_hung",
          `Pi did not answer a liveness check within ${Math.round(livenessTimeoutMs / 1000)} s while idle: killed and started again`,
        );
        return;
      }
    }
    this.scheduleLiveness(generation);
  }
}
