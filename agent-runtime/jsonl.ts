// Strict LF-framed JSON Lines, as Pi's RPC mode frames them.
// Not node:readline: it also splits on U+2028/U+2029 and \r, which can appear inside JSON strings.
import { StringDecoder } from "node:string_decoder";

export class JsonlLineTooLongError extends Error {
  readonly limit: number;

  constructor(limit: number) {
    super(`line exceeds ${limit} bytes`);
    this.limit = limit;
  }
}

/** Splits a byte stream into lines on "\n" only; strips one trailing "\r" like Pi does. */
export class JsonlDecoder {
  private readonly decoder = new StringDecoder("utf8");
  private buffered = "";
  /** Byte length of `buffered`, kept as pieces arrive (measuring the whole buffer per chunk is quadratic). */
  private bufferedBytes = 0;
  private discarding = false;

  /** @param maxLineBytes lines longer than this are dropped and reported via onOversized */
  private readonly maxLineBytes: number;
  private readonly onOversized: (err: JsonlLineTooLongError) => void;

  constructor(
    maxLineBytes = Number.POSITIVE_INFINITY,
    onOversized: (err: JsonlLineTooLongError) => void = () => {},
  ) {
    this.maxLineBytes = maxLineBytes;
    this.onOversized = onOversized;
  }

  push(chunk: Buffer | string): string[] {
    const text = typeof chunk === "string" ? chunk : this.decoder.write(chunk);
    const lines: string[] = [];
    let start = 0;
    for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", start)) {
      const piece = text.slice(start, nl);
      start = nl + 1;
      if (this.discarding) {
        this.discarding = false;
        this.buffered = "";
        this.bufferedBytes = 0;
        continue;
      }
      const lineBytes = this.bufferedBytes + Buffer.byteLength(piece);
      const line = this.buffered + piece;
      this.buffered = "";
      this.bufferedBytes = 0;
      if (lineBytes > this.maxLineBytes) {
        this.onOversized(new JsonlLineTooLongError(this.maxLineBytes));
        continue;
      }
      lines.push(line.endsWith("\r") ? line.slice(0, -1) : line);
    }
    if (!this.discarding) {
      const rest = text.slice(start);
      this.buffered += rest;
      this.bufferedBytes += Buffer.byteLength(rest);
      if (this.bufferedBytes > this.maxLineBytes) {
        this.onOversized(new JsonlLineTooLongError(this.maxLineBytes));
        this.buffered = "";
        this.bufferedBytes = 0;
        this.discarding = true;
      }
    }
    return lines;
  }

  /** The unterminated tail at end of stream (Pi executes it too), or undefined. */
  end(): string | undefined {
    const rest = this.buffered + this.decoder.end();
    this.buffered = "";
    this.bufferedBytes = 0;
    if (this.discarding || rest.length === 0) return undefined;
    return rest.endsWith("\r") ? rest.slice(0, -1) : rest;
  }
}

/** One JSON value as one LF-terminated line. JSON.stringify never emits a raw "\n". */
export function encodeJsonl(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}
