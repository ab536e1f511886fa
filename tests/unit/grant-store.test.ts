// Session grants: one store in the bridge, one file the gate reads; bounded, tied to Pi's session, revocable.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { findGrant, MAX_GRANTS, readGrantsFile } from "../../agent-runtime/policy/grants.ts";
import { GrantStore } from "../../bridge/grants/grant-store.ts";

const dir = mkdtempSync(path.join(tmpdir(), "grants-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = () => path.join(dir, `grants-${++n}.json`);
const command = (key: string) => ({
  kind: "command" as const,
  key,
  label: key,
  dialogId: "d1",
  by: "person",
});

describe("grant store", () => {
  it("adds once per kind and key, lists, revokes one or all, and tells about each change", () => {
    const changes: number[] = [];
    const store = new GrantStore({ sessionId: "s1" });
    store.onChange = (grants) => changes.push(grants.length);
    const a = store.add(command("npm test"));
    assert.equal(store.add(command("npm test")).id, a.id);
    store.add({
      kind: "destination",
      key: "registry.test:443",
      label: "registry.test:443",
      dialogId: null,
      by: null,
    });
    assert.equal(store.list().length, 2);
    assert.deepEqual(
      store.revoke({ id: a.id }).map((g) => g.key),
      ["npm test"],
    );
    assert.equal(store.revoke({ id: "g-0000000000000000" }).length, 0);
    assert.equal(store.revoke({ all: true }).length, 1);
    assert.deepEqual(changes, [1, 2, 1, 0]);
  });

  it("writes a file the gate reads (mode 0644), kept across a restart of the same session only", () => {
    const file = fresh();
    const store = new GrantStore({ file, sessionId: "s1" });
    store.add(command("make test"));
    assert.equal(statSync(file).mode & 0o777, 0o644);
    const read = readGrantsFile(file);
    assert.ok(read.ok);
    assert.equal(findGrant(read.file, "command", "make test", "s1")?.label, "make test");
    assert.equal(findGrant(read.file, "command", "make test", "s2"), undefined, "another session");
    assert.equal(findGrant(read.file, "destination", "make test", "s1"), undefined, "another kind");
    assert.equal(new GrantStore({ file, sessionId: "s1" }).list().length, 1, "same session: kept");
    assert.equal(new GrantStore({ file, sessionId: "s2" }).list().length, 0, "new session: none");
    assert.equal(
      readGrantsFile(file).ok &&
        (readGrantsFile(file) as { ok: true; file: { grants: unknown[] } }).file.grants.length,
      0,
    );
  });

  it("a session change ends every grant", () => {
    const store = new GrantStore({ file: fresh(), sessionId: "s1" });
    store.add(command("pytest"));
    store.setSession("s2");
    assert.equal(store.list().length, 0);
  });

  it("is bounded: the oldest grant goes first", () => {
    const store = new GrantStore({ sessionId: null });
    for (let i = 0; i < MAX_GRANTS + 5; i++) store.add(command(`cmd ${i}`));
    assert.equal(store.list().length, MAX_GRANTS);
    assert.equal(store.list()[0]?.key, "cmd 5");
  });
});

describe("grants file reader", () => {
  it("never blocks on a FIFO, and treats junk, oversized or missing files as no grants", () => {
    const fifo = path.join(dir, "fifo");
    execFileSync("mkfifo", [fifo]);
    assert.deepEqual(readGrantsFile(fifo), { ok: false, problem: "not a regular file" });
    const junk = fresh();
    writeFileSync(junk, "{not json");
    assert.equal(readGrantsFile(junk).ok, false);
    const big = fresh();
    writeFileSync(big, " ".repeat(600 * 1024));
    assert.deepEqual(readGrantsFile(big), { ok: false, problem: "oversized" });
    assert.deepEqual(readGrantsFile(path.join(dir, "missing")), { ok: false, problem: "missing" });
    const wrong = fresh();
    writeFileSync(wrong, JSON.stringify({ version: 1, sessionId: null, grants: [{ id: "x" }] }));
    assert.deepEqual(readGrantsFile(wrong), { ok: false, problem: "unexpected shape" });
  });
});
