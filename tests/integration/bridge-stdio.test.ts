// Stdio mode of the built bridge.mjs over real Pi, driven exactly like `pi --mode rpc`.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { writeScriptedAgentDir } from "../../agent-runtime/dev/agent-dir.ts";
import { startScriptedModel } from "../../agent-runtime/dev/scripted-model.ts";
import { alive, StdioDriver, spawnBridge } from "../support/bridge.ts";
import { bridgeScript } from "../support/bridge-script.ts";
import { privateTempDir, tempDir } from "../support/workspace.ts";

test("stdio mode with the real approval gate beside bridge.mjs speaks Pi's RPC: same lines, no seq; EOF shuts down", async (t) => {
  const model = await startScriptedModel({ script: bridgeScript });
  t.after(() => model.close());
  const cwd = await tempDir(t, "bridge-stdio-ws-");
  const state = await privateTempDir(t, "bridge-stdio-state-");
  const agentDir = await writeScriptedAgentDir(model.baseUrl, await privateTempDir(t, "bridge-stdio-agent-"));
  const bridge = spawnBridge(t, {
    args: [
      "--mode",
      "rpc",
      "--agent-user",
      "no-such-user-for-bridge-tests",
      "--cwd",
      cwd,
      "--provider",
      "scripted",
      "--model",
      "scripted-model",
      "--no-session",
    ],
    env: { PI_CODING_AGENT_DIR: agentDir, AGENT_POLICY_PATH: path.join(state, "policy"), HOME: state },
  });
  const pi = new StdioDriver(bridge);

  const stateResponse = await pi.request({ id: "s1", type: "get_state" }, 30_000);
  assert.equal(stateResponse.success, true);
  assert.equal((stateResponse.data as { model: { id: string } }).model.id, "scripted-model");

  // A command without an id gets a response without one, as from Pi.
  let from = pi.lines.length;
  pi.send({ type: "get_state" });
  const anonymous = await pi.waitFor((l) => l.type === "response" && l.command === "get_state", 10_000, from);
  assert.equal("id" in anonymous, false);

  // A Pi-style dialog answer (no commandId) is checked and forwarded; nothing extra comes back.
  from = pi.lines.length;
  const prompt = await pi.request({ id: "p1", type: "prompt", message: "RUN echo via-stdio > out.txt" });
  assert.equal(prompt.success, true);
  const dialog = await pi.waitFor(
    (l) => l.type === "extension_ui_request" && l.method === "select",
    20_000,
    from,
  );
  pi.send({ type: "extension_ui_response", id: dialog.id, value: "Allow once" });
  const end = await pi.waitFor((l) => l.type === "tool_execution_end", 20_000, from);
  assert.equal(end.isError, false);
  await pi.waitFor((l) => l.type === "agent_settled", 20_000, from);
  assert.equal(readFileSync(path.join(cwd, "out.txt"), "utf8"), "via-stdio\n");
  assert.equal(
    pi.lines.slice(from).filter((l) => l.type === "response" && l.command === "extension_ui_response").length,
    0,
  );

  // Bad input: an error line, and the bridge carries on.
  from = pi.lines.length;
  pi.send("this is not json\n");
  assert.equal((await pi.waitFor((l) => l.type === "error", 5_000, from)).code, "invalid_json");
  const status = await pi.request({ id: "st", type: "bridge_status" });
  const data = status.data as {
    mode: string;
    isolation: { mode: string; reason: string };
    pi: { pid: number };
  };
  assert.equal(data.mode, "stdio");
  assert.equal(data.isolation.mode, "degraded");
  assert.match(data.isolation.reason, /no-such-user-for-bridge-tests|not root/);

  // Pi's own lines pass through byte for byte: no seq anywhere in stdio mode.
  assert.ok(pi.rawLines.every((l) => !l.includes('"seq":')));
  assert.ok(pi.rawLines.some((l) => l.startsWith('{"type":"message_update"')));

  bridge.child.stdin.end();
  assert.deepEqual(await bridge.exited, { code: 0, signal: null });
  assert.equal(alive(data.pi.pid), false);
  assert.ok(pi.lines.some((l) => l.type === "agent_exited"));
});
