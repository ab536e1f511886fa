// replace_queue on real patched Pi 0.84.2: one session walks through success while streaming, a stale snapshot,
// invalid references, the dequeue window, image retention, reordering across queues and foreign entries.
import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import type { PiLine, PiResponse, PiRpcProcess } from "../../agent-runtime/dev/pi-rpc.ts";
import {
  type ChatCompletionRequest,
  callTool,
  lastUserText,
  messageText,
  type ScriptTurn,
  say,
} from "../../agent-runtime/dev/scripted-model.ts";
import { startPiSession } from "../support/pi.ts";

const fixture = (name: string) => path.join(import.meta.dirname, "..", "support", "fixtures", name);

// A 1x1 PNG.
const PNG = {
  type: "image",
  data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  mimeType: "image/png",
};

interface Snapshot {
  steering: string[];
  followUp: string[];
}

function script(body: ChatCompletionRequest): ScriptTurn {
  const last = body.messages.at(-1);
  const text = last?.role === "user" ? lastUserText(body) : "";
  if (text === "SLOW start") {
    // Streams for a while, then stops at a tool call the extension holds ("hold tool").
    return {
      chunks: [
        ...Array.from({ length: 6 }, (_, i) => ({ text: `w${i} ` })),
        { toolCall: toolArgs("echo hold-1") },
      ],
      chunkDelayMs: 60,
    };
  }
  if (text === "s1 SLOW with image") return callTool("bash", { command: "echo hold-2" });
  if (text === "phase two") return callTool("bash", { command: "echo hold-foreign" });
  return say(`ok: ${text || "(no user text)"}`);
}

const toolArgs = (command: string) => ({ name: "bash", arguments: { command } });

/** Waits for the next confirm dialog with this title (from line index `from`). */
function waitForHold(pi: PiRpcProcess, title: string, from: number): Promise<PiLine> {
  return pi.waitFor(
    (l) => l.type === "extension_ui_request" && l.method === "confirm" && l.title === title,
    30_000,
    from,
  );
}

/** Answers a hold dialog with a correlated response (its reply carries id = commandId). */
async function release(pi: PiRpcProcess, dialog: PiLine, commandId: string): Promise<void> {
  const from = pi.lines.length;
  pi.send({ type: "extension_ui_response", id: dialog.id, commandId, confirmed: true });
  const reply = await pi.waitFor((l) => l.type === "response" && l.id === commandId, 30_000, from);
  assert.equal(reply.success, true, JSON.stringify(reply));
}

function lastQueueUpdate(pi: PiRpcProcess): Snapshot {
  const update = pi.lines.findLast((l) => l.type === "queue_update");
  assert.ok(update, "a queue_update was emitted");
  return { steering: update.steering as string[], followUp: update.followUp as string[] };
}

/** Sends replace_queue and returns its response plus the lines Pi wrote just before it. */
async function replaceQueue(
  pi: PiRpcProcess,
  id: string,
  expected: Snapshot,
  replacement: unknown,
): Promise<{ response: PiResponse; before: PiLine | undefined; queueUpdates: PiLine[] }> {
  const from = pi.lines.length;
  const response = await pi.request({ id, type: "replace_queue", expected, replacement });
  const at = pi.lines.indexOf(response);
  return {
    response,
    before: pi.lines[at - 1],
    queueUpdates: pi.lines.slice(from, at + 1).filter((l) => l.type === "queue_update"),
  };
}

const userMessages = (body: ChatCompletionRequest) => body.messages.filter((m) => m.role === "user");
const hasImage = (content: unknown) =>
  Array.isArray(content) && content.some((part) => (part as { type?: string }).type === "image_url");

test("replace_queue: CAS while streaming, conflicts, invalid requests, the in-flight window, images, reordering", async (t) => {
  const { pi, model } = await startPiSession(
    t,
    { script: (request) => script(request.body) },
    { extensions: [fixture("patch-hold-extension.mjs")] },
  );

  // Idle, empty queues: a no-op swap still succeeds and still emits queue_update.
  const noop = await replaceQueue(pi, "r0", { steering: [], followUp: [] }, { steering: [], followUp: [] });
  assert.deepEqual(noop.response, {
    id: "r0",
    type: "response",
    command: "replace_queue",
    success: true,
    data: { steering: [], followUp: [] },
  });
  assert.deepEqual(noop.before, { type: "queue_update", steering: [], followUp: [] });

  const prompt = await pi.request({ type: "prompt", message: "SLOW start" });
  assert.equal(prompt.success, true);
  // Queue while the assistant is streaming text.
  await pi.waitFor(
    (l) => l.type === "message_start" && (l.message as { role?: string })?.role === "assistant",
  );
  for (const [id, type, message, images] of [
    ["st1", "steer", "s1 SLOW with image", [PNG]],
    ["st2", "steer", "s2", undefined],
    ["st3", "steer", "s-dropped", undefined],
    ["fu1", "follow_up", "f1", undefined],
  ] as const) {
    const reply = await pi.request({ id, type, message, ...(images ? { images } : {}) });
    assert.equal(reply.success, true, JSON.stringify(reply));
  }
  const snapshot = lastQueueUpdate(pi);
  assert.deepEqual(snapshot, { steering: ["s1 SLOW with image", "s2", "s-dropped"], followUp: ["f1"] });

  // Success while streaming: keep s1 (and its image), add s3, move s2 across to follow-up, drop s-dropped.
  const r1 = await replaceQueue(pi, "r1", snapshot, {
    steering: [{ from: "steering", index: 0 }, { text: "s3 new" }],
    followUp: [
      { from: "followUp", index: 0 },
      { from: "steering", index: 1 },
    ],
  });
  const installed = { steering: ["s1 SLOW with image", "s3 new"], followUp: ["f1", "s2"] };
  assert.deepEqual(r1.response, {
    id: "r1",
    type: "response",
    command: "replace_queue",
    success: true,
    data: installed,
  });
  // Exactly one queue_update, immediately before the response (same synchronous block).
  assert.deepEqual(r1.queueUpdates, [{ type: "queue_update", ...installed }]);
  assert.equal(r1.before, r1.queueUpdates[0]);
  const state = await pi.request({ type: "get_state" });
  assert.equal((state.data as { isStreaming: boolean }).isStreaming, true);
  assert.equal((state.data as { pendingMessageCount: number }).pendingMessageCount, 4);

  // Stale snapshot: queue_conflict with the live snapshot, nothing emitted.
  const r2 = await replaceQueue(pi, "r2", snapshot, { steering: [], followUp: [] });
  assert.deepEqual(r2.response, {
    id: "r2",
    type: "response",
    command: "replace_queue",
    success: false,
    error: "queue_conflict: live queues differ from the expected snapshot",
    code: "queue_conflict",
    data: { current: installed },
  });
  assert.deepEqual(r2.queueUpdates, []);

  // Invalid requests: refused with invalid_request, queues untouched, nothing emitted.
  const invalid: [string, unknown, unknown][] = [
    ["bad index", installed, { steering: [{ from: "steering", index: 7 }], followUp: [] }],
    ["negative index", installed, { steering: [{ from: "followUp", index: -1 }], followUp: [] }],
    ["fractional index", installed, { steering: [{ from: "followUp", index: 0.5 }], followUp: [] }],
    [
      "duplicate reference",
      installed,
      {
        steering: [{ from: "steering", index: 0 }],
        followUp: [{ from: "steering", index: 0 }],
      },
    ],
    ["unknown queue", installed, { steering: [{ from: "nextTurn", index: 0 }], followUp: [] }],
    ["empty text", installed, { steering: [{ text: "" }], followUp: [] }],
    [
      "reference mixed with text",
      installed,
      { steering: [{ from: "steering", index: 0, text: "x" }], followUp: [] },
    ],
    [
      "bad image",
      installed,
      { steering: [{ text: "x", images: [{ type: "image", data: "" }] }], followUp: [] },
    ],
    ["missing followUp", installed, { steering: [] }],
    ["malformed expected", { steering: "s1" }, { steering: [], followUp: [] }],
  ];
  for (const [label, expected, replacement] of invalid) {
    const result = await replaceQueue(pi, `bad-${label}`, expected as Snapshot, replacement);
    assert.equal(result.response.success, false, label);
    assert.equal(result.response.code, "invalid_request", `${label}: ${JSON.stringify(result.response)}`);
    assert.match(String(result.response.error), /^invalid_request: /, label);
    assert.deepEqual(result.queueUpdates, [], label);
  }
  assert.deepEqual(lastQueueUpdate(pi), installed);

  // Release the tool; the loop drains s1 and blocks in turn_start before s1's message_start:
  // the mirror still lists s1, agent-core no longer holds it.
  const holdTool1 = await waitForHold(pi, "hold tool", 0);
  await release(pi, holdTool1, "rel-tool-1");
  const holdTurn2 = await waitForHold(pi, "hold turn", 0);
  const r3 = await replaceQueue(pi, "r3", installed, { steering: [], followUp: [] });
  assert.equal(r3.response.success, false);
  assert.equal(r3.response.code, "queue_in_flight", JSON.stringify(r3.response));
  assert.deepEqual(r3.response.data, {
    current: installed,
    queue: "steering",
    reason: "in_flight",
    retryable: true,
  });
  assert.deepEqual(r3.queueUpdates, []);
  let mark = pi.lines.length;
  await release(pi, holdTurn2, "rel-turn-2");

  // s1 is delivered (mirror catches up); the model is now blocked on "hold-2" with both layers consistent.
  const delivered = await pi.waitFor(
    (l) => l.type === "queue_update" && JSON.stringify(l.steering) === JSON.stringify(["s3 new"]),
    30_000,
    mark,
  );
  assert.deepEqual(delivered.followUp, ["f1", "s2"]);
  const holdTool2 = await waitForHold(pi, "hold tool", mark);
  const afterDelivery = lastQueueUpdate(pi);
  // Reorder within follow-up and keep steering: success again.
  const r4 = await replaceQueue(pi, "r4", afterDelivery, {
    steering: [{ from: "steering", index: 0 }],
    followUp: [
      { from: "followUp", index: 1 },
      { from: "followUp", index: 0 },
    ],
  });
  assert.equal(r4.response.success, true, JSON.stringify(r4.response));
  assert.deepEqual(r4.response.data, { steering: ["s3 new"], followUp: ["s2", "f1"] });
  assert.equal(r4.queueUpdates.length, 1);

  // Drive the rest of the run: release every remaining "hold turn".
  mark = pi.lines.length;
  await release(pi, holdTool2, "rel-tool-2");
  for (let n = 0; n < 3; n++) {
    const hold = await waitForHold(pi, "hold turn", mark);
    mark = pi.lines.indexOf(hold) + 1;
    await release(pi, hold, `rel-turn-${n + 3}`);
  }
  await pi.waitFor((l) => l.type === "agent_settled", 30_000, mark);
  assert.deepEqual(lastQueueUpdate(pi), { steering: [], followUp: [] });

  // What reached the model: order, the kept image, and never the dropped message.
  const finalBody = model.requests.at(-1)!.body;
  const users = userMessages(finalBody);
  assert.deepEqual(
    users.map((m) => messageText(m)),
    ["SLOW start", "s1 SLOW with image", "s3 new", "s2", "f1"],
  );
  assert.equal(hasImage(users[1]!.content), true, `s1 keeps its image: ${JSON.stringify(users[1])}`);
  assert.equal(
    users.filter((_m, i) => i !== 1).some((m) => hasImage(m.content)),
    false,
  );
  const imagePart = (users[1]!.content as { type: string; image_url?: { url: string } }[]).find(
    (p) => p.type === "image_url",
  );
  assert.equal(imagePart?.image_url?.url, `data:image/png;base64,${PNG.data}`);
  assert.ok(!JSON.stringify(model.requests.map((r) => r.body)).includes("s-dropped"));

  // Foreign entries: an extension's custom steering message is in agent-core but not in queue_update.
  mark = pi.lines.length;
  await pi.request({ type: "prompt", message: "phase two" });
  const holdForeign = await waitForHold(pi, "hold tool", mark);
  const r5 = await replaceQueue(pi, "r5", { steering: [], followUp: [] }, { steering: [], followUp: [] });
  assert.equal(r5.response.code, "queue_in_flight", JSON.stringify(r5.response));
  assert.deepEqual(r5.response.data, {
    current: { steering: [], followUp: [] },
    queue: "steering",
    reason: "foreign_entries",
    retryable: false,
  });
  await release(pi, holdForeign, "rel-foreign");
  const holdLast = await waitForHold(pi, "hold turn", mark);
  await release(pi, holdLast, "rel-turn-last");
  await pi.waitFor((l) => l.type === "agent_settled", 30_000, pi.lines.indexOf(holdLast));
  assert.deepEqual(model.unscripted, []);
});
