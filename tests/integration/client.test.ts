// The typed client against the real bridge bundle and real patched Pi (scripted model).
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { type TestContext, test } from "node:test";
import { callTool, type ScriptTurn, say } from "../../agent-runtime/dev/scripted-model.ts";
import { BridgeClient, type BridgeFrame, type ConnectionState } from "../../bridge/client.ts";
import type { PendingDialog } from "../../bridge/protocol.ts";
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

function slowText(pieces: number, delayMs: number): { turn: ScriptTurn; text: string } {
  const chunks = Array.from({ length: pieces }, (_, i) => ({ text: `w${i} ` }));
  return { turn: { chunks, chunkDelayMs: delayMs }, text: chunks.map((c) => c.text).join("") };
}

async function connect(
  t: TestContext,
  url: string,
  extra: Partial<ConstructorParameters<typeof BridgeClient>[0]> = {},
) {
  const client = new BridgeClient({
    url,
    token: TEST_TOKEN,
    backoff: { initialMs: 20, maxMs: 200 },
    ...extra,
  });
  const frames: BridgeFrame[] = [];
  const states: ConnectionState[] = [];
  client.on("frame", (frame) => frames.push(frame));
  client.on("state", (state) => states.push(state));
  await client.connect();
  t.after(() => client.close());
  return { client, frames, states };
}

function nextFrame(client: BridgeClient, predicate: (frame: BridgeFrame) => boolean): Promise<BridgeFrame> {
  return new Promise((resolve) => {
    const listener = (frame: BridgeFrame) => {
      if (!predicate(frame)) return;
      client.off("frame", listener);
      resolve(frame);
    };
    client.on("frame", listener);
  });
}

const settled = (client: BridgeClient) => nextFrame(client, (f) => f.type === "agent_settled");

const streamedText = (frames: BridgeFrame[]) =>
  frames
    .map((f) => f.assistantMessageEvent as { type?: string; delta?: string } | undefined)
    .filter((e) => e?.type === "text_delta")
    .map((e) => e?.delta)
    .join("");

function assertContiguous(frames: BridgeFrame[]): void {
  frames.forEach((frame, i) => {
    if (i > 0)
      assert.equal(frame.seq, (frames[i - 1] as BridgeFrame).seq + 1, `gap or duplicate at index ${i}`);
  });
}

test("resumes after several drops mid-stream: every frame once, in order, all text intact", async (t) => {
  const { turn, text } = slowText(24, 40);
  const bridge = await startNetworkBridge(t, { model: { script: [turn] }, gate });
  const { client, frames, states } = await connect(t, bridge.url);
  let drops = 0;
  const resumes: { fromSeq: number; headSeq: number }[] = [];
  client.on("resumed", (info) => resumes.push(info));
  client.on("frame", (frame) => {
    if (frame.type === "message_update" && drops < 3 && streamedText([frame]) !== "" && frame.seq % 5 === 0) {
      drops++;
      client.dropConnection(150);
    }
  });
  const idle = settled(client);
  const response = await client.prompt("stream slowly");
  assert.equal(response.success, true);
  await idle;
  assert.ok(drops >= 2, `expected several drops, got ${drops}`);
  assert.equal(resumes.length, drops);
  assert.ok(
    resumes.some((r) => r.headSeq > r.fromSeq),
    "frames produced while away were replayed",
  );
  assertContiguous(frames);
  assert.equal(frames[0]?.seq, 1);
  assert.equal(streamedText(frames), text);
  assert.ok(states.includes("resuming") && states.at(-1) === "live", JSON.stringify(states));
});

test("a command retried across a reconnect takes effect once", async (t) => {
  const bridge = await startNetworkBridge(t, { model: { script: [say("only once")] }, gate });
  const { client } = await connect(t, bridge.url);
  const idle = settled(client);
  const pending = client.command({ type: "prompt", id: "prompt-once", message: "hello" });
  client.dropConnection(100); // the frame may or may not have reached the bridge: the retry covers both
  const response = await pending;
  assert.equal(response.success, true);
  await idle;
  // Sending the same id again (as a client that never saw the answer would) replays the recorded response.
  const again = await client.command({ type: "prompt", id: "prompt-once", message: "hello" });
  assert.equal(again.success, true);
  const conflict = await client.command({ type: "prompt", id: "prompt-once", message: "different" });
  assert.equal(conflict.success, false);
  // Same shape as the patched Pi's failures: `code`, and `error` = "<code>: <message>".
  assert.equal(conflict.code, "idempotency_conflict");
  assert.match(String(conflict.error), /^idempotency_conflict: /);
  assert.equal(bridge.model?.requests.length, 1, "the model was asked once");
  const messages = await client.getMessages();
  const users = (messages.data as { messages: { role: string }[] }).messages.filter((m) => m.role === "user");
  assert.equal(users.length, 1);
});

test("a cursor older than the replay ring is surfaced as a reset with a snapshot", async (t) => {
  const { turn } = slowText(30, 25);
  const bridge = await startNetworkBridge(t, {
    model: { script: [turn] },
    gate,
    args: ["--replay-frames", "5"],
  });
  const { client } = await connect(t, bridge.url);
  const resets: { reason: string; snapshot: { state: unknown } }[] = [];
  client.on("reset", (info) => resets.push(info));
  let dropped = false;
  client.on("frame", (frame) => {
    if (!dropped && frame.type === "message_update") {
      dropped = true;
      client.dropConnection(1_200); // the stream finishes meanwhile: far more than 5 frames
    }
  });
  const idle = settled(client);
  await client.prompt("stream");
  await new Promise<void>((resolve) => client.once("welcome", () => resolve())); // the post-drop welcome
  assert.deepEqual(
    resets.map((r) => r.reason),
    ["cursor_too_old"],
  );
  assert.ok(resets[0]?.snapshot.state, "the snapshot carries Pi's state");
  const status = await client.status();
  assert.equal(client.lastSeq >= (status.data as { headSeq: number }).headSeq - 1, true);
  void idle;
});

test("dialogs: answered after a reconnect, verdicts relayed, a second answer is not delivered", async (t) => {
  const script = [
    callTool("bash", { command: "echo first > first.txt" }),
    say("first done"),
    callTool("bash", { command: "echo second > second.txt" }),
    say("second done"),
  ];
  const bridge = await startNetworkBridge(t, { model: { script }, gate });
  await writeFile(bridge.policyPath, "ask\n");
  const { client } = await connect(t, bridge.url);
  const dialogs: PendingDialog[] = [];
  client.on("dialog", (dialog) => dialogs.push(dialog));

  let idle = settled(client);
  await client.prompt("first");
  await until(() => dialogs.length === 1);
  const first = dialogs[0] as PendingDialog;
  // A grantable call in `ask`: Allow once / Allow for this session / Deny, the whole prompt in the title.
  assert.equal(first.method, "select");
  assert.match(String(first.title), /echo first > first\.txt/);
  // Drop while the dialog waits; after resuming it is still pending and answerable.
  client.dropConnection(100);
  await new Promise<void>((resolve) => client.once("resumed", () => resolve()));
  assert.ok(client.dialogs.has(first.id));
  const verdict = await client.answer(first.id, { kind: "select", value: "Allow once" });
  assert.equal(verdict.delivered, true);
  await idle;
  assert.equal(await readFile(path.join(bridge.cwd, "first.txt"), "utf8"), "first\n");

  // The same dialog answered again (as a stale second tab would): not delivered, nothing else affected.
  client.dialogs.set(first.id, first);
  const late = await client.answer(first.id, { kind: "select", value: "Allow once" });
  assert.equal(late.delivered, false);

  idle = settled(client);
  await client.prompt("second");
  await until(() => dialogs.length === 2);
  const second = dialogs[1] as PendingDialog;
  await assert.rejects(client.answer(second.id, { kind: "confirm", confirmed: true }), /does not fit/);
  await assert.rejects(
    client.answer(second.id, { kind: "select", value: "yes" }),
    /not one of the offered options/,
  );
  const declined = await client.answer(second.id, { kind: "select", value: "Deny" });
  assert.equal(declined.delivered, true);
  await idle;
  await assert.rejects(readFile(path.join(bridge.cwd, "second.txt")), { code: "ENOENT" });
});

test("policy changes reach the client: set_policy, and an operator's change noticed at the next tool call", async (t) => {
  const script = [callTool("read", { path: "a.txt" }), say("read it")];
  const bridge = await startNetworkBridge(t, { model: { script }, gate });
  await writeFile(bridge.policyPath, "auto\n");
  await writeFile(path.join(bridge.cwd, "a.txt"), "a\n");
  const { client, frames } = await connect(t, bridge.url);
  const set = await client.setPolicy("ask", "auto");
  assert.equal(set.success, true);
  const byClient = frames.find((f) => f.type === "policy_changed");
  assert.deepEqual(
    {
      previous: byClient?.previous,
      policy: (byClient?.current as { policy?: string } | undefined)?.policy,
      cause: byClient?.cause,
    },
    { previous: "auto", policy: "ask", cause: "set_policy" },
  );
  // The operator switches the file directly (as `chat-ui-agent-policy set` does); the bridge was not told.
  await writeFile(bridge.policyPath, "read-only\n");
  const idle = settled(client);
  await client.prompt("read a.txt");
  await idle;
  const observed = frames.filter((f) => f.type === "policy_changed").at(-1);
  assert.equal(observed?.cause, "observed");
  assert.equal(observed?.previous, "ask");
  assert.deepEqual(observed?.current, { policy: "read-only", source: "file", path: bridge.policyPath });
  const toolStart = frames.find((f) => f.type === "tool_execution_start");
  assert.ok(
    observed && toolStart && observed.seq < toolStart.seq,
    "announced before the tool call it governs",
  );
});

async function until(condition: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
