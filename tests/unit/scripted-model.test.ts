import assert from "node:assert/strict";
import { test } from "node:test";
import { callTool, say, startScriptedModel } from "../../agent-runtime/dev/scripted-model.ts";

interface SseChunk {
  choices: {
    delta?: { content?: string; tool_calls?: { function?: { arguments?: string } }[] };
    finish_reason: string | null;
  }[];
}

async function readSse(response: Response): Promise<{ chunks: SseChunk[]; done: boolean }> {
  const text = await response.text();
  const events = text
    .split("\n\n")
    .filter(Boolean)
    .map((e) => e.replace(/^data: /, ""));
  const done = events.at(-1) === "[DONE]";
  return { chunks: events.filter((e) => e !== "[DONE]").map((e) => JSON.parse(e)), done };
}

const post = (url: string, body: unknown) =>
  fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

test("replays turns in order, streams tool-call arguments in pieces, records every request", async (t) => {
  const seen: unknown[] = [];
  const model = await startScriptedModel({
    script: [callTool("write", { path: "a.txt", content: "hello world" }, { chunkDelayMs: 5 }), say("ok")],
    onRequest: (r) => seen.push(r.body),
  });
  t.after(() => model.close());

  const first = await readSse(
    await post(model.baseUrl, { model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }),
  );
  assert.equal(first.done, true);
  const argPieces = first.chunks
    .flatMap((c) => c.choices.flatMap((ch) => ch.delta?.tool_calls ?? []))
    .map((tc) => tc.function?.arguments ?? "")
    .filter((a) => a.length > 0);
  assert.ok(argPieces.length >= 2, "arguments arrive in several chunks");
  assert.deepEqual(JSON.parse(argPieces.join("")), { path: "a.txt", content: "hello world" });
  const finish = first.chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter(Boolean);
  assert.deepEqual(finish, ["tool_calls"]);

  const second = await readSse(await post(model.baseUrl, { model: "m", messages: [] }));
  const text = second.chunks.flatMap((c) => c.choices.map((ch) => ch.delta?.content ?? "")).join("");
  assert.equal(text, "ok");

  assert.equal(model.requests.length, 2);
  assert.equal(seen.length, 2);
  assert.deepEqual(model.unscripted, []);
});

test("a request beyond the script is answered 500 and reported", async (t) => {
  const model = await startScriptedModel({ script: [] });
  t.after(() => model.close());
  const response = await post(model.baseUrl, { messages: [] });
  assert.equal(response.status, 500);
  assert.equal(model.unscripted.length, 1);
});

test("delays hold the stream open for at least the scripted time", async (t) => {
  const model = await startScriptedModel({
    script: [{ chunks: [{ text: "a" }, { delayMs: 150 }, { text: "b" }] }],
  });
  t.after(() => model.close());
  const started = performance.now();
  await readSse(await post(model.baseUrl, { messages: [] }));
  assert.ok(performance.now() - started >= 140);
});
