// Extractions and patches are decided by the paths they write: the archive's members (tar, tar.gz, zip) and a
// patch's targets are read bounded; one that reaches the gate's files is blocked, a plain one is local work, one the
// gate cannot list asks. Members printed to stdout are reads of the files inside.
import assert from "node:assert/strict";
import { realpathSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import {
  archiveMembers,
  memberDestination,
  patchTargets,
  substitution,
} from "../../agent-runtime/gate/archive-members.ts";
import { decide } from "../../agent-runtime/gate/decide.ts";
import type { PathContext } from "../../agent-runtime/gate/path-context.ts";
import { buildFixture, type FixtureFile } from "../support/fixture-workspace.ts";
import { gateParser } from "../support/gate-parser.ts";
import { tempDir } from "../support/workspace.ts";

const parser = await gateParser();
async function workspace(t: import("node:test").TestContext, files: Record<string, FixtureFile>) {
  const root = realpathSync(await tempDir(t, "gate-archive-"));
  const roots = { ws: path.join(root, "ws"), home: path.join(root, "home") };
  await buildFixture(roots, { files });
  const context: PathContext = {
    cwd: roots.ws,
    home: roots.home,
    agentDir: path.join(roots.home, ".pi", "agent"),
    policyPath: "/run/chat-ui-agent/policy",
    gateDirs: ["/opt/chat-ui-agent"],
  };
  const bash = (command: string) =>
    decide({
      policy: "auto",
      toolName: "bash",
      input: { command },
      context,
      parser,
      egressGuard: "enforcing",
    });
  return { ws: roots.ws, bash };
}

const MEMBERS = { "src/a.ts": "a\n", "docs/readme.md": "r\n" };

test("tar, tar.gz and zip members are listed as stored; other formats are unknown", async (t) => {
  const { ws } = await workspace(t, {
    "a.tar": { archive: "tar", members: MEMBERS },
    "a.tgz": { archive: "tgz", members: MEMBERS },
    "a.zip": { archive: "zip", members: MEMBERS },
    "a.7z": "7z\xbc\xaf\x27\x1c",
  });
  for (const name of ["a.tar", "a.tgz", "a.zip"])
    assert.deepEqual(
      archiveMembers(path.join(ws, name), () => {}),
      { members: Object.keys(MEMBERS) },
      name,
    );
  assert.ok("unknown" in archiveMembers(path.join(ws, "a.7z"), () => {}));
  assert.ok("unknown" in archiveMembers(path.join(ws, "missing.tar"), () => {}));
});

test("members land where tar and unzip put them: stripped, transformed, never above the target unless told", () => {
  assert.equal(memberDestination("a/b/c", "/w", { strip: 1 }), "/w/b/c");
  assert.equal(memberDestination("/etc/x", "/w", {}), "/w/etc/x");
  assert.equal(memberDestination("/etc/x", "/w", { absolute: true }), "/etc/x");
  assert.equal(memberDestination("../x", "/w", {}), undefined);
  assert.equal(memberDestination("d/x", "/w", { junkPaths: true }), "/w/x");
  const prefix = substitution("s,^,.pi/extensions/,");
  assert.ok(prefix);
  assert.equal(memberDestination("x.ts", "/w", { transform: prefix }), "/w/.pi/extensions/x.ts");
  assert.equal(substitution("s/(a+)+$/x/"), undefined, "nested repetition is not evaluated");
});

test("patch targets: git and unified diffs, renames, -p and no -p", () => {
  const diff = [
    "diff --git a/src/x.ts b/src/y.ts",
    "rename from src/x.ts",
    "rename to src/y.ts",
    "--- a/lib/old.c\t2024-01-01",
    "+++ b/lib/new.c\t2024-01-01",
    "--- /dev/null",
    "+++ b/.pi/settings.json",
  ].join("\n");
  const p1 = patchTargets(diff, 1);
  for (const file of ["src/y.ts", "lib/new.c", ".pi/settings.json"]) assert.ok(p1.includes(file), file);
  assert.ok(patchTargets(diff, undefined).includes("settings.json"), "no -p: the base name");
});

test("extraction and patches are decided by where they write", async (t) => {
  const { bash } = await workspace(t, {
    "plain.tar": { archive: "tar", members: MEMBERS },
    "kit.tgz": { archive: "tgz", members: { ".pi/extensions/x.ts": "1\n" } },
    "hook.zip": { archive: "zip", members: { ".git/hooks/pre-commit": "#!/bin/sh\n" } },
    "env.tar": { archive: "tar", members: { "srv/.env": "A=1\n" } },
    "ok.diff": "--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1 +1 @@\n-a\n+b\n",
    "pi.diff": "--- a/.pi/settings.json\n+++ b/.pi/settings.json\n@@ -0,0 +1 @@\n+{}\n",
    "blob.xz": "\xfd7zXZ\x00",
  });
  assert.equal(bash("tar xf plain.tar").decision, "allow");
  assert.equal(bash("tar -xzf kit.tgz").decision, "block");
  assert.equal(bash("tar -xf plain.tar --transform 's,^,.pi/,'").decision, "block");
  assert.equal(bash("unzip -o hook.zip").decision, "confirm", "a git hook is run later");
  assert.equal(bash("tar -xOf env.tar").decision, "confirm", "printing a member named .env reads it");
  assert.equal(bash("tar -xOf plain.tar").decision, "allow");
  assert.equal(bash("patch -p1 < ok.diff").decision, "allow");
  assert.equal(bash("patch -p1 < pi.diff").decision, "block");
  assert.equal(bash("git apply pi.diff").decision, "block");
  assert.equal(bash("tar xJf blob.xz").decision, "confirm", "a format the gate does not read");
  assert.equal(bash("curl -s https://x.example/a.tgz | tar xz").decision, "confirm", "from stdin: unlisted");
});
