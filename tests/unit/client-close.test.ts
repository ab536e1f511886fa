// A bridge that ends the session (bad token, superseded) must reach the client's "closed" state with its
// close code, once, so `attach` can say "closed by the bridge". A stand-in WebSocket server on loopback plays
// the bridge's refusal: it sends a challenge, and closes at the hello.
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { type TestContext, test } from "node:test";
import { WebSocketServer } from "ws";
import { attach } from "../../bridge/attach/attach.ts";
import { BridgeClient, type ConnectionState } from "../../bridge/client.ts";
import { newNonce } from "../../bridge/handshake.ts";
import { CloseCode, PROTOCOL_VERSION } from "../../bridge/protocol.ts";

/** A server that challenges every connection and closes it with `code` as soon as the hello arrives. */
async function refusingBridge(t: TestContext, code: number): Promise<string> {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  server.on("connection", (socket) => {
    socket.send(JSON.stringify({ type: "challenge", protocol: PROTOCOL_VERSION, nonce: newNonce() }));
    socket.once("message", () => socket.close(code, "refused"));
  });
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/rpc`;
}

for (const [name, code] of [
  ["unauthorized", CloseCode.unauthorized],
  ["superseded", CloseCode.superseded],
] as const) {
  test(`the ${name} close (${code}) ends the client once, in state closed with the bridge's code`, async (t) => {
    const url = await refusingBridge(t, code);
    const client = new BridgeClient({ url, token: "x".repeat(32), backoff: { initialMs: 10, maxMs: 20 } });
    const states: Array<[ConnectionState, number | undefined]> = [];
    client.on("state", (state, detail) => states.push([state, detail.closeCode]));
    await assert.rejects(client.connect(), (error: Error & { kind?: string }) => {
      assert.equal(error.kind, name);
      assert.match(error.message, new RegExp(`${code}`));
      return true;
    });
    assert.deepEqual(states, [
      ["connecting", undefined],
      ["closed", code],
    ]);
    assert.equal(client.state, "closed");
  });
}

test("attach prints 'closed by the bridge' with the code", async (t) => {
  const url = await refusingBridge(t, CloseCode.unauthorized);
  let printed = "";
  const output = {
    write: (text: string) => {
      printed += text;
    },
  };
  await assert.rejects(
    attach({ url, token: "x".repeat(32), output, backoff: { initialMs: 10, maxMs: 20 } }),
    /4001/,
  );
  assert.match(printed, /closed by the bridge \(4001\)/);
});
