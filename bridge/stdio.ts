// Stdio mode: NDJSON on stdin/stdout, wire-compatible with `pi --mode rpc` (Pi's lines pass through
// unchanged, without seq). stdin EOF or a broken stdout is a shutdown, never ignored.

import { JsonlDecoder } from "../agent-runtime/jsonl.ts";
import type { Logger } from "../agent-runtime/log.ts";
import type { BridgeCore, Frame, FrameSink } from "./core.ts";

export class StdioSink implements FrameSink {
  private count = 0;

  private readonly out: NodeJS.WritableStream & { on: NodeJS.WritableStream["on"] };

  /** `onBroken`: stdout failed (EPIPE: the reader went away). */
  constructor(out: NodeJS.WritableStream & { on: NodeJS.WritableStream["on"] }, onBroken: () => void) {
    this.out = out;
    out.on("error", () => onBroken());
  }

  publish(frame: Frame, raw?: string): void {
    this.count++;
    const text = raw ?? JSON.stringify(frame);
    this.out.write(`${text}\n`);
  }

  get headSeq(): number {
    return this.count;
  }

  /** Nothing is kept for a resend: stdio has no replay. */
  get firstSeq(): number {
    return this.count + 1;
  }

  /** Resolves when everything written so far has been handed to the OS. */
  flush(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, 1_000);
      this.out.write("", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

export function attachStdin(
  core: BridgeCore,
  input: NodeJS.ReadableStream,
  maxFrameBytes: number,
  onEnd: () => void,
  log: Logger,
): void {
  const decoder = new JsonlDecoder(maxFrameBytes, () => core.rejectOversized());
  input.on("data", (chunk: Buffer) => {
    for (const line of decoder.push(chunk)) core.handleClientText(line);
  });
  input.on("end", () => {
    const tail = decoder.end();
    if (tail !== undefined) core.handleClientText(tail);
    log.info("stdin closed: shutting down");
    onEnd();
  });
  input.on("error", (err) => {
    log.warn({ err: (err as Error).message }, "stdin error: shutting down");
    onEnd();
  });
}
