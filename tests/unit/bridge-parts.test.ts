// Unit tests of the bridge's pure parts: replay ring, idempotency, dialog answers, options, isolation.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { checkAnswer } from "../../bridge/dialogs.ts";
import { canonicalJson, IdempotencyStore } from "../../bridge/idempotency.ts";
import { decidePrincipals, parsePasswd } from "../../bridge/isolation.ts";
import { OptionsError, parseDuration, parseOptions } from "../../bridge/options.ts";
import type { PendingDialog } from "../../bridge/protocol.ts";
import { ReplayRing } from "../../bridge/replay-ring.ts";

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
  const store = new IdempotencyStore(3);
  assert.deepEqual(store.begin("a", { type: "prompt", id: "a", message: "x" }), { kind: "new" });
  assert.deepEqual(store.begin("a", { message: "x", id: "a", type: "prompt" }), { kind: "running" });
  assert.deepEqual(store.begin("a", { type: "prompt", id: "a", message: "y" }), { kind: "conflict" });
  store.complete("a", { type: "response", id: "a", success: true });
  assert.deepEqual(store.begin("a", { type: "prompt", id: "a", message: "x" }), {
    kind: "done",
    response: { type: "response", id: "a", success: true },
  });
  // Running entries are never evicted (a retry must not run again).
  for (const id of ["b", "c", "d", "e"]) store.begin(id, { id });
  assert.deepEqual(store.begin("b", { id: "b" }), { kind: "running" });
  assert.equal(canonicalJson({ b: [1, { d: 1, c: 2 }], a: null }), '{"a":null,"b":[1,{"c":2,"d":1}]}');
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
