// `npm test` runs every test file of the repository exactly once (the seed's runtime-only
// `agent-runtime/*.test.mjs` included), with the human-facing output from node-test-reporter on stderr and the
// runner's own closing summary (`ℹ tests N`, `ℹ pass N`…) on stdout, where CI reads it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { globSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { tempDir } from "../support/workspace.ts";

const root = path.resolve(import.meta.dirname, "..", "..");
const scripts = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).scripts as Record<
  string,
  string
>;
const SUMMARY_REPORTER = "./scripts/test-summary-reporter.mjs";
const FAILURE_REPORTER = "./scripts/test-failure-reporter.mjs";

/** The `node … --test …` part of an npm script: its reporter/destination pairs and its quoted file globs. */
function testRun(script: string) {
  const run = script.split("&&").find((part) => part.includes(" --test "));
  assert.ok(run, `no node --test command in: ${script}`);
  const reporters = [...run.matchAll(/--test-reporter=(\S+)/g)].map((m) => m[1]);
  const destinations = [...run.matchAll(/--test-reporter-destination=(\S+)/g)].map((m) => m[1]);
  const globs = [...run.matchAll(/"([^"]+)"/g)].map((m) => m[1] ?? "");
  return { reporters, destinations, globs };
}

test("npm test runs every test file exactly once, the runtime-only agent-runtime/*.test.mjs included", () => {
  const { globs } = testRun(scripts.test ?? "");
  assert.ok(globs.includes("agent-runtime/*.test.mjs"), "the seed's runtime tests are part of npm test");
  const everyTestFile = globSync("**/*.test.{ts,mts,mjs,js}", {
    cwd: root,
    exclude: (name) => name === "node_modules" || name === "build" || name === ".git",
  }).sort();
  const matched = globs.flatMap((pattern) => globSync(pattern, { cwd: root }));
  const counts = new Map<string, number>();
  for (const file of matched) counts.set(file, (counts.get(file) ?? 0) + 1);
  assert.deepEqual(
    everyTestFile.filter((file) => counts.get(file) !== 1),
    [],
    "files run zero or several times",
  );
  assert.ok(globSync("agent-runtime/*.test.mjs", { cwd: root }).length >= 5);
});

test("the seed's runtime-only tests use no Docker and no tsx (plain node --test after npm ci)", () => {
  for (const file of globSync("agent-runtime/*.test.mjs", { cwd: root })) {
    const text = readFileSync(path.join(root, file), "utf8");
    assert.doesNotMatch(text, /dockerode|tests\/image|docker\//, file);
    assert.doesNotMatch(text, /from\s+["']tsx/, file);
  }
  assert.match(scripts["test:runtime"] ?? "", /^node --test .*"agent-runtime\/\*\.test\.mjs"$/);
});

test("every test script: node-test-reporter and the failure details on stderr, the runner's summary on stdout", () => {
  for (const name of ["test", "test:runtime", "test:unit", "test:integration", "test:image"]) {
    const { reporters, destinations } = testRun(scripts[name] ?? "");
    assert.deepEqual(reporters, ["node-test-reporter", FAILURE_REPORTER, SUMMARY_REPORTER], name);
    assert.deepEqual(destinations, ["stderr", "stderr", "stdout"], name);
  }
});

test("the summary reporter puts exactly the runner's closing totals on stdout, failures included", async (t) => {
  const dir = await tempDir(t, "reporter-");
  const file = path.join(dir, "sample.test.mjs");
  writeFileSync(
    file,
    'import { before, describe, it, test } from "node:test";\nimport assert from "node:assert/strict";\n' +
      'test("passes", (t) => t.diagnostic("a per-test diagnostic"));\n' +
      'test("fails", () => assert.equal(1, 2, "one is not two"));\n' +
      'describe("a suite", () => { before(() => { throw new Error("the image failed to build: BOOM"); }); it("x", () => {}); });\n' +
      // node-test-reporter lists failures early (with console.log) when nothing happens for 5 s.
      'test("is slow", () => new Promise((resolve) => setTimeout(resolve, 5500)));\n',
  );
  const { reporters, destinations } = testRun(scripts.test ?? "");
  const flags = reporters.flatMap((reporter, i) => [
    `--test-reporter=${reporter}`,
    `--test-reporter-destination=${destinations[i]}`,
  ]);
  const run = spawnSync(process.execPath, ["--test", ...flags, file], {
    cwd: root,
    encoding: "utf8",
    timeout: 60_000,
    // A top-level run: without NODE_TEST_CONTEXT, which makes a nested runner report to this one instead.
    env: Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("NODE_TEST"))),
  });
  assert.equal(run.status, 1, "a failing test fails the run");
  const lines = run.stdout.trimEnd().split("\n");
  assert.deepEqual(
    lines.map((line) => line.replace(/\d+(\.\d+)?$/, "N")),
    ["tests", "suites", "pass", "fail", "cancelled", "skipped", "todo", "duration_ms"].map((k) => `ℹ ${k} N`),
  );
  assert.ok(
    lines.includes("ℹ tests 4") && lines.includes("ℹ pass 2") && lines.includes("ℹ fail 1"),
    run.stdout,
  );
  assert.match(run.stderr, /Ran 4 tests/, "node-test-reporter's human output goes to stderr");
  // Why each failure failed reaches stderr too (node-test-reporter omits both of these).
  assert.match(run.stderr, /one is not two/);
  assert.match(run.stderr, /the image failed to build: BOOM/);
  assert.match(run.stderr, /a per-test diagnostic/);
  assert.doesNotMatch(run.stdout, /a per-test diagnostic/);
});
