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

/** Resolves after `ms` on `clock`, or earlier when `wake` is called (whichever comes first). */
export function sleepOrWake(clock: Clock, ms: number): { done: Promise<void>; wake: () => void } {
  let wake = () => {};
  const done = new Promise<void>((resolve) => {
    const handle = clock.set(ms, resolve);
    wake = () => {
      clock.clear(handle);
      resolve();
    };
  });
  return { done, wake };
}
