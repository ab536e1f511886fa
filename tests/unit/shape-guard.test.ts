// The patch guard fails closed: every one-byte change that could make the reviewed patch wrong stops it,
// and the failure names the check. All of this runs on throwaway copies (tests/support/fixtures/patch-tree.ts),
// never on the shared node_modules.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { checkPatchedPi } from "../../agent-runtime/pi-patch-status.ts";
import {
  guardScript,
  makePatchTree,
  readManifest,
  repoRoot,
  runNode,
  targetFile,
} from "../support/fixtures/patch-tree.ts";

const manifest = await readManifest();
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const modules = (root: string, ...parts: string[]) =>
  path.join(root, "node_modules", "@earendil-works", ...parts);
const rpcMode = (root: string) => targetFile(root, manifest);
const patchPackageBin = path.join(repoRoot, "node_modules", "patch-package", "index.js");

/** Changes one byte: the character at `at` inside the (unique) `anchor` becomes `replacement`. */
async function mutate(file: string, anchor: string, at = 0, replacement = "x"): Promise<void> {
  const content = await readFile(file, "utf8");
  const index = content.indexOf(anchor);
  assert.ok(
    index !== -1 && content.indexOf(anchor, index + 1) === -1,
    `anchor ${anchor} must be unique in ${file}`,
  );
  assert.notEqual(content[index + at], replacement);
  await writeFile(file, content.slice(0, index + at) + replacement + content.slice(index + at + 1));
}

function guard(command: "apply" | "check", root: string) {
  const result = runNode([guardScript, command, "--root", root], root);
  const failures = result.output.split("\n").filter((line) => / FAILED: /.test(line));
  return { ...result, failures };
}

/** The guard failed, and every failure line starts with the stage and the check it names. */
function assertFailed(result: ReturnType<typeof guard>, stage: string, checks: RegExp[]): void {
  assert.equal(result.status, 1, result.output);
  for (const check of checks) {
    assert.ok(
      result.failures.some((line) => check.test(line)),
      `expected a failure line matching ${check}; got:\n${result.output}`,
    );
  }
  for (const line of result.failures) assert.match(line, new RegExp(`^pi-patches: ${stage} FAILED: `), line);
}

test("a pristine tree: apply runs pre-check, patch-package, post-check; re-running and check succeed", async (t) => {
  const root = await makePatchTree(t, "pristine");
  const first = guard("apply", root);
  assert.equal(first.status, 0, first.output);
  assert.match(first.output, /pre-check passed/);
  assert.match(first.output, /patch-package passed/);
  assert.match(first.output, /post-check passed/);
  assert.equal(sha256(await readFile(rpcMode(root))), manifest.target.patchedSha256);
  // Idempotent: an already patched tree is verified, not patched again.
  const again = guard("apply", root);
  assert.equal(again.status, 0, again.output);
  assert.match(again.output, /post-check \(already patched\) passed/);
  assert.doesNotMatch(again.output, /patch-package:/);
  const check = guard("check", root);
  assert.equal(check.status, 0, check.output);
  // check does not patch: a pristine tree fails it.
  const pristine = await makePatchTree(t, "pristine");
  assertFailed(guard("check", pristine), "post-check", [
    /^pi-patches: post-check FAILED: patched file: /,
    /markers: /,
  ]);
});

test("one byte changed inside a hunk's context fails the pre-check (and nothing is patched)", async (t) => {
  const root = await makePatchTree(t, "pristine");
  await mutate(rpcMode(root), 'parsed.type === "extension_ui_response") {', 1);
  const before = await readFile(rpcMode(root));
  const result = guard("apply", root);
  assertFailed(result, "pre-check", [
    /pristine file: .*rpc-mode\.js sha256 [0-9a-f]{64} != expected .*\(upstream file changed\)/,
    /region rpc\.handleInputLine \(.*rpc-mode\.js:\d+-\d+\): normalised sha256/,
  ]);
  assert.deepEqual(await readFile(rpcMode(root)), before);
});

test("one byte changed outside the hunks but inside an anchored region: patch-package would apply it, the guard refuses", async (t) => {
  const root = await makePatchTree(t, "pristine");
  // Inside `case "prompt"`, far from hunk 4's context lines.
  await mutate(rpcMode(root), ".prompt(command.message, {", 16);
  const result = guard("apply", root);
  assertFailed(result, "pre-check", [/pristine file: /, /region rpc\.handleCommand\.head\+queueCases /]);
  // The reason the guard exists: bare patch-package, even with --error-on-fail, applies on this tree.
  const bare = runNode([patchPackageBin, "--error-on-fail"], root);
  assert.equal(bare.status, 0, bare.output);
});

test("one byte changed outside every region is caught by the whole-file hash", async (t) => {
  const root = await makePatchTree(t, "pristine");
  await mutate(rpcMode(root), "RPC mode: Headless operation", 0, "r");
  const result = guard("apply", root);
  assertFailed(result, "pre-check", [/pristine file: /]);
  assert.equal(result.failures.length, 1, result.output);
});

test("one byte changed in an agent-core dependency region fails before and after patching", async (t) => {
  const pristine = await makePatchTree(t, "pristine");
  await mutate(
    modules(pristine, "pi-agent-core", "dist", "agent.js"),
    "this.messages = this.messages.slice(1);",
    36,
    "2",
  );
  assertFailed(guard("apply", pristine), "pre-check", [
    /^pi-patches: pre-check FAILED: region core\.PendingMessageQueue /,
  ]);

  const patched = await makePatchTree(t, "patched");
  await mutate(
    modules(patched, "pi-agent-core", "dist", "agent.js"),
    "getFollowUpMessages: async () => this.followUpQueue.drain(),",
    43,
    "D",
  );
  const check = guard("check", patched);
  assertFailed(check, "post-check", [/region core\.Agent\.loopQueueHooks /]);
  // The already-patched fast path runs the same post-check.
  assertFailed(guard("apply", patched), "post-check \\(already patched\\)", [
    /region core\.Agent\.loopQueueHooks /,
  ]);
});

test("one byte changed in the patched output fails the post-check: hash, parse and import", async (t) => {
  const root = await makePatchTree(t, "patched");
  await mutate(rpcMode(root), "const patchFailure = (id, command, code, message, data) => {", 19, "x");
  assertFailed(guard("check", root), "post-check", [
    /patched file: .*rpc-mode\.js sha256 [0-9a-f]{64} != expected .*\(patched output differs\)/,
    /node --check: patched file does not parse/,
    /import: patched module failed to load/,
  ]);
  // apply will not "fix" it either: the file is neither the reviewed pristine nor the reviewed patched one.
  assertFailed(guard("apply", root), "pre-check", [/pristine file: /]);
});

test("version drift of Pi or a dependency fails the guard", async (t) => {
  const root = await makePatchTree(t, "pristine");
  await mutate(modules(root, "pi-agent-core", "package.json"), '"version": "0.84.2"', 17, "4");
  assertFailed(guard("apply", root), "pre-check", [
    /^pi-patches: pre-check FAILED: versions: @earendil-works\/pi-agent-core installed 0\.84\.4 != pinned 0\.84\.2$/,
  ]);

  const patched = await makePatchTree(t, "patched");
  await mutate(modules(patched, "pi-coding-agent", "package.json"), '"version": "0.84.2"', 17, "3");
  assertFailed(guard("check", patched), "post-check", [
    /versions: @earendil-works\/pi-coding-agent installed 0\.84\.3 != pinned 0\.84\.2/,
  ]);
});

test("a missing or malformed manifest fails closed", async (t) => {
  const root = await makePatchTree(t, "pristine");
  const file = path.join(root, "patches", "manifest.json");
  const parsed = JSON.parse(await readFile(file, "utf8"));
  parsed.regions[0].sha256 = "not-a-hash";
  await writeFile(file, JSON.stringify(parsed));
  const result = runNode([guardScript, "apply", "--root", root], root);
  assert.equal(result.status, 1, result.output);
  assert.match(result.output, /^pi-patches: FAILED: manifest .* is malformed: regions\[0\] must be/m);
  const usage = runNode([guardScript, "regenerate", "--root", root], root);
  assert.equal(usage.status, 1);
  assert.match(usage.output, /usage: node scripts\/pi-patches\.mjs apply\|check\|print/);
});

test("print recomputes every manifest value from a pristine tree (for a maintainer; it writes nothing)", async (t) => {
  const root = await makePatchTree(t, "pristine");
  const manifestFile = path.join(root, "patches", "manifest.json");
  const before = await readFile(manifestFile);
  const result = spawnSync(process.execPath, [guardScript, "print", "--root", root], { encoding: "utf8" });
  assert.equal(result.status, 0, result.stderr);
  const printed = JSON.parse(result.stdout);
  const full = JSON.parse(before.toString("utf8"));
  assert.deepEqual(printed.packages, full.packages);
  assert.deepEqual(printed.patchFile, full.patchFile);
  assert.equal(printed.target.pristineSha256, full.target.pristineSha256);
  assert.equal(printed.target.patchedSha256, full.target.patchedSha256);
  assert.deepEqual(
    printed.regions.map((r: { name: string; sha256: string }) => [r.name, r.sha256]),
    full.regions.map((r: { name: string; sha256: string }) => [r.name, r.sha256]),
  );
  assert.deepEqual(await readFile(manifestFile), before);
  assert.equal(sha256(await readFile(rpcMode(root))), manifest.target.pristineSha256);
});

test("every install is patched and verified: postinstall runs the guard, patch-package is a production dependency (npm ci --omit=dev patches too)", async () => {
  const pkg = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8"));
  assert.equal(pkg.scripts.postinstall, "node scripts/node-guard.mjs && node scripts/pi-patches.mjs apply");
  assert.equal(pkg.dependencies["patch-package"], "8.0.1");
  assert.equal(pkg.devDependencies?.["patch-package"], undefined);
  const lock = JSON.parse(await readFile(path.join(repoRoot, "package-lock.json"), "utf8"));
  const entry = lock.packages["node_modules/patch-package"];
  assert.equal(entry.version, "8.0.1");
  assert.notEqual(entry.dev, true, "patch-package must not be dev-only in the lockfile (npm ci --omit=dev)");
  // The shared checkout itself is patched and verified (the integration tests rely on it).
  assert.equal(
    checkPatchedPi(path.join(repoRoot, "node_modules", ...manifest.target.package.split("/"))).ok,
    true,
  );
});
