// Real Pi 0.84.2 through the harness: these fail if Pi is not actually running tools and talking to the model.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { callTool, lastToolResult, say } from "../../agent-runtime/dev/scripted-model.ts";
import { startPiSession } from "../support/pi.ts";

const fixture = (name: string) => path.join(import.meta.dirname, "..", "support", "fixtures", name);

test("a prompt makes the model call bash, the real output comes back, and the agent settles", async (t) => {
  const marker = `marker-${process.pid}-${Date.now()}`;
  const { pi, model } = await startPiSession(t, {
    script: [callTool("bash", { command: `echo ${marker} | tr a-z A-Z` }), say("All done.")],
  });
  const response = await pi.request({ type: "prompt", message: "shout the marker" });
  assert.equal(response.success, true);
  const end = await pi.waitFor((l) => l.type === "tool_execution_end");
  assert.equal(end.isError, false);
  const text = JSON.stringify(end.result);
  assert.ok(text.includes(marker.toUpperCase()), `tool output should hold the upper-cased marker: ${text}`);
  await pi.waitFor((l) => l.type === "agent_settled");
  const finalMessage = pi.lines.findLast((l) => l.type === "message_end");
  assert.match(JSON.stringify(finalMessage), /All done\./);
  // The model saw the real tool output on its second request.
  assert.equal(model.requests.length, 2);
  assert.ok(lastToolResult(model.requests[1]!.body)?.includes(marker.toUpperCase()));
  assert.deepEqual(model.unscripted, []);
});

test("an extension's ctx.ui.confirm becomes an extension_ui_request the client answers", async (t) => {
  const { pi, cwd } = await startPiSession(
    t,
    { script: [callTool("bash", { command: "echo approved > approved.txt" }), say("Wrote it.")] },
    { extensions: [fixture("confirm-extension.mjs")] },
  );
  await pi.request({ type: "prompt", message: "write the file" });
  const dialog = await pi.waitFor((l) => l.type === "extension_ui_request" && l.method === "confirm");
  assert.equal(dialog.title, "Allow bash?");
  assert.equal(dialog.message, "echo approved > approved.txt");
  pi.send({ type: "extension_ui_response", id: dialog.id, confirmed: true });
  const end = await pi.waitFor((l) => l.type === "tool_execution_end");
  assert.equal(end.isError, false);
  await pi.waitFor((l) => l.type === "agent_settled");
  assert.equal(await readFile(path.join(cwd, "approved.txt"), "utf8"), "approved\n");
});

test("a declined confirm blocks the tool and nothing runs", async (t) => {
  const { pi, cwd, model } = await startPiSession(
    t,
    { script: [callTool("bash", { command: "echo nope > declined.txt" }), say("Understood.")] },
    { extensions: [fixture("confirm-extension.mjs")] },
  );
  await pi.request({ type: "prompt", message: "write the file" });
  const dialog = await pi.waitFor((l) => l.type === "extension_ui_request" && l.method === "confirm");
  pi.send({ type: "extension_ui_response", id: dialog.id, confirmed: false });
  const end = await pi.waitFor((l) => l.type === "tool_execution_end");
  assert.equal(end.isError, true);
  assert.match(JSON.stringify(end.result), /declined by the test/);
  await pi.waitFor((l) => l.type === "agent_settled");
  await assert.rejects(readFile(path.join(cwd, "declined.txt")), { code: "ENOENT" });
  assert.match(lastToolResult(model.requests[1]!.body) ?? "", /declined by the test/);
});
