// When to start Pi again after it exited, was killed as hung, or could not be spawned. The first `maxRestarts`
// within `windowMs` come quickly (250 ms, 1 s, 4 s); one more inside the window is a crash loop, reported as
// such, and from then on the bridge keeps trying after a long, capped, doubling delay (10 s … 5 min) until a
// Pi serves again. It never gives up: what the tools can do (fill the process table, kill the executor, plant
// a file Pi hangs on) must not make the bridge go away.

export interface RestartPolicyOptions {
  maxRestarts: number;
  windowMs: number;
  /** Delay before the n-th restart in the window (n from 1): baseDelayMs * 4^(n-1), at most maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** In a crash loop, the k-th delay: loopDelayMs * 2^(k-1), at most loopMaxDelayMs. */
  loopDelayMs: number;
  loopMaxDelayMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicyOptions = {
  maxRestarts: 3,
  windowMs: 10 * 60_000,
  baseDelayMs: 250,
  maxDelayMs: 4_000,
  loopDelayMs: 10_000,
  loopMaxDelayMs: 5 * 60_000,
};

export interface RestartDecision {
  delayMs: number;
  /** This restart is part of a crash loop (true from the first one past `maxRestarts` in the window). */
  crashLoop: boolean;
}

export class RestartPolicy {
  private restarts: number[] = [];
  /** Restarts since the crash loop began (0: not in one); only a Pi that serves again ends it. */
  private loopStreak = 0;

  readonly options: RestartPolicyOptions;
  private readonly now: () => number;

  constructor(options: Partial<RestartPolicyOptions> = {}, now: () => number = Date.now) {
    this.options = { ...DEFAULT_RESTART_POLICY, ...options };
    this.now = now;
  }

  /** Pi is gone unexpectedly: how long to wait before the next start. */
  next(): RestartDecision {
    const now = this.now();
    this.restarts = this.restarts.filter((t) => now - t < this.options.windowMs);
    this.restarts.push(now);
    const n = this.restarts.length;
    if (this.loopStreak > 0 || n > this.options.maxRestarts) {
      this.loopStreak++;
      const delayMs = Math.min(
        this.options.loopDelayMs * 2 ** (this.loopStreak - 1),
        this.options.loopMaxDelayMs,
      );
      return { delayMs, crashLoop: true };
    }
    return {
      delayMs: Math.min(this.options.baseDelayMs * 4 ** (n - 1), this.options.maxDelayMs),
      crashLoop: false,
    };
  }

  /** A started Pi passed its probes: a crash loop, if any, is over. */
  served(): void {
    this.loopStreak = 0;
  }

  get inCrashLoop(): boolean {
    return this.loopStreak > 0;
  }

  /** Restarts within the current window. */
  get count(): number {
    const now = this.now();
    return this.restarts.filter((t) => now - t < this.options.windowMs).length;
  }
}
