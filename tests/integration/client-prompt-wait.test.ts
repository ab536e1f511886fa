// promptAndWait and the typed Pi events, against the built bridge and real patched Pi (scripted model): a run
// resolves once the agent settles, with its events typed as Pi emits them; a refused prompt and a failed model
// reject with their cause.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { type TestContext, test } from "node:test";
import { callTool, say } from "../../agent-runtime/dev/scripted-model.ts";
import { BridgeClient, isPiEvent, type PiEventFrame, PromptError } from "../../bridge/client.ts";
import { BRIDGE_FRAME_TYPES } from "../../bridge/protocol.ts";
import { startNetworkBridge, TEST_TOKEN } from "../support/bridge.ts";

const gate = path.resolve(
  import.meta.dirname,
  "..",
  "..",
  "build",
  "opt",
  "chat-ui-agent",
  "approval-gate.mjs",
);

async function connect(t: TestContext, url: string) {
  const client = new BridgeClient({ url, token: TEST_TOKEN, backoff: { initialMs: 20, maxMs: 200 } });
  const untyped: string[] = [];
  // Every numbered frame is either the bridge's own or one of Pi's typed events.
  client.on("frame", (frame) => {
    if (!BRIDGE_FRAME_TYPES.includes(frame.type) && !isPiEvent(frame)) untyped.push(frame.type);
  });
  await client.connect();
  t.after(() => client.close());
  return { client, untyped };
}

/** The streamed text of a run, read through the typed events (no casts). */
function streamed(events: readonly PiEventFrame[]): string {
  let text = "";
  for (const event of events) {
    if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta")
      text += event.assistantMessageEvent.delta;
  }
  return text;
}

test("promptAndWait resolves when the agent settles, with the run's typed events: text, a tool call, its result", async (t) => {
  const bridge = await startNetworkBridge(t, {
    gate,
    model: { script: [callTool("read", { path: "notes.txt" }), say("the notes say hello")] },
  });
  await writeFile(path.join(bridge.cwd, "notes.txt"), "hello from the notes\n");
  const { client, untyped } = await connect(t, bridge.url);
  const piEvents: PiEventFrame[] = [];
  client.on("piEvent", (event) => piEvents.push(event));

  const outcome = await client.promptAndWait("what do the notes say?", { timeoutMs: 60_000 });
  assert.equal(outcome.stopReason, "stop");
  assert.equal(streamed(outcome.events), "the notes say hello");
  const types = outcome.events.map((e) => e.type);
  assert.equal(types[0], "agent_start");
  assert.equal(types.at(-1), "agent_settled");
  assert.ok(types.indexOf("agent_end") < types.indexOf("agent_settled"));
  const toolEnd = outcome.events.find((e) => e.type === "tool_execution_end");
  assert.ok(toolEnd?.type === "tool_execution_end");
  assert.equal(toolEnd.toolName, "read");
  assert.equal(toolEnd.isError, false, JSON.stringify(toolEnd.result));
  assert.match(JSON.stringify(toolEnd.result), /hello from the notes/);
  // The run's messages: the prompt, the tool call, its result, the answer.
  const roles = outcome.messages.map((m) => m.role);
  assert.deepEqual(roles, ["user", "assistant", "toolResult", "assistant"]);
  const answer = outcome.messages.at(-1);
  assert.ok(answer?.role === "assistant");
  assert.deepEqual(answer.content, [{ type: "text", text: "the notes say hello" }]);
  // The "piEvent" stream carried the same events, each once, in order.
  const runSeqs = outcome.events.map((e) => e.seq);
  assert.deepEqual(
    piEvents.filter((e) => runSeqs.includes(e.seq)).map((e) => e.seq),
    runSeqs,
  );
  assert.deepEqual(untyped, [], "every Pi event Pi really sent is a typed one");
  assert.deepEqual(bridge.model?.unscripted, []);
});

test("a refused prompt and a failed model reject with their cause; the first run still settles", async (t) => {
  const bridge = await startNetworkBridge(t, {
    gate,
    model: {
      script: [
        { chunks: Array.from({ length: 10 }, (_, i) => ({ text: `w${i} ` })), chunkDelayMs: 50 },
        { chunks: [], httpStatus: 400 },
      ],
    },
  });
  const { client } = await connect(t, bridge.url);
  const first = client.promptAndWait("a slow answer", { timeoutMs: 60_000 });
  // Pi refuses a second prompt while streaming unless told to queue it: the response's error is the cause.
  await new Promise<void>((resolve) =>
    client.on("piEvent", (event) => {
      if (event.type === "message_update") resolve();
    }),
  );
  const refused = await client.promptAndWait("while busy").then(
    () => assert.fail("a prompt while streaming must be refused"),
    (error: unknown) => error,
  );
  assert.ok(refused instanceof PromptError, String(refused));
  assert.match(refused.message, /^the prompt was refused: /);
  assert.equal((refused.cause as { type?: string; success?: boolean }).success, false);
  const outcome = await first;
  assert.equal(streamed(outcome.events), Array.from({ length: 10 }, (_, i) => `w${i} `).join(""));

  const failed = await client.promptAndWait("now fail", { timeoutMs: 60_000 }).then(
    () => assert.fail("a failed model must reject"),
    (error: unknown) => error,
  );
  assert.ok(failed instanceof PromptError, String(failed));
  assert.match(failed.message, /^the model failed: .*400/);
  assert.equal((failed.cause as { stopReason?: string }).stopReason, "error");
  assert.ok(failed.events.some((e) => e.type === "agent_end"));
});

test("promptAndWait rejects with the client's failure when the client is closed mid-run", async (t) => {
  const bridge = await startNetworkBridge(t, {
    gate,
    model: { script: [{ chunks: Array.from({ length: 40 }, () => ({ text: "x" })), chunkDelayMs: 50 }] },
  });
  const { client } = await connect(t, bridge.url);
  const run = client.promptAndWait("a long answer");
  const closed = run.then(
    () => assert.fail("a closed client cannot see the run settle"),
    (error: unknown) => error,
  );
  await new Promise<void>((resolve) =>
    client.on("piEvent", (event) => {
      if (event.type === "agent_start") resolve();
    }),
  );
  client.close();
  const error = await closed;
  assert.ok(error instanceof PromptError, String(error));
  assert.match(error.message, /^the client closed before the agent settled$/);
});

test("promptAndWait rejects with agent_restarted as its cause when Pi dies mid-run", async (t) => {
  const bridge = await startNetworkBridge(t, {
    gate,
    model: { script: [{ chunks: Array.from({ length: 200 }, () => ({ text: "x" })), chunkDelayMs: 50 }] },
  });
  const { client } = await connect(t, bridge.url);
  const run = client.promptAndWait("a long answer");
  const outcome = run.then(
    () => assert.fail("a run whose Pi died cannot settle"),
    (error: unknown) => error,
  );
  await new Promise<void>((resolve) =>
    client.on("piEvent", (event) => {
      if (event.type === "message_update") resolve();
    }),
  );
  const status = await client.status();
  const pid = (status.data as { pi: { pid: number } }).pi.pid;
  process.kill(pid, "SIGKILL");
  const error = await outcome;
  assert.ok(error instanceof PromptError, String(error));
  assert.match(error.message, /^the agent restarted mid-run/);
  assert.equal((error.cause as { type?: string }).type, "agent_restarted");
  assert.ok(
    error.events.some((e) => e.type === "agent_start"),
    "the events seen until then are kept",
  );
});
