// Build, task and test runners: they run recipes, scripts or tests from local files (class 7: local code, plain
// until inspected); a target named like shipping (deploy, publish, release…) or computed at run time is an exit.
import { parseArgs, valueWord } from "../shell-options.ts";
import type { Analyzer, ProgramCall, Scan } from "../shell-scan.ts";
import { type ShellWord, syntheticWord } from "../shell-words.ts";
import { exitOnComputedArguments, joinedScript, onlyAsksVersion } from "./common.ts";
import { SHIPPING_NAME } from "./publishers.ts";

function targetsShip(call: ProgramCall, scan: Scan, targets: readonly ShellWord[]) {
  const target = targets.find((t) => !t.literal || SHIPPING_NAME.test(t.text));
  if (target)
    scan.findings.sends(
      `\`${call.name} … ${target.literal ? target.text : "(computed)"}\` runs a recipe that may deploy or publish`,
    );
}

/** make: recipes from the makefile; `VAR=value` operands override variables the recipes expand. */
const make: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: "CfIjlowWEO",
    longWithValue: [
      "directory",
      "file",
      "makefile",
      "include-dir",
      "jobs",
      "load-average",
      "old-file",
      "assume-old",
      "what-if",
      "new-file",
      "assume-new",
      "eval",
      "output-sync",
      "debug",
      "jobserver-style",
      "shuffle",
    ],
    abbreviations: true,
  });
  if (parsed.has("eval", "E"))
    return scan.findings.opaque("`make --eval` runs makefile text given on the command line");
  const targets: ShellWord[] = [];
  for (const operand of parsed.operands) {
    const eq = operand.text.indexOf("=");
    if (eq > 0 && /^[A-Za-z_.][\w.]*[+:?!]?$/.test(operand.text.slice(0, eq))) {
      const name = operand.text.slice(0, eq).replace(/[+:?!]$/, "");
      scan.assignment(
        name === "SHELL" || name === ".SHELLFLAGS" ? "SHELL" : name,
        syntheticWord(operand.text.slice(eq + 1), operand.literal),
      );
      continue;
    }
    targets.push(operand);
  }
  targetsShip(call, scan, targets);
  const dir = parsed.values("C", "directory");
  const prefix = dir.length ? `${dir.map((d) => d.text.replace(/\/+$/, "")).join("/")}/` : "";
  const files = parsed.values("f", "file", "makefile");
  const makefiles = files.length
    ? files
    : ["GNUmakefile", "makefile", "Makefile"].map((name) =>
        syntheticWord(
          `${prefix}${name}`,
          dir.every((d) => d.literal),
        ),
      );
  scan.localCode(
    "makefile",
    call.name,
    files.length && prefix ? files.map((f) => syntheticWord(`${prefix}${f.text}`, f.literal)) : makefiles,
    targets.map((t) => t.text),
  );
};

/** Task runners whose recipes live in a known file. */
function taskRunner(
  files: readonly string[],
  fileOptions: readonly string[],
  dirOptions: readonly string[] = [],
): Analyzer {
  return (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    exitOnComputedArguments(call, scan);
    const parsed = parseArgs(call.args, {
      shortWithValue: "fdtc",
      longWithValue: [
        ...fileOptions,
        ...dirOptions,
        "set",
        "shell",
        "dotenv-path",
        "dotenv-filename",
        "command",
        "chooser",
        "color",
      ],
      abbreviations: true,
    });
    const shell = parsed.get("shell")?.value;
    if (shell && !["bash", "sh", "/bin/sh", "/bin/bash", "zsh"].includes(shell.text))
      return scan.findings.opaque(
        `\`${call.name} --shell\` runs recipes through a program the gate does not know`,
      );
    const command = parsed.get("command")?.value;
    if (command && call.name === "just")
      return scan.command(parsed.operands.length ? [command, ...parsed.operands] : [command]);
    for (const file of parsed.values("dotenv-path", "dotenv-filename")) scan.path(file, "read");
    const explicit = parsed.values(...fileOptions);
    const dir = parsed.values(...dirOptions).at(-1);
    const prefix = dir?.literal ? `${dir.text.replace(/\/+$/, "")}/` : "";
    const paths = explicit.length ? explicit : files.map((name) => syntheticWord(`${prefix}${name}`));
    const targets = parsed.operands.filter((o) => !/^[A-Za-z_]\w*=/.test(o.text));
    targetsShip(call, scan, targets);
    scan.localCode(
      "task-runner",
      call.name,
      paths,
      targets.map((t) => t.text),
    );
  };
}

/** Test runners run test files found in the tree (and their config, conftest.py, setup files). */
function testRunner(withValue: readonly string[] = []): Analyzer {
  return (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    const parsed = parseArgs(call.args, {
      shortWithValue: "pckm",
      longWithValue: [
        ...withValue,
        "config",
        "rootdir",
        "confcutdir",
        "basetemp",
        "plugins",
        "setupFiles",
        "require",
        "reporter",
      ],
      abbreviations: true,
    });
    if (parsed.values("p").some((p) => !p.literal))
      return scan.findings.opaque(`\`${call.name} -p\` loads a plugin computed at run time`);
    // Plug-ins, setup files and required modules named on the command line are code the gate does not find.
    const plugin = [
      ...parsed.values("p").filter((p) => !p.text.startsWith("no:")),
      ...parsed.values("plugins", "setupFiles", "require"),
    ][0];
    if (plugin)
      scan.findings.unmodeled("config", `\`${call.name}\` loads ${plugin.source}, a plug-in or setup module`);
    const files = parsed.operands.filter((o) => o.literal && !o.text.includes("*") && !o.text.includes("::"));
    for (const config of parsed.values("c", "config")) scan.path(config, "read");
    scan.localCode("test-runner", call.name, files);
  };
}

/** `concurrently 'cmd' 'cmd'`, `npm-run-all a b`, `run-s`, `run-p`: scripts or package scripts. */
const concurrently: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "nscpk",
    longWithValue: [
      "names",
      "prefix",
      "prefix-colors",
      "max-processes",
      "kill-others-on-fail",
      "success",
      "restart-tries",
      "restart-after",
      "timestamp-format",
      "default-input-target",
      "passthrough-arguments",
      "cwd",
    ],
    abbreviations: true,
  });
  for (const operand of parsed.operands) {
    if (/^(npm|yarn|pnpm|bun):/.test(operand.text)) {
      const [manager, script] = operand.text.split(":");
      scan.command([
        syntheticWord(manager ?? "npm"),
        syntheticWord("run"),
        syntheticWord(script ?? "", operand.literal),
      ]);
    } else scan.script(operand, call.name);
  }
};

const runAll: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    longWithValue: ["max-parallel", "npm-path", "label"],
    abbreviations: true,
  });
  if (parsed.has("npm-path"))
    return scan.findings.opaque(`\`${call.name} --npm-path\` runs another program as npm`);
  const scripts = parsed.operands.map((o) => o.text);
  targetsShip(call, scan, parsed.operands);
  scan.localCode("package-script", call.name, [syntheticWord("package.json")], scripts);
};

/** nodemon, pm2, forever: a script file or, with --exec, a command string. */
const processManager: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "xwieIn",
    longWithValue: [
      "exec",
      "watch",
      "ignore",
      "ext",
      "interpreter",
      "name",
      "config",
      "signal",
      "delay",
      "cwd",
      "node-args",
    ],
    abbreviations: true,
  });
  const exec = parsed.values("x", "exec", "interpreter");
  if (exec.length) return scan.script(joinedScript([...exec, ...parsed.operands]), `${call.name} --exec`);
  const [first, ...rest] = parsed.operands;
  if (first && ["start", "restart", "reload"].includes(first.text)) {
    const target = rest[0];
    if (!target) return scan.findings.writes(`\`${call.name} ${first.text}\``);
    if (/\.(m?[jt]sx?|c[jt]s|py|sh)$/.test(target.text)) return scan.localCode("node", call.name, [target]);
    return scan.script(target, `${call.name} start`);
  }
  if (first && /\.(m?[jt]sx?|c[jt]s)$/.test(first.text)) return scan.localCode("node", call.name, [first]);
  scan.findings.writes(`runs \`${call.name}\``);
};

/** cmake: `-P script` runs a CMake script, `-E env … cmd` runs a command, otherwise CMakeLists.txt is local code. */
const cmake: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const [first, ...rest] = call.args;
  if (first?.text === "-E") {
    const tool = rest[0]?.text;
    if (tool === "env") {
      const args = rest.slice(1);
      let i = 0;
      for (; i < args.length; i++) {
        const word = args[i] as ShellWord;
        if (word.text === "--") {
          i++;
          break;
        }
        if (word.text.startsWith("--unset=") || word.text === "--modify" || word.text.startsWith("--modify"))
          continue;
        const eq = word.text.indexOf("=");
        if (eq > 0) {
          scan.assignment(word.text.slice(0, eq), valueWord(word, eq + 1));
          continue;
        }
        break;
      }
      return args.length > i
        ? scan.command(args.slice(i))
        : scan.findings.readsSecret("`cmake -E env` prints the environment");
    }
    if (tool === "environment")
      return scan.findings.readsSecret("`cmake -E environment` prints the environment");
    if (tool === "tar" && rest.slice(1).some((a) => /^-?x/.test(a.text)))
      return scan.treeWrite(undefined, "cmake -E tar x");
    scan.findings.writes(`\`cmake -E ${tool ?? ""}\``);
    for (const arg of rest.slice(1)) scan.path(arg, "operand");
    return;
  }
  const script = call.args.findIndex((a) => a.text === "-P");
  if (script !== -1 && call.args[script + 1])
    return scan.localCode("interpreter", "cmake -P", [call.args[script + 1] as ShellWord]);
  const source =
    call.args.find((a, i) => (a.text === "-S" ? false : call.args[i - 1]?.text === "-S")) ??
    syntheticWord("CMakeLists.txt");
  scan.localCode("task-runner", call.name, [
    source.text.endsWith("CMakeLists.txt")
      ? source
      : syntheticWord(`${source.text.replace(/\/+$/, "")}/CMakeLists.txt`, source.literal),
  ]);
};

/** Git hook managers: installing writes hooks or core.hooksPath (run by later git commands). */
const hookManager: Analyzer = (call, scan) => {
  const sub = call.args.find((a) => !a.text.startsWith("-"))?.text;
  if (sub === undefined || ["install", "add", "init", "set", "autoupdate", "uninstall"].includes(sub))
    return scan.findings.sends(
      `\`${call.name}${sub ? ` ${sub}` : ""}\` installs git hooks (run by later git commands)`,
    );
  scan.localCode("task-runner", `${call.name} ${sub}`, [], [sub]);
};

/** ldd may run the program it inspects (it does for some loaders): local code. */
const ldd: Analyzer = (call, scan) => {
  const files = parseArgs(call.args).operands;
  for (const file of files) scan.localCode("executable", "ldd", [file]);
};

export const RUNNER_ANALYZERS: Readonly<Record<string, Analyzer>> = {
  make,
  gmake: make,
  bmake: make,
  pmake: make,
  just: taskRunner(["justfile", "Justfile", ".justfile"], ["justfile", "f"], ["working-directory", "d"]),
  task: taskRunner(["Taskfile.yml", "Taskfile.yaml", "taskfile.yml"], ["taskfile", "t"], ["dir", "d"]),
  rake: taskRunner(["Rakefile", "rakefile", "Rakefile.rb"], ["rakefile", "f"]),
  invoke: taskRunner(["tasks.py"], ["collection", "c"]),
  inv: taskRunner(["tasks.py"], ["collection", "c"]),
  nox: taskRunner(["noxfile.py"], ["noxfile", "f"]),
  tox: taskRunner(["tox.ini", "pyproject.toml", "setup.cfg"], ["configfile", "c"]),
  mage: taskRunner(["magefile.go"], []),
  cake: taskRunner(["Cakefile"], []),
  grunt: taskRunner(["Gruntfile.js"], ["gruntfile"]),
  gulp: taskRunner(["gulpfile.js"], ["gulpfile", "f"]),
  ant: taskRunner(["build.xml"], ["buildfile", "f", "file"]),
  sbt: taskRunner(["build.sbt"], []),
  bazel: taskRunner(["BUILD", "BUILD.bazel", "WORKSPACE"], []),
  pytest: testRunner(),
  "py.test": testRunner(),
  jest: testRunner(),
  vitest: testRunner(),
  mocha: testRunner(),
  ava: testRunner(),
  tap: testRunner(),
  tape: testRunner(),
  jasmine: testRunner(),
  karma: testRunner(),
  playwright: testRunner(),
  cypress: testRunner(),
  rspec: testRunner(),
  phpunit: testRunner(),
  ctest: testRunner(),
  nose2: testRunner(),
  concurrently,
  "npm-run-all": runAll,
  "run-s": runAll,
  "run-p": runAll,
  nodemon: processManager,
  pm2: processManager,
  forever: processManager,
  cmake,
  husky: hookManager,
  "pre-commit": hookManager,
  lefthook: hookManager,
  "simple-git-hooks": hookManager,
  ldd,
};
