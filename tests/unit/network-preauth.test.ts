// The network side in memory (the real NetworkServer over a stand-in core): the protocol-2 handshake, and what a
// connection may do before it proves it knows the token — a few KiB, one of 16 waiting places, and a gate that
// closes for longer after each failed proof. Health says only ok or not ok.
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { test } from "node:test";
import { TEST_TOKEN, TestClient } from "../support/bridge.ts";
import { startFakeBridge } from "../support/fake-core.ts";

/** A raw WebSocket upgrade; resolves once the 101 answer and the challenge arrived. */
async function rawUpgrade(port: number): Promise<{ socket: Socket; closed: Promise<void> }> {
  const socket = connect(port, "127.0.0.1");
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => {});
  await new Promise<void>((resolve) => socket.once("connect", resolve));
  socket.write(
    "GET /v1/rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
  );
  let seen = "";
  await new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      seen += chunk.toString("latin1");
      if (seen.includes("101 Switching Protocols") && seen.includes('"challenge"')) {
        socket.off("data", onData);
        resolve();
      }
    };
    socket.on("data", onData);
  });
  return { socket, closed };
}

/** The header of a masked client text frame announcing `length` bytes. */
function frameHeader(length: number): Buffer {
  const header = Buffer.alloc(14);
  header[0] = 0x81;
  header[1] = 0x80 | 127;
  header.writeBigUInt64BE(BigInt(length), 2);
  header.writeUInt32BE(0x01020304, 10);
  return header;
}

test("a client with the token gets a welcome it can verify; its frames reach the core", async (t) => {
  const bridge = await startFakeBridge(t);
  const { client, welcome } = await TestClient.connect(bridge.url, { clientId: "person" });
  assert.equal(welcome.type, "welcome");
  assert.deepEqual(
    client.frames.map((f) => f.type),
    ["challenge", "welcome"],
  );
  client.send({ type: "get_state", id: "g1" });
  const deadline = Date.now() + 5_000;
  while (bridge.core.received.length === 0 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(bridge.core.received, ['{"type":"get_state","id":"g1"}']);
  assert.deepEqual(bridge.core.attached, ["person"]);
  await client.close();
});

test("a wrong proof, a protocol-1 hello, a reflected nonce and a malformed hello are refused with 4001", async (t) => {
  const bridge = await startFakeBridge(t);
  const wrong = await TestClient.open(bridge.url);
  await wrong.hello({ token: "not-the-token-not-the-token" });
  assert.equal((await wrong.closed).code, 4001);
  assert.deepEqual(
    wrong.frames.map((f) => f.type),
    ["challenge"],
  );
  const old = await TestClient.open(bridge.url);
  await old.challenge();
  old.send({ type: "hello", protocol: 1, token: TEST_TOKEN, clientId: "x" });
  const refused = await old.closed;
  assert.equal(refused.code, 4001);
  assert.match(refused.reason, /protocol 2/);
  assert.ok(refused.reason.length <= 123);
  assert.ok(bridge.logs.some((l) => /protocol-1 hello refused/.test(String(l.msg))));
  // The bridge's own nonce sent back as the client's: refused (a proof must cover two fresh nonces).
  const reflected = await TestClient.open(bridge.url);
  const nonce = await reflected.challenge();
  reflected.send({ type: "hello", protocol: 2, clientId: "x", nonce, proof: nonce });
  assert.equal((await reflected.closed).code, 4001);
  const malformed = await TestClient.open(bridge.url);
  await malformed.challenge();
  malformed.send("{not json");
  assert.equal((await malformed.closed).code, 4001);
  assert.deepEqual(bridge.core.attached, []);
});

test("failed proofs close the gate for longer each time; a right proof waiting at it gets in when it opens", async (t) => {
  const bridge = await startFakeBridge(t, { authFailureDelayMs: 40 });
  const answered: number[] = [];
  for (let i = 0; i < 4; i++) {
    const wrong = await TestClient.open(bridge.url);
    const sent = Date.now();
    await wrong.hello({ token: "not-the-token-not-the-token" });
    await wrong.closed;
    answered.push(Date.now() - sent);
  }
  // 40, 80, 160, 320 ms: each failure is answered no sooner than its delay.
  answered.forEach((ms, i) => {
    assert.ok(ms >= 40 * 2 ** i - 5, `failure ${i + 1} answered after ${ms} ms`);
  });
  // A fifth failure closes the gate for 640 ms: the person's right proof waits for it, then gets in.
  const wrong = await TestClient.open(bridge.url);
  await wrong.hello({ token: "not-the-token-not-the-token" });
  const started = Date.now();
  const { client } = await TestClient.connect(bridge.url, { clientId: "person" });
  assert.ok(Date.now() - started >= 200, "the right proof waited at the closed gate");
  assert.equal((await wrong.closed).code, 4001);
  await client.close();
  const failures = bridge.logs.filter((l) => l.msg === "connection refused");
  assert.deepEqual(
    failures.map((l) => l.delayMs),
    [40, 80, 160, 320, 640],
  );
});

test("an unfinished 31 MiB message before the hello is cut after 32 KiB; nothing reaches the core", async (t) => {
  const bridge = await startFakeBridge(t);
  const { socket, closed } = await rawUpgrade(bridge.port);
  const total = 31 * 1024 * 1024;
  socket.write(frameHeader(total));
  let written = 0;
  let dropped = false;
  void closed.then(() => {
    dropped = true;
  });
  const chunk = Buffer.alloc(16 * 1024, 0x61);
  // Written until the bridge drops the connection (it must, long before the message ends); between chunks the
  // event loop runs, so the drop is seen when it happens.
  while (!dropped && written < total - chunk.length) {
    await new Promise<void>((resolve) => socket.write(chunk, () => setImmediate(resolve)));
    written += chunk.length;
  }
  await closed;
  assert.ok(written < total - chunk.length, "the bridge took the whole unfinished message");
  assert.deepEqual(bridge.core.received, []);
  assert.ok(
    bridge.logs.some((l) => /pre-auth limit/.test(String(l.msg)) && /too many bytes/.test(String(l.why))),
  );
});

test("past 16 connections waiting to authenticate, the oldest gives way (4029); then a person still gets in", async (t) => {
  const bridge = await startFakeBridge(t);
  const waiting: TestClient[] = [];
  for (let i = 0; i < 16; i++) {
    const c = await TestClient.open(bridge.url);
    await c.challenge();
    waiting.push(c);
  }
  assert.equal(waiting[0]?.closeInfo, undefined);
  const { client } = await TestClient.connect(bridge.url, { clientId: "person" });
  const evicted = await waiting[0]?.closed;
  assert.equal(evicted?.code, 4029);
  assert.equal(waiting[1]?.closeInfo, undefined, "only the oldest gave way");
  assert.deepEqual(bridge.core.attached, ["person"]);
  await client.close();
  for (const c of waiting.slice(1)) c.drop();
});

test("health says only ok or not ok, for GET and HEAD; other paths 404; an upgrade elsewhere 404", async (t) => {
  const bridge = await startFakeBridge(t);
  const base = `http://127.0.0.1:${bridge.port}`;
  const ok = await fetch(`${base}/v1/health`);
  assert.equal(ok.status, 200);
  assert.equal(await ok.text(), '{"status":"ok"}');
  assert.equal((await fetch(`${base}/v1/health`, { method: "HEAD" })).status, 200);
  bridge.core.health.ok = false;
  const down = await fetch(`${base}/v1/health`);
  assert.equal(down.status, 503);
  assert.equal(await down.text(), '{"status":"unavailable"}');
  assert.equal((await fetch(`${base}/v1/nope`)).status, 404);
  await assert.rejects(TestClient.open(`ws://127.0.0.1:${bridge.port}/v1/elsewhere`), /404/);
});
