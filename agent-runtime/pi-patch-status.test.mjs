// checkPatchedPi (what the health server trusts): only the reviewed patched file of the pinned version passes.
// (The install wiring that makes every `npm ci` patched is tested in tests/unit/shape-guard.test.ts.)
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { build } from "esbuild";
import { makePatchTree, readManifest, repoRoot } from "../tests/support/fixtures/patch-tree.ts";
import { checkPatchedPi } from "./pi-patch-status.ts";

const manifest = await readManifest();
const piDir = (root) => path.join(root, "node_modules", ...manifest.target.package.split("/"));
const rpcMode = (root) => path.join(piDir(root), manifest.target.file);

test("checkPatchedPi accepts only the reviewed patched file of the pinned version", async (t) => {
  const patched = await makePatchTree(t, "patched");
  assert.deepEqual(checkPatchedPi(piDir(patched)), { ok: true, sha256: manifest.target.patchedSha256 });

  const pristine = await makePatchTree(t, "pristine");
  const unpatched = checkPatchedPi(piDir(pristine));
  assert.equal(unpatched.ok, false);
  assert.match(!unpatched.ok ? unpatched.reason : "", /is the unpatched upstream file/);

  // One byte off.
  const content = await readFile(rpcMode(patched), "utf8");
  await writeFile(rpcMode(patched), content.replace("[pi-rpc-patch v1] BEGIN", "[pi-rpc-patch v1] BEGIn"));
  const mutated = checkPatchedPi(piDir(patched));
  assert.equal(mutated.ok, false);
  assert.match(!mutated.ok ? mutated.reason : "", /is an unreviewed file/);

  // Version drift with the right file still fails.
  await writeFile(rpcMode(patched), content);
  const pkgFile = path.join(piDir(patched), "package.json");
  const pkg = JSON.parse(await readFile(pkgFile, "utf8"));
  await writeFile(pkgFile, JSON.stringify({ ...pkg, version: "0.84.3" }));
  const drifted = checkPatchedPi(piDir(patched));
  assert.equal(drifted.ok, false);
  assert.match(!drifted.ok ? drifted.reason : "", /is 0\.84\.3, the patch is for 0\.84\.2/);

  await rm(rpcMode(pristine));
  const missing = checkPatchedPi(piDir(pristine));
  assert.match(!missing.ok ? missing.reason : "", /cannot read .*rpc-mode\.js/);
  assert.match(checkPatchedPi("/nonexistent").reason, /cannot read/);
});

test("a bundle of checkPatchedPi embeds the manifest's hash (no run-time read of patches/)", async () => {
  const result = await build({
    entryPoints: [path.join(repoRoot, "agent-runtime", "pi-patch-status.ts")],
    bundle: true,
    write: false,
    platform: "node",
    format: "esm",
    logLevel: "silent",
  });
  const text = result.outputFiles[0].text;
  assert.ok(text.includes(manifest.target.patchedSha256));
  // esbuild keeps a `// patches/manifest.json` path comment; what matters is that nothing loads it at run time.
  assert.doesNotMatch(text, /(from\s*|import\(|require\()["'][^"']*manifest\.json["']/);
});
