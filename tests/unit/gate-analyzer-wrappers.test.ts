// Wrappers, shells and builtins, each analyzer on its own through a recording Scan.
import assert from "node:assert/strict";
import { test } from "node:test";
import { analyzerFor } from "../../agent-runtime/gate/analyzers/table.ts";
import type { Recorded } from "../support/recording-scan.ts";
import { runAnalyzer } from "../support/recording-scan.ts";

const run = (line: string[], options?: { stdinIsData?: boolean }): Recorded => {
  const [name = "", ...args] = line;
  return runAnalyzer(analyzerFor(name), name, args, options);
};
const opaque = (r: Recorded) =>
  r.findings.classes().includes("UNKNOWN") &&
  r.findings.classes().includes("EXIT") &&
  r.findings.classes().includes("SECRET");

test("wrappers hand their payload back as a command, after their own options", () => {
  const cases: Array<[string[], string[]]> = [
    [
      ["sudo", "-u", "root", "--", "git", "push"],
      ["git", "push"],
    ],
    [
      ["sudo", "-E", "git", "push"],
      ["git", "push"],
    ],
    [
      ["nice", "-n", "10", "git", "push"],
      ["git", "push"],
    ],
    [
      ["timeout", "-s", "KILL", "10", "git", "push"],
      ["git", "push"],
    ],
    [["timeout", "--kill-after=5", "10s", "make"], ["make"]],
    [["ionice", "-c", "3", "make"], ["make"]],
    [["stdbuf", "-oL", "make"], ["make"]],
    [
      ["nohup", "git", "push"],
      ["git", "push"],
    ],
    [
      ["setsid", "-f", "git", "push"],
      ["git", "push"],
    ],
    [
      ["time", "-p", "git", "push"],
      ["git", "push"],
    ],
    [
      ["chroot", "/srv/root", "git", "push"],
      ["git", "push"],
    ],
    [
      ["taskset", "0x1", "git", "push"],
      ["git", "push"],
    ],
    [
      ["command", "git", "push"],
      ["git", "push"],
    ],
    [
      ["command", "-p", "git", "push"],
      ["git", "push"],
    ],
    [
      ["exec", "-a", "x", "git", "push"],
      ["git", "push"],
    ],
    [
      ["builtin", "cd", "x"],
      ["cd", "x"],
    ],
    [
      ["busybox", "wget", "x"],
      ["wget", "x"],
    ],
    [
      ["strace", "-f", "-e", "trace=open", "git", "push"],
      ["git", "push"],
    ],
    [
      ["asdf", "exec", "node", "x.js"],
      ["node", "x.js"],
    ],
    [
      ["mise", "exec", "node@20", "--", "node", "x.js"],
      ["node", "x.js"],
    ],
    [
      ["corepack", "pnpm", "publish"],
      ["pnpm", "publish"],
    ],
  ];
  for (const [line, payload] of cases) {
    const record = run(line);
    assert.deepEqual(record.commands.at(-1)?.words, payload, line.join(" "));
  }
});

test("sudo and env apply environment assignments through the one rule, and change directory", () => {
  const sudo = run(["sudo", "GIT_SSH_COMMAND=./x", "git", "fetch"]);
  assert.deepEqual(sudo.assignments, [{ name: "GIT_SSH_COMMAND", value: "./x" }]);
  assert.deepEqual(sudo.commands[0]?.words, ["git", "fetch"]);
  const env = run(["env", "-i", "PATH=/usr/bin", "-C", "/srv", "LD_PRELOAD=x.so", "ls"]);
  assert.deepEqual(
    env.assignments.map((a) => a.name),
    ["PATH", "LD_PRELOAD"],
  );
  assert.equal(env.commands[0]?.cwd, "/srv");
  // What the payload runs without: the classifier turns the search excludes off after these.
  assert.equal(env.commands[0]?.environmentCleared, true);
  assert.deepEqual(run(["env", "-u", "RIPGREP_CONFIG_PATH", "rg", "x"]).commands[0]?.unset, [
    "RIPGREP_CONFIG_PATH",
  ]);
  assert.deepEqual(run(["env", "--unset=A", "-uB", "rg", "x"]).commands[0]?.unset, ["A", "B"]);
  assert.equal(run(["exec", "-c", "rg", "x"]).commands[0]?.environmentCleared, true);
  assert.deepEqual(run(["unset", "RIPGREP_CONFIG_PATH"]).forgotten, ["RIPGREP_CONFIG_PATH"]);
  assert.equal(
    run(["sudo", "-D", "/run/chat-ui-agent", "rm", "policy"]).commands[0]?.cwd,
    "/run/chat-ui-agent",
  );
  assert.ok(run(["env"]).findings.classes().includes("SECRET"), "env alone prints the environment");
  assert.deepEqual(run(["env", "-S", "git push origin"]).scripts[0]?.text, "git push origin");
  assert.ok(opaque(run(["env", "-S", "…"])));
});

test("a wrapper that runs its payload through a shell hands it back as a script", () => {
  assert.deepEqual(run(["sudo", "-s", "git", "push"]).scripts[0]?.text, "git push");
  assert.ok(opaque(run(["sudo", "-i"])));
  assert.deepEqual(run(["watch", "-n", "1", "git", "push"]).scripts[0]?.text, "git push");
  assert.deepEqual(run(["watch", "-x", "git", "push"]).commands[0]?.words, ["git", "push"]);
  assert.deepEqual(run(["flock", "/tmp/l", "-c", "git push"]).scripts[0]?.text, "git push");
  assert.deepEqual(run(["flock", "/tmp/l", "git", "push"]).commands[0]?.words, ["git", "push"]);
  assert.deepEqual(run(["su", "-c", "git push", "agent"]).scripts[0]?.text, "git push");
  assert.deepEqual(run(["runuser", "-u", "agent", "--", "git", "push"]).commands[0]?.words, ["git", "push"]);
  assert.deepEqual(run(["script", "-qc", "git push", "/dev/null"]).scripts[0]?.text, "git push");
  assert.deepEqual(run(["sg", "docker", "-c", "git push"]).scripts[0]?.text, "git push");
  assert.deepEqual(
    run(["hyperfine", "--prepare", "make clean", "git push"]).scripts.map((s) => s.text),
    ["make clean", "git push"],
  );
  assert.deepEqual(
    run(["parallel", ":::", "git push", "ls"]).scripts.map((s) => s.text),
    ["git push", "ls"],
  );
  assert.ok(opaque(run(["su", "agent"])), "su without -c reads commands from stdin");
  assert.ok(opaque(run(["script"])));
});

test("xargs gives its payload arguments the gate cannot see", () => {
  assert.deepEqual(run(["xargs", "git"]).commands[0]?.words, ["git", "…"]);
  assert.deepEqual(run(["xargs", "-n1", "-P4", "curl"]).commands[0]?.words, ["curl", "…"]);
  assert.deepEqual(run(["xargs", "-I%", "git", "%", "x"]).commands[0]?.words, ["git", "…", "x"]);
  assert.deepEqual(run(["xargs", "-i", "cp", "{}", "dst"]).commands[0]?.words, ["cp", "…", "dst"]);
  assert.deepEqual(run(["xargs"]).commands[0]?.words, ["echo", "…"]);
  const fromFile = run(["xargs", "-a", ".env", "echo"]);
  assert.deepEqual(fromFile.paths, [{ path: ".env", access: "read" }]);
  assert.deepEqual(run(["parallel", "curl", ":::", "a", "b"]).commands[0]?.words, ["curl", "…"]);
});

test("shells: -c scripts, script files (local code), and stdin (opaque)", () => {
  for (const shell of ["sh", "bash", "dash", "zsh", "ksh", "fish"]) {
    assert.deepEqual(run([shell, "-c", "git push"]).scripts[0]?.text, "git push", shell);
    assert.deepEqual(run([shell, "-ec", "git push"]).scripts[0]?.text, "git push", shell);
    assert.deepEqual(run([shell, "-o", "pipefail", "-c", "x"]).scripts[0]?.text, "x", shell);
    assert.deepEqual(run([shell, "./build.sh", "arg"]).localCode[0]?.files, ["./build.sh"], shell);
    assert.ok(opaque(run([shell])), `${shell} alone reads stdin`);
    assert.ok(opaque(run([shell, "-s"])), `${shell} -s reads stdin`);
    assert.ok(opaque(run([shell, "-"])), `${shell} - reads stdin`);
    assert.ok(opaque(run([shell, "…"])), `${shell} with computed arguments`);
  }
  assert.equal(run(["bash", "-c", "…"]).scripts[0]?.literal, false);
  assert.deepEqual(run(["source", "./venv/bin/activate"]).localCode[0]?.kind, "shell-script");
  assert.deepEqual(run([".", "./x.sh"]).localCode[0]?.files, ["./x.sh"]);
  assert.ok(opaque(run(["source", "…"])));
  const evaluated = run(["eval", "git", "push"]);
  assert.ok(opaque(evaluated));
  assert.equal(evaluated.scripts[0]?.text, "git push");
});

test("builtins that change what later commands mean are opaque; others are reads", () => {
  for (const line of [
    ["alias", "ls=git push"],
    ["hash", "-p", "/tmp/x", "ls"],
    ["enable", "-f", "x.so", "y"],
    ["shopt", "-s", "expand_aliases"],
    ["fc", "-s"],
    ["at", "now"],
    ["crontab", "x.cron"],
    ["tmux", "send-keys", "git push", "Enter"],
    ["gdb", "-p", "1"],
  ]) {
    assert.ok(opaque(run(line)), line.join(" "));
  }
  for (const line of [["true"], ["echo", "hi"], ["test", "-f", "x"], ["[", "-d", "x", "]"], ["sleep", "1"]]) {
    assert.deepEqual(run(line).findings.classes(), ["READ"], line.join(" "));
  }
  assert.ok(run(["set"]).findings.classes().includes("SECRET"));
  assert.deepEqual(run(["set", "-euo", "pipefail"]).findings.classes(), ["READ"]);
});

test("read, mapfile and printf -v forget what a variable held; cd moves the script", () => {
  assert.deepEqual(run(["read", "-r", "line"]).forgotten, ["line"]);
  assert.deepEqual(run(["read", "-ra", "parts"]).forgotten, ["parts"]);
  assert.deepEqual(run(["mapfile", "-t", "lines"]).forgotten, ["lines"]);
  assert.deepEqual(run(["printf", "-v", "x", "%s", "git"]).forgotten, ["x"]);
  assert.deepEqual(run(["getopts", "ab:", "opt"]).forgotten, ["opt"]);
  assert.deepEqual(run(["cd", "sub"]).chdirs, ["sub"]);
  assert.deepEqual(run(["cd"]).chdirs, [undefined]);
  assert.ok(run(["cd", "-"]).findings.classes().includes("UNKNOWN"));
});

test("the gate's own tools: the policy CLI may only read, pi may not change itself", () => {
  assert.deepEqual(run(["chat-ui-agent-policy", "get"]).findings.classes(), ["READ"]);
  assert.deepEqual(run(["chat-ui-agent-policy", "explain"]).findings.classes(), ["READ"]);
  assert.ok(run(["chat-ui-agent-policy", "set", "auto"]).findings.classes().includes("TAMPER"));
  assert.ok(run(["chat-ui-agent-policy", "…"]).findings.classes().includes("TAMPER"));
  assert.ok(run(["pi", "install", "npm:x"]).findings.classes().includes("TAMPER"));
  assert.ok(opaque(run(["pi", "-p", "push it"])));
});

test("env-file runners read the env file; direnv exec runs .envrc; watchers run scripts", () => {
  const dotenv = run(["dotenv", "--", "npm", "test"]);
  assert.deepEqual(dotenv.paths, [{ path: ".env", access: "read" }]);
  assert.ok(dotenv.findings.classes().includes("SECRET"));
  assert.deepEqual(dotenv.commands[0]?.words, ["npm", "test"]);
  assert.deepEqual(run(["dotenv", "-e", ".env.prod", "node", "x"]).paths[0]?.path, ".env.prod");
  const direnv = run(["direnv", "exec", "sub", "make"]);
  assert.deepEqual(direnv.localCode[0]?.files, ["sub/.envrc"]);
  assert.deepEqual(direnv.commands[0], { words: ["make"], cwd: "sub" });
  assert.ok(run(["direnv", "allow"]).findings.classes().includes("EXIT"));
  assert.deepEqual(run(["watchexec", "-e", "ts", "npm test"]).scripts[0]?.text, "npm test");
  assert.deepEqual(run(["watchexec", "--", "npm", "test"]).commands[0]?.words, ["npm", "test"]);
  assert.deepEqual(run(["chokidar", "src", "-c", "make"]).scripts[0]?.text, "make");
});
