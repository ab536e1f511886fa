// One end of the executor channel: LF-framed JSON over a stream socket, every incoming line validated against
// the schema of what the other side may send. Oversized, unparseable or invalid lines are reported to
// `onInvalid` and dropped; they never throw out of the stream handlers.
import type { Duplex } from "node:stream";
import type { z } from "zod";
import { encodeJsonl, JsonlDecoder } from "../jsonl.ts";
import { describeIssues } from "./protocol.ts";

export interface ChannelHandlers<T> {
  onFrame: (frame: T) => void;
  /** A line that is not a valid frame: `id` when one could be read from it (so the peer can be answered). */
  onInvalid: (problem: string, id: string | undefined) => void;
  onClose: () => void;
}

export class FrameChannel<In, Out> {
  private closed = false;
  private readonly socket: Duplex;
  private readonly maxFrameBytes: number;

  constructor(socket: Duplex, schema: z.ZodType<In>, maxFrameBytes: number, handlers: ChannelHandlers<In>) {
    this.socket = socket;
    this.maxFrameBytes = maxFrameBytes;
    const decoder = new JsonlDecoder(maxFrameBytes, (err) => handlers.onInvalid(err.message, undefined));
    const accept = (line: string) => {
      if (line.length === 0) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        handlers.onInvalid("not JSON", undefined);
        return;
      }
      const checked = schema.safeParse(parsed);
      if (!checked.success) {
        handlers.onInvalid(describeIssues(checked.error), idOf(parsed));
        return;
      }
      handlers.onFrame(checked.data);
    };
    socket.on("data", (chunk: Buffer) => {
      for (const line of decoder.push(chunk)) accept(line);
    });
    const finish = () => {
      if (this.closed) return;
      this.closed = true;
      handlers.onClose();
    };
    socket.on("end", finish);
    socket.on("close", finish);
    socket.on("error", finish);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Writes one frame; false (and nothing written) if it would exceed the peer's line bound or the channel is gone. */
  send(frame: Out): boolean {
    if (this.closed || this.socket.destroyed) return false;
    const line = encodeJsonl(frame);
    if (Buffer.byteLength(line) > this.maxFrameBytes) return false;
    this.socket.write(line);
    return true;
  }

  close(): void {
    this.closed = true;
    this.socket.destroy();
  }
}

function idOf(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const id = (value as { id?: unknown }).id;
  return typeof id === "string" && id.length > 0 && id.length <= 512 ? id : undefined;
}
