// How fast the bridge checks proofs. Every failed proof closes a gate for a delay that doubles with each recent
// failure (capped), so guessing the token online is slow. The gate is global (all loopback connections look
// alike), and every hello waiting at it is checked as soon as it opens, so a person's hello waits at most one
// delay, however many hellos a flood queued beside it.

export interface AuthThrottleOptions {
  /** Delay after the first failure in the window; doubled by each further one. */
  baseDelayMs: number;
  /** Ceiling of the delay. */
  maxDelayMs: number;
  /** How long a failure counts as recent. */
  windowMs: number;
  now?: () => number;
}

/** Failures kept: enough for the delay to reach any ceiling (2^32 × base is beyond every sane maximum). */
const MAX_TRACKED = 32;

export class AuthThrottle {
  private readonly failures: number[] = [];
  private openAt = 0;
  private readonly options: AuthThrottleOptions;
  private readonly now: () => number;

  constructor(options: AuthThrottleOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  /** Milliseconds until proofs may be checked again (0: now). */
  waitMs(): number {
    return Math.max(0, this.openAt - this.now());
  }

  /** Failures within the window. */
  recentFailures(): number {
    this.prune();
    return this.failures.length;
  }

  /** Records a failed proof and closes the gate; returns the delay (also how long the failed connection waits). */
  recordFailure(): number {
    this.prune();
    if (this.failures.length >= MAX_TRACKED) this.failures.shift();
    const now = this.now();
    this.failures.push(now);
    const { baseDelayMs, maxDelayMs } = this.options;
    const delay = Math.min(maxDelayMs, baseDelayMs * 2 ** (this.failures.length - 1));
    this.openAt = Math.max(this.openAt, now + delay);
    return delay;
  }

  private prune(): void {
    const oldest = this.now() - this.options.windowMs;
    while (this.failures.length > 0 && (this.failures[0] ?? 0) <= oldest) this.failures.shift();
  }
}
