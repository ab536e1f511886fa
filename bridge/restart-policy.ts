// How often Pi may be restarted after unexpected exits: at most `maxRestarts` within `windowMs`, each after
// a growing delay. One more exit inside the window is a crash loop: the bridge gives up and says so.

export interface RestartPolicyOptions {
  maxRestarts: number;
  windowMs: number;
  /** Delay before the n-th restart in the window (n from 1): baseDelayMs * 4^(n-1), at most maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicyOptions = {
  maxRestarts: 3,
  windowMs: 10 * 60_000,
  baseDelayMs: 250,
  maxDelayMs: 4_000,
};

export class RestartPolicy {
  private restarts: number[] = [];

  readonly options: RestartPolicyOptions;
  private readonly now: () => number;

  constructor(options: Partial<RestartPolicyOptions> = {}, now: () => number = Date.now) {
    this.options = { ...DEFAULT_RESTART_POLICY, ...options };
    this.now = now;
  }

  /** Pi exited unexpectedly: the delay before restarting it, or undefined for a crash loop (give up). */
  next(): number | undefined {
    const now = this.now();
    this.restarts = this.restarts.filter((t) => now - t < this.options.windowMs);
    if (this.restarts.length >= this.options.maxRestarts) return undefined;
    this.restarts.push(now);
    const n = this.restarts.length;
    return Math.min(this.options.baseDelayMs * 4 ** (n - 1), this.options.maxDelayMs);
  }

  /** Restarts within the current window. */
  get count(): number {
    const now = this.now();
    return this.restarts.filter((t) => now - t < this.options.windowMs).length;
  }
}
