// A real uid/gid drop: as root, `--agent-user nobody` (a user every Debian-like system has; none is created)
// runs Pi as nobody, so Pi cannot read the bridge's environment (where the token was) and never gets the token.
import assert from "node:assert/strict";
import { chmod } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { writeScriptedAgentDir } from "../../agent-runtime/dev/agent-dir.ts";
import { startScriptedModel } from "../../agent-runtime/dev/scripted-model.ts";
import { spawnBridge, TEST_TOKEN, TestClient } from "../support/bridge.ts";
import { bridgeScript } from "../support/bridge-script.ts";
import { tempDir } from "../support/workspace.ts";

const isRoot = process.geteuid?.() === 0;

test("as root with --agent-user nobody, Pi runs unprivileged and cannot see the bridge token", async (t) => {
  if (!isRoot) {
    // Not skipped silently: outside root the bridge must report degraded isolation instead (bridge-stdio test).
    assert.notEqual(process.geteuid?.(), 0);
    return;
  }
  const model = await startScriptedModel({ script: bridgeScript });
  t.after(() => model.close());
  const cwd = await tempDir(t, "bridge-iso-ws-");
  const agentDir = await writeScriptedAgentDir(model.baseUrl, await tempDir(t, "bridge-iso-agent-"));
  const state = await tempDir(t, "bridge-iso-state-");
  await chmod(cwd, 0o777);
  await chmod(agentDir, 0o777);
  await chmod(path.join(agentDir, "models.json"), 0o644);
  await chmod(state, 0o755);
  const bridge = spawnBridge(t, {
    args: [
      "--listen",
      "127.0.0.1:0",
      "--cwd",
      cwd,
      "--agent-user",
      "nobody",
      "--provider",
      "scripted",
      "--model",
      "scripted-model",
      "--no-session",
    ],
    env: {
      CHAT_UI_AGENT_BRIDGE_TOKEN: TEST_TOKEN,
      PI_CODING_AGENT_DIR: agentDir,
      AGENT_POLICY_PATH: path.join(state, "policy"),
    },
  });
  const port = Number((await bridge.waitForLog((l) => l.msg === "listening")).port);
  const { client } = await TestClient.connect(`ws://127.0.0.1:${port}/v1/rpc`);
  const status = await client.request({ type: "bridge_status", id: "st" });
  const data = status.data as {
    isolation: { mode: string; uid: number };
    pi: { pid: number; state: string };
  };
  assert.equal(data.isolation.mode, "isolated");
  assert.equal(data.isolation.uid, 65534);
  const run = async (id: string, command: string) => {
    const response = await client.request({ type: "bash", id, command }, 30_000);
    assert.equal(response.success, true, JSON.stringify(response));
    return response.data as { output: string; exitCode: number };
  };
  assert.equal((await run("uid", "id -u")).output.trim(), "65534");
  const environ = await run("environ", `cat /proc/${bridge.child.pid}/environ`);
  assert.notEqual(environ.exitCode, 0);
  assert.ok(!environ.output.includes(TEST_TOKEN));
  const own = await run("own-env", "env");
  assert.ok(!own.output.includes(TEST_TOKEN), "the token never reaches Pi's environment");
  assert.match(own.output, /HOME=\/nonexistent/);
  await client.close();
  bridge.child.kill("SIGTERM");
  assert.deepEqual(await bridge.exited, { code: 0, signal: null });
});
