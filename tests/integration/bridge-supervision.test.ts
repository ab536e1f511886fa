// Pi supervision in the built bridge.mjs over real patched Pi: Pi killed mid-tool and mid-dialog is
// restarted on the same session with its tool tree ended; a crash loop is reported and retried, never an exit.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { BridgeStatus } from "../../bridge/protocol.ts";
import { alive, type Frame, startNetworkBridge, TestClient, waitUntil } from "../support/bridge.ts";
import { bridgeScript } from "../support/bridge-script.ts";
import { processesWithCmdline } from "../support/processes.ts";

const responseTo = (id: string) => (f: Frame) => f.type === "response" && f.id === id;

async function status(client: TestClient, id: string) {
  return BridgeStatus.parse((await client.request({ type: "bridge_status", id })).data);
}

test("Pi killed mid-tool: its tools are gone within 2 s, Pi is back on the same session, agentBusy resets", async (t) => {
  const bridge = await startNetworkBridge(t, { model: { script: bridgeScript } });
  const { client } = await TestClient.connect(bridge.url);
  let from = client.frames.length;
  client.send({ type: "prompt", id: "p-first", message: "remember the word kettle" });
  await client.waitFor((f) => f.type === "agent_settled", 30_000, from);
  const before = await status(client, "st-before");
  const sessionId = before.durability.session?.id;
  assert.ok(sessionId);

  // A tool that detaches into its own session and writes its side effect later.
  const marker = `supervised-tool-${process.pid}`;
  from = client.frames.length;
  client.send({
    type: "prompt",
    id: "p-tool",
    message: `RUN setsid sh -c 'sleep 3; echo ${marker} > late.txt' & sleep 30 # ${marker}`,
  });
  const dialog = await client.waitFor((f) => f.type === "extension_ui_request", 30_000, from);
  assert.equal(
    (await client.answer({ id: String(dialog.id), commandId: "yes-tool", confirmed: true })).success,
    true,
  );
  await waitUntil(() => processesWithCmdline(marker).length >= 2, 10_000, "the tool processes to start");
  assert.equal((await status(client, "st-busy")).agentBusy, true);
  process.kill(before.pi.pid as number, "SIGKILL");
  const killedAt = Date.now();
  await waitUntil(() => processesWithCmdline(marker).length === 0, 2_000, "every tool process to be gone");
  assert.ok(Date.now() - killedAt <= 2_000);

  const restarted = await client.waitFor((f) => f.type === "agent_restarted", 20_000, from);
  assert.equal(restarted.cause, "agent_exited");
  assert.deepEqual(restarted.previous, { code: null, signal: "SIGKILL" });
  assert.equal(restarted.sessionId, sessionId);
  const after = await status(client, "st-after");
  assert.equal(after.pi.state, "running");
  assert.equal(after.pi.patched, true);
  assert.equal(after.pi.restarts, 1);
  assert.equal(after.agentBusy, false, "agentBusy is reset when Pi exits");
  assert.notEqual(after.pi.pid, before.pi.pid);
  assert.equal(after.durability.session?.id, sessionId);
  const messages = await client.request({ type: "get_messages", id: "m-after" });
  assert.match(JSON.stringify(messages.data), /remember the word kettle/);
  await sleep(3_500);
  assert.equal(existsSync(path.join(bridge.cwd, "late.txt")), false, "the detached tool never wrote");
  assert.equal(alive(-(before.pi.pid as number)), false);
  await client.close();
});

test("Pi killed mid-dialog while an answer races its death: one dialog_closed, one response, nothing approved", async (t) => {
  const bridge = await startNetworkBridge(t, { model: { script: bridgeScript } });
  const { client } = await TestClient.connect(bridge.url);
  for (const round of [1, 2]) {
    const from = client.frames.length;
    client.send({
      type: "prompt",
      id: `p-dialog-${round}`,
      message: `RUN echo doomed > doomed-${round}.txt`,
    });
    const dialog = await client.waitFor(
      (f) => f.type === "extension_ui_request" && f.method === "confirm",
      30_000,
      from,
    );
    const pid = (await status(client, `st-${round}`)).pi.pid as number;
    // Round 1: the answer goes out first, then Pi dies; round 2: Pi dies, then the answer arrives.
    if (round === 1)
      client.send({ type: "extension_ui_response", id: dialog.id, commandId: `a-${round}`, confirmed: true });
    process.kill(pid, "SIGKILL");
    if (round === 2)
      client.send({ type: "extension_ui_response", id: dialog.id, commandId: `a-${round}`, confirmed: true });
    const answer = await client.waitFor(responseTo(`a-${round}`), 20_000, from);
    await client.waitFor((f) => f.type === "agent_restarted", 30_000, from);
    await sleep(200);
    const closed = client.frames.slice(from).filter((f) => f.type === "dialog_closed" && f.id === dialog.id);
    const responses = client.frames.slice(from).filter(responseTo(`a-${round}`));
    assert.equal(responses.length, 1, `round ${round}: one response to the answer`);
    // Either Pi took the answer before dying (success: it ended the dialog) or the dialog was closed, never both.
    assert.equal(
      closed.length + (answer.success === true ? 1 : 0),
      1,
      `round ${round}: the dialog ended once`,
    );
    if (closed.length === 1) assert.equal(closed[0]?.reason, "agent_exited");
    assert.equal(existsSync(path.join(bridge.cwd, `doomed-${round}.txt`)), false);
  }
  assert.deepEqual((await status(client, "st-end")).pendingDialogs, []);
  await client.close();
});

test("a crash loop (a 4th exit within 10 minutes) is reported, and the bridge keeps retrying until a Pi serves again", async (t) => {
  const bridge = await startNetworkBridge(t, {
    model: { script: bridgeScript },
    args: ["--linger", "1500ms"],
  });
  const { client, welcome } = await TestClient.connect(bridge.url);
  for (let kill = 1; kill <= 4; kill++) {
    const pid = (await status(client, `st-${kill}`)).pi.pid as number;
    const from = client.frames.length;
    process.kill(pid, "SIGKILL");
    if (kill < 4) {
      const restarted = await client.waitFor((f) => f.type === "agent_restarted", 30_000, from);
      assert.equal(restarted.restarts, kill);
    }
  }
  const exited = await client.waitFor((f) => f.type === "agent_exited");
  const loopAt = Date.now();
  assert.equal(exited.reason, "crash_loop");
  // Commands fail at once while it loops (nothing waits minutes for a Pi), and health says why: the
  // unauthenticated /v1/health only that it is unavailable, bridge_status the reason.
  const during = await client.request({ type: "get_state", id: "g-during" });
  assert.equal(during.code, "agent_exited");
  const looping = await status(client, "st-loop");
  assert.equal(looping.pi.state, "restarting");
  assert.equal(looping.health.ok, false);
  assert.equal(looping.health.reason, "crash_loop");
  assert.match(looping.health.detail ?? "", /crash loop, next start in 10 s/);
  const health = await fetch(`http://127.0.0.1:${bridge.port}/v1/health`);
  assert.equal(health.status, 503);
  assert.deepEqual(await health.json(), { status: "unavailable" });
  await client.close();
  // Long after --linger, the bridge still serves: resume works and the next Pi comes after the long backoff.
  const back = await TestClient.connect(bridge.url, { resume: { epoch: String(welcome.epoch), lastSeq: 1 } });
  assert.equal(back.welcome.resumed, true);
  const replayedLoop = await back.client.waitFor(
    (f) => f.type === "agent_exited" && f.reason === "crash_loop",
  );
  const restarted = await back.client.waitFor(
    (f) => f.type === "agent_restarted",
    30_000,
    back.client.frames.indexOf(replayedLoop) + 1,
  );
  assert.ok(Date.now() - loopAt >= 9_000, "the crash-loop backoff (10 s) was kept");
  assert.equal(restarted.cause, "agent_exited");
  const after = await back.client.request({ type: "get_state", id: "g-after" });
  assert.equal(after.success, true);
  const healthy = await status(back.client, "st-healthy");
  assert.deepEqual(healthy.health, { ok: true, reason: null, detail: null });
  assert.equal(healthy.pi.state, "running");
  assert.equal(bridge.child.exitCode, null, "the bridge never exited");
  await back.client.close();
});
