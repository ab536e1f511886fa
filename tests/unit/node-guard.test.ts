// Every entry point refuses a Node older than 22.19 at once, in one line.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import path from "node:path";
import { test } from "node:test";
import { entries, outDir } from "../../scripts/build.mjs";

const root = path.resolve(import.meta.dirname, "..", "..");
// Pretends to be Node 20 before anything else loads: the same check a real old Node meets.
const fakeOldNode = `--import=data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.20.2"})`;

/** Real old Node binaries on PATH (not our node_modules/.bin one), if this machine has any. */
function oldNodes(): string[] {
  const found = spawnSync("which", ["-a", "node"], { encoding: "utf8" }).stdout.split("\n").filter(Boolean);
  return found.filter((bin) => {
    if (bin.includes("node_modules")) return false;
    const version = execFileSync(bin, ["--version"], { encoding: "utf8" }).trim().slice(1);
    const [major = 0, minor = 0] = version.split(".").map(Number);
    return major < 22 || (major === 22 && minor < 19);
  });
}

function assertRefused(result: ReturnType<typeof spawnSync>, program: string) {
  assert.equal(result.status, 1, `exit status; stderr: ${result.stderr}`);
  const stderr = String(result.stderr);
  assert.equal(stderr.trimEnd().split("\n").length, 1, `one line only: ${stderr}`);
  assert.match(
    stderr,
    new RegExp(
      `^${program.replace(".", "\\.")}: Node 20\\.\\d+\\.\\d+ is too old; Node >= 22\\.19 is required`,
    ),
  );
  assert.equal(String(result.stdout), "");
}

for (const entry of entries) {
  test(`bundle ${entry.output} refuses an old Node with one line`, () => {
    const bundle = path.join(outDir, entry.output);
    assertRefused(
      spawnSync(process.execPath, [fakeOldNode, bundle], { encoding: "utf8", timeout: 10_000 }),
      entry.output,
    );
    for (const bin of oldNodes()) {
      assertRefused(spawnSync(bin, [bundle], { encoding: "utf8", timeout: 10_000 }), entry.output);
    }
  });
}

test("npm-script guard (demo, build, test) refuses an old Node and passes this one", () => {
  const guard = path.join(root, "scripts", "node-guard.mjs");
  assertRefused(spawnSync(process.execPath, [fakeOldNode, guard, "demo"], { encoding: "utf8" }), "demo");
  for (const bin of oldNodes()) assertRefused(spawnSync(bin, [guard, "demo"], { encoding: "utf8" }), "demo");
  const ok = spawnSync(process.execPath, [guard, "demo"], { encoding: "utf8" });
  assert.equal(ok.status, 0, ok.stderr);
});

test("the test runner itself runs on Node >= 22.19 (npm ci provides it)", () => {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  assert.ok(major > 22 || (major === 22 && minor >= 19), process.versions.node);
});
