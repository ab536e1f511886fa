// The network transport's frame sink: numbers frames and keeps them in the replay ring and, when durable, the
// journal. Frames published while one batch of input is handled are journaled together (one write) before
// `onAppend` lets them reach a client. While the journal cannot write (disk full, I/O error), frames are sent
// from memory: delivery degrades to what the ring holds, it never stops.
import type { Frame, FrameSink } from "./core/frames.ts";
import type { Journal } from "./journal.ts";
import type { ReplayRing } from "./replay-ring.ts";

export interface RingSinkOptions {
  /** The journal, when the bridge is durable. */
  journal?: Journal;
  /** New frames may be sendable: called once per batch, after the journal write. */
  onAppend?: () => void;
  now?: () => number;
}

export class RingSink implements FrameSink {
  private flushScheduled = false;
  /** When the oldest frame that may not be sent yet was published (undefined: none waits). */
  private waitingSince: number | undefined;

  readonly ring: ReplayRing;
  readonly journal: Journal | undefined;
  private readonly onAppend: () => void;
  private readonly now: () => number;

  constructor(ring: ReplayRing, options: RingSinkOptions = {}) {
    this.ring = ring;
    this.journal = options.journal;
    this.onAppend = options.onAppend ?? (() => {});
    this.now = options.now ?? (() => performance.now());
  }

  publish(frame: Frame, raw?: string): void {
    const appended = this.ring.append((seq) => {
      // Pi's own text stays byte-identical: splice the seq in front instead of re-serialising.
      if (raw?.startsWith('{"') && !Object.hasOwn(frame, "seq")) {
        return `{"seq":${seq},${raw.slice(1)}`;
      }
      const { seq: _theirs, ...rest } = frame;
      return JSON.stringify({ seq, ...rest });
    });
    this.journal?.append(appended.seq, appended.data);
    if (this.waitingSince === undefined && this.sendableSeq < appended.seq) this.waitingSince = this.now();
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    queueMicrotask(() => {
      this.flushScheduled = false;
      this.flush();
      this.onAppend();
    });
  }

  /** Journals every frame published so far. */
  flush(): void {
    this.journal?.flush(this.ring.firstSeq);
    if (this.sendableSeq >= this.ring.headSeq) this.waitingSince = undefined;
  }

  get headSeq(): number {
    return this.ring.headSeq;
  }

  get firstSeq(): number {
    return this.ring.firstSeq;
  }

  /** The newest frame a client may be sent: journaled already, or any while the journal cannot write. */
  get sendableSeq(): number {
    const journal = this.journal;
    return journal?.healthy ? Math.min(journal.durableSeq, this.ring.headSeq) : this.ring.headSeq;
  }

  stalledMs(): number {
    return this.waitingSince === undefined ? 0 : this.now() - this.waitingSince;
  }
}
