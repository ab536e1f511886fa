// One rule for environment assignments, whatever the spelling: `VAR=x cmd`, `env VAR=x cmd`, `sudo VAR=x cmd`,
// `export VAR=x; cmd`, `declare -x VAR=x; cmd`, `VAR=x; cmd`, `cmake -E env VAR=x cmd` all decide alike.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decide } from "../../agent-runtime/gate/decide.ts";
import { assignmentEffect } from "../../agent-runtime/gate/shell-env.ts";
import { syntheticWord } from "../../agent-runtime/gate/shell-words.ts";
import { CORPUS_CONTEXT } from "../support/fixtures/gate-shell-corpus.ts";
import { gateParser } from "../support/gate-parser.ts";

const context = CORPUS_CONTEXT;
const parser = await gateParser();
const decideAuto = (command: string) =>
  decide({ policy: "auto", toolName: "bash", input: { command }, context, parser });

const SPELLINGS: Array<(assignment: string) => string> = [
  (a) => `${a} ls`,
  (a) => `env ${a} ls`,
  (a) => `env -i PATH=/usr/bin ${a} ls`,
  (a) => `env -u X ${a} ls`,
  (a) => `sudo ${a} ls`,
  (a) => `export ${a}; ls`,
  (a) => `declare -x ${a}; ls`,
  (a) => `typeset -x ${a}; ls`,
  (a) => `readonly ${a}; ls`,
  (a) => `${a}; ls`,
  (a) => `cmake -E env ${a} ls`,
  (a) => `bash -c '${a.replaceAll("'", "'\\''")} ls'`,
];
/** Spellings where any `NAME=value` word (not only a valid shell name) is an assignment. */
const ENV_SPELLINGS: Array<(assignment: string) => string> = [
  (a) => `env ${a} ls`,
  (a) => `sudo ${a} ls`,
  (a) => `cmake -E env ${a} ls`,
];

const RUNS_CODE = [
  "LD_PRELOAD=/tmp/x.so",
  "LD_AUDIT=x",
  "DYLD_INSERT_LIBRARIES=x",
  "BASH_ENV=./x.sh",
  "ENV=./x.sh",
  "PROMPT_COMMAND=id",
  "PS4='$(id)'",
  "GIT_SSH=./x",
  "GIT_SSH_COMMAND='ssh -oProxyCommand=id'",
  "GIT_PAGER='sh -c id'",
  "GIT_EDITOR=./x",
  "GIT_SEQUENCE_EDITOR=./x",
  "GIT_EXTERNAL_DIFF=./x",
  "GIT_ASKPASS=./x",
  "GIT_DIR=sub/repo.git",
  "GIT_CONFIG_GLOBAL=./cfg",
  "GIT_CONFIG_COUNT=1",
  "GIT_CONFIG_PARAMETERS=x",
  "GIT_TEMPLATE_DIR=./t",
  "GIT_EXEC_PATH=./x",
  "PAGER='sh -c id'",
  "MANPAGER=./x",
  "EDITOR=./x",
  "VISUAL=./x",
  "BROWSER=./x",
  "LESSOPEN='|id %s'",
  "LESS='+!id'",
  "NODE_OPTIONS='--require ./x.js'",
  "PYTHONPATH=./x",
  "PYTHONSTARTUP=./x.py",
  "PERL5OPT=-Mx",
  "PERL5LIB=./x",
  "RUBYOPT=-rx",
  "JAVA_TOOL_OPTIONS=-javaagent:x.jar",
  "CURL_HOME=./x",
  "WGETRC=./x",
  "TAR_OPTIONS=--to-command=id",
  "RIPGREP_CONFIG_PATH=./x",
  "HOME=./fake",
  "XDG_CONFIG_HOME=./x",
  "ZDOTDIR=./x",
  "VIMINIT=:!id",
  "npm_config_script_shell=./x",
  "NPM_CONFIG_NODE_OPTIONS=x",
  "CARGO_BUILD_RUSTC_WRAPPER=./x",
  "RUSTC_WRAPPER=./x",
  "CC=./x",
  "MAKEFLAGS=--eval=x",
  "PATH=./bin:$PATH",
  "PATH=/tmp",
  "PATH=/usr/bin:./node_modules/.bin",
];
const NETWORK = [
  "HTTPS_PROXY=http://x.example",
  "https_proxy=http://x.example",
  "ALL_PROXY=socks5://x",
  "DOCKER_HOST=tcp://x:2375",
  "PIP_INDEX_URL=http://x.example",
];
const HARMLESS = [
  "FOO=bar",
  "NODE_ENV=production",
  "CI=1",
  "DEBUG=x",
  "GIT_PAGER=cat",
  "PAGER=less",
  "EDITOR=vim",
  "LESS=-R",
  "GIT_AUTHOR_NAME=x",
  "GIT_TERMINAL_PROMPT=0",
  "PATH=$PATH:/opt/bin",
  "PATH=/usr/local/bin:/usr/bin:/bin",
  "PATH=/usr/bin:$PATH",
  'PATH="$PATH:$HOME/.local/bin"',
  "PYTHONUNBUFFERED=1",
  "PYTHONDONTWRITEBYTECODE=1",
  "NPM_CONFIG_LOGLEVEL=silent",
  "CARGO_TARGET_DIR=target",
  "LANG=C.UTF-8",
  "TZ=UTC",
];

test("variables that make programs run code are opaque in every spelling", () => {
  const failures: string[] = [];
  for (const assignment of RUNS_CODE) {
    for (const spell of SPELLINGS) {
      const command = spell(assignment);
      const d = decideAuto(command);
      if (d.decision === "allow" || !d.classes.includes("UNKNOWN"))
        failures.push(`${command}: ${d.decision} [${d.classes}]`);
    }
  }
  assert.deepEqual(failures, []);
});

test("exported functions (BASH_FUNC_name%%) through env-like wrappers are opaque", () => {
  for (const spell of ENV_SPELLINGS) {
    const d = decideAuto(spell("'BASH_FUNC_ls%%=() { id; }'"));
    assert.ok(d.classes.includes("UNKNOWN"), spell("BASH_FUNC_ls%%"));
  }
});

test("variables that route traffic elsewhere are exits in every spelling", () => {
  const failures: string[] = [];
  for (const assignment of NETWORK) {
    for (const spell of SPELLINGS) {
      const command = spell(assignment);
      const d = decideAuto(command);
      if (!d.classes.includes("EXIT")) failures.push(`${command}: ${d.decision} [${d.classes}]`);
    }
  }
  assert.deepEqual(failures, []);
});

test("ordinary variables stay plain in every spelling", () => {
  const failures: string[] = [];
  for (const assignment of HARMLESS) {
    for (const spell of SPELLINGS) {
      const command = spell(assignment);
      const d = decideAuto(command);
      if (d.decision !== "allow")
        failures.push(`${command}: ${d.decision} [${d.classes}] ${d.reasons.join("; ")}`);
    }
  }
  assert.deepEqual(failures, []);
});

test("assignmentEffect is the rule: runs-code, network, word-splitting, or nothing", () => {
  assert.equal(assignmentEffect("LD_PRELOAD", syntheticWord("x"))?.kind, "runs-code");
  assert.equal(assignmentEffect("HTTP_PROXY", syntheticWord("x"))?.kind, "network");
  assert.equal(assignmentEffect("IFS", syntheticWord("/"))?.kind, "word-splitting");
  assert.equal(assignmentEffect("GIT_PAGER", syntheticWord("cat")), undefined);
  assert.equal(assignmentEffect("GIT_PAGER", syntheticWord("cat; id"))?.kind, "runs-code");
  assert.equal(assignmentEffect("FOO", syntheticWord("x")), undefined);
});

test("IFS set on its own makes later unquoted expansions untrusted; set for one command it does not", () => {
  assert.ok(decideAuto("IFS=/; x=git/push; $x").classes.includes("UNKNOWN"));
  assert.equal(decideAuto('while IFS= read -r line; do echo "$line"; done < list.txt').decision, "allow");
});
