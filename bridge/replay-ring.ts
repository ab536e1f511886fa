// The replay ring: the last frames sent to clients, bounded by count and bytes, addressed by seq.

export interface RingFrame {
  seq: number;
  /**
   * The frame as sent on the wire: UTF-8 JSON text, no trailing newline. Kept as a Buffer (off the JS
   * heap, exact size) rather than a string, which could pin the larger stdout chunk it was sliced from.
   */
  data: Buffer;
  bytes: number;
  /** Bytes appended to the ring up to and including this frame. */
  endOffset: number;
}

export class ReplayRing {
  private frames: RingFrame[] = [];
  /** Index of the oldest live frame in `frames` (frames before it are evicted; compacted lazily). */
  private head = 0;
  private totalBytes = 0;
  private lastSeq = 0;
  private appendedBytes = 0;

  readonly maxFrames: number;
  readonly maxBytes: number;

  constructor(maxFrames: number, maxBytes: number) {
    this.maxFrames = maxFrames;
    this.maxBytes = maxBytes;
    if (!(maxFrames >= 1) || !(maxBytes >= 1)) throw new Error("replay ring bounds must be >= 1");
  }

  /** Seq of the newest frame (0 before any). */
  get headSeq(): number {
    return this.lastSeq;
  }

  /** Seq of the oldest frame still held (headSeq + 1 when empty). */
  get firstSeq(): number {
    return this.frames[this.head]?.seq ?? this.lastSeq + 1;
  }

  get size(): number {
    return this.frames.length - this.head;
  }

  get bytes(): number {
    return this.totalBytes;
  }

  /** Appends a frame built for the next seq; `build` gets the seq and returns its wire text. */
  append(build: (seq: number) => string): RingFrame {
    const seq = this.lastSeq + 1;
    // An exact-size allocation: Buffer.from() would carve frames under 4 KiB out of shared 8 KiB pool slabs,
    // and a slab stays alive while any frame in it does (up to ~20% more memory for a full ring).
    const text = build(seq);
    const data = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
    data.write(text, "utf8");
    return this.push(seq, data);
  }

  /** Puts back a frame read from the journal; frames must come in seq order, contiguous. */
  restore(seq: number, data: Buffer): RingFrame {
    if (this.lastSeq !== 0 && seq !== this.lastSeq + 1) {
      throw new Error(`replay ring: restored seq ${seq} does not follow ${this.lastSeq}`);
    }
    const copy = Buffer.allocUnsafeSlow(data.length);
    data.copy(copy);
    return this.push(seq, copy);
  }

  private push(seq: number, data: Buffer): RingFrame {
    const bytes = data.length;
    this.appendedBytes += bytes;
    const frame = { seq, data, bytes, endOffset: this.appendedBytes };
    this.lastSeq = seq;
    this.frames.push(frame);
    this.totalBytes += frame.bytes;
    while (this.size > this.maxFrames || (this.totalBytes > this.maxBytes && this.size > 1)) {
      this.totalBytes -= this.frames[this.head]?.bytes ?? 0;
      this.head++;
    }
    if (this.head > 1024 && this.head * 2 > this.frames.length) {
      this.frames = this.frames.slice(this.head);
      this.head = 0;
    }
    return frame;
  }

  /** True if every frame after `lastSeq` is still held (a client at that cursor can resume). */
  canResumeFrom(lastSeq: number): boolean {
    return lastSeq <= this.lastSeq && lastSeq >= this.firstSeq - 1;
  }

  /** Every frame held, oldest first. */
  *held(): Generator<RingFrame> {
    for (let i = this.head; i < this.frames.length; i++) yield this.frames[i] as RingFrame;
  }

  /** The frame with this seq, if still held. */
  get(seq: number): RingFrame | undefined {
    const index = this.head + (seq - this.firstSeq);
    if (index < this.head || index >= this.frames.length) return undefined;
    return this.frames[index];
  }

  /** Bytes of the frames after `seq` (a connection's unsent backlog); Infinity if some were evicted. */
  bytesAfter(seq: number): number {
    if (seq >= this.lastSeq) return 0;
    const frame = this.get(seq);
    if (frame) return this.appendedBytes - frame.endOffset;
    const first = this.get(this.firstSeq);
    if (first && seq === first.seq - 1) return this.appendedBytes - (first.endOffset - first.bytes);
    return Number.POSITIVE_INFINITY;
  }
}
