// The egress proxy against loopback origins: a tunnel or a request passes only on an allowing verdict, to the
// destination decided on; refusals say why; internal addresses are never reached unless a test allows them.
import assert from "node:assert/strict";
import { once } from "node:events";
import {
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingHttpHeaders,
} from "node:http";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { after, describe, it } from "node:test";
import pino from "pino";
import {
  EgressProxy,
  type EgressRecord,
  type EgressRequest,
  type EgressVerdict,
} from "../../bridge/egress/proxy.ts";

const log = pino({ level: "silent" });
const ALLOW: EgressVerdict = { allow: true, rule: "test-allow", reason: "allowed by the test" };
const DENY: EgressVerdict = { allow: false, rule: "test-deny", reason: "refused by the test" };

/** A TCP echo origin on loopback that counts connections. */
async function echoOrigin() {
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    socket.pipe(socket);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  after(() => server.close());
  return { port: (server.address() as AddressInfo).port, connections: () => connections };
}

/** An HTTP origin on loopback that records what it received. */
async function httpOrigin() {
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  const server = createHttpServer((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    res.end(`hello from ${req.headers.host}`);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  after(() => server.close());
  return { port: (server.address() as AddressInfo).port, seen };
}

async function startProxy(
  decide: (r: EgressRequest) => Promise<EgressVerdict>,
  extra: Partial<ConstructorParameters<typeof EgressProxy>[0]> = {},
) {
  const records: EgressRecord[] = [];
  const proxy = new EgressProxy({
    decide,
    log,
    onDecision: (record) => records.push(record),
    // Names in these tests resolve to loopback, which only the tests let the proxy reach.
    resolve: async () => ["127.0.0.1"],
    allowInternal: (address) => address === "127.0.0.1",
    ...extra,
  });
  const { port } = await proxy.listen();
  after(() => proxy.close());
  return { proxy, port, records };
}

/** Opens a CONNECT tunnel through the proxy; resolves with the status and, on 200, the socket. */
function tunnel(
  proxyPort: number,
  authority: string,
): Promise<{ status: number; body: string; socket?: Socket }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port: proxyPort, method: "CONNECT", path: authority });
    req.on("connect", (res, socket, head: Buffer) => {
      if (res.statusCode === 200) resolve({ status: 200, body: "", socket });
      else {
        let body = head.toString("utf8");
        socket.on("data", (c: Buffer) => {
          body += c.toString("utf8");
        });
        socket.on("close", () => resolve({ status: res.statusCode ?? 0, body }));
      }
    });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (c: Buffer) => {
        body += c.toString("utf8");
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

function viaProxy(
  proxyPort: number,
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port: proxyPort, method: "GET", path: url, headers });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (c: Buffer) => {
        body += c.toString("utf8");
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("egress proxy: CONNECT", () => {
  it("an allowed tunnel carries bytes both ways to the destination decided on", async () => {
    const origin = await echoOrigin();
    const asked: EgressRequest[] = [];
    const { port, records } = await startProxy(async (request) => {
      asked.push(request);
      return ALLOW;
    });
    const result = await tunnel(port, `Registry.Test.:${origin.port}`);
    assert.equal(result.status, 200);
    const socket = result.socket as Socket;
    socket.write("ping");
    const [echo] = (await once(socket, "data")) as [Buffer];
    assert.equal(echo.toString(), "ping");
    socket.destroy();
    assert.equal(asked[0]?.destination.host, "registry.test");
    assert.equal(asked[0]?.via, "connect");
    assert.ok((asked[0]?.clientPort ?? 0) > 0);
    assert.equal(records[0]?.rule, "test-allow");
    assert.equal(records[0]?.destination, `registry.test:${origin.port}`);
  });

  it("a refused tunnel never reaches the destination and says which rule refused it", async () => {
    const origin = await echoOrigin();
    const { port, records } = await startProxy(async () => DENY);
    const result = await tunnel(port, `registry.test:${origin.port}`);
    assert.equal(result.status, 403);
    assert.match(result.body, /refused by the test \(test-deny\)/);
    assert.equal(origin.connections(), 0);
    assert.equal(records[0]?.allow, false);
  });

  it("a malformed target is refused before any decision", async () => {
    let asked = 0;
    const { port } = await startProxy(async () => {
      asked += 1;
      return ALLOW;
    });
    for (const target of ["evil.com%00.registry.test:443", "nohost", "a..b:443"]) {
      const result = await tunnel(port, target);
      assert.equal(result.status, 400, target);
    }
    assert.equal(asked, 0);
  });

  it("never connects to an internal address, even when allowed, unless told it may", async () => {
    const origin = await echoOrigin();
    let asked = 0;
    const { port, records } = await startProxy(
      async () => {
        asked += 1;
        return ALLOW;
      },
      { allowInternal: () => false },
    );
    // A name is decided on first (it is resolved only once allowed), then refused at the connect.
    const byName = await tunnel(port, `registry.test:${origin.port}`);
    assert.equal(byName.status, 403);
    assert.match(byName.body, /resolves only to internal addresses/);
    assert.equal(asked, 1);
    // An internal literal is refused before any decision.
    const byAddress = await tunnel(port, `127.0.0.1:${origin.port}`);
    assert.equal(byAddress.status, 403);
    assert.match(byAddress.body, /internal address.*\(internal-address\)/);
    const mapped = await tunnel(port, `[::ffff:127.0.0.1]:${origin.port}`);
    assert.equal(mapped.status, 403);
    assert.equal(asked, 1, "no decision about an internal literal");
    assert.equal(origin.connections(), 0);
    assert.deepEqual(
      records.map((r) => [r.destination, r.allow, r.rule, r.failure !== undefined]),
      [
        [`registry.test:${origin.port}`, true, "test-allow", true],
        [`127.0.0.1:${origin.port}`, false, "internal-address", false],
        [`[::ffff:7f00:1]:${origin.port}`, false, "internal-address", false],
      ],
    );
  });

  it("the test hook lets an internal literal reach the decision and the connect; others stay refused", async () => {
    const origin = await echoOrigin();
    const asked: string[] = [];
    const { port } = await startProxy(async (request) => {
      asked.push(request.destination.host);
      return ALLOW;
    });
    const allowed = await tunnel(port, `127.0.0.1:${origin.port}`);
    assert.equal(allowed.status, 200);
    allowed.socket?.destroy();
    const other = await tunnel(port, `127.0.0.2:${origin.port}`);
    assert.equal(other.status, 403);
    assert.deepEqual(asked, ["127.0.0.1"]);
    assert.equal(origin.connections(), 1);
  });

  it("a failing decision refuses; too many waiting decisions refuse with 503; a pending one passes nothing", async () => {
    const origin = await echoOrigin();
    let release: (v: EgressVerdict) => void = () => {};
    const waiting = new Promise<EgressVerdict>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    const { port } = await startProxy(
      async () => {
        calls += 1;
        if (calls === 1) return waiting;
        throw new Error("boom");
      },
      { maxPendingDecisions: 1 },
    );
    const first = tunnel(port, `registry.test:${origin.port}`);
    while (calls < 1) await new Promise((r) => setImmediate(r));
    const second = await tunnel(port, `registry.test:${origin.port}`);
    assert.equal(second.status, 503);
    assert.equal(origin.connections(), 0, "nothing passes while the first decision waits");
    release(DENY);
    assert.equal((await first).status, 403);
    const third = await tunnel(port, `registry.test:${origin.port}`);
    assert.equal(third.status, 403);
    assert.match(third.body, /the decision failed: boom/);
    assert.equal(origin.connections(), 0);
  });
});

describe("egress proxy: a tool that resets its connection", () => {
  it("a reset while the decision waits, or right after a refusal, ends that connection only", async () => {
    let asked: () => void = () => {};
    const askedOnce = new Promise<void>((resolve) => {
      asked = resolve;
    });
    let answer: (v: EgressVerdict) => void = () => {};
    const pending = new Promise<EgressVerdict>((resolve) => {
      answer = resolve;
    });
    let calls = 0;
    const { port } = await startProxy(async () => {
      calls += 1;
      if (calls > 1) return DENY;
      asked();
      return pending;
    });
    const reset = async (authority: string, afterAnswer: boolean) => {
      const socket = connect(port, "127.0.0.1");
      await once(socket, "connect");
      socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
      if (afterAnswer) await once(socket, "data");
      // RST, not FIN: the proxy's end of the socket gets ECONNRESET.
      socket.resetAndDestroy();
      await once(socket, "close");
    };
    const waiting = reset("127.0.0.1:9", false);
    await askedOnce;
    await waiting;
    answer(DENY);
    // Refused before any decision (an internal literal the test hook does not allow), then reset.
    await reset("127.0.0.2:9", true);
    // The proxy (and the process) still serve.
    const refused = await tunnel(port, "127.0.0.1:9");
    assert.equal(refused.status, 403);
  });
});

describe("egress proxy: plain HTTP", () => {
  it("forwards an allowed request with the decided Host and without hop-by-hop headers", async () => {
    const origin = await httpOrigin();
    const { port } = await startProxy(async () => ALLOW);
    const response = await viaProxy(port, `http://Registry.Test.:${origin.port}/pkg?x=1`, {
      host: "evil.example",
      "proxy-authorization": "Basic c2VjcmV0",
      "x-kept": "yes",
    });
    assert.equal(response.status, 200);
    assert.equal(response.body, `hello from registry.test:${origin.port}`);
    assert.equal(origin.seen[0]?.url, "/pkg?x=1");
    assert.equal(origin.seen[0]?.headers["proxy-authorization"], undefined);
    assert.equal(origin.seen[0]?.headers["x-kept"], "yes");
  });

  it("refuses a denied request, an origin-form request and https in absolute form", async () => {
    const origin = await httpOrigin();
    const { port } = await startProxy(async () => DENY);
    assert.equal((await viaProxy(port, `http://registry.test:${origin.port}/`)).status, 403);
    assert.equal((await viaProxy(port, "/local")).status, 400);
    assert.equal((await viaProxy(port, `https://registry.test:${origin.port}/`)).status, 400);
    assert.equal(origin.seen.length, 0);
  });
});
