// Class 2 of issue 10: searches over folders that hold credentials. The exclude config is generated from the
// rules and real ripgrep honours it wherever the search is rooted; what it cannot cover (an explicit file, a
// secret folder as root, a cwd inside a secret folder, a model glob that re-includes files, since later globs
// win) is confirmed; and the result filter withholds any line that still comes from a credential file.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { decide } from "../../agent-runtime/gate/decide.ts";
import { type PathContext, pathContextFromEnv } from "../../agent-runtime/gate/path-context.ts";
import { matchComponent } from "../../agent-runtime/gate/path-patterns.ts";
import { loadPiPaths } from "../../agent-runtime/gate/pi-paths.ts";
import {
  cwdDefeatsExcludes,
  installSearchExcludes,
  RG_EXCLUDE_FILE,
  type SearchExcludeState,
  searchExcludeConfig,
  searchExcludeProblem,
} from "../../agent-runtime/gate/search-excludes.ts";
import { expandBraces, globCouldSelect } from "../../agent-runtime/gate/search-glob.ts";
import { filterGrepText } from "../../agent-runtime/gate/search-result-filter.ts";
import { probesFor, SENSITIVE_RULES } from "../../agent-runtime/gate/sensitive-paths.ts";
import { tempDir } from "../support/workspace.ts";

const paths = await loadPiPaths();

function ripgrep(args: string[], cwd: string, config: string): string {
  const run = spawnSync("rg", ["--json", "--line-number", "--color=never", "--hidden", ...args], {
    cwd,
    env: { PATH: process.env.PATH, RIPGREP_CONFIG_PATH: config },
    encoding: "utf8",
  });
  if (run.error)
    throw new Error(`ripgrep is needed for this test (apt-get install ripgrep): ${run.error.message}`);
  assert.ok(run.status === 0 || run.status === 1, `rg ${args.join(" ")}: ${run.stderr}`);
  return run.stdout;
}

/** A HOME and a workspace with every rule's example credential files planted, plus ordinary files. */
async function plantedTree(t: import("node:test").TestContext) {
  const root = await tempDir(t, "gate-search-");
  const home = path.join(root, "home");
  const ws = path.join(root, "ws");
  await mkdir(path.join(ws, "src"), { recursive: true });
  await mkdir(home, { recursive: true });
  const ctx: PathContext = {
    cwd: ws,
    home,
    agentDir: path.join(home, ".pi", "agent"),
    policyPath: "/nonexistent",
    gateDirs: [],
  };
  const secrets = [
    ...probesFor(ctx).map(({ probe }) => probe),
    ...[
      ".npmrc",
      ".envrc",
      "credentials.json",
      ".pgpass",
      ".vault-token",
      "sub/.env.production",
      "sub/id_ed25519",
      "keys/tls.key",
    ].map((name) => path.join(ws, name)),
  ].filter((file) => file.startsWith(root));
  for (const [i, file] of secrets.entries()) {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, `NEEDLE SECRET-${i}\n`);
  }
  await writeFile(path.join(ws, "src", "app.ts"), "NEEDLE plain-ts\n");
  await writeFile(path.join(ws, "package.json"), '{"NEEDLE": "plain-json"}\n');
  await writeFile(path.join(ws, ".env.example"), "NEEDLE plain-template\n");
  await writeFile(path.join(home, "notes.md"), "NEEDLE plain-home\n");
  const config = path.join(root, RG_EXCLUDE_FILE);
  await writeFile(config, searchExcludeConfig());
  return { root, home, ws, ctx, secrets, config };
}

test("the config is one --glob=!… line per rule pattern, and the build ships exactly this text", async () => {
  const text = searchExcludeConfig();
  const lines = text.split("\n").filter((line) => line && !line.startsWith("#"));
  assert.ok(lines.length >= SENSITIVE_RULES.length);
  for (const line of lines) assert.match(line, /^--glob=!\S+$/);
  assert.ok(lines.includes("--glob=!.env"));
  assert.ok(lines.includes("--glob=!**/.aws/**"));
  // scripts/build.mjs writes the same function's output beside the bundles (checked when a build exists).
  const shipped = await readFile(
    path.join(import.meta.dirname, "..", "..", "build", "opt", "chat-ui-agent", RG_EXCLUDE_FILE),
    "utf8",
  ).catch(() => undefined);
  if (shipped !== undefined) assert.equal(shipped, text);
});

test("real ripgrep skips every planted credential file, rooted at HOME, the workspace or above both, from any ordinary cwd", async (t) => {
  const { root, home, ws, config, secrets } = await plantedTree(t);
  assert.ok(secrets.length >= 25, `${secrets.length} planted`);
  for (const searchRoot of [home, ws, root]) {
    for (const cwd of [ws, home, root, "/"]) {
      for (const glob of [[], ["--glob", "*.ts"], ["--glob", "!*.md"], ["--glob", "src/**"]]) {
        const out = ripgrep([...glob, "--", "NEEDLE", searchRoot], cwd, config);
        assert.doesNotMatch(out, /SECRET-/, `rg ${glob.join(" ")} NEEDLE ${searchRoot} from ${cwd}`);
      }
    }
  }
  // And it still finds ordinary files (the excludes are not "skip everything").
  const out = ripgrep(["--", "NEEDLE", root], ws, config);
  for (const marker of ["plain-ts", "plain-json", "plain-home"]) assert.match(out, new RegExp(marker));
  // Over-exclusion on purpose: ripgrep cannot re-include a template (a positive glob turns on its whitelist mode).
  assert.doesNotMatch(out, /plain-template/);
});

test("what the excludes cannot cover is real (ripgrep leaks it) and the gate confirms it", async (t) => {
  const { home, ws, ctx, config } = await plantedTree(t);
  const leaks = (args: string[], cwd = ws) => /SECRET-/.test(ripgrep([...args], cwd, config));
  const search: SearchExcludeState = { path: config, searchCwd: ws, assumed: true };
  const grep = (input: Record<string, unknown>, searchCwd = ws) =>
    decide({
      policy: "read-only",
      toolName: "grep",
      input: { pattern: "NEEDLE", ...input },
      context: pathContextFromEnv(ws, { HOME: home, PI_CODING_AGENT_DIR: ctx.agentDir }),
      parser: undefined,
      paths,
      search: { ...search, searchCwd },
    });
  const cases: Array<{ input: Record<string, unknown>; rg: string[]; cwd?: string }> = [
    // An explicit file is searched even though a glob excludes it.
    { input: { path: "~/.aws/credentials" }, rg: ["--", "NEEDLE", path.join(home, ".aws", "credentials")] },
    { input: { path: ".env" }, rg: ["--", "NEEDLE", path.join(ws, ".env")] },
    // A model glob comes after the config: the last matching glob wins.
    { input: { glob: "*.json" }, rg: ["--glob", "*.json", "--", "NEEDLE", ws] },
    { input: { glob: "**" }, rg: ["--glob", "**", "--", "NEEDLE", ws] },
    { input: { glob: "{.env,x}" }, rg: ["--glob", "{.env,x}", "--", "NEEDLE", ws] },
    { input: { glob: ".en[v]" }, rg: ["--glob", ".en[v]", "--", "NEEDLE", ws] },
    { input: { glob: "*.key" }, rg: ["--glob", "*.key", "--", "NEEDLE", ws] },
    { input: { glob: "*" }, rg: ["--glob", "*", "--", "NEEDLE", ws] },
    { input: { glob: "credentials", path: "~" }, rg: ["--glob", "credentials", "--", "NEEDLE", home] },
    // ripgrep strips its cwd before matching: from inside ~/.aws, `**/.aws/**` no longer matches.
    {
      input: { path: "~/.aws" },
      rg: ["--", "NEEDLE", path.join(home, ".aws")],
      cwd: path.join(home, ".aws"),
    },
  ];
  for (const { input, rg, cwd } of cases) {
    assert.ok(leaks(rg, cwd), `ripgrep leaks for ${JSON.stringify(input)} (else this case proves nothing)`);
    const decision = grep(input, cwd ?? ws);
    assert.equal(decision.decision, "confirm", `${JSON.stringify(input)}: ${JSON.stringify(decision)}`);
    assert.ok(decision.classes.includes("SECRET"));
  }
  // A cwd inside a secret folder makes every search over a folder holding credentials a confirm.
  assert.match(String(cwdDefeatsExcludes(path.join(home, ".config", "git"))), /cannot match/);
  assert.equal(
    grep({}, path.join(home, ".aws")).decision,
    "confirm",
    JSON.stringify(grep({}, path.join(home, ".aws"))),
  );
  assert.equal(cwdDefeatsExcludes(ws), undefined);
  // Searches the excludes do cover are allowed in every policy, read-only included.
  for (const input of [
    {},
    { path: "~" },
    { path: "src" },
    { glob: "*.ts" },
    { glob: "!*.md" },
    { glob: "**/*.{ts,tsx}" },
    { glob: "package.json" },
  ]) {
    const decision = grep(input);
    assert.equal(decision.decision, "allow", `${JSON.stringify(input)}: ${decision.reasons.join("; ")}`);
  }
});

test("excludes that are missing, changed or no longer in the environment make folder searches confirm", async (t) => {
  const dir = await tempDir(t);
  const env: NodeJS.ProcessEnv = {};
  const fresh = installSearchExcludes(dir, env, dir);
  assert.equal(fresh.problem, undefined, "no shipped file: a private copy, silently");
  assert.ok(fresh.path && env.RIPGREP_CONFIG_PATH === fresh.path);
  assert.equal(searchExcludeProblem(fresh, env), undefined);
  assert.match(
    String(searchExcludeProblem(fresh, { RIPGREP_CONFIG_PATH: "/tmp/other" })),
    /no longer points/,
  );

  await writeFile(path.join(dir, RG_EXCLUDE_FILE), searchExcludeConfig());
  const shipped = installSearchExcludes(dir, env, dir);
  assert.equal(shipped.path, path.join(dir, RG_EXCLUDE_FILE));
  assert.equal(shipped.problem, undefined);
  await writeFile(shipped.path as string, "--glob=!nothing\n");
  assert.match(String(searchExcludeProblem(shipped, env)), /changed or removed/);

  const tampered = installSearchExcludes(dir, env, dir);
  assert.match(String(tampered.problem), /does not match the sensitive-path rules/);
  assert.notEqual(tampered.path, path.join(dir, RG_EXCLUDE_FILE), "a generated copy is used instead");

  // With the excludes not active, a search over a folder holding credentials is confirmed; elsewhere not.
  const home = path.join(dir, "home");
  await mkdir(path.join(home, "src"), { recursive: true });
  const decision = (input: Record<string, unknown>) =>
    decide({
      policy: "read-only",
      toolName: "grep",
      input: { pattern: "x", ...input },
      context: pathContextFromEnv(home, { HOME: home }),
      parser: undefined,
      paths,
      search: { path: undefined, searchCwd: home, problem: "no config" },
    });
  assert.equal(decision({ path: "~" }).decision, "confirm");
  assert.match(decision({ path: "~" }).reasons.join(), /no config/);
  assert.equal(decision({ path: "/usr/share/doc" }).decision, "allow");
});

test("globCouldSelect: exact enough to allow code globs, safe for everything that can reach a credential name", () => {
  const rules = SENSITIVE_RULES.flatMap((rule) =>
    rule.patterns.filter((p) => !p.includes("/")).map((pattern) => ({ pattern, except: rule.except ?? [] })),
  );
  const could = (glob: string) => globCouldSelect(glob, rules, matchComponent).could;
  for (const glob of [
    "*.ts",
    "**/*.ts",
    "src/**/*.tsx",
    "*.{ts,tsx,js}",
    "*.py",
    "*.md",
    "package.json",
    "Makefile",
    "!*.env",
    "!**",
    "*.go",
    "[a-z]*.rs",
    "test_*.py",
    "src/*.{c,h}",
  ])
    assert.equal(could(glob), false, glob);
  for (const glob of [
    "*",
    "**",
    ".env",
    ".e*",
    "*env",
    ".env*",
    "*.json",
    "credentials*",
    "{x,.npmrc}",
    "*.{ts,pem}",
    ".en[tuv]",
    ".en[!a]",
    "**/.envrc",
    "*_history",
    "id_*",
    "*.k?y",
    "\\.env",
    ".env.prod*",
    "s*/.pgpass",
    "*.tfstate",
  ])
    assert.equal(could(glob), true, glob);
  // Pathological globs are bounded: too long or too many alternatives count as "could select anything".
  assert.equal(could("*".repeat(5000)), true);
  assert.equal(could("{a,b}".repeat(20)), true);
  assert.equal(expandBraces("{a,b}".repeat(20)), undefined);
  assert.deepEqual(expandBraces("x{a,{b,c}}y")?.sort(), ["xay", "xby", "xcy"]);
  assert.equal(could(`${"*a".repeat(60)}.ts`), false);
  assert.equal(could(`${"*a".repeat(400)}.ts`), true, "longer than MAX_GLOB_CHARS");
});

test("the result filter withholds every line from a credential file, however its path is spelled", async (t) => {
  const { ws, home, ctx } = await plantedTree(t);
  const context = pathContextFromEnv(ws, { HOME: home, PI_CODING_AGENT_DIR: ctx.agentDir });
  const output = [
    "src/app.ts:1: NEEDLE plain-ts",
    ".env:1: NEEDLE SECRET-1",
    "sub/.env.production:1: NEEDLE SECRET-2",
    "sub/.env.production-2- TOKEN=x",
    "credentials.json:3: NEEDLE SECRET-3",
    "odd:1: name/.npmrc:1: NEEDLE SECRET-4", // a folder named "odd:1: name": every reading is tried
    "package.json:1: mentions .env:1: in its text", // no reading of it names a credential file: kept
    "",
    "[100 matches limit reached]",
  ].join("\n");
  const filtered = filterGrepText(output, ws, context);
  assert.equal(filtered.withheld, 5);
  assert.doesNotMatch(filtered.text, /SECRET-|TOKEN=/);
  assert.match(filtered.text, /plain-ts/);
  assert.match(filtered.text, /matches limit reached/);
  assert.match(filtered.text, /mentions \.env/);
  assert.match(filtered.text, /withheld 5 line/);
  // Searching one file prints its basename: the file is the root.
  const file = path.join(home, ".aws", "credentials");
  assert.equal(filterGrepText("credentials:1: NEEDLE", file, context).withheld, 1);
  assert.equal(filterGrepText("No matches found", ws, context).withheld, 0);
});
