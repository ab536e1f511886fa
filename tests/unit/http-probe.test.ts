// The undici probes the demo and the image tests rely on: one closed connection per probe, explicit deadlines,
// bounded bodies, and polling that waits for a server to come up (or to answer as wanted).
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type TestContext, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { probe, waitForHttp } from "../../agent-runtime/dev/http-probe.ts";

async function serve(
  t: TestContext,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  port = 0,
): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/health` };
}

test("probe: status, headers and body over a connection that is closed once answered", async (t) => {
  let connectionHeader: string | undefined;
  const { server, url } = await serve(t, (req, res) => {
    connectionHeader = req.headers.connection;
    res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
  });
  const response = await probe(url);
  assert.equal(response.status, 200);
  assert.equal(response.headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(response.body), { status: "ok" });
  assert.equal(connectionHeader, "close");
  for (let i = 0; i < 50; i++) {
    const open = await new Promise<number>((resolve) => server.getConnections((_e, n) => resolve(n)));
    if (open === 0) return;
    await sleep(20);
  }
  assert.fail("the probe's connection stayed open");
});

test("probe: HEAD has no body; a silent server and an oversized body are errors", async (t) => {
  const { url } = await serve(t, (req, res) => {
    if (req.url === "/silent") return; // accepts, never answers
    if (req.url === "/big") return void res.end("x".repeat(4096));
    res.writeHead(503).end(req.method === "HEAD" ? undefined : "down");
  });
  const head = await probe(url, { method: "HEAD" });
  assert.equal(head.status, 503);
  assert.equal(head.body, "");
  await assert.rejects(probe(url.replace("/health", "/silent"), { timeoutMs: 300 }), /Headers Timeout/i);
  await assert.rejects(probe(url.replace("/health", "/big"), { maxBodyBytes: 1024 }), /over 1024 bytes/);
});

test("waitForHttp: waits for a server that is not up yet, then for the answer it wants", async (t) => {
  // Find a free port, then start listening on it only after the first attempts were refused.
  const { server: placeholder } = await serve(t, () => {});
  const port = (placeholder.address() as AddressInfo).port;
  await new Promise<void>((resolve) => placeholder.close(() => resolve()));
  let requests = 0;
  setTimeout(() => {
    void serve(
      t,
      (_req, res) => {
        requests += 1;
        res.writeHead(requests < 3 ? 503 : 200).end(requests < 3 ? "starting" : "ready");
      },
      port,
    );
  }, 300);
  const waited = await waitForHttp(`http://127.0.0.1:${port}/health`, {
    intervalMs: 50,
    until: (response) => response.status === 200,
  });
  assert.equal(waited.response.body, "ready");
  assert.ok(waited.attempts >= 4, `refused at least once, then 503 twice (attempts: ${waited.attempts})`);
  await assert.rejects(
    waitForHttp(`http://127.0.0.1:${port}/health`, { deadlineMs: 300, until: () => false }),
    /did not answer as expected within 300 ms .*last: HTTP 200 ready/,
  );
});
