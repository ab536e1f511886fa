// Pi's side of the executor channel (in the gate bundle, in Pi's process): sends calls, matches answers by id,
// and fails every pending call the moment the channel is gone. It never falls back to running anything here.
import { randomBytes } from "node:crypto";
import { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { FrameChannel } from "../executor/channel.ts";
import {
  type CallErrorCode,
  EXECUTOR_PROTOCOL_VERSION,
  type ExecutorRequest,
  type ExecutorResponse,
  ExecutorResponse as ExecutorResponseSchema,
  type HelloResponse,
  MAX_EXECUTOR_FRAME_BYTES,
  type ToolCallRequest,
  type ToolResultShape,
} from "../executor/protocol.ts";
import type { Logger } from "../log.ts";

/** How long an aborted call may take to report its end before the router stops waiting for it. */
const ABORT_GRACE_MS = 10_000;

export class ExecutorCallError extends Error {
  readonly code: CallErrorCode | "unavailable";

  constructor(code: CallErrorCode | "unavailable", message: string) {
    super(message);
    this.code = code;
  }
}

interface Pending {
  onFrame: (frame: ExecutorResponse) => void;
  fail: (error: ExecutorCallError) => void;
}

export type CallSpec = Omit<ToolCallRequest, "type" | "id">;

export class ExecutorClient {
  readonly hello: Promise<HelloResponse>;
  private readonly channel: FrameChannel<ExecutorResponse, ExecutorRequest>;
  private readonly pending = new Map<string, Pending>();
  private readonly idPrefix = randomBytes(6).toString("hex");
  private nextId = 1;
  private closedReason: string | undefined;
  private helloSent = false;
  private readonly log: Logger;

  constructor(socket: Duplex, log: Logger) {
    this.log = log;
    let resolveHello: (hello: HelloResponse) => void = () => {};
    let rejectHello: (error: Error) => void = () => {};
    this.hello = new Promise((resolve, reject) => {
      resolveHello = resolve;
      rejectHello = reject;
    });
    this.hello.catch(() => {});
    this.channel = new FrameChannel(socket, ExecutorResponseSchema, MAX_EXECUTOR_FRAME_BYTES, {
      onFrame: (frame) => {
        if (frame.type === "hello") {
          resolveHello(frame);
          return;
        }
        if (frame.type === "protocol_error") {
          log.error({ problem: frame.message }, "the tool executor could not read a request");
          return;
        }
        this.pending.get(frame.id)?.onFrame(frame);
      },
      onInvalid: (problem, id) => {
        log.error({ problem, id }, "invalid frame from the tool executor");
        const pending = id !== undefined ? this.pending.get(id) : undefined;
        pending?.fail(
          new ExecutorCallError("internal", `the tool executor sent an invalid answer (${problem})`),
        );
      },
      onClose: () => {
        this.closedReason = "the tool executor's channel closed";
        rejectHello(new Error(this.closedReason));
        const error = new ExecutorCallError(
          "unavailable",
          "The tool executor is gone (its channel closed); the call did not complete here and nothing runs in Pi's process instead.",
        );
        for (const pending of [...this.pending.values()]) pending.fail(error);
      },
    });
  }

  /** Says hello once (the executor then loads Pi's tools): at the first prompt, or with the first request. */
  warm(): void {
    if (this.helloSent) return;
    this.helloSent = true;
    this.channel.send({ type: "hello", protocol: EXECUTOR_PROTOCOL_VERSION });
  }

  /** The channel on an inherited fd (Pi's stdio[3]). */
  static fromFd(fd: number, log: Logger): ExecutorClient {
    return new ExecutorClient(new Socket({ fd, readable: true, writable: true }), log);
  }

  get available(): boolean {
    return this.closedReason === undefined;
  }

  /** A routed tool call: resolves with Pi's result shape, rejects with the tool's own error message. */
  call(spec: CallSpec, signal: AbortSignal | undefined, onUpdate: (partial: ToolResultShape) => void) {
    return this.request<ToolResultShape>({ type: "call", ...spec }, signal, (frame, settle) => {
      if (frame.type === "update") onUpdate(frame.partial);
      else if (frame.type === "result") settle.resolve(frame.result);
    });
  }

  /** A person's `!` command: raw output bytes to `onData`, then the exit code. */
  userBash(command: string, cwd: string, signal: AbortSignal | undefined, onData: (data: Buffer) => void) {
    return this.request<{ exitCode: number | null }>(
      { type: "user_bash", command, cwd },
      signal,
      (frame, settle) => {
        if (frame.type === "data") onData(Buffer.from(frame.chunk, "base64"));
        else if (frame.type === "exit") settle.resolve({ exitCode: frame.exitCode });
      },
    );
  }

  contextCheck(files: { path: string; sha256: string }[]) {
    return this.request<{ path: string; same: boolean; reason: string | null }[]>(
      { type: "context_check", files },
      undefined,
      (frame, settle) => {
        if (frame.type === "context_check") settle.resolve(frame.files);
      },
    );
  }

  private request<T>(
    body: DistributiveOmit<Exclude<ExecutorRequest, { type: "hello" | "abort" }>, "id">,
    signal: AbortSignal | undefined,
    onFrame: (frame: ExecutorResponse, settle: { resolve: (value: T) => void }) => void,
  ): Promise<T> {
    if (this.closedReason !== undefined) {
      return Promise.reject(
        new ExecutorCallError(
          "unavailable",
          `The tool executor is unavailable (${this.closedReason}). Nothing ran.`,
        ),
      );
    }
    if (signal?.aborted) return Promise.reject(new ExecutorCallError("aborted", "aborted"));
    this.warm();
    const id = `${this.idPrefix}-${this.nextId++}`;
    return new Promise<T>((resolve, reject) => {
      let graceTimer: NodeJS.Timeout | undefined;
      const done = () => {
        this.pending.delete(id);
        clearTimeout(graceTimer);
        signal?.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        this.channel.send({ type: "abort", id });
        // The executor answers once the tree is gone; if it cannot, stop waiting for it.
        graceTimer = setTimeout(() => {
          this.log.warn({ id }, "the tool executor did not confirm an abort in time");
          done();
          reject(new ExecutorCallError("aborted", "aborted"));
        }, ABORT_GRACE_MS);
      };
      const settle = {
        resolve: (value: T) => {
          done();
          resolve(value);
        },
      };
      this.pending.set(id, {
        onFrame: (frame) => {
          if (frame.type === "error") {
            done();
            reject(new ExecutorCallError(frame.code, frame.message));
            return;
          }
          onFrame(frame, settle);
        },
        fail: (error) => {
          done();
          reject(error);
        },
      });
      signal?.addEventListener("abort", onAbort, { once: true });
      if (!this.channel.send({ ...body, id } as ExecutorRequest)) {
        done();
        reject(
          new ExecutorCallError(
            this.channel.isClosed ? "unavailable" : "invalid_request",
            this.channel.isClosed
              ? "The tool executor is unavailable (its channel closed). Nothing ran."
              : `The call is larger than the executor channel carries (${MAX_EXECUTOR_FRAME_BYTES} bytes). Nothing ran.`,
          ),
        );
      }
    });
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
