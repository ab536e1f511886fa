// Unit tests of the bridge's pure parts: replay ring, idempotency, frame input, restart policy, dialog
// answers, options, isolation.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { checkAnswer } from "../../bridge/dialogs.ts";
import { capText, MAX_FRAME_DEPTH, nestsDeeperThan, usableId } from "../../bridge/frame-input.ts";
import { type CommandRecord, IdempotencyStore, payloadDigest } from "../../bridge/idempotency.ts";
import { decidePrincipals, parsePasswd } from "../../bridge/isolation.ts";
import { OptionsError, parseDuration, parseOptions } from "../../bridge/options.ts";
import type { PendingDialog } from "../../bridge/protocol.ts";
import { ReplayRing } from "../../bridge/replay-ring.ts";
import { RestartPolicy } from "../../bridge/restart-policy.ts";

test("replay ring: bounded by frames and bytes, contiguous, resumable exactly while frames are held", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 50 }),
      fc.integer({ min: 10, max: 2000 }),
      fc.array(fc.string({ maxLength: 40 }), { maxLength: 300 }),
      (maxFrames, maxBytes, payloads) => {
        const ring = new ReplayRing(maxFrames, maxBytes);
        for (const p of payloads) ring.append((seq) => JSON.stringify({ seq, p }));
        assert.equal(ring.headSeq, payloads.length);
        assert.ok(ring.size <= maxFrames);
        assert.ok(ring.bytes <= maxBytes || ring.size === 1);
        for (let s = ring.firstSeq; s <= ring.headSeq; s++)
          assert.equal(JSON.parse(ring.get(s)!.data.toString()).seq, s);
        assert.equal(ring.get(ring.firstSeq - 1), undefined);
        assert.equal(ring.canResumeFrom(ring.firstSeq - 1), true);
        assert.equal(ring.canResumeFrom(ring.headSeq), true);
        assert.equal(ring.canResumeFrom(ring.headSeq + 1), false);
        if (ring.firstSeq > 1) assert.equal(ring.canResumeFrom(ring.firstSeq - 2), false);
        assert.equal(ring.bytesAfter(ring.headSeq), 0);
      },
    ),
  );
});

test("idempotency: same payload → running then recorded; other payload → conflict; key order ignored", () => {
  const store = new IdempotencyStore({ maxEntries: 3 });
  assert.deepEqual(store.begin("a", { type: "prompt", id: "a", message: "x" }, "prompt"), { kind: "new" });
  assert.deepEqual(store.begin("a", { message: "x", id: "a", type: "prompt" }, "prompt"), {
    kind: "running",
  });
  assert.deepEqual(store.begin("a", { type: "prompt", id: "a", message: "y" }, "prompt"), {
    kind: "conflict",
  });
  store.complete("a", { type: "response", id: "a", success: true });
  assert.deepEqual(store.begin("a", { type: "prompt", id: "a", message: "x" }, "prompt"), {
    kind: "done",
    response: { type: "response", id: "a", success: true },
  });
  // Running entries are never evicted (a retry must not run again).
  for (const id of ["b", "c", "d", "e"]) store.begin(id, { id }, "get_state");
  assert.deepEqual(store.begin("b", { id: "b" }, "get_state"), { kind: "running" });
  assert.equal(
    payloadDigest({ b: [1, { d: 1, c: 2 }], a: null }),
    payloadDigest(JSON.parse('{"a":null,"b":[1,{"c":2,"d":1}]}')),
  );
  assert.notEqual(payloadDigest({ a: [1, 2] }), payloadDigest({ a: [2, 1] }));
  // "__proto__" is a key like any other (JSON.parse makes it an own property).
  assert.notEqual(
    payloadDigest(JSON.parse('{"__proto__":{"x":1}}')),
    payloadDigest(JSON.parse('{"__proto__":{"x":2}}')),
  );
});

test("idempotency keeps digests, never payloads: 20 distinct 10 MB commands stay within the byte budget", () => {
  const store = new IdempotencyStore({ maxBytes: 1024 * 1024 });
  const big = "x".repeat(10 * 1024 * 1024);
  for (let i = 0; i < 20; i++) {
    assert.equal(store.begin(`big-${i}`, { type: "prompt", message: `${i}${big}` }, "prompt").kind, "new");
    store.complete(`big-${i}`, { type: "response", id: `big-${i}`, success: true });
  }
  assert.ok(store.bytes < 16 * 1024, `store holds ${store.bytes} bytes`);
  // A response too large to keep whole is kept as a summary with its seq.
  store.begin("huge", { type: "get_messages" }, "get_messages");
  store.complete(
    "huge",
    { type: "response", id: "huge", command: "get_messages", success: true, data: big },
    77,
  );
  const done = store.begin("huge", { type: "get_messages" }, "get_messages");
  assert.equal(done.kind, "done");
  assert.deepEqual(done.kind === "done" ? done.response.data : undefined, {
    responseOmitted: true,
    responseSeq: 77,
  });
  // Within the byte budget, the oldest completed entries go first.
  const small = new IdempotencyStore({ maxBytes: 4096 });
  for (let i = 0; i < 100; i++) {
    small.begin(`s${i}`, { i }, "get_state");
    small.complete(`s${i}`, { type: "response", id: `s${i}`, success: true, data: "y".repeat(100) });
  }
  assert.ok(small.bytes <= 4096);
  assert.equal(small.begin("s99", { i: 99 }, "get_state").kind, "done");
  assert.equal(small.begin("s0", { i: 0 }, "get_state").kind, "new");
});

test("idempotency records replay into an equal store; running commands survive as running", () => {
  const records: CommandRecord[] = [];
  const store = new IdempotencyStore();
  store.onRecord = (r) => records.push(r);
  store.begin("done-1", { type: "prompt", message: "m" }, "prompt");
  store.complete("done-1", { type: "response", id: "done-1", command: "prompt", success: true });
  store.begin("inflight", { type: "bash", command: "touch x" }, "bash");
  const again = new IdempotencyStore();
  again.restore(records);
  assert.deepEqual(again.running(), [{ id: "inflight", command: "bash" }]);
  assert.equal(again.begin("done-1", { message: "m", type: "prompt" }, "prompt").kind, "done");
  assert.equal(again.begin("inflight", { type: "bash", command: "touch y" }, "bash").kind, "conflict");
  assert.deepEqual([...again.records()], [...store.records()]);
});

test("frame depth: a linear scan, strings (with escaped quotes and brackets) skipped", () => {
  assert.equal(nestsDeeperThan('{"a":[1,{"b":2}]}', 3), false);
  assert.equal(nestsDeeperThan('{"a":[1,{"b":2}]}', 2), true);
  assert.equal(nestsDeeperThan('{"a":"[[[[[[[[[[\\"}', 1), false);
  assert.equal(nestsDeeperThan('{"a":"\\"}', 1), false);
  assert.equal(nestsDeeperThan('{"a":""[[[[","b":[[]]}', 2), true);
  const deep = `${"[".repeat(200_000)}${"]".repeat(200_000)}`;
  assert.equal(nestsDeeperThan(deep, MAX_FRAME_DEPTH), true);
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 8 }), (value) => {
      const text = JSON.stringify(value);
      let depth = 0;
      let max = 0;
      const walk = (v: unknown, d: number) => {
        if (v !== null && typeof v === "object") {
          max = Math.max(max, d + 1);
          for (const child of Object.values(v)) walk(child, d + 1);
        }
      };
      walk(value, depth);
      depth = max;
      assert.equal(nestsDeeperThan(text, depth), false);
      if (depth > 0) assert.equal(nestsDeeperThan(text, depth - 1), true);
    }),
  );
  assert.equal(usableId("x".repeat(257)), undefined);
  assert.equal(usableId(""), undefined);
  assert.equal(usableId("ok"), "ok");
  assert.ok(capText("y".repeat(5_000_000)).length < 600);
});

test("restart policy: three quick restarts per ten minutes, then a crash loop retried with a long capped backoff until a Pi serves", () => {
  let now = 0;
  const policy = new RestartPolicy({}, () => now);
  const delays = () => policy.next().delayMs;
  assert.deepEqual([delays(), delays(), delays()], [250, 1000, 4000]);
  assert.equal(policy.inCrashLoop, false);
  assert.deepEqual(policy.next(), { delayMs: 10_000, crashLoop: true });
  assert.deepEqual(
    [delays(), delays(), delays(), delays(), delays(), delays()],
    [20_000, 40_000, 80_000, 160_000, 300_000, 300_000],
  );
  // Still a loop once the window has moved on: only a Pi that serves ends it.
  now += 60 * 60_000;
  assert.deepEqual(policy.next(), { delayMs: 300_000, crashLoop: true });
  policy.served();
  assert.equal(policy.inCrashLoop, false);
  now += 10 * 60_000;
  assert.equal(policy.count, 0);
  assert.deepEqual(policy.next(), { delayMs: 250, crashLoop: false });
});

test("dialog answers must match the kind and the offered options; cancelled is always valid", () => {
  const select: PendingDialog = { id: "d", method: "select", options: ["a", "b"], seq: 1 };
  const confirm: PendingDialog = { id: "d", method: "confirm", seq: 1 };
  const input: PendingDialog = { id: "d", method: "input", seq: 1 };
  assert.deepEqual(checkAnswer(select, { value: "a" }), { ok: true, answer: { value: "a" } });
  assert.equal(checkAnswer(select, { value: "c" }).ok, false);
  assert.equal(checkAnswer(select, { confirmed: true }).ok, false);
  assert.deepEqual(checkAnswer(confirm, { confirmed: false }), { ok: true, answer: { confirmed: false } });
  assert.equal(checkAnswer(confirm, { confirmed: "yes" }).ok, false);
  assert.equal(checkAnswer(confirm, { value: "true" }).ok, false);
  assert.equal(checkAnswer(confirm, {}).ok, false);
  assert.equal(checkAnswer(input, { value: "x".repeat(1024 * 1024 + 1) }).ok, false);
  assert.deepEqual(checkAnswer(input, { cancelled: true }), { ok: true, answer: { cancelled: true } });
  assert.equal(checkAnswer(input, { cancelled: false }).ok, false);
  assert.equal(checkAnswer(confirm, { cancelled: true, confirmed: true }).ok, false);
});

test("options: bridge flags parsed and validated, Pi flags forwarded, dangerous ones refused", () => {
  const o = parseOptions([
    "--mode",
    "rpc",
    "--listen",
    "127.0.0.1:9000",
    "--linger=2s",
    "--replay-bytes",
    "1MiB",
    "--provider",
    "scripted",
    "--model",
    "m",
  ]);
  assert.deepEqual(o.listen, { host: "127.0.0.1", port: 9000 });
  assert.equal(o.lingerMs, 2000);
  assert.equal(o.replayBytes, 1024 * 1024);
  assert.deepEqual(o.piArgs, ["--provider", "scripted", "--model", "m"]);
  assert.equal(parseOptions([]).detachedGraceMs, 600_000);
  assert.equal(parseDuration("30m", "x"), 1_800_000);
  assert.throws(() => parseOptions(["--listen", "0.0.0.0:80"]), OptionsError);
  assert.throws(() => parseOptions(["--listen", "10.0.0.1:80"]), OptionsError);
  assert.throws(() => parseOptions(["--extension", "x.mjs"]), OptionsError);
  assert.throws(() => parseOptions(["--approve"]), OptionsError);
  assert.throws(() => parseOptions(["--linger", "soon"]), OptionsError);
  assert.throws(() => parseOptions(["--replay-frames", "0"]), OptionsError);
  assert.deepEqual(parseOptions(["--listen", "[::1]:1"]).listen, { host: "::1", port: 1 });
  const durable = parseOptions(["--state-dir", "/srv/state", "--log-file", "/srv/log/bridge.log"]);
  assert.equal(durable.stateDir, "/srv/state");
  assert.equal(durable.logFile, "/srv/log/bridge.log");
  assert.deepEqual(durable.piArgs, []);
  // In network mode the bridge owns Pi's session; stdio mode forwards Pi's session flags as `pi` takes them.
  for (const flag of [
    "--session",
    "--session-id",
    "--session-dir",
    "--fork",
    "--continue",
    "-c",
    "--resume",
    "-r",
  ]) {
    assert.throws(() => parseOptions(["--listen", "127.0.0.1:1", flag, "x"]), OptionsError, flag);
  }
  assert.deepEqual(parseOptions(["--session-id", "abc"]).piArgs, ["--session-id", "abc"]);
  assert.deepEqual(parseOptions(["--listen", "127.0.0.1:1", "--no-session"]).piArgs, ["--no-session"]);
});

test("principals: three uids only as root with existing unprivileged agent and pi users; otherwise reasons", () => {
  const passwd =
    "root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000::/home/agent:/bin/sh\npi:x:999:999::/nonexistent:/bin/false\n";
  assert.equal(parsePasswd(passwd).length, 3);
  const base = { egid: 0, passwd: () => passwd, env: {} };
  const ok = decidePrincipals({ ...base, euid: 0, agentUser: "agent", piUser: undefined });
  assert.equal(ok.uidSeparation, true);
  assert.deepEqual(ok.reasons, []);
  assert.deepEqual(ok.tools, { user: "agent", uid: 1000, gid: 1000, home: "/home/agent", switchTo: true });
  assert.deepEqual(ok.pi, { user: "pi", uid: 999, gid: 999, home: "/nonexistent", switchTo: true });
  const cases = [
    { agentUser: undefined, piUser: undefined, euid: 0, reason: /no --agent-user/ },
    { agentUser: "agent", piUser: undefined, euid: 1000, reason: /not root/ },
    { agentUser: "ghost", piUser: undefined, euid: 0, reason: /ghost does not exist/ },
    { agentUser: "root", piUser: undefined, euid: 0, reason: /privileged/ },
    {
      agentUser: "agent",
      piUser: "nobody-here",
      euid: 0,
      reason: /nobody-here does not exist.*Pi runs as root/,
    },
    { agentUser: "agent", piUser: "agent", euid: 0, reason: /has the tools' uid/ },
  ];
  for (const c of cases) {
    const d = decidePrincipals({ ...base, euid: c.euid, agentUser: c.agentUser, piUser: c.piUser });
    assert.equal(d.uidSeparation, false, c.reason.source);
    assert.match(d.reasons.join("; "), c.reason);
  }
  const nonRoot = decidePrincipals({
    ...base,
    euid: 1000,
    egid: 1000,
    agentUser: "agent",
    piUser: undefined,
  });
  assert.equal(nonRoot.tools.uid, 1000);
  assert.equal(nonRoot.pi.uid, 1000);
  assert.equal(nonRoot.tools.switchTo, false);
});
