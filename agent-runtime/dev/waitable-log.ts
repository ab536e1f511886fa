// An append-only record (protocol frames, stdout lines, log entries) that tests and tools can wait on.
// One implementation for every reader: the Pi harness, the bridge's test clients, the bridge's log.

export class WaitableLog<T> {
  readonly items: T[] = [];
  private readonly waiters = new Set<() => void>();
  private endReason: string | undefined;

  /** @param context extra text for failure messages (e.g. the process's stderr tail) */
  private readonly context: () => string;

  constructor(context: () => string = () => "") {
    this.context = context;
  }

  push(item: T): void {
    this.items.push(item);
    this.wake();
  }

  /** Nothing more will arrive (the stream closed): waits that have not matched fail with `reason`. */
  end(reason: string): void {
    this.endReason ??= reason;
    this.wake();
  }

  get ended(): boolean {
    return this.endReason !== undefined;
  }

  /** The first item at or after index `from` matching `predicate`, now or once it arrives. */
  waitFor(predicate: (item: T) => boolean, ms = 20_000, from = 0): Promise<T> {
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      const fail = (why: string) => {
        done();
        const last = JSON.stringify(this.items.slice(-3)).slice(0, 1500);
        reject(new Error(`${why}; last items: ${last}${this.context()}`));
      };
      let next = from; // each item is tested once per wait, however many arrive
      const check = () => {
        for (; next < this.items.length; next++) {
          const item = this.items[next] as T;
          if (predicate(item)) {
            done();
            resolve(item);
            return;
          }
        }
        if (this.endReason !== undefined) fail(`${this.endReason} before a matching item`);
      };
      const timer = setTimeout(() => fail(`timed out after ${ms} ms`), ms);
      this.waiters.add(check);
      check();
    });
  }

  private wake(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
