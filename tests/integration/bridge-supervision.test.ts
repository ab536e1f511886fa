// Pi supervision in the built bridge.mjs over real patched Pi: Pi killed mid-tool and mid-dialog is
// restarted on the same session with its tool tree ended; a crash loop is reported and retried, never an exit.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
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
    message: `RUN setsid sh -c 'sleep 20; echo ${marker} > late.txt' & sleep 30 # ${marker}`,
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
  // The only writer of late.txt is the detached shell, whose command line carries the marker: it was found gone
  // above, long before its 20 s were up, so the file can never appear (no wait for an absence needed).
  assert.equal(processesWithCmdline(marker).length, 0);
  assert.equal(existsSync(path.join(bridge.cwd, "late.txt")), false, "the detached tool never wrote");
  assert.equal(alive(-(before.pi.pid as number)), false);
  await client.close();
});

// Three interleavings of an answer with Pi's death. The person's "yes" that Pi took is an approval: the tool may
// run (it is forced to here, so the race this test once lost by chance is replayed every run: a test that took
// "nothing approved" to mean "the approved tool never ran" failed whenever Pi won the race). An answer Pi did not
// take approves nothing: its dialog closes once, and the tool never runs.
const DIALOG_ROUNDS = [
  { name: "taken", order: "answer, Pi takes it and runs the tool, then Pi dies" },
  { name: "racing", order: "answer, then Pi dies at once (either may win)" },
  { name: "late", order: "Pi dies, then the answer arrives" },
] as const;

test("Pi killed mid-dialog while an answer races its death: one dialog_closed, one response, nothing approved", async (t) => {
  const bridge = await startNetworkBridge(t, { model: { script: bridgeScript } });
  const { client } = await TestClient.connect(bridge.url);
  const outcomes: Record<string, boolean> = {};
  for (const round of DIALOG_ROUNDS) {
    const from = client.frames.length;
    const doomed = path.join(bridge.cwd, `doomed-${round.name}.txt`);
    client.send({
      type: "prompt",
      id: `p-${round.name}`,
      message: `RUN echo doomed > doomed-${round.name}.txt`,
    });
    const dialog = await client.waitFor(
      (f) => f.type === "extension_ui_request" && f.method === "confirm",
      30_000,
      from,
    );
    const pid = (await status(client, `st-${round.name}`)).pi.pid as number;
    const answer = {
      type: "extension_ui_response",
      id: dialog.id,
      commandId: `a-${round.name}`,
      confirmed: true,
    };
    if (round.name === "taken") {
      assert.equal(
        (await client.answer({ id: String(dialog.id), commandId: answer.commandId, confirmed: true }))
          .success,
        true,
      );
      await client.waitFor((f) => f.type === "tool_execution_end", 30_000, from);
      process.kill(pid, "SIGKILL");
    } else if (round.name === "racing") {
      client.send(answer);
      process.kill(pid, "SIGKILL");
    } else {
      process.kill(pid, "SIGKILL");
      client.send(answer);
    }
    const response = await client.waitFor(responseTo(`a-${round.name}`), 20_000, from);
    // The next Pi starts only after the old one's whole tree was ended: nothing of it can write any more.
    await client.waitFor((f) => f.type === "agent_restarted", 30_000, from);
    // A later frame (this status) orders every frame the death caused before it: no wait for an absence.
    const after = await status(client, `st-${round.name}-after`);
    const closed = client.frames.slice(from).filter((f) => f.type === "dialog_closed" && f.id === dialog.id);
    const responses = client.frames.slice(from).filter(responseTo(`a-${round.name}`));
    const taken = response.success === true;
    outcomes[round.name] = taken;
    assert.equal(responses.length, 1, `${round.order}: one response to the answer`);
    // Either Pi took the answer (success: it ended the dialog) or the dialog was closed, never both.
    assert.equal(closed.length + (taken ? 1 : 0), 1, `${round.order}: the dialog ended once`);
    if (!taken) {
      assert.equal(closed[0]?.reason, "agent_exited");
      assert.equal(existsSync(doomed), false, `${round.order}: an answer Pi did not take approved nothing`);
    }
    assert.ok(!after.pendingDialogs.some((d) => d.id === dialog.id));
  }
  assert.equal(outcomes.taken, true);
  assert.equal(existsSync(path.join(bridge.cwd, "doomed-taken.txt")), true, "the approved tool ran");
  assert.equal(outcomes.late, false, "a dead Pi takes no answer");
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
