// The executor's side of the channel: one request at a time per id, many ids at once. It never crashes on
// input: a bad line gets a protocol_error (or an error for its id), an unknown abort is ignored, and every
// failure of a call is an answer for that call.
import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import type { Duplex } from "node:stream";
import type { Logger } from "../log.ts";
import { FrameChannel } from "./channel.ts";
import {
  EXECUTOR_PROTOCOL_VERSION,
  type ExecutorRequest,
  ExecutorRequest as ExecutorRequestSchema,
  type ExecutorResponse,
  type HelloResponse,
  MAX_CONCURRENT_CALLS,
  MAX_EXECUTOR_FRAME_BYTES,
  type UserBashRequest,
} from "./protocol.ts";
import { createShellOperations, currentCall } from "./shell-ops.ts";
import { CallError, type ToolRunner, type ToolRunnerDeps } from "./tool-runner.ts";

/** Largest context file the executor reads to compare (a bigger one is kept from the model). */
export const MAX_CONTEXT_FILE_BYTES = 4 * 1024 * 1024;

export interface ExecutorServerOptions {
  runner: ToolRunner;
  /** The runner's dependencies (loaded on first use). */
  deps: () => Promise<ToolRunnerDeps>;
  hello: Omit<HelloResponse, "type" | "protocol">;
  log: Logger;
  /** Called once the channel is gone (Pi exited): the caller ends every tool and exits. */
  onClose: () => void;
}

export function serveExecutor(
  socket: Duplex,
  options: ExecutorServerOptions,
): FrameChannel<ExecutorRequest, ExecutorResponse> {
  const running = new Map<string, AbortController>();
  const channel: FrameChannel<ExecutorRequest, ExecutorResponse> = new FrameChannel(
    socket,
    ExecutorRequestSchema,
    MAX_EXECUTOR_FRAME_BYTES,
    {
      onFrame: (frame) => handle(frame),
      onInvalid: (problem, id) => {
        options.log.warn({ problem, id }, "invalid executor request");
        if (id !== undefined && !running.has(id)) {
          channel.send({
            type: "error",
            id,
            code: "invalid_request",
            message: `invalid request: ${problem}`,
          });
        } else {
          channel.send({ type: "protocol_error", message: problem.slice(0, 4096) });
        }
      },
      onClose: () => {
        for (const controller of running.values()) controller.abort();
        options.onClose();
      },
    },
  );

  /** An answer too large for the channel becomes an error for its call: the caller must never wait forever. */
  const answer = (frame: ExecutorResponse & { id: string }): void => {
    if (channel.send(frame) || channel.isClosed) return;
    options.log.warn({ id: frame.id, type: frame.type }, "answer exceeds the channel's frame bound");
    channel.send({
      type: "error",
      id: frame.id,
      code: "tool_error",
      message: `The tool's result is larger than the executor channel carries (${MAX_EXECUTOR_FRAME_BYTES} bytes). Nothing else was lost.`,
    });
  };

  const begin = (id: string): AbortController | undefined => {
    if (running.has(id)) {
      // Never two runs under one id: the answers could not be told apart.
      channel.send({ type: "error", id, code: "busy", message: `a call with id ${id} is already running` });
      return undefined;
    }
    if (running.size >= MAX_CONCURRENT_CALLS) {
      channel.send({
        type: "error",
        id,
        code: "busy",
        message: "too many calls running in the tool executor",
      });
      return undefined;
    }
    const controller = new AbortController();
    running.set(id, controller);
    return controller;
  };

  const handle = (frame: ExecutorRequest): void => {
    switch (frame.type) {
      case "hello":
        channel.send({ type: "hello", protocol: EXECUTOR_PROTOCOL_VERSION, ...options.hello });
        return;
      case "abort":
        running.get(frame.id)?.abort();
        return;
      case "context_check":
        answer({ type: "context_check", id: frame.id, files: frame.files.map(compareContextFile) });
        return;
      case "call": {
        const controller = begin(frame.id);
        if (!controller) return;
        const networkApproved = frame.tool === "bash" && frame.networkApproved !== undefined;
        if (networkApproved)
          options.log.info(
            { call: callLabel(frame), toolCallId: frame.networkApproved?.toolCallId },
            "the person approved this call: it runs with the network until it ends",
          );
        void currentCall
          .run({ label: callLabel(frame), networkApproved }, () =>
            options.runner.run(frame, controller.signal, (partial) =>
              channel.send({ type: "update", id: frame.id, partial }),
            ),
          )
          .then(
            (result) => answer({ type: "result", id: frame.id, result }),
            (error: unknown) => channel.send(errorFrame(frame.id, error, controller.signal)),
          )
          .finally(() => running.delete(frame.id));
        return;
      }
      case "user_bash": {
        const controller = begin(frame.id);
        if (!controller) return;
        void currentCall
          .run({ label: callLabel(frame), networkApproved: false }, () =>
            runUserBash(frame, controller.signal),
          )
          .then(
            (exitCode) => channel.send({ type: "exit", id: frame.id, exitCode }),
            (error: unknown) => channel.send(errorFrame(frame.id, error, controller.signal)),
          )
          .finally(() => running.delete(frame.id));
        return;
      }
    }
  };

  const runUserBash = async (request: UserBashRequest, signal: AbortSignal): Promise<number | null> => {
    const deps = await options.deps();
    const ops = createShellOperations(deps.shell, deps.childProcess, deps.sessions);
    const result = await ops.exec(request.command, request.cwd, {
      onData: (data: Buffer) =>
        channel.send({ type: "data", id: request.id, chunk: data.toString("base64") }),
      signal,
      env: deps.toolEnv,
    });
    return result.exitCode;
  };

  return channel;
}

/**
 * The label a call's processes carry for the tools' supervisor (attribution of each connect, per-call grants):
 * the request's id on this channel.
 */
export function callLabel(frame: { id: string }): string {
  return frame.id;
}

function errorFrame(id: string, error: unknown, signal: AbortSignal): ExecutorResponse {
  if (error instanceof CallError) return { type: "error", id, code: error.code, message: error.message };
  const message = error instanceof Error ? error.message : String(error);
  if (signal.aborted || message === "aborted") return { type: "error", id, code: "aborted", message };
  if (message.startsWith("timeout:")) return { type: "error", id, code: "timeout", message };
  return { type: "error", id, code: "tool_error", message };
}

/** Reads a context file as the tools' principal, as Pi reads it (follows links, UTF-8), and compares hashes. */
export function compareContextFile(file: { path: string; sha256: string }): {
  path: string;
  same: boolean;
  reason: string | null;
} {
  let fd: number;
  try {
    fd = openSync(file.path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    return {
      path: file.path,
      same: false,
      reason: `the tools cannot read it (${(error as NodeJS.ErrnoException).code})`,
    };
  }
  try {
    if (!fstatSync(fd).isFile())
      return { path: file.path, same: false, reason: "not a regular file for the tools" };
    const buffer = Buffer.allocUnsafe(MAX_CONTEXT_FILE_BYTES + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    if (length > MAX_CONTEXT_FILE_BYTES)
      return { path: file.path, same: false, reason: "larger than the bound" };
    const text = buffer.subarray(0, length).toString("utf8");
    const digest = createHash("sha256").update(text, "utf8").digest("hex");
    return digest === file.sha256
      ? { path: file.path, same: true, reason: null }
      : { path: file.path, same: false, reason: "the tools read different content at that path" };
  } catch (error) {
    return { path: file.path, same: false, reason: `unreadable (${(error as NodeJS.ErrnoException).code})` };
  } finally {
    closeSync(fd);
  }
}
