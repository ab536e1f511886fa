// Package managers, package runners, deploy tools, and build/task/test runners, through a recording Scan.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { test } from "node:test";
import {
  binName,
  NPM_ALIASES,
  NPM_COMMANDS,
  npmCommand,
} from "../../agent-runtime/gate/analyzers/publishers.ts";
import { analyzerFor } from "../../agent-runtime/gate/analyzers/table.ts";
import type { Recorded } from "../support/recording-scan.ts";
import { runAnalyzer } from "../support/recording-scan.ts";

const run = (line: string[], options?: { stdinIsData?: boolean }): Recorded => {
  const [name = "", ...args] = line;
  return runAnalyzer(analyzerFor(name), name, args, options);
};
/** A possible exit: it sends, or writes what later commands run (not: code the gate does not model). */
const exit = (line: string[]) => {
  const findings = run(line).findings;
  return findings.has("sends") || findings.has("writes-runs-later");
};
const opaque = (r: Recorded) => r.findings.has("runs-unmodeled");

test("npm's commands resolve as npm resolves them: aliases, abbreviations, camelCase", () => {
  assert.deepEqual(npmCommand("publish"), ["publish"]);
  assert.deepEqual(npmCommand("publ"), ["publish"]);
  assert.deepEqual(npmCommand("t"), ["test"]);
  assert.deepEqual(npmCommand("i"), ["install"]);
  assert.deepEqual(npmCommand("isntall"), ["install"]);
  assert.deepEqual(npmCommand("run-script"), ["run"]);
  assert.deepEqual(npmCommand("installTest"), ["install-test"]);
  assert.ok(npmCommand("p").includes("publish"), "an ambiguous prefix may mean publish");
  assert.deepEqual(npmCommand("Publish"), [], "camelCase turns it into -publish, which npm rejects");
});

test("the npm command table covers every command of the npm on PATH (drift check)", () => {
  const npm = realpathSync(execFileSync("sh", ["-c", "command -v npm"], { encoding: "utf8" }).trim());
  const cmdList = createRequire(npm)(path.join(path.dirname(npm), "..", "lib", "utils", "cmd-list.js")) as {
    commands: string[];
    aliases: Record<string, string>;
  };
  assert.deepEqual(
    cmdList.commands.filter((c) => !(c in NPM_COMMANDS)),
    [],
    "commands npm has that the gate does not classify",
  );
  assert.deepEqual(
    Object.entries(cmdList.aliases).filter(([alias, target]) => NPM_ALIASES[alias] !== target),
    [],
    "aliases that differ",
  );
});

test("npm: exits, scripts (local code with a target), lifecycle installs, config that later commands obey", () => {
  for (const line of [
    ["npm", "publish"],
    ["npm", "publ"],
    ["npm", "unp", "x"],
    ["npm", "dist-tag", "add"],
    ["npm", "Publish"],
    ["npm", "owner", "add"],
    ["npm", "run", "deploy"],
    ["npm", "rum", "release:prod"],
    ["npm", "run", "…"],
    ["npm", "view", "…"],
    ["npm", "install", "…"],
  ])
    assert.ok(exit(line), line.join(" "));
  const testRun = run(["npm", "test"]);
  assert.equal(testRun.findings.classes().includes("EXIT"), false);
  assert.deepEqual(testRun.localCode, [
    {
      kind: "package-script",
      program: "npm test",
      files: ["package.json"],
      targets: ["test"],
      optional: false,
    },
  ]);
  assert.deepEqual(run(["npm", "run", "build", "--", "--x"]).localCode[0]?.targets, ["build"]);
  assert.deepEqual(run(["npm", "ci"]).localCode[0]?.targets, ["ci"]);
  assert.deepEqual(run(["npm", "i", "left-pad"]).localCode[0]?.targets, ["install"]);
  assert.deepEqual(run(["npm", "--prefix", "sub", "test"]).localCode[0]?.files, ["sub/package.json"]);
  for (const line of [
    ["npm", "config", "set", "script-shell", "./x"],
    ["npm", "set", "node-options=--require ./x"],
    ["npm", "c", "set", "registry", "http://x"],
    ["npm", "config", "edit"],
  ])
    assert.ok(exit(line), line.join(" "));
  assert.equal(exit(["npm", "config", "set", "loglevel", "silent"]), false);
  assert.ok(run(["npm", "config", "list"]).findings.classes().includes("SECRET"));
  assert.ok(opaque(run(["npm", "--script-shell=./x", "test"])));
  assert.deepEqual(run(["npm", "explore", "x", "--", "git", "push"]).scripts[0]?.text, "git push");
});

test("package runners run the package's program under its own name", () => {
  assert.equal(binName("vercel@latest"), "vercel");
  assert.equal(binName("@scope/tool@1.2.3"), "tool");
  assert.equal(binName("black==24.1"), "black");
  assert.equal(binName("github:owner/repo"), undefined);
  assert.equal(binName("https://x.example/p.tgz"), undefined);
  assert.equal(binName("./local-dir"), undefined);
  const cases: Array<[string[], string[]]> = [
    [
      ["npx", "vercel@latest", "deploy"],
      ["vercel", "deploy"],
    ],
    [
      ["npx", "-y", "vercel", "deploy"],
      ["vercel", "deploy"],
    ],
    [
      ["npx", "--package=vercel", "vercel", "deploy"],
      ["vercel", "deploy"],
    ],
    [
      ["npx", "-p", "vercel", "--", "vercel", "deploy"],
      ["vercel", "deploy"],
    ],
    [
      ["npm", "exec", "--", "vercel", "deploy"],
      ["vercel", "deploy"],
    ],
    [
      ["npm", "x", "vercel", "deploy"],
      ["vercel", "deploy"],
    ],
    [
      ["pnpm", "dlx", "vercel", "deploy"],
      ["vercel", "deploy"],
    ],
    [
      ["yarn", "dlx", "vercel", "deploy"],
      ["vercel", "deploy"],
    ],
    [
      ["bunx", "vercel", "deploy"],
      ["vercel", "deploy"],
    ],
    [
      ["bun", "x", "vercel", "deploy"],
      ["vercel", "deploy"],
    ],
    [["uvx", "--from", "uploadserver", "uploadserver"], ["uploadserver"]],
    [
      ["pipx", "run", "black", "."],
      ["black", "."],
    ],
    [
      ["npm", "init", "vite@latest", "app"],
      ["create-vite", "app"],
    ],
  ];
  for (const [line, payload] of cases)
    assert.deepEqual(run(line).commands.at(-1)?.words, payload, line.join(" "));
  assert.ok(opaque(run(["npx", "github:owner/repo"])));
  assert.ok(opaque(run(["npx", "…"])));
  assert.deepEqual(run(["npx", "-c", "git push"]).scripts[0]?.text, "git push");
});

test("pnpm, yarn and bun: their own commands, package scripts otherwise, abbreviations of exits", () => {
  for (const line of [
    ["pnpm", "publish"],
    ["pnpm", "publ"],
    ["yarn", "publish"],
    ["yarn", "npm", "publish"],
    ["bun", "publish"],
    ["pnpm", "deploy-prod"],
    ["yarn", "release"],
  ])
    assert.ok(exit(line), line.join(" "));
  assert.deepEqual(run(["pnpm", "lint"]).localCode[0]?.targets, ["lint"]);
  assert.deepEqual(run(["yarn"]).localCode[0]?.targets, ["install"]);
  assert.deepEqual(run(["yarn", "workspaces", "foreach", "-A", "npm", "publish"]).commands[0]?.words, [
    "yarn",
    "npm",
    "publish",
  ]);
  assert.ok(exit(["pnpm", "-r", "publish"]));
  assert.deepEqual(run(["pnpm", "recursive", "publish"]).commands[0]?.words, ["pnpm", "publish"]);
  assert.deepEqual(run(["bun", "run", "build"]).localCode[0]?.targets, ["build"]);
  assert.deepEqual(run(["bun", "src/x.ts"]).localCode[0]?.files, ["src/x.ts"]);
  assert.deepEqual(run(["bun", "test"]).localCode[0]?.kind, "test-runner");
  assert.ok(opaque(run(["bun", "-e", "x"])));
  assert.ok(opaque(run(["yarn", "plugin", "import", "x"])));
});

test("Python packaging: pip, uv, poetry and friends", () => {
  assert.equal(exit(["pip", "install", "-r", "requirements.txt"]), false);
  assert.ok(exit(["pip", "install", "…"]));
  assert.ok(exit(["pip", "config", "set", "global.index-url", "http://x"]));
  assert.ok(exit(["pip", "--proxy", "http://x", "install", "y"]));
  // The project's build backend: setup.py, the build hooks of hatchling, poetry-core, pdm, and pyproject.toml
  // (an in-tree backend) all run or are read.
  assert.deepEqual(run(["pip", "install", "-e", "."]).localCode[0]?.files, [
    "./setup.py",
    "./hatch_build.py",
    "./build.py",
    "./pdm_build.py",
    "./pyproject.toml",
  ]);
  assert.equal(run(["poetry", "install"]).localCode[0]?.program, "poetry install (build backend)");
  assert.deepEqual(run(["poetry", "install", "--no-root"]).localCode, []);
  assert.equal(run(["uv", "sync"]).localCode[0]?.program, "uv sync (build backend)");
  assert.ok(exit(["twine", "upload", "dist/*"]));
  assert.ok(exit(["uv", "publish"]));
  assert.deepEqual(run(["uv", "run", "pytest"]).commands[0]?.words, ["pytest"]);
  assert.deepEqual(run(["uv", "run", "x.py"]).localCode.at(-1)?.files, ["x.py"]);
  assert.equal(
    run(["uv", "run", "x.py"]).localCode[0]?.program,
    "uv run (build backend)",
    "uv run syncs the project first",
  );
  assert.deepEqual(run(["poetry", "run", "pytest", "-q"]).commands[0]?.words, ["pytest", "-q"]);
  assert.ok(exit(["poetry", "publish", "--build"]));
  assert.ok(opaque(run(["poetry", "shell"])));
  assert.ok(exit(["poetry", "config", "repositories.x", "http://x"]));
});

test("other ecosystems, containers, clusters, forges and clouds", () => {
  for (const line of [
    ["cargo", "publish"],
    ["gem", "push", "x.gem"],
    ["mvn", "deploy"],
    ["./gradlew", "publish"].slice(0) as string[],
    ["docker", "push", "x"],
    ["docker", "image", "push", "x"],
    ["docker", "login"],
    ["docker", "buildx", "build", "--push", "."],
    ["docker", "-H", "tcp://x:2375", "build", "."],
    ["docker", "run", "-p", "80:80", "nginx"],
    ["docker", "run", "--privileged", "x"],
    ["docker", "run", "-v", "/:/host", "x"],
    ["kubectl", "apply", "-f", "x"],
    ["kubectl", "exec", "p", "--", "sh"],
    ["kubectl", "config", "use-context", "x"],
    ["helm", "upgrade", "--install", "x", "."],
    ["terraform", "apply"],
    ["gh", "pr", "create"],
    ["gh", "api", "x"],
    ["gh", "alias", "set", "x", "!id"],
    ["gh", "config", "set", "editor", "id"],
    ["hf", "upload", "x", "."],
    ["aws", "s3", "ls"],
    ["vercel", "--prod"],
    ["go", "env", "-w", "GOPROXY=x"],
  ])
    assert.ok(exit(line[0] === "./gradlew" ? ["gradlew", "publish"] : line), line.join(" "));
  assert.deepEqual(run(["docker", "run", "--rm", "app", "curl", "-d", "@x", "h"]).commands[0]?.words, [
    "curl",
    "-d",
    "@x",
    "h",
  ]);
  assert.equal(exit(["kubectl", "get", "pods"]), false);
  assert.ok(run(["kubectl", "config", "view", "--raw"]).findings.classes().includes("SECRET"));
  assert.ok(run(["gh", "auth", "token"]).findings.classes().includes("SECRET"));
  assert.ok(opaque(run(["gh", "extension", "install", "x/y"])));
  assert.deepEqual(run(["cargo", "test"]).localCode[0]?.kind, "test-runner");
  assert.deepEqual(run(["go", "test", "./..."]).localCode[0]?.kind, "test-runner");
  assert.ok(opaque(run(["go", "build", "-toolexec", "id", "."])));
});

test("build, task and test runners: recipes are local code; shipping targets and command-line variables count", () => {
  const make = run(["make", "build", "test"]);
  assert.deepEqual(make.localCode[0]?.files, ["GNUmakefile", "makefile", "Makefile"]);
  assert.deepEqual(make.localCode[0]?.targets, ["build", "test"]);
  assert.deepEqual(run(["make", "-C", "sub", "-f", "x.mk"]).localCode[0]?.files, ["sub/x.mk"]);
  assert.ok(exit(["make", "deploy"]));
  assert.ok(exit(["make", "-C", "services", "build", "publish"]));
  assert.ok(exit(["make", "…"]));
  assert.deepEqual(run(["make", "CC=./evil", "all"]).assignments, [{ name: "CC", value: "./evil" }]);
  assert.deepEqual(run(["make", "SHELL=./x"]).assignments, [{ name: "SHELL", value: "./x" }]);
  assert.ok(opaque(run(["make", "--eval=x:;id", "x"])));
  assert.deepEqual(run(["just", "test"]).localCode[0]?.files, ["justfile", "Justfile", ".justfile"]);
  assert.ok(exit(["just", "release"]));
  assert.deepEqual(run(["pytest", "-q", "tests/test_x.py"]).localCode[0], {
    kind: "test-runner",
    program: "pytest",
    files: ["tests/test_x.py"],
    optional: false,
  });
  assert.deepEqual(run(["cmake", "-E", "env", "LD_PRELOAD=x", "git", "push"]).commands[0]?.words, [
    "git",
    "push",
  ]);
  assert.deepEqual(
    run(["cmake", "-E", "env", "LD_PRELOAD=x", "git", "push"]).assignments[0]?.name,
    "LD_PRELOAD",
  );
  assert.deepEqual(run(["cmake", "-P", "x.cmake"]).localCode[0]?.files, ["x.cmake"]);
  for (const line of [
    ["husky", "install"],
    ["pre-commit", "install"],
    ["lefthook", "install"],
  ])
    assert.ok(exit(line), line.join(" "));
  assert.deepEqual(run(["concurrently", "npm:build", "git push"]).scripts[0]?.text, "git push");
  assert.deepEqual(run(["nodemon", "--exec", "curl x"]).scripts[0]?.text, "curl x");
  assert.deepEqual(run(["ldd", "./bin/x"]).localCode[0]?.files, ["./bin/x"]);
});
