// checkPatchedPi (what the health server trusts) and the install wiring that makes every `npm ci` patched.
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { build } from "esbuild";
import { checkPatchedPi } from "../../agent-runtime/pi-patch-status.ts";
import { makePatchTree, readManifest, repoRoot } from "../support/fixtures/patch-tree.ts";

const manifest = await readManifest();
const piDir = (root: string) => path.join(root, "node_modules", ...manifest.target.package.split("/"));
const rpcMode = (root: string) => path.join(piDir(root), manifest.target.file);

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
  assert.match((checkPatchedPi("/nonexistent") as { reason: string }).reason, /cannot read/);
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
  const text = result.outputFiles[0]!.text;
  assert.ok(text.includes(manifest.target.patchedSha256));
  // esbuild keeps a `// patches/manifest.json` path comment; what matters is that nothing loads it at run time.
  assert.doesNotMatch(text, /(from\s*|import\(|require\()["'][^"']*manifest\.json["']/);
});

test("every install is patched and verified: postinstall runs the guard, patch-package ships to production", async () => {
  const pkg = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8"));
  assert.equal(pkg.scripts.postinstall, "node scripts/node-guard.mjs && node scripts/pi-patches.mjs apply");
  assert.equal(pkg.dependencies["patch-package"], "8.0.1");
  assert.equal(pkg.devDependencies?.["patch-package"], undefined);
  const lock = JSON.parse(await readFile(path.join(repoRoot, "package-lock.json"), "utf8"));
  const entry = lock.packages["node_modules/patch-package"];
  assert.equal(entry.version, "8.0.1");
  assert.notEqual(entry.dev, true, "patch-package must not be dev-only in the lockfile (npm ci --omit=dev)");
  // The shared checkout itself is patched and verified (the integration tests rely on it).
  assert.equal(checkPatchedPi(piDir(repoRoot)).ok, true);
});
