// Correlated extension_ui_response on real patched Pi 0.84.2: success only while the dialog is pending;
// answered / timed_out / aborted / unknown otherwise; invalid payloads leave the dialog pending; the upstream
// form (no commandId) stays silent. The extension reports what it really received, so replies are checked
// against the truth.
import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import type { PiLine, PiRpcProcess } from "../../agent-runtime/dev/pi-rpc.ts";
import { callTool, say } from "../../agent-runtime/dev/scripted-model.ts";
import { startPiSession } from "../support/pi.ts";

const fixture = (name: string) => path.join(import.meta.dirname, "..", "support", "fixtures", name);

function waitForDialog(pi: PiRpcProcess, title: string): Promise<PiLine> {
  return pi.waitFor((l) => l.type === "extension_ui_request" && l.title === title);
}

/** Sends a correlated answer and returns Pi's reply to it (id = commandId). */
async function answer(pi: PiRpcProcess, payload: Record<string, unknown>): Promise<PiLine> {
  const from = pi.lines.length;
  pi.send({ type: "extension_ui_response", ...payload });
  return pi.waitFor((l) => l.type === "response" && l.id === payload.commandId, 30_000, from);
}

const notPending = (commandId: string, requestId: unknown, reason: string) => ({
  id: commandId,
  type: "response",
  command: "extension_ui_response",
  success: false,
  error: `ui_request_not_pending: extension UI request is not pending (${reason})`,
  code: "ui_request_not_pending",
  data: { requestId, reason },
});

const invalidPayload = (commandId: string, requestId: unknown, method: string) => ({
  id: commandId,
  type: "response",
  command: "extension_ui_response",
  success: false,
  error: `invalid_ui_response: payload is not a valid answer for a ${method} dialog; request is still pending`,
  code: "invalid_ui_response",
  data: { requestId, method, reason: "pending" },
});

const resolved = (commandId: string, requestId: unknown, method: string) => ({
  id: commandId,
  type: "response",
  command: "extension_ui_response",
  success: true,
  data: { requestId, method, resolved: true },
});

test("correlated extension_ui_response: truthful verdicts for every dialog outcome", async (t) => {
  const { pi, model } = await startPiSession(
    t,
    { script: [callTool("bash", { command: "echo dialogs-ran" }), say("done")] },
    { extensions: [fixture("patch-dialogs-extension.mjs")] },
  );

  // Nothing pending yet: an unknown id.
  assert.deepEqual(
    await answer(pi, { id: "no-such-request", commandId: "u-unknown", confirmed: true }),
    notPending("u-unknown", "no-such-request", "unknown"),
  );

  await pi.request({ type: "prompt", message: "run the dialogs" });
  const confirm = await waitForDialog(pi, "Allow bash?");

  // Invalid payloads for a confirm: refused, and the dialog stays pending.
  assert.deepEqual(
    await answer(pi, { id: confirm.id, commandId: "u-value", value: "yes" }),
    invalidPayload("u-value", confirm.id, "confirm"),
  );
  assert.deepEqual(
    await answer(pi, { id: confirm.id, commandId: "u-cancel", cancelled: "yes" }),
    invalidPayload("u-cancel", confirm.id, "confirm"),
  );
  // A bad commandId cannot be echoed as an id: invalid_request without one; the dialog is untouched.
  for (const commandId of [42, ""]) {
    const from = pi.lines.length;
    pi.send({ type: "extension_ui_response", id: confirm.id, commandId, confirmed: true });
    const reply = await pi.waitFor(
      (l) => l.type === "response" && l.command === "extension_ui_response" && !("id" in l),
      30_000,
      from,
    );
    assert.deepEqual(reply, {
      type: "response",
      command: "extension_ui_response",
      success: false,
      error: "invalid_request: commandId must be a non-empty string",
      code: "invalid_request",
      data: { requestId: confirm.id },
    });
  }
  assert.deepEqual(await answer(pi, { id: 7, commandId: "u-badid", confirmed: true }), {
    id: "u-badid",
    type: "response",
    command: "extension_ui_response",
    success: false,
    error: "invalid_request: id must be the string id of an extension_ui_request",
    code: "invalid_request",
  });

  // Answered twice: true, then "answered". Both lines are sent in one write.
  const from = pi.lines.length;
  pi.send({ type: "extension_ui_response", id: confirm.id, commandId: "u1", confirmed: true });
  pi.send({ type: "extension_ui_response", id: confirm.id, commandId: "u2", confirmed: true });
  const u1 = await pi.waitFor((l) => l.id === "u1", 30_000, from);
  const u2 = await pi.waitFor((l) => l.id === "u2", 30_000, from);
  assert.deepEqual(u1, resolved("u1", confirm.id, "confirm"));
  assert.deepEqual(u2, notPending("u2", confirm.id, "answered"));

  // The verdict precedes anything the resumed extension emits (its next dialog).
  const select = await waitForDialog(pi, "Pick one");
  assert.ok(pi.lines.indexOf(u1) < pi.lines.indexOf(select));

  // A select value that was not offered (or not a string) is refused; the dialog stays pending.
  assert.deepEqual(
    await answer(pi, { id: select.id, commandId: "u-z", value: "z" }),
    invalidPayload("u-z", select.id, "select"),
  );
  assert.deepEqual(
    await answer(pi, { id: select.id, commandId: "u-num", value: 1 }),
    invalidPayload("u-num", select.id, "select"),
  );
  // The upstream form (no commandId) resolves it silently; a later correlated answer reads "answered".
  pi.send({ type: "extension_ui_response", id: select.id, value: "b" });
  const timed = await waitForDialog(pi, "Pick fast");
  assert.deepEqual(
    await answer(pi, { id: select.id, commandId: "u-late", value: "a" }),
    notPending("u-late", select.id, "answered"),
  );

  // The 150 ms select expires on its own (the input dialog appears only after it resolved).
  const input = await waitForDialog(pi, "Type");
  assert.deepEqual(
    await answer(pi, { id: timed.id, commandId: "u-timed", value: "x" }),
    notPending("u-timed", timed.id, "timed_out"),
  );
  // The input's AbortSignal fires after 150 ms (the editor appears only after it resolved).
  const editor = await waitForDialog(pi, "Edit");
  assert.deepEqual(
    await answer(pi, { id: input.id, commandId: "u-aborted", value: "typed" }),
    notPending("u-aborted", input.id, "aborted"),
  );

  // Editor: non-string refused, then answered once.
  assert.deepEqual(
    await answer(pi, { id: editor.id, commandId: "u-ed-bad", value: 123 }),
    invalidPayload("u-ed-bad", editor.id, "editor"),
  );
  assert.deepEqual(
    await answer(pi, { id: editor.id, commandId: "u-ed", value: "edited text" }),
    resolved("u-ed", editor.id, "editor"),
  );
  assert.deepEqual(
    await answer(pi, { id: editor.id, commandId: "u-ed-again", value: "again" }),
    notPending("u-ed-again", editor.id, "answered"),
  );

  // The extension's view matches every verdict above.
  const report = await pi.waitFor(
    (l) => l.type === "extension_ui_request" && String(l.message).startsWith("dialog results: "),
  );
  assert.deepEqual(JSON.parse(String(report.message).slice("dialog results: ".length)), {
    confirmed: true,
    picked: "b",
    edited: "edited text",
  });
  const end = await pi.waitFor((l) => l.type === "tool_execution_end");
  assert.equal(end.isError, false);
  await pi.waitFor((l) => l.type === "agent_settled");

  // Exactly one reply per correlated line (two without an id for the bad commandIds); the uncorrelated
  // answer produced none.
  const replies = pi.lines.filter((l) => l.type === "response" && l.command === "extension_ui_response");
  assert.deepEqual(replies.map((l) => l.id ?? null).sort(), [
    null,
    null,
    "u-aborted",
    "u-badid",
    "u-cancel",
    "u-ed",
    "u-ed-again",
    "u-ed-bad",
    "u-late",
    "u-num",
    "u-timed",
    "u-unknown",
    "u-value",
    "u-z",
    "u1",
    "u2",
  ]);
  assert.deepEqual(model.unscripted, []);
});
