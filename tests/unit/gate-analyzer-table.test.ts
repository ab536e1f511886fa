// The analyzer table: every program name belongs to one family (nothing shadowed), unlisted names get the
// explicit default, versioned names reach their family's analyzer.
import assert from "node:assert/strict";
import { test } from "node:test";
import { unlistedProgram } from "../../agent-runtime/gate/analyzers/common.ts";
import { ANALYZER_FAMILIES, analyzerFor, isListedProgram } from "../../agent-runtime/gate/analyzers/table.ts";
import { runAnalyzer } from "../support/recording-scan.ts";

test("no program name is claimed by two families (no shadowed entries)", () => {
  const owner = new Map<string, string>();
  const clashes: string[] = [];
  for (const [family, analyzers] of Object.entries(ANALYZER_FAMILIES)) {
    for (const name of Object.keys(analyzers)) {
      const previous = owner.get(name);
      if (previous) clashes.push(`${name}: ${previous} and ${family}`);
      owner.set(name, family);
    }
  }
  assert.deepEqual(clashes, []);
  assert.ok(owner.size > 400, `table has ${owner.size} programs`);
});

test("the awk family is one analyzer, whatever the implementation's name", () => {
  const awk = analyzerFor("awk");
  for (const name of ["gawk", "mawk", "nawk"]) assert.equal(analyzerFor(name), awk, name);
  for (const name of ["gawk", "mawk", "nawk", "awk"]) {
    const record = runAnalyzer(analyzerFor(name), name, ['BEGIN{system("id")}']);
    assert.ok(record.findings.classes().includes("UNKNOWN"), name);
  }
});

test("versioned interpreter names reach their family's analyzer; unknown names the explicit default", () => {
  assert.equal(analyzerFor("python3.12"), analyzerFor("python"));
  assert.equal(analyzerFor("node22"), analyzerFor("node"));
  assert.equal(analyzerFor("pip3.11"), analyzerFor("pip"));
  assert.equal(analyzerFor("perl5.36"), analyzerFor("perl"));
  assert.equal(analyzerFor("some-build-tool"), unlistedProgram);
  assert.equal(analyzerFor("python3-config"), unlistedProgram);
  assert.equal(isListedProgram("git"), true);
  assert.equal(isListedProgram("some-build-tool"), false);
});

test("an unlisted program is code the gate does not model; its operands are checked, computed hosts are exits", () => {
  const plain = runAnalyzer(unlistedProgram, "sometool", ["-p", "tsconfig.json", "--outDir=dist"]);
  assert.ok(plain.findings.has("runs-unmodeled"));
  assert.deepEqual([...plain.findings.causes], ["program"]);
  assert.deepEqual(
    plain.paths.map((p) => [p.path, p.access]),
    [
      ["tsconfig.json", "operand"],
      ["dist", "operand"],
    ],
  );
  for (const target of ["https://x.example/…", "….evil.example", "user@…:path"]) {
    const record = runAnalyzer(unlistedProgram, "tool", [target]);
    assert.ok(record.findings.has("sends"), target);
  }
  assert.equal(runAnalyzer(unlistedProgram, "tool", ["…"]).findings.has("sends"), false);
});

test("analyzers import only the scan interface and word helpers: nothing imports back into the classifier", async () => {
  const { readdir, readFile } = await import("node:fs/promises");
  const path = await import("node:path");
  const dir = path.join(import.meta.dirname, "..", "..", "agent-runtime", "gate", "analyzers");
  const allowed = new Set([
    "../shell-scan.ts",
    "../shell-words.ts",
    "../shell-options.ts",
    "../effects.ts",
    "../credential-variables.ts",
  ]);
  const offending: string[] = [];
  for (const file of await readdir(dir)) {
    const source = await readFile(path.join(dir, file), "utf8");
    for (const match of source.matchAll(/^import[^"]*"([^"]+)"/gm)) {
      const specifier = match[1] ?? "";
      if (!allowed.has(specifier) && !/^\.\/[\w-]+\.ts$/.test(specifier))
        offending.push(`${file}: ${specifier}`);
    }
  }
  assert.deepEqual(offending, []);
});
