// Lifecycle of the built bridge.mjs over real Pi: SIGTERM, Pi killed, idle exit, startup refusals,
// plus fault injection with the fake Pi (a client too slow to keep up).
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  alive,
  fixture,
  spawnBridge,
  startNetworkBridge,
  TEST_TOKEN,
  TestClient,
  waitUntil,
} from "../support/bridge.ts";
import { bridgeScript } from "../support/bridge-script.ts";
import { processesWithCmdline } from "../support/processes.ts";

test("SIGTERM with a pending dialog refuses it, stops Pi and its tools, and leaves no process behind", async (t) => {
  const bridge = await startNetworkBridge(t, { model: { script: bridgeScript } });
  const piPid = Number((await bridge.waitForLog((l) => l.msg === "Pi started")).piPid);
  const { client } = await TestClient.connect(bridge.url);
  // A tool process started by an approved call, still running at shutdown.
  const marker = `sleep 3${process.pid % 1000}7`;
  let from = client.frames.length;
  client.send({ type: "prompt", id: "bg", message: `RUN ${marker} > /dev/null 2>&1 & echo started` });
  const first = await client.waitFor((f) => f.type === "extension_ui_request", 20_000, from);
  assert.equal(
    (await client.answer({ id: String(first.id), commandId: "a-bg", confirmed: true })).success,
    true,
  );
  await client.waitFor((f) => f.type === "agent_settled", 20_000, from);
  assert.ok(processesWithCmdline(marker).length > 0, "the background tool process runs");
  from = client.frames.length;
  client.send({ type: "prompt", id: "pending", message: "RUN echo never > never.txt" });
  const dialog = await client.waitFor((f) => f.type === "extension_ui_request", 20_000, from);
  bridge.child.kill("SIGTERM");
  const closed = await client.waitFor((f) => f.type === "dialog_closed" && f.id === dialog.id);
  assert.equal(closed.outcome, "refused");
  assert.equal(closed.reason, "shutdown");
  await client.waitFor((f) => f.type === "agent_exited");
  assert.equal((await client.closed).code, 1001);
  assert.deepEqual(await bridge.exited, { code: 0, signal: null });
  assert.equal(alive(piPid), false, "Pi is gone");
  assert.equal(alive(-piPid), false, "Pi's process group is gone");
  await waitUntil(() => processesWithCmdline(marker).length === 0, 3_000, "the tool process to be gone");
});

test("idle exit: no client and an idle agent shut the bridge down, Pi included", async (t) => {
  const bridge = await startNetworkBridge(t, {
    model: { script: bridgeScript },
    args: ["--idle-exit", "1s"],
  });
  const piPid = Number((await bridge.waitForLog((l) => l.msg === "Pi started")).piPid);
  const exit = await bridge.exited;
  assert.deepEqual(exit, { code: 0, signal: null });
  assert.ok(bridge.logs.some((l) => String(l.reason).startsWith("idle")));
  assert.equal(alive(piPid), false);
});

test("startup refusals: missing gate, no token, non-loopback address, forwarded extensions", async (t) => {
  const cases: { args: string[]; env?: NodeJS.ProcessEnv; code: number; message: RegExp }[] = [
    {
      args: ["--listen", "127.0.0.1:0", "--gate", "/nonexistent/approval-gate.mjs"],
      env: { CHAT_UI_AGENT_BRIDGE_TOKEN: TEST_TOKEN },
      code: 1,
      message: /approval gate not found/,
    },
    {
      args: ["--listen", "127.0.0.1:0", "--gate", fixture("fake-pi-gate.mjs")],
      code: 2,
      message: /needs a token/,
    },
    {
      args: ["--listen", "0.0.0.0:8080", "--gate", fixture("fake-pi-gate.mjs")],
      env: { CHAT_UI_AGENT_BRIDGE_TOKEN: TEST_TOKEN },
      code: 2,
      message: /not a loopback address/,
    },
    {
      args: ["--gate", fixture("fake-pi-gate.mjs"), "-e", "/tmp/evil.mjs"],
      code: 2,
      message: /cannot be forwarded/,
    },
    { args: ["--mode", "json"], code: 2, message: /only .{1,2}rpc.{1,2} is supported/ },
  ];
  for (const c of cases) {
    const bridge = spawnBridge(t, { args: c.args, ...(c.env ? { env: c.env } : {}) });
    const exit = await bridge.exited;
    assert.equal(exit.code, c.code, `${c.args.join(" ")}: ${bridge.stderr()}`);
    assert.match(bridge.stderr(), c.message);
    assert.ok(!bridge.logs.some((l) => l.msg === "Pi started"), "Pi is never started");
  }
});

test("fake Pi floods: a client too slow to keep up is closed 4008 and resumes without a gap", async (t) => {
  const bridge = await startNetworkBridge(t, {
    fakePi: fixture("fake-pi.mjs"),
    args: ["--max-send-queue-bytes", "256KiB", "--replay-frames", "50000", "--replay-bytes", "64MiB"],
  });
  const { client, welcome } = await TestClient.connect(bridge.url);
  const socket = (client.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  socket.pause();
  const tooSlow = (l: Record<string, unknown>) => l.msg === "client too slow: send backlog over the limit";
  client.send({ type: "prompt", id: "flood", message: "FLOOD 20000 1000" });
  // The client reads nothing until the bridge has found it too slow (its backlog over the limit).
  await bridge.waitForLog(tooSlow, 30_000);
  socket.resume();
  const close = await client.closed;
  assert.equal(close.code, 4008);
  // Resume until the turn's end arrives. Without the 1.5 s the client once stayed paused, more of the flood is
  // still live when it resumes: a resumed client that falls behind is closed 4008 as well, and resumes again.
  const connections = [client];
  for (let cursor = client.lastSeq; ; ) {
    assert.ok(connections.length <= 20, "the flood gets through within 20 resumes");
    const back = await TestClient.connect(bridge.url, {
      resume: { epoch: String(welcome.epoch), lastSeq: cursor },
    });
    assert.equal(back.welcome.resumed, true);
    connections.push(back.client);
    const settled = await back.client
      .waitFor((f) => f.type === "agent_settled", 30_000)
      .then(
        () => true,
        () => false,
      );
    if (settled) {
      await back.client.close();
      break;
    }
    assert.equal(back.client.closeInfo?.code, 4008, "only a too-slow close ends a resumed connection early");
    cursor = Math.max(cursor, back.client.lastSeq);
  }
  const all = connections.flatMap((c) => c.frames.filter((f) => (f.seq ?? 0) > 0).map((f) => f.seq!));
  for (let i = 1; i < all.length; i++) assert.equal(all[i], all[i - 1]! + 1);
  const updates = connections.flatMap((c) => c.frames).filter((f) => f.type === "message_update");
  assert.equal(updates.length, 20_000);
});

test("stdio mode: a closed stdout (EPIPE) is a shutdown, Pi included", async (t) => {
  const bridge = spawnBridge(t, {
    args: ["--mode", "rpc", "--gate", fixture("fake-pi-gate.mjs"), "--no-session"],
    env: { HOME: "/nonexistent" },
  });
  const piPid = Number((await bridge.waitForLog((l) => l.msg === "Pi started")).piPid);
  const ready = new Promise<void>((resolve) => bridge.child.stdout.once("data", () => resolve()));
  bridge.child.stdin.write(`${JSON.stringify({ id: "s", type: "get_state" })}\n`);
  await ready;
  bridge.child.stdout.destroy();
  // The next lines the bridge writes hit the closed pipe.
  bridge.child.stdin.write(`${JSON.stringify({ id: "s2", type: "get_state" })}\n`);
  bridge.child.stdin.write(`${JSON.stringify({ id: "s3", type: "bridge_status" })}\n`);
  assert.deepEqual(await bridge.exited, { code: 0, signal: null });
  assert.ok(bridge.logs.some((l) => l.reason === "stdout closed"));
  assert.equal(alive(piPid), false);
});
