// An OpenAI-compatible chat-completions server that replays a script, for tests and the demo.
// Real Pi talks to it exactly as to a hosted model: SSE chunks, streamed tool-call arguments.
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import Fastify, { type FastifyInstance } from "fastify";

export type ScriptChunk =
  | { text: string }
  | { toolCall: { name: string; arguments: unknown; id?: string; pieces?: number } }
  | { delayMs: number };

export interface ScriptTurn {
  chunks: ScriptChunk[];
  /** Pause before every chunk (keeps the agent "streaming" for steering/abort tests). */
  chunkDelayMs?: number;
  /** Answer with this HTTP status and no stream (provider error paths). */
  httpStatus?: number;
}

export interface RecordedRequest {
  index: number;
  body: ChatCompletionRequest;
  receivedAt: number;
}

export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: unknown[];
  tool_call_id?: string;
}

export interface ChatCompletionRequest {
  model?: string;
  stream?: boolean;
  messages: ChatMessage[];
  tools?: unknown[];
  [key: string]: unknown;
}

export type ScriptResponder = (request: RecordedRequest) => ScriptTurn | undefined;

export interface ScriptedModelOptions {
  /**
   * Turns replayed in order, one per request (an element may be a function of the request, for a turn
   * that depends on what the agent saw); or one function choosing the turn for every request.
   */
  script: Array<ScriptTurn | ScriptResponder> | ScriptResponder;
  /** Assertion hook: sees every request body as it arrives. */
  onRequest?: (request: RecordedRequest) => void;
}

export interface ScriptedModel {
  readonly baseUrl: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Requests the script had no turn for (a test should normally assert this is empty). */
  readonly unscripted: RecordedRequest[];
  close(): Promise<void>;
}

export const say = (text: string, extra: Partial<ScriptTurn> = {}): ScriptTurn => ({
  chunks: [{ text }],
  ...extra,
});

export const callTool = (name: string, args: unknown, extra: Partial<ScriptTurn> = {}): ScriptTurn => ({
  chunks: [{ toolCall: { name, arguments: args } }],
  ...extra,
});

/** Text of the last user message in a request (string or content-part form). */
export function lastUserText(body: ChatCompletionRequest): string {
  const user = [...body.messages].reverse().find((m) => m.role === "user");
  return messageText(user);
}

/** Text of the last tool result in a request, if the last message is one. */
export function lastToolResult(body: ChatCompletionRequest): string | undefined {
  const last = body.messages.at(-1);
  return last?.role === "tool" ? messageText(last) : undefined;
}

export function messageText(message: ChatMessage | undefined): string {
  if (!message) return "";
  if (typeof message.content === "string") return message.content;
  if (Array.isArray(message.content)) {
    return message.content
      .map((part) => (part && typeof part === "object" && "text" in part ? String(part.text) : ""))
      .join("");
  }
  return "";
}

function splitInPieces(text: string, pieces: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / pieces));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length > 0 ? out : [""];
}

export async function startScriptedModel(options: ScriptedModelOptions): Promise<ScriptedModel> {
  const requests: RecordedRequest[] = [];
  const unscripted: RecordedRequest[] = [];
  const turns = Array.isArray(options.script) ? [...options.script] : undefined;
  const app: FastifyInstance = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });

  app.post("/v1/chat/completions", async (request, reply) => {
    const recorded: RecordedRequest = {
      index: requests.length,
      body: request.body as ChatCompletionRequest,
      receivedAt: Date.now(),
    };
    requests.push(recorded);
    options.onRequest?.(recorded);
    const next = turns ? turns.shift() : (options.script as ScriptResponder);
    const turn = typeof next === "function" ? next(recorded) : next;
    if (!turn) {
      unscripted.push(recorded);
      return reply
        .code(500)
        .send({ error: { message: `scripted model: no turn for request #${recorded.index}` } });
    }
    if (turn.httpStatus) {
      return reply.code(turn.httpStatus).send({ error: { message: `scripted status ${turn.httpStatus}` } });
    }
    reply.hijack();
    await streamTurn(reply.raw, turn, recorded.body.model ?? "scripted-model");
  });

  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  if (!address || typeof address === "string") throw new Error("scripted model: no TCP address");
  return {
    baseUrl: `http://127.0.0.1:${address.port}/v1`,
    port: address.port,
    requests,
    unscripted,
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}

async function streamTurn(res: ServerResponse, turn: ScriptTurn, model: string): Promise<void> {
  let closed = false;
  res.on("close", () => {
    closed = true;
  });
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const id = `chatcmpl-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const send = (delta: Record<string, unknown>, finishReason: string | null = null, extra = {}) => {
    if (closed) return;
    res.write(
      `data: ${JSON.stringify({
        id,
        object: "chat.completion.chunk",
        created,
        model,
        choices: [{ index: 0, delta, finish_reason: finishReason }],
        ...extra,
      })}\n\n`,
    );
  };

  send({ role: "assistant", content: "" });
  let toolIndex = 0;
  for (const chunk of turn.chunks) {
    if (turn.chunkDelayMs) await sleep(turn.chunkDelayMs);
    if (closed) return;
    if ("delayMs" in chunk) {
      await sleep(chunk.delayMs);
    } else if ("text" in chunk) {
      send({ content: chunk.text });
    } else {
      const call = chunk.toolCall;
      const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
      const index = toolIndex++;
      send({
        tool_calls: [
          {
            index,
            id: call.id ?? `call_${randomUUID().replaceAll("-", "").slice(0, 12)}`,
            type: "function",
            function: { name: call.name, arguments: "" },
          },
        ],
      });
      for (const piece of splitInPieces(args, call.pieces ?? 3)) {
        if (turn.chunkDelayMs) await sleep(turn.chunkDelayMs);
        send({ tool_calls: [{ index, function: { arguments: piece } }] });
      }
    }
  }
  if (closed) return;
  send({}, toolIndex > 0 ? "tool_calls" : "stop");
  res.write(
    `data: ${JSON.stringify({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    })}\n\n`,
  );
  res.end("data: [DONE]\n\n");
}
