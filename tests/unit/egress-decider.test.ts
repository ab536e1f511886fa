// The egress decision wired as the bridge runs it: the rules table for the mode and the policy now, the registries,
// destination grants in the one store, and the person's own dialogs raised through the composed core (in memory,
// fake clock), then the same through the real proxy on a loopback listener bound as prestart binds it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import pino from "pino";
import { APPROVAL_CHOICES } from "../../agent-runtime/policy/grants.ts";
import type { PolicyMode } from "../../agent-runtime/policy/policy-modes.ts";
import { ConnectAttribution } from "../../bridge/egress/attribution.ts";
import { DESTINATION_CHOICES, EgressDecider } from "../../bridge/egress/decider.ts";
import { parseAuthority } from "../../bridge/egress/destination.ts";
import { bindEgressListener } from "../../bridge/egress/egress-listener.ts";
import { EgressService } from "../../bridge/egress/egress-service.ts";
import type { EgressRecord, EgressRequest } from "../../bridge/egress/proxy.ts";
import { DEFAULT_REGISTRIES, readRegistriesFile } from "../../bridge/egress/registries.ts";
import type { NetworkMode } from "../../bridge/egress/rules.ts";
import { coreHarness, type Harness, settle } from "../support/core-harness.ts";

const log = pino({ level: "silent" });

function request(authority: string, clientPort = 40000): EgressRequest {
  const parsed = parseAuthority(authority);
  assert.ok(parsed.ok);
  return { destination: parsed.destination, via: "connect", clientPort };
}

async function wired(setup: { mode?: NetworkMode; policy?: PolicyMode } = {}) {
  const h = coreHarness();
  await h.deliver();
  h.core.attach("person");
  const state = { mode: setup.mode ?? "registries", policy: setup.policy ?? "auto" };
  const decider = new EgressDecider({
    networkMode: () => state.mode,
    policy: () => state.policy,
    registries: DEFAULT_REGISTRIES,
    grants: h.core.grantStore,
    ask: (question, signal) => h.core.askPerson(question, signal),
    log,
  });
  return { h, state, decider };
}

/** The last dialog clients got, answered by the person with `choice`. */
async function answerLast(h: Harness, choice: string, commandId: string) {
  await settle();
  const dialog = h.sink.of("extension_ui_request").at(-1);
  assert.ok(dialog);
  h.send({ type: "extension_ui_response", id: dialog.id, commandId, value: choice });
  await settle();
  return dialog;
}

test("egress decision: registries pass in auto, read-only and lockdown deny, all without a dialog", async () => {
  const { h, state, decider } = await wired();
  const registry = await decider.decide(request("registry.npmjs.org:443"));
  assert.deepEqual([registry.allow, registry.rule], [true, "auto-registry"]);
  assert.match(registry.reason, /npm/);
  state.policy = "read-only";
  assert.deepEqual((await decider.decide(request("registry.npmjs.org:443"))).rule, "read-only");
  state.policy = "auto";
  state.mode = "lockdown";
  const locked = await decider.decide(request("example.test:443"));
  assert.deepEqual([locked.allow, locked.rule], [false, "lockdown"]);
  state.mode = "open";
  assert.equal((await decider.decide(request("example.test:443"))).allow, true);
  assert.equal(h.sink.of("extension_ui_request").length, 0);
});

test("egress decision: a new destination asks; allow once passes that request only, the next asks again", async () => {
  const { h, decider } = await wired({ policy: "ask" });
  // In `ask` even a registry asks.
  const first = decider.decide(request("registry.npmjs.org:443"));
  const dialog = await answerLast(h, APPROVAL_CHOICES.once, "a1");
  assert.deepEqual(dialog.options, [...DESTINATION_CHOICES]);
  assert.match(String(dialog.title), /registry\.npmjs\.org:443/);
  assert.match(String(dialog.message), /host: registry\.npmjs\.org\nport: 443/);
  const verdict = await first;
  assert.deepEqual([verdict.allow, verdict.rule, verdict.dialog], [true, "person-once", dialog.id]);
  const second = decider.decide(request("registry.npmjs.org:443"));
  await answerLast(h, APPROVAL_CHOICES.deny, "a2");
  const denied = await second;
  assert.deepEqual([denied.allow, denied.rule], [false, "person-deny"]);
  assert.equal(h.sink.of("extension_ui_request").length, 2, "each request asked");
  assert.deepEqual(h.core.snapshot().grants, []);
});

test("egress decision: a session answer grants the destination (no more dialogs); revoking asks again", async () => {
  const { h, decider } = await wired();
  const first = decider.decide(request("Example.TEST.:8443"));
  await answerLast(h, APPROVAL_CHOICES.session, "a1");
  const granted = await first;
  assert.equal(granted.allow, true);
  const grants = h.core.snapshot().grants ?? [];
  assert.equal(grants.length, 1);
  const grant = grants[0] as { id: string; kind: string; key: string; by: string; dialogId: string };
  assert.deepEqual([grant.kind, grant.key, grant.by], ["destination", "example.test:8443", "person"]);
  assert.equal(granted.rule, `grant:${grant.id}`);
  assert.equal(h.sink.of("grants_changed").length, 1, "announced to clients");
  // Again, and another port of the same host: the grant is for host:port exactly.
  const again = await decider.decide(request("example.test:8443"));
  assert.deepEqual([again.allow, again.rule, again.grant], [true, `grant:${grant.id}`, grant.id]);
  assert.equal(h.sink.of("extension_ui_request").length, 1);
  const otherPort = decider.decide(request("example.test:443"));
  await answerLast(h, APPROVAL_CHOICES.deny, "a2");
  assert.equal((await otherPort).allow, false);
  // Revoked over RPC: the next request asks again.
  h.send({ type: "revoke_grant", id: "r1", grant: grant.id });
  assert.equal(h.sink.responses("r1")[0]?.success, true);
  const afterRevoke = decider.decide(request("example.test:8443"));
  await answerLast(h, APPROVAL_CHOICES.deny, "a3");
  assert.deepEqual((await afterRevoke).rule, "person-deny");
  assert.equal(h.sink.of("extension_ui_request").length, 3);
});

test("egress decision: a refused dialog denies; a stricter mode set while asking wins over the answer", async () => {
  const { h, decider } = await wired();
  const shut = decider.decide(request("example.test:443"));
  await settle();
  h.core.beginShutdown();
  const refused = await shut;
  assert.deepEqual([refused.allow, refused.rule], [false, "dialog-refused:shutdown"]);
  const second = await wired();
  const asked = second.decider.decide(request("example.test:443"));
  await settle();
  second.state.mode = "lockdown";
  await answerLast(second.h, APPROVAL_CHOICES.session, "a1");
  const verdict = await asked;
  assert.deepEqual([verdict.allow, verdict.rule], [false, "lockdown"]);
  assert.deepEqual(second.h.core.snapshot().grants, [], "no grant was made");
});

test("egress decision: a tool that hangs up withdraws its dialog; the next request asks anew", async () => {
  const { h, decider } = await wired();
  const hangUp = new AbortController();
  const gone = decider.decide({ ...request("example.test:443"), signal: hangUp.signal });
  await settle();
  hangUp.abort();
  const verdict = await gone;
  assert.deepEqual([verdict.allow, verdict.rule], [false, "dialog-refused:cancelled"]);
  assert.deepEqual(
    h.sink.of("dialog_closed").map((f) => f.reason),
    ["cancelled"],
  );
  assert.deepEqual(h.core.pendingDialogs(), []);
  const next = decider.decide(request("example.test:443"));
  await answerLast(h, APPROVAL_CHOICES.once, "a1");
  assert.equal((await next).allow, true);
});

test("egress decision: requests for a destination being asked about wait for that one dialog", async () => {
  const { h, decider } = await wired();
  const all = [1, 2, 3].map((n) => decider.decide(request("example.test:443", 40000 + n)));
  await settle();
  assert.equal(h.sink.of("extension_ui_request").length, 1, "one dialog for the destination");
  await answerLast(h, APPROVAL_CHOICES.session, "a1");
  const verdicts = await Promise.all(all);
  assert.deepEqual(
    verdicts.map((v) => v.allow),
    [true, true, true],
  );
  assert.equal(h.sink.of("extension_ui_request").length, 1, "the others passed on the grant");
  // "Allow once" lets only the asking request through; the ones waiting ask in turn.
  const more = [1, 2].map((n) => decider.decide(request("other.test:443", 41000 + n)));
  await answerLast(h, APPROVAL_CHOICES.once, "b1");
  await answerLast(h, APPROVAL_CHOICES.deny, "b2");
  assert.deepEqual(
    (await Promise.all(more)).map((v) => v.rule),
    ["person-once", "person-deny"],
  );
});

test("egress attribution: a proxy connection pairs with the supervisor's report of the same local port", async () => {
  const attribution = new ConnectAttribution({ proxyPort: () => 3128 });
  const report = (pid: number, call: string | null, localPort: number, port = 3128, errno = 0) =>
    attribution.note({
      type: "connect",
      pid,
      call,
      family: "inet",
      address: "127.0.0.1",
      port,
      localPort,
      verdict: "performed",
      errno,
    });
  report(9, "refused-call", 0, 3128, 111); // ECONNREFUSED: it never reached the proxy
  report(10, "call-a", 50001, 3128, 115); // EINPROGRESS: a non-blocking connect under way
  report(11, null, 50009, 8080); // not to the proxy: ignored
  report(13, "call-c", 50003);
  // Reports and connections in a different order still pair by port.
  const late = attribution.of(50002, 1_000);
  report(12, "call-b", 50002);
  assert.deepEqual(await late, { pid: 12, call: "call-b" });
  assert.deepEqual(await attribution.of(50003), { pid: 13, call: "call-c" });
  assert.deepEqual(await attribution.of(50001), { pid: 10, call: "call-a" });
  assert.equal(await attribution.of(50009, 10), undefined, "a connect elsewhere names no proxy connection");
  assert.equal(await attribution.of(50004, 10), undefined, "no report: unknown, after a short wait");
  // A closed connection's port may be reused by another call: the old name is gone.
  attribution.closed(50003);
  assert.equal(await attribution.of(50003), undefined);
  report(14, "call-d", 50003);
  assert.deepEqual(await attribution.of(50003), { pid: 14, call: "call-d" });
});

test("registries file: valid lists replace the default; anything else is refused with the file named", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "egress-registries-"));
  const file = (name: string, text: string) => {
    const at = path.join(dir, name);
    writeFileSync(at, text);
    return at;
  };
  const good = file(
    "good.json",
    JSON.stringify({
      registries: [{ name: "stand-in", hosts: ["203.0.113.10", "*.mirror.test"], ports: [8080] }],
    }),
  );
  assert.deepEqual(readRegistriesFile(good), [
    { name: "stand-in", hosts: ["203.0.113.10", "*.mirror.test"], ports: [8080] },
  ]);
  const bad = [
    file("json.json", "{"),
    file("shape.json", JSON.stringify({ registries: [{ name: "x", hosts: ["Evil.COM."] }] })),
    file("nul.json", JSON.stringify({ registries: [{ name: "x", hosts: ["evil.com\u0000.npmjs.org"] }] })),
    file("extra.json", JSON.stringify({ registries: [], more: true })),
    file("big.json", " ".repeat(70 * 1024)),
    dir,
    path.join(dir, "missing.json"),
  ];
  for (const at of bad) assert.throws(() => readRegistriesFile(at), /--registries-file/, at);
});

test("registries file: the refusal says what is wrong and where, in English, in the prestart (no full zod loaded)", () => {
  const at = path.join(mkdtempSync(path.join(tmpdir(), "egress-registries-")), "bad.json");
  writeFileSync(at, JSON.stringify({ registries: [{ name: "x", hosts: [], ports: [0] }], more: true }));
  // A child that loads the registries module alone, as the prestart does: zod/mini there, no locale of its own.
  const module = path.resolve(import.meta.dirname, "../../bridge/egress/registries.ts");
  const code = `const { readRegistriesFile } = await import(${JSON.stringify(module)});
try { readRegistriesFile(${JSON.stringify(at)}); } catch (error) { process.stdout.write(error.message); }`;
  const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
    env: { PATH: process.env.PATH },
    encoding: "utf8",
  });
  assert.equal(child.status, 0, child.stderr);
  assert.equal(
    child.stdout,
    [
      `--registries-file ${at}: ✖ Unrecognized key: "more"`,
      "✖ Too small: expected array to have >=1 items",
      "  → at registries[0].hosts",
      "✖ Too small: expected number to be >=1",
      "  → at registries[0].ports[0]",
    ].join("\n"),
  );
});

// ------------------------------------------------------------------ through the real proxy

/** An HTTP origin on loopback that counts requests. */
async function origin() {
  let hits = 0;
  const server = createServer((socket: Socket) => {
    socket.once("data", () => {
      hits += 1;
      socket.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  after(() => server.close());
  return { port: (server.address() as AddressInfo).port, hits: () => hits };
}

function get(proxyPort: number, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port: proxyPort, method: "GET", path: url });
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

test("egress service: the proxy on a prestart-bound listener asks, passes once, keeps a session grant", async () => {
  const h = coreHarness();
  await h.deliver();
  h.core.attach("person");
  const target = await origin();
  const listener = await bindEgressListener();
  const records: EgressRecord[] = [];
  const service = new EgressService({
    listener,
    networkMode: () => "registries",
    policy: () => "auto",
    registries: DEFAULT_REGISTRIES,
    grants: h.core.grantStore,
    ask: (question, signal) => h.core.askPerson(question, signal),
    log,
    // The stand-in destination `origin.test` is this loopback origin (only tests let the proxy reach loopback).
    proxy: {
      resolve: async () => ["127.0.0.1"],
      allowInternal: (a) => a === "127.0.0.1",
      onDecision: (record) => records.push(record),
    },
  });
  after(() => service.close());
  const url = `http://origin.test:${target.port}/`;
  const answerWhenAsked = async (choice: string, commandId: string) => {
    const seen = h.sink.of("extension_ui_request").length;
    while (h.sink.of("extension_ui_request").length === seen) await settle();
    return answerLast(h, choice, commandId);
  };
  const first = get(listener.address.port, url);
  const dialog = await answerWhenAsked(APPROVAL_CHOICES.once, "a1");
  assert.match(String(dialog.title), new RegExp(`origin\\.test:${target.port}`));
  assert.deepEqual(await first, { status: 200, body: "ok" });
  assert.equal(target.hits(), 1);
  const second = get(listener.address.port, url);
  await answerWhenAsked(APPROVAL_CHOICES.deny, "a2");
  assert.equal((await second).status, 403);
  assert.equal(target.hits(), 1, "denied: never reached");
  const third = get(listener.address.port, url);
  await answerWhenAsked(APPROVAL_CHOICES.session, "a3");
  assert.equal((await third).status, 200);
  assert.equal((await get(listener.address.port, url)).status, 200, "granted: no dialog");
  assert.equal(h.sink.of("extension_ui_request").length, 3);
  assert.equal(target.hits(), 3);
  // The audit: every decision, with the rule or grant that made it.
  const grantId = String((h.core.snapshot().grants ?? [])[0]?.id);
  assert.deepEqual(
    records.map((r) => [r.allow, r.rule]),
    [
      [true, "person-once"],
      [false, "person-deny"],
      [true, `grant:${grantId}`],
      [true, `grant:${grantId}`],
    ],
  );
});

test("egress listener: a connection made before the proxy takes the listener over is served after", async () => {
  const h = coreHarness();
  await h.deliver();
  const listener = await bindEgressListener();
  const early = get(listener.address.port, "http://registry.npmjs.org:8/");
  await settle();
  const service = new EgressService({
    listener,
    networkMode: () => "lockdown",
    policy: () => "auto",
    registries: DEFAULT_REGISTRIES,
    grants: h.core.grantStore,
    ask: (question, signal) => h.core.askPerson(question, signal),
    log,
  });
  after(() => service.close());
  const answer = await early;
  assert.equal(answer.status, 403);
  assert.match(answer.body, /locked down/);
  assert.equal(service.proxy.address?.port, listener.address.port);
});

test("egress service: close ends open connections and a dialog waiting on one (shutdown does not wait for tools)", async () => {
  const h = coreHarness();
  await h.deliver();
  h.core.attach("person");
  const listener = await bindEgressListener();
  const service = new EgressService({
    listener,
    networkMode: () => "registries",
    policy: () => "auto",
    registries: DEFAULT_REGISTRIES,
    grants: h.core.grantStore,
    ask: (question, signal) => h.core.askPerson(question, signal),
    log,
  });
  const waiting = get(listener.address.port, "http://example.test/").catch((error: Error) => error);
  while (h.core.pendingDialogs().length === 0) await settle();
  await service.close();
  assert.ok((await waiting) instanceof Error, "the tool's connection was ended");
  assert.deepEqual(h.core.pendingDialogs(), [], "its dialog was withdrawn");
  assert.equal(h.sink.of("dialog_closed").at(-1)?.reason, "cancelled");
});
