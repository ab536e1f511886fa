// V8 frees what a socket read into (64 KiB buffers) lazily, at a later full collection. A flood of connections
// that are each dropped after one read (bytes before authenticating) would leave hundreds of MB of such reads
// waiting for it (measured: +300 MB of RSS in the image). The network side reports the bytes it dropped; past a
// budget it asks for a full collection, so the flood costs CPU instead of memory. Nothing happens without one.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** A full collection, from a fresh context (the flag is set only there and then, and unset again). */
function exposeCollector(): () => void {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  setFlagsFromString("--no-expose-gc");
  return gc;
}

export class GarbageNudge {
  private pending = 0;
  private scheduled = false;
  private collect: (() => void) | undefined;
  private readonly budgetBytes: number;

  constructor(budgetBytes: number, collect?: () => void) {
    this.budgetBytes = budgetBytes;
    this.collect = collect;
  }

  /** `bytes` were read from a connection that was then dropped: their buffers are garbage now. */
  dropped(bytes: number): void {
    this.pending += bytes;
    if (this.pending < this.budgetBytes || this.scheduled) return;
    this.scheduled = true;
    // After the current reads are handled (their buffers unreferenced), not inside one.
    setImmediate(() => {
      this.scheduled = false;
      this.pending = 0;
      this.collect ??= exposeCollector();
      this.collect();
    });
  }
}
