// The bounded git object reader and what the gate derives from it, checked against git itself: the paths a
// revision holds and the paths commits change, from loose objects and from packs (with deltas); the index; and
// the verdicts on history reads and checkouts.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import {
  allRefs,
  changesOf,
  GitObjects,
  history,
  indexPaths,
  resolveRevision,
} from "../../agent-runtime/gate/git-objects.ts";
import type { PathContext } from "../../agent-runtime/gate/path-context.ts";
import { repositorySecret, revisionWritesGate } from "../../agent-runtime/gate/repository-content.ts";
import { fakeHex } from "../support/fake-secrets.ts";
import { buildFixture } from "../support/fixture-workspace.ts";
import { tempDir } from "../support/workspace.ts";

const ENV = `API_TOKEN=tok_live_${fakeHex(16)}\n`;

async function repository(t: import("node:test").TestContext) {
  const root = realpathSync(await tempDir(t, "gate-repo-"));
  const roots = { ws: path.join(root, "ws"), home: path.join(root, "home") };
  await buildFixture(roots, {
    git: [
      { commit: { "src/a.ts": "a\n".repeat(200), "config/.env": ENV }, message: "one" },
      { commit: { "config/.env": null, "src/a.ts": `${"a\n".repeat(200)}b\n` }, message: "two" },
      { branch: "kit" },
      { commit: { ".pi/settings.json": "{}\n" }, message: "kit" },
      { checkout: "main" },
      { stage: { "staged/.env.local": ENV } },
    ],
  });
  const ctx: PathContext = {
    cwd: roots.ws,
    home: roots.home,
    agentDir: path.join(roots.home, ".pi", "agent"),
    policyPath: "/run/chat-ui-agent/policy",
    gateDirs: ["/opt/chat-ui-agent"],
  };
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", roots.ws, ...args], { env: { PATH: process.env.PATH, HOME: roots.home } })
      .toString()
      .trim();
  return { ws: roots.ws, ctx, git };
}

function expectSameAsGit(ws: string, git: (...a: string[]) => string) {
  const objects = new GitObjects(path.join(ws, ".git"), () => {});
  try {
    const refs = allRefs(path.join(ws, ".git"), path.join(ws, ".git"));
    for (const revision of ["HEAD", "main", "kit", "HEAD~1", "kit^"]) {
      const id = resolveRevision(objects, path.join(ws, ".git"), revision, refs);
      assert.equal(id, git("rev-parse", revision), revision);
      const tree = objects.commit(id as string).tree;
      assert.deepEqual(
        objects
          .paths(tree)
          .filter((p) => !p.endsWith("/") && objects.lookup(tree, p)?.folder === false)
          .sort(),
        git("ls-tree", "-r", "--name-only", revision).split("\n").sort(),
        `${revision} tree`,
      );
    }
    for (const commit of history(objects, [git("rev-parse", "kit")])) {
      const changed = git("show", "--format=", "--name-only", "--no-renames", commit)
        .split("\n")
        .filter(Boolean);
      const ours = changesOf(objects, commit).filter(
        (p) => objects.lookup(objects.commit(commit).tree, p)?.folder !== true,
      );
      for (const file of changed) assert.ok(ours.includes(file), `${commit.slice(0, 8)} changes ${file}`);
    }
    assert.deepEqual(
      indexPaths(path.join(ws, ".git")).sort(),
      git("ls-files", "--cached").split("\n").sort(),
    );
  } finally {
    objects.close();
  }
}

test("trees, commits, refs and the index read as git reads them, from loose objects and from packs", async (t) => {
  const { ws, git } = await repository(t);
  expectSameAsGit(ws, git);
  git("gc", "-q", "--aggressive");
  git("pack-refs", "--all");
  expectSameAsGit(ws, git);
});

test("history, the index and revisions count as reads of the files inside; a revision's .pi/ is the gate's", async (t) => {
  const { ws, ctx, git } = await repository(t);
  const tick = () => {};
  const secret = (request: Parameters<typeof repositorySecret>[2], pathspecs: string[] = []) =>
    repositorySecret(ws, ctx, request, pathspecs, tick);
  assert.ok(
    "found" in secret({ what: "history", operands: [], all: false }),
    "log -p shows the deleted .env",
  );
  assert.ok("found" in secret({ what: "commits", operands: ["HEAD~1"] }));
  assert.ok("found" in secret({ what: "diff", operands: [] }), "the staged .env.local");
  assert.deepEqual(secret({ what: "history", operands: [], all: false }, ["src/a.ts"]), { clean: true });
  assert.deepEqual(secret({ what: "commits", operands: ["kit"] }), { clean: true });
  assert.ok("found" in secret({ what: "all-objects" }));
  git("gc", "-q");
  assert.ok("found" in secret({ what: "history", operands: ["main"], all: false }), "from packs too");
  assert.ok("tamper" in revisionWritesGate(ws, ctx, ["kit"], [], tick));
  assert.deepEqual(revisionWritesGate(ws, ctx, ["main"], [], tick), { clean: true });
  assert.deepEqual(
    revisionWritesGate(ws, ctx, ["kit"], ["src"], tick),
    { clean: true },
    "outside the pathspec",
  );
  assert.deepEqual(revisionWritesGate(ws, ctx, ["no-such-branch"], [], tick), { clean: true });
});

test("a damaged pack is unknown, never clean (and commits read before stay known: they cannot change)", async (t) => {
  const { ws, ctx, git } = await repository(t);
  git("gc", "-q");
  const pack = path.join(ws, ".git", "objects", "pack");
  const { readdir } = await import("node:fs/promises");
  for (const name of await readdir(pack)) await writeFile(path.join(pack, name), "broken");
  const verdict = repositorySecret(ws, ctx, { what: "history", operands: [], all: false }, [], () => {});
  assert.ok("unknown" in verdict, JSON.stringify(verdict));
  assert.ok("unknown" in revisionWritesGate(ws, ctx, ["kit"], [], () => {}));
});
