// The image's pruning rules (scripts/prune-runtime-modules.mjs; the image tests check the pruned tree itself):
// which dependencies stay, and which files nothing loads at run time.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { RUNTIME_EXTERNALS } from "../../scripts/build.mjs";
import { isStrippable, matchesExternal, runtimeManifest } from "../../scripts/prune-runtime-modules.mjs";

const root = path.resolve(import.meta.dirname, "..", "..");
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));

test("the runtime manifest keeps exactly the dependencies the bundles leave external, and the pins", () => {
  const manifest = runtimeManifest(pkg);
  assert.deepEqual(manifest.dependencies, { "@earendil-works/pi-coding-agent": "0.84.2" });
  assert.deepEqual(
    manifest.overrides,
    pkg.overrides,
    "the pi-* overrides stay, so npm keeps the lockfile's pins",
  );
  for (const gone of ["devDependencies", "scripts", "bin", "exports"])
    assert.equal(gone in manifest, false, gone);
  assert.deepEqual(RUNTIME_EXTERNALS, ["@earendil-works/*"]);
  assert.equal(matchesExternal("@earendil-works/pi-ai"), true);
  assert.equal(matchesExternal("@earendil-works-evil/x"), false);
  assert.equal(matchesExternal("fastify"), false);
  assert.equal(matchesExternal("left-pad", ["left-pad"]), true);
  assert.throws(() => runtimeManifest({ dependencies: { fastify: "5" } }), /no runtime external/);
});

test("maps and third-party TypeScript go; code, JSON, wasm, docs and Pi's own declarations stay", () => {
  for (const file of [
    "openai/index.js.map",
    "@earendil-works/pi-coding-agent/dist/cli.js.map",
    "openai/index.d.ts",
    "@google/genai/dist/genai.d.mts",
    "undici-types/fetch.d.cts",
    "openai/src/index.ts",
  ]) {
    assert.equal(isStrippable(file), true, file);
  }
  for (const file of [
    "openai/index.js",
    "openai/index.mjs",
    "openai/package.json",
    "koffi/build/koffi.node",
    "some/lib.wasm",
    "@earendil-works/pi-coding-agent/dist/index.d.ts",
    "@earendil-works/pi-coding-agent/docs/extensions.md",
    "@earendil-works/pi-coding-agent/examples/extensions/ssh.ts",
    "typescript-like/tsconfig.json",
  ]) {
    assert.equal(isStrippable(file), false, file);
  }
});
