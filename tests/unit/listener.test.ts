// The bridge's address: bound before Pi starts, answering "starting" until the network side takes it over, and
// held on both loopback families so that "localhost" cannot lead a client to another process.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { bindListener, ListenError } from "../../bridge/listener.ts";

function tryListen(port: number, host: string): Promise<string> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? "error"));
    server.listen(port, host, () => server.close(() => resolve("bound")));
  });
}

test("the port is held on 127.0.0.1 and on ::1; until handed over, health and upgrades answer 503", async (t) => {
  const bound = await bindListener("127.0.0.1", 0);
  t.after(() => new Promise<void>((resolve) => bound.server.close(() => resolve())));
  const port = bound.address.port;
  const ipv6 = (await tryListen(0, "::1")) === "bound";
  assert.equal(await tryListen(port, "127.0.0.1"), "EADDRINUSE");
  if (ipv6) {
    assert.equal(bound.twin?.port, port);
    assert.equal(await tryListen(port, "::1"), "EADDRINUSE", "another process could take [::1]:PORT");
    const viaTwin = await fetch(`http://[::1]:${port}/v1/health`);
    assert.equal(viaTwin.status, 503, "the twin serves the same bridge");
  } else {
    assert.equal(bound.twin, undefined);
  }
  const health = await fetch(`http://127.0.0.1:${port}/v1/health`);
  assert.equal(health.status, 503);
  assert.equal(await health.text(), '{"status":"unavailable"}');
  bound.handOver().on("request", (_req, res) => res.end("ours"));
  assert.equal(await (await fetch(`http://127.0.0.1:${port}/v1/health`)).text(), "ours");
});

test("an address in use, or its twin held by another process, refuses with a sentence", async (t) => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const port = (holder.address() as { port: number }).port;
  await assert.rejects(bindListener("127.0.0.1", port), (err: Error) => {
    assert.ok(err instanceof ListenError);
    assert.match(err.message, new RegExp(`the address 127\\.0\\.0\\.1:${port} is already in use`));
    return true;
  });
  if ((await tryListen(0, "::1")) !== "bound") return;
  // A squatter on [::1]:PORT before the bridge starts on 127.0.0.1:PORT.
  const squatter = createServer();
  await new Promise<void>((resolve) => squatter.listen(0, "::1", resolve));
  t.after(() => new Promise<void>((resolve) => squatter.close(() => resolve())));
  const squatted = (squatter.address() as { port: number }).port;
  if ((await tryListen(squatted, "127.0.0.1")) !== "bound") return;
  await assert.rejects(bindListener("127.0.0.1", squatted), /\[::1\]:\d+ is held by another process/);
});
