// The typed client authenticates the bridge before anything else. Against stand-ins on loopback that play an
// impostor (a squatter on the bridge's port), it sends nothing but a hello whose proof is bound to the
// impostor's own nonce — never the token, a command, an answer or an ack — and stops with a named, permanent
// failure. Failures retrying cannot fix stop it too, with their cause; the others are retried.
import assert from "node:assert/strict";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { type ClientRequest, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type TestContext, test } from "node:test";
import { WebSocketServer } from "ws";
import {
  BridgeClient,
  BridgeClientClosedError,
  BridgeConnectionError,
  BridgeImpostorError,
  type ConnectionState,
} from "../../bridge/client.ts";
import { classifyError } from "../../bridge/connection-failure.ts";
import { newNonce } from "../../bridge/handshake.ts";
import { PROTOCOL_VERSION } from "../../bridge/protocol.ts";
import { TEST_TOKEN } from "../support/bridge.ts";
import { FAKE_EPOCH, startFakeBridge, validSnapshot } from "../support/fake-core.ts";

/**
 * Resolves at the first connection to 127.0.0.1:`port` that was refused (Node's HTTP client, under the WebSocket,
 * reports each failed request on a diagnostics channel): the client's attempt is seen, not assumed after a delay.
 */
function refusedAt(t: TestContext, port: number): Promise<void> {
  const channel = "http.client.request.error";
  return new Promise((resolve) => {
    const onError = (message: unknown) => {
      const { request, error } = message as { request: ClientRequest; error: NodeJS.ErrnoException };
      if (error.code !== "ECONNREFUSED" || request.getHeader("host") !== `127.0.0.1:${port}`) return;
      unsubscribe(channel, onError);
      resolve();
    };
    subscribe(channel, onError);
    t.after(() => unsubscribe(channel, onError));
  });
}

type Behaviour = "silent" | "welcome_first" | "fake_welcome" | "newer_protocol" | "two_challenges";

/** A stand-in for whatever holds the port: it records every text it receives. */
async function impostor(
  t: TestContext,
  behaviour: Behaviour,
  port = 0,
): Promise<{ url: string; received: string[] }> {
  const received: string[] = [];
  const server = new WebSocketServer({ host: "127.0.0.1", port });
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  // The fake welcome of issue 17: "resumed", with a dialog the person would answer.
  const welcome = JSON.stringify({
    type: "welcome",
    seq: 0,
    protocol: PROTOCOL_VERSION,
    proof: "0".repeat(64),
    epoch: FAKE_EPOCH,
    headSeq: 5,
    resumed: true,
    reset: null,
    pendingDialogs: [{ id: "d1", method: "confirm", title: "Allow?", seq: 4 }],
    snapshot: validSnapshot(),
  });
  const challenge = (protocol: number) => JSON.stringify({ type: "challenge", protocol, nonce: newNonce() });
  server.on("connection", (socket) => {
    socket.on("message", (data) => {
      received.push(String(data));
      if (behaviour === "fake_welcome") socket.send(welcome);
    });
    if (behaviour === "welcome_first") socket.send(welcome);
    if (behaviour === "fake_welcome") socket.send(challenge(PROTOCOL_VERSION));
    if (behaviour === "newer_protocol") socket.send(challenge(PROTOCOL_VERSION + 1));
    if (behaviour === "two_challenges") {
      socket.send(challenge(PROTOCOL_VERSION));
      socket.send(challenge(PROTOCOL_VERSION));
    }
  });
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address() as AddressInfo;
  return { url: `ws://127.0.0.1:${address.port}/v1/rpc`, received };
}

function client(url: string, extra: Partial<ConstructorParameters<typeof BridgeClient>[0]> = {}) {
  return new BridgeClient({
    url,
    token: TEST_TOKEN,
    backoff: { initialMs: 10, maxMs: 20 },
    challengeTimeoutMs: 300,
    ...extra,
  });
}

/**
 * Everything an impostor received must be hellos with nothing derived from the token but the proof (the resume
 * cursor, when there is one, is the epoch and a seq: nothing that helps to pass as either side).
 */
function assertOnlyHellos(received: string[]): void {
  for (const text of received) {
    assert.ok(!text.includes(TEST_TOKEN), "the token was sent");
    const { resume, ...frame } = JSON.parse(text) as Record<string, unknown>;
    assert.equal(frame.type, "hello", `sent ${text.slice(0, 100)}`);
    assert.deepEqual(Object.keys(frame).sort(), ["clientId", "nonce", "proof", "protocol", "type"]);
    if (resume !== undefined) assert.deepEqual(Object.keys(resume as object).sort(), ["epoch", "lastSeq"]);
  }
}

test("against the bridge: the handshake passes and commands flow", async (t) => {
  const bridge = await startFakeBridge(t);
  const c = client(bridge.url);
  await c.connect();
  assert.equal(c.bridgeEpoch, FAKE_EPOCH);
  assert.equal(c.state, "live");
  c.close();
});

for (const [behaviour, why] of [
  ["silent", /no challenge within 300 ms/],
  ["welcome_first", /its first frame is "welcome", not a challenge/],
  ["fake_welcome", /its welcome carries a wrong proof/],
  ["two_challenges", /challenge/],
] as const) {
  test(`an impostor (${behaviour}) is refused: nothing but a bound proof reaches it, and the client stops`, async (t) => {
    const squatter = await impostor(t, behaviour);
    const c = client(squatter.url);
    const states: ConnectionState[] = [];
    c.on("state", (state) => states.push(state));
    const connected = c.connect();
    // A command and an answer issued while connecting must never reach it.
    const pending = c.getState();
    await assert.rejects(connected, (error: Error) => {
      assert.ok(error instanceof BridgeImpostorError, String(error));
      assert.equal((error as BridgeImpostorError).kind, "impostor");
      assert.match(error.message, why);
      assert.match(error.message, /nothing was sent to it/);
      return true;
    });
    await assert.rejects(pending, (error: Error) => {
      assert.ok(error instanceof BridgeClientClosedError);
      assert.ok(error.cause instanceof BridgeImpostorError, "the cause stays on the error");
      return true;
    });
    assert.deepEqual(states, ["connecting", "closed"], "no reconnect");
    assert.ok(squatter.received.length <= 1);
    assertOnlyHellos(squatter.received);
  });
}

test("a bridge that speaks another protocol version is a protocol failure: no hello is sent", async (t) => {
  const other = await impostor(t, "newer_protocol");
  await assert.rejects(client(other.url).connect(), (error: BridgeConnectionError) => {
    assert.equal(error.kind, "protocol");
    assert.match(error.message, new RegExp(`speaks protocol ${PROTOCOL_VERSION + 1}`));
    return true;
  });
  assert.deepEqual(other.received, []);
});

test("the bridge stops and a squatter takes its port: the live client reports an impostor, sends it no command", async (t) => {
  const bridge = await startFakeBridge(t);
  const c = client(bridge.url, { challengeTimeoutMs: 2_000 });
  await c.connect();
  const failures: BridgeConnectionError[] = [];
  c.on("failure", (error) => failures.push(error));
  const closed = new Promise<{ failure?: Error }>((resolve) =>
    c.on("state", (state, detail) => state === "closed" && resolve(detail)),
  );
  await bridge.server.close();
  const squatter = await impostor(t, "fake_welcome", bridge.port);
  // The person keeps working meanwhile: none of it may reach the squatter.
  const prompt = c.prompt("secret plans");
  const detail = await closed;
  assert.ok(detail.failure instanceof BridgeImpostorError);
  assert.equal(failures.length, 1);
  await assert.rejects(prompt, BridgeClientClosedError);
  assert.equal(squatter.received.length, 1, "one hello, then nothing");
  assertOnlyHellos(squatter.received);
});

test("nothing listening: refused at once (no start grace), with the cause, no retries", async (t) => {
  const bridge = await startFakeBridge(t);
  await bridge.server.close();
  const c = client(bridge.url, { startGraceMs: 0 });
  const states: ConnectionState[] = [];
  c.on("state", (state) => states.push(state));
  await assert.rejects(c.connect(), (error: BridgeConnectionError) => {
    assert.equal(error.kind, "refused");
    assert.match(error.message, /connection was refused: nothing listens at that address \(ECONNREFUSED\)/);
    assert.equal((error.cause as NodeJS.ErrnoException).code, "ECONNREFUSED");
    return true;
  });
  assert.deepEqual(states, ["connecting", "closed"]);
});

test("nothing listening yet: within the start grace a first connection waits for the bridge; past it, refused", async (t) => {
  const first = await startFakeBridge(t);
  const port = first.port;
  await first.server.close();
  const c = client(first.url, { startGraceMs: 5_000 });
  const refusedWithinGrace = refusedAt(t, port);
  const connected = c.connect();
  // The bridge starts listening on that port only once the client was refused there and kept trying (a client
  // that gave up instead rejects `connected`, failing the test here).
  await Promise.race([
    refusedWithinGrace,
    connected.then(() => assert.fail("live before anything listened")),
  ]);
  await startFakeBridge(t, { port });
  await connected;
  assert.equal(c.state, "live");
  c.close();
  const late = client(first.url.replace(`:${port}/`, ":1/"), { startGraceMs: 200 });
  const started = Date.now();
  await assert.rejects(late.connect(), { kind: "refused" });
  assert.ok(Date.now() - started >= 200, "it tried for the grace");
});

test("a wrong path (404 on the upgrade) and a wrong token (4001) stop the client, each named", async (t) => {
  const bridge = await startFakeBridge(t);
  await assert.rejects(client(bridge.url.replace("/v1/rpc", "/v1/wrong")).connect(), {
    kind: "not_found",
  });
  await assert.rejects(
    client(bridge.url, { token: "not-the-token-not-the-token" }).connect(),
    (error: BridgeConnectionError) => {
      assert.equal(error.kind, "unauthorized");
      assert.match(error.message, /4001/);
      return true;
    },
  );
});

test("lost connections are retried up to maxAttempts; the last cause stays on the error", async (t) => {
  const http = createServer();
  let upgrades = 0;
  http.on("upgrade", (_req, socket) => {
    upgrades += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => http.close(() => resolve())));
  const url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}/v1/rpc`;
  const c = client(url, { maxAttempts: 2 });
  await assert.rejects(c.connect(), (error: BridgeConnectionError) => {
    assert.equal(error.kind, "network");
    assert.match(error.message, /gave up after 2 attempts; last: .*connection was lost/);
    assert.ok(error.cause instanceof BridgeConnectionError);
    return true;
  });
  assert.equal(upgrades, 3, "the first attempt and two retries");
});

test("socket errors are classified: DNS, TLS, refused, the rest a lost connection", () => {
  const kind = (code: string) => classifyError("ws://x", Object.assign(new Error(code), { code })).kind;
  assert.equal(kind("ENOTFOUND"), "dns");
  assert.equal(kind("ECONNREFUSED"), "refused");
  assert.equal(kind("DEPTH_ZERO_SELF_SIGNED_CERT"), "tls");
  assert.equal(kind("ERR_TLS_CERT_ALTNAME_INVALID"), "tls");
  assert.equal(kind("EAI_AGAIN"), "network");
  assert.equal(kind("ECONNRESET"), "network");
});
