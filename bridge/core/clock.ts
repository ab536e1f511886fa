// The one source of time for the core's parts: timers and now() come from here, so a test drives them with a
// fake clock (tests/unit/bridge-core.test.ts) and no part calls setTimeout itself.

export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds on a monotonic scale (only differences mean anything). */
  now(): number;
  set(ms: number, fn: () => void): TimerHandle;
  clear(handle: TimerHandle): void;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  set: (ms, fn) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
};

/** Callers waiting for a condition, each for at most its own deadline on `clock`; `wake` lets them all go. */
export class Waiters {
  private readonly waiting: (() => void)[] = [];
  private readonly clock: Clock;

  constructor(clock: Clock) {
    this.clock = clock;
  }

  wait(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.clock.set(timeoutMs, resolve);
      this.waiting.push(() => {
        this.clock.clear(timer);
        resolve();
      });
    });
  }

  wake(): void {
    for (const wake of this.waiting.splice(0)) wake();
  }
}

/** A shutdown after `ms` of idleness (the idle exit): armed while idle, disarmed by any activity. */
export class IdleTimer {
  private timer: TimerHandle;
  private readonly clock: Clock;
  private readonly ms: number;
  private readonly onIdle: () => void;

  constructor(clock: Clock, ms: number, onIdle: () => void) {
    this.clock = clock;
    this.ms = ms;
    this.onIdle = onIdle;
  }

  update(idle: boolean): void {
    if (idle && this.timer === undefined) {
      this.timer = this.clock.set(this.ms, () => {
        this.timer = undefined;
        this.onIdle();
      });
    } else if (!idle && this.timer !== undefined) {
      this.clock.clear(this.timer);
      this.timer = undefined;
    }
  }
}
