// Interpreters: code on the command line is opaque; a script file is local code (class 7); code from stdin is
// opaque. Also awk (whose programs can run commands) and sqlite3 (whose dot-commands can).
import type { LocalCodeKind } from "../effects.ts";
import { parseArgs } from "../shell-options.ts";
import type { Analyzer, ProgramCall, Scan } from "../shell-scan.ts";
import { type ShellWord, syntheticWord } from "../shell-words.ts";
import { checkOperands, MAX_PROGRAM_TEXT, onlyAsksVersion } from "./common.ts";
import { buildBackendFiles, SHIPPING_NAME } from "./publishers.ts";
import { serverFinding } from "./servers.ts";

function codeOnCommandLine(call: ProgramCall, scan: Scan, flag: string) {
  scan.findings.opaque(`\`${call.name} ${flag}\` runs code given on the command line`);
}

function codeFromStdin(call: ProgramCall, scan: Scan) {
  scan.findings.opaque(
    `\`${call.name}\` reads code from stdin${call.stdinIsData ? " (piped or heredoc)" : ""}`,
  );
}

function runsScript(
  call: ProgramCall,
  scan: Scan,
  kind: LocalCodeKind,
  script: ShellWord,
  rest: readonly ShellWord[],
) {
  scan.localCode(kind, call.name, [script]);
  checkOperands(rest, scan, "operand");
}

// ---- python ----

/** Python modules run with `-m`, by what they do. Anything else: a local module file is local code, else plain. */
const PYTHON_MODULES: Record<string, (call: ProgramCall, scan: Scan, rest: readonly ShellWord[]) => void> = {
  pip: (_c, scan, rest) => scan.command([syntheticWord("pip"), ...rest]),
  pip3: (_c, scan, rest) => scan.command([syntheticWord("pip"), ...rest]),
  pytest: (_c, scan, rest) => scan.command([syntheticWord("pytest"), ...rest]),
  "py.test": (_c, scan, rest) => scan.command([syntheticWord("pytest"), ...rest]),
  twine: (_c, scan, rest) => scan.command([syntheticWord("twine"), ...rest]),
  poetry: (_c, scan, rest) => scan.command([syntheticWord("poetry"), ...rest]),
  uv: (_c, scan, rest) => scan.command([syntheticWord("uv"), ...rest]),
  unittest: (call, scan, rest) => {
    scan.localCode("test-runner", `${call.name} -m unittest`, []);
    checkOperands(rest, scan, "operand");
  },
  nose2: (call, scan) => scan.localCode("test-runner", `${call.name} -m nose2`, []),
  // pypa/build runs the project's build backend: what `pip install .` runs.
  build: (call, scan, rest) => {
    const dir = rest.find((a) => !a.text.startsWith("-"));
    const root = dir?.literal ? dir.text.replace(/\/+$/, "") || "." : ".";
    scan.localCode("python", `${call.name} -m build (build backend)`, buildBackendFiles(root));
  },
  doctest: (call, scan, rest) =>
    scan.localCode(
      "python",
      `${call.name} -m doctest`,
      rest.filter((a) => !a.text.startsWith("-")),
    ),
  timeit: (call, scan) => codeOnCommandLine(call, scan, "-m timeit"),
  code: (call, scan) => codeFromStdin(call, scan),
  pdb: (call, scan) => codeFromStdin(call, scan),
  cProfile: (call, scan, rest) => profiled(call, scan, rest),
  profile: (call, scan, rest) => profiled(call, scan, rest),
  trace: (call, scan, rest) => profiled(call, scan, rest),
  runpy: (call, scan, rest) => profiled(call, scan, rest),
  webbrowser: (call, scan) => scan.findings.sends(`\`${call.name} -m webbrowser\` opens a URL`),
  smtplib: (call, scan) => scan.findings.sends(`\`${call.name} -m smtplib\` sends mail`),
  ftplib: (call, scan) => scan.findings.sends(`\`${call.name} -m ftplib\` connects to an FTP server`),
  telnetlib: (call, scan) => scan.findings.sends(`\`${call.name} -m telnetlib\` opens a connection`),
  poplib: (call, scan) => scan.findings.sends(`\`${call.name} -m poplib\` connects to a mail server`),
  imaplib: (call, scan) => scan.findings.sends(`\`${call.name} -m imaplib\` connects to a mail server`),
  nntplib: (call, scan) => scan.findings.sends(`\`${call.name} -m nntplib\` connects to a news server`),
  zipfile: (call, scan, rest) => archiveModule(call, scan, rest),
  tarfile: (call, scan, rest) => archiveModule(call, scan, rest),
  pydoc: (call, scan, rest) => {
    if (rest.some((a) => /^-[a-zA-Z]*[pb]/.test(a.text))) return serverFinding(scan, `${call.name} -m pydoc`);
    checkOperands(rest, scan, "operand");
    scan.findings.reads();
  },
};
for (const server of [
  "http.server",
  "SimpleHTTPServer",
  "CGIHTTPServer",
  "smtpd",
  "aiosmtpd",
  "pyftpdlib",
  "uploadserver",
  "updog",
  "xmlrpc.server",
  "wsgiref.simple_server",
  "jupyter",
  "notebook",
  "jupyterlab",
  "twisted",
  "livereload",
  "http.server.__main__",
]) {
  PYTHON_MODULES[server] = (call, scan) => serverFinding(scan, `${call.name} -m ${server}`);
}

function profiled(call: ProgramCall, scan: Scan, rest: readonly ShellWord[]) {
  const parsed = parseArgs(rest, {
    shortWithValue: "osm",
    longWithValue: ["outfile", "sort", "file", "ignore-module", "ignore-dir"],
    stopAtOperand: true,
  });
  const module = parsed.get("m")?.value;
  if (module) return pythonModule(call, scan, module, parsed.operands);
  const script = parsed.operands[0];
  if (!script) return codeFromStdin(call, scan);
  runsScript(call, scan, "python", script, parsed.operands.slice(1));
}

function archiveModule(call: ProgramCall, scan: Scan, rest: readonly ShellWord[]) {
  const extract = rest.findIndex((a) => a.text === "-e" || a.text === "--extract");
  if (extract !== -1) {
    scan.path(rest[extract + 1] ?? syntheticWord(""), "read");
    return scan.treeWrite(rest[extract + 2], `${call.name} -m zipfile -e`);
  }
  checkOperands(rest, scan, "read");
  scan.findings.writes(`runs \`${call.name} -m\` on archives`);
}

function pythonModule(call: ProgramCall, scan: Scan, module: ShellWord, rest: readonly ShellWord[]) {
  if (!module.literal) return scan.findings.opaque(`\`${call.name} -m\` of a module computed at run time`);
  const known = PYTHON_MODULES[module.text];
  if (known) return known(call, scan, rest);
  // A module in the working directory (or a package with __main__) is local code; otherwise an installed one.
  if (/^[A-Za-z_][\w.]*$/.test(module.text)) {
    const local = `${module.text.replaceAll(".", "/")}.py`;
    scan.localCode("python", `${call.name} -m ${module.text}`, [syntheticWord(local)]);
  } else {
    scan.findings.writes(`runs the Python module ${module.source}`);
  }
  checkOperands(rest, scan, "operand");
}

const PYTHON_FLAGS_WITH_VALUE = "WXQ";

const python: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const args = call.args;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg) break;
    const text = arg.text;
    if (!arg.literal && text.startsWith("-"))
      return scan.findings.opaque(`\`${call.name}\` option computed at run time`);
    if (text === "-") return codeFromStdin(call, scan);
    if (text === "--") {
      const script = args[i + 1];
      return script ? runsScript(call, scan, "python", script, args.slice(i + 2)) : codeFromStdin(call, scan);
    }
    if (text.startsWith("--")) {
      if (text === "--check-hash-based-pycs") i++;
      continue;
    }
    if (text.startsWith("-") && text.length > 1) {
      for (let k = 1; k < text.length; k++) {
        const letter = text.charAt(k);
        if (letter === "c") return codeOnCommandLine(call, scan, "-c");
        if (letter === "m") {
          const module = k + 1 < text.length ? syntheticWord(text.slice(k + 1), arg.literal) : args[++i];
          if (!module) return codeFromStdin(call, scan);
          return pythonModule(call, scan, module, args.slice(i + 1));
        }
        if (letter === "i" && call.stdinIsData) return codeFromStdin(call, scan);
        if (PYTHON_FLAGS_WITH_VALUE.includes(letter)) {
          if (k + 1 === text.length) i++;
          break;
        }
      }
      continue;
    }
    return runsScript(call, scan, "python", arg, args.slice(i + 1));
  }
  codeFromStdin(call, scan);
};

// ---- node and friends ----

const NODE_CODE_OPTIONS = new Set(["e", "p", "eval", "print"]);
const NODE_MODULE_OPTIONS = ["r", "require", "import", "loader", "experimental-loader"];
const NODE_WITH_VALUE = [
  "require",
  "import",
  "loader",
  "experimental-loader",
  "conditions",
  "env-file",
  "env-file-if-exists",
  "input-type",
  "title",
  "inspect-port",
  "debug-port",
  "redirect-warnings",
  "openssl-config",
  "snapshot-blob",
  "test-reporter",
  "test-reporter-destination",
  "test-name-pattern",
  "test-skip-pattern",
  "run",
  "experimental-sea-config",
  "diagnostic-dir",
  "report-dir",
  "report-directory",
  "report-filename",
  "heapsnapshot-signal",
  "icu-data-dir",
  "trace-event-categories",
  "trace-event-file-pattern",
  "watch-path",
  "stack-trace-limit",
  "disable-warning",
  "experimental-config-file",
  "permission-audit",
];

const node: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: "rpeC",
    longWithValue: NODE_WITH_VALUE,
    stopAtOperand: true,
  });
  for (const option of parsed.options) {
    if (NODE_CODE_OPTIONS.has(option.name)) return codeOnCommandLine(call, scan, option.word.text);
  }
  if (parsed.has("c", "check")) return checkOperands(parsed.operands, scan, "read");
  if (parsed.options.some((o) => o.long && o.name.startsWith("inspect")))
    serverFinding(scan, `${call.name} --inspect (a debugger port runs any code sent to it)`);
  for (const file of parsed.values("env-file", "env-file-if-exists")) scan.path(file, "read");
  for (const file of parsed.values("openssl-config", "snapshot-blob"))
    scan.localCode("node", call.name, [file]);
  for (const file of parsed.values("redirect-warnings", "test-reporter-destination"))
    scan.path(file, "write");
  for (const module of parsed.values(...NODE_MODULE_OPTIONS)) nodeModuleSpecifier(call, scan, module);
  const target = parsed.get("run")?.value;
  if (target) {
    if (!target.literal || SHIPPING_NAME.test(target.text))
      scan.findings.sends(`\`${call.name} --run ${target.source}\` runs a script that may deploy or publish`);
    return scan.localCode(
      "package-script",
      `${call.name} --run`,
      [syntheticWord("package.json")],
      [target.text],
    );
  }
  if (parsed.has("test")) {
    scan.localCode(
      "test-runner",
      `${call.name} --test`,
      parsed.operands.filter((o) => o.literal && !o.text.includes("*")),
    );
    return;
  }
  const script = parsed.operands[0];
  if (!script || script.text === "-") {
    if (parsed.has("i", "interactive") && !call.stdinIsData) return scan.findings.reads();
    return codeFromStdin(call, scan);
  }
  runsScript(call, scan, "node", script, parsed.operands.slice(1));
};

/** `--import x`, `-r x`: inline code (`data:`), a local file (local code) or an installed package. */
function nodeModuleSpecifier(call: ProgramCall, scan: Scan, module: ShellWord) {
  if (!module.literal) return scan.findings.opaque(`\`${call.name}\` loads a module computed at run time`);
  if (/^(data|https?|blob):/i.test(module.text))
    return scan.findings.opaque(
      `\`${call.name}\` loads inline or remote code (${module.source.slice(0, 60)})`,
    );
  if (/^(\.{0,2}\/|~|file:)/.test(module.text)) return scan.localCode("node", call.name, [module]);
  scan.findings.writes(`\`${call.name}\` preloads the package ${module.text}`);
}

/** tsx, ts-node, esno…: node with a TypeScript loader. */
const nodeRunner: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: "rpeC",
    longWithValue: [...NODE_WITH_VALUE, "tsconfig", "project", "compiler"],
    stopAtOperand: true,
  });
  for (const option of parsed.options) {
    if (NODE_CODE_OPTIONS.has(option.name)) return codeOnCommandLine(call, scan, option.word.text);
  }
  const sub = parsed.operands[0];
  if (!sub) return codeFromStdin(call, scan);
  if (sub.text === "watch") return nodeRunner({ ...call, args: parsed.operands.slice(1) }, scan);
  runsScript(call, scan, "node", sub, parsed.operands.slice(1));
};

const deno: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: "c",
    longWithValue: ["config", "import-map", "location", "cert", "env-file", "lock", "reload"],
    stopAtOperand: true,
  });
  const [sub, ...rest] = parsed.operands;
  if (!sub) return codeFromStdin(call, scan);
  const subParsed = parseArgs(rest, {
    longWithValue: [
      "config",
      "import-map",
      "location",
      "cert",
      "env",
      "env-file",
      "lock",
      "allow-read",
      "allow-write",
      "allow-net",
      "allow-env",
      "allow-run",
      "port",
      "host",
    ],
    stopAtOperand: true,
  });
  switch (sub.text) {
    case "eval":
    case "repl":
      return codeOnCommandLine(call, scan, sub.text);
    case "serve":
      return serverFinding(scan, "deno serve");
    case "publish":
      return scan.findings.sends("`deno publish` publishes a package");
    case "deploy":
      return scan.findings.sends("`deno deploy` deploys code");
    case "task":
      return scan.localCode(
        "package-script",
        "deno task",
        [syntheticWord("deno.json")],
        subParsed.operands.slice(0, 1).map((o) => o.text),
      );
    case "test":
    case "bench":
      return scan.localCode("test-runner", `deno ${sub.text}`, []);
    case "fmt":
    case "lint":
    case "check":
    case "doc":
    case "info":
    case "types":
    case "completions":
    case "upgrade":
    case "cache":
    case "install":
    case "uninstall":
    case "compile":
    case "init":
    case "add":
    case "remove":
    case "outdated":
    case "clean":
    case "coverage":
    case "vendor":
      scan.findings.writes(`\`deno ${sub.text}\``);
      return checkOperands(rest, scan, "operand");
    case "run":
    case "watch": {
      const script = subParsed.operands[0];
      if (!script) return codeFromStdin(call, scan);
      if (/^https?:/i.test(script.text)) return scan.findings.opaque("`deno run` of a remote script");
      return runsScript(call, scan, "node", script, subParsed.operands.slice(1));
    }
    default:
      if (/\.(m?[jt]sx?|c[jt]s)$/.test(sub.text)) return runsScript(call, scan, "node", sub, rest);
      scan.findings.opaque(`unknown \`deno ${sub.source}\` subcommand`);
  }
};

// ---- perl, ruby, php, lua, and the rest ----

interface ScriptInterpreter {
  kind: LocalCodeKind;
  /** Short flags that take code from the command line. */
  code: string;
  /** Long options that take code. */
  codeLong?: readonly string[];
  /** Short flags whose value follows (and is not code). */
  shortWithValue?: string;
  longWithValue?: readonly string[];
  /** Flags that read code from stdin or start a REPL. */
  interactive?: string;
}

function scriptInterpreter(spec: ScriptInterpreter): Analyzer {
  return (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    const parsed = parseArgs(call.args, {
      shortWithValue: spec.shortWithValue ?? "",
      longWithValue: spec.longWithValue,
      stopAtOperand: true,
    });
    for (const option of parsed.options) {
      if (
        (!option.long && spec.code.includes(option.name)) ||
        (option.long && spec.codeLong?.includes(option.name))
      )
        return codeOnCommandLine(call, scan, option.word.text);
      if (!option.long && spec.interactive?.includes(option.name)) return codeFromStdin(call, scan);
    }
    const script = parsed.operands[0];
    if (!script || script.text === "-") return codeFromStdin(call, scan);
    runsScript(call, scan, spec.kind, script, parsed.operands.slice(1));
  };
}

/**
 * perl's clusters: `-e`/`-E` take code; `-I`, `-M`, `-m` take a value (rest of the word or the next one);
 * `-l`, `-0`, `-C` take only digits attached; `-i`, `-x`, `-d`, `-D` anything attached (`-ie` is in-place
 * with suffix "e", so the next word is a script, not code).
 */
const perl: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const args = call.args;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg) break;
    const text = arg.text;
    if (!arg.literal && text.startsWith("-")) return scan.findings.opaque("perl option computed at run time");
    if (text === "--" || !text.startsWith("-") || text === "-") {
      const script = text === "--" ? args[i + 1] : arg;
      if (!script || script.text === "-") return codeFromStdin(call, scan);
      return runsScript(call, scan, "perl", script, args.slice(args.indexOf(script) + 1));
    }
    cluster: for (let k = 1; k < text.length; k++) {
      const letter = text.charAt(k);
      switch (letter) {
        case "e":
        case "E":
          return codeOnCommandLine(call, scan, `-${letter}`);
        case "I":
        case "M":
        case "m":
          if (k + 1 === text.length) i++;
          break cluster;
        case "l":
        case "0":
        case "C":
          while (k + 1 < text.length && /[0-9]/.test(text.charAt(k + 1))) k++;
          break;
        case "d":
          if (call.stdinIsData) return codeFromStdin(call, scan);
          break cluster;
        case "i":
        case "x":
        case "D":
          break cluster;
      }
    }
  }
  codeFromStdin(call, scan);
};
const ruby: Analyzer = (call, scan) => {
  if (call.args.some((a, i) => a.text === "-run" || (a.text === "un" && call.args[i - 1]?.text === "-r")))
    return serverFinding(scan, "ruby -run (un.rb: httpd and file commands)");
  scriptInterpreter({ kind: "ruby", code: "e", shortWithValue: "IrCEFKT0x" })(call, scan);
};
const php: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, { shortWithValue: "cdfrRBEFStz", stopAtOperand: true });
  if (parsed.has("S")) return serverFinding(scan, "php -S");
  if (parsed.has("r", "R", "B", "E")) return codeOnCommandLine(call, scan, "-r");
  if (parsed.has("d", "c", "z"))
    return scan.findings.opaque("`php` loads configuration or extensions that can run code");
  if (parsed.has("a")) return codeFromStdin(call, scan);
  if (onlyAsksVersion(call.args) || parsed.has("v", "m", "i", "h", "l")) return scan.findings.reads();
  const file = parsed.get("f", "F")?.value ?? parsed.operands[0];
  if (!file) return codeFromStdin(call, scan);
  runsScript(call, scan, "php", file, parsed.operands.slice(file === parsed.operands[0] ? 1 : 0));
};

/** awk family: the program text decides; `-f` files are local code; gawk can load libraries. */
const awk: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: "FvfeilEW",
    longWithValue: ["field-separator", "assign", "file", "source", "include", "load", "exec"],
    abbreviations: true,
  });
  if (parsed.has("l", "load")) return scan.findings.opaque(`\`${call.name} -l\` loads a shared library`);
  if (parsed.has("W") && parsed.values("W").some((v) => /^(exec|e)/.test(v.text) || !v.literal))
    return scan.findings.opaque(`\`${call.name} -W exec\` runs a program file`);
  const sandboxed = parsed.has("S", "sandbox");
  const programs = parsed.values("e", "source");
  const files = [...parsed.values("f", "file", "i", "include", "E", "exec")];
  let operands = parsed.operands;
  if (programs.length === 0 && files.length === 0) {
    const program = operands[0];
    if (!program) return codeFromStdin(call, scan);
    programs.push(program);
    operands = operands.slice(1);
  }
  for (const file of files) scan.localCode("interpreter", call.name, [file]);
  for (const program of programs) {
    if (!program.literal) return scan.findings.opaque(`\`${call.name}\` program computed at run time`);
    if (program.text.length > MAX_PROGRAM_TEXT)
      return scan.findings.opaque(`\`${call.name}\` program too long to inspect`);
    const effects = awkProgramEffects(program.text);
    if (effects.runs && !sandboxed)
      return scan.findings.opaque(`\`${call.name}\` program runs commands (${effects.runs})`);
    if (effects.environ) scan.findings.readsSecret(`\`${call.name}\` reads ENVIRON`);
    if (effects.writes && !sandboxed) {
      scan.findings.writes(`\`${call.name}\` program writes files`);
      if (effects.writeTargets)
        for (const file of effects.writeTargets) scan.path(syntheticWord(file), "write");
      else scan.findings.writesUnlisted(`\`${call.name}\` program writes files it names at run time`);
    }
    if (effects.reads)
      scan.findings.readsSecret(`\`${call.name}\` program reads files it names at run time (getline <)`);
  }
  scan.findings.reads();
  for (const operand of operands) {
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(operand.text)) continue; // var=value assignment operand
    scan.path(operand, "read");
  }
};

export interface AwkEffects {
  runs?: string;
  writes: boolean;
  /** The files `print > "file"` names, when every redirection names one in a string literal. */
  writeTargets?: string[];
  reads: boolean;
  environ: boolean;
}

/**
 * A linear scan of an awk program outside string and regex literals for what can leave the awk process:
 * `system(`, a `|` that is not `||` (a command pipe), `|&`, `@load`/`@include`, `/inet/` special files
 * (network), `print … >` (writes a file), `getline <` (reads a file), ENVIRON/PROCINFO["environ"].
 */
export function awkProgramEffects(program: string): AwkEffects {
  const effects: AwkEffects = { writes: false, reads: false, environ: false, writeTargets: [] };
  let redirecting = false; // just after a print's `>` or `>>`: the next token names the file
  let i = 0;
  let inPrint = false;
  let sawGetline = false;
  let operandBefore = false; // a `/` after an operand is division, otherwise a regex literal
  const n = program.length;
  while (i < n) {
    const c = program.charAt(i);
    if (redirecting && c !== '"' && !/\s/.test(c)) {
      effects.writeTargets = undefined; // the file name is computed
      redirecting = false;
    }
    if (c === '"') {
      let j = i + 1;
      let text = "";
      while (j < n && program.charAt(j) !== '"') {
        if (program.charAt(j) === "\\") j++;
        text += program.charAt(j);
        j++;
      }
      if (text.includes("/inet")) effects.runs ??= "network special file /inet";
      if (redirecting) effects.writeTargets?.push(text);
      redirecting = false;
      i = j + 1;
      operandBefore = true;
      continue;
    }
    if (c === "/" && !operandBefore) {
      let j = i + 1;
      while (j < n && program.charAt(j) !== "/" && program.charAt(j) !== "\n") {
        if (program.charAt(j) === "\\") j++;
        j++;
      }
      i = j + 1;
      operandBefore = true;
      continue;
    }
    if (c === "#") {
      while (i < n && program.charAt(i) !== "\n") i++;
      continue;
    }
    if (/[A-Za-z_@]/.test(c)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_]/.test(program.charAt(j))) j++;
      const word = program.slice(i, j);
      if (word === "system") effects.runs ??= "system()";
      else if (word.startsWith("@")) effects.runs ??= `${word} (a directive or an indirect call)`;
      else if (word === "ENVIRON") effects.environ = true;
      else if (word === "PROCINFO") effects.environ = true;
      else if (word === "print" || word === "printf") inPrint = true;
      else if (word === "getline") sawGetline = true;
      i = j;
      operandBefore = !["print", "printf", "return", "in", "getline"].includes(word);
      continue;
    }
    if (c === "|") {
      if (program.charAt(i + 1) === "|") {
        i += 2;
        operandBefore = false;
        continue;
      }
      effects.runs ??= program.charAt(i + 1) === "&" ? "a coprocess |&" : "a command pipe |";
      i++;
      continue;
    }
    if (c === ">" && inPrint) {
      effects.writes = true;
      if (program.charAt(i + 1) === ">") i++;
      redirecting = true;
      i++;
      continue;
    }

    if (c === "<" && sawGetline) effects.reads = true;
    if (c === ";" || c === "\n" || c === "}" || c === "{") {
      inPrint = false;
      sawGetline = false;
    }
    operandBefore = /[0-9)\]$]/.test(c) ? true : /\s/.test(c) ? operandBefore : false;
    i++;
  }
  return effects;
}

/** sqlite3: SQL and dot-commands on the command line; `.shell`, `.system`, pipes and extensions run code. */
const sqlite3: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    singleDashLong: true,
    longWithValue: [
      "cmd",
      "init",
      "separator",
      "newline",
      "nullvalue",
      "vfs",
      "maxsize",
      "mmap",
      "pagecache",
      "lookaside",
      "heap",
      "A",
      "zip",
    ],
  });
  if (parsed.has("init")) return scan.findings.opaque("`sqlite3 -init` runs commands from a file");
  if (parsed.has("safe")) {
    checkOperands(parsed.operands.slice(0, 1), scan, "write");
    return scan.findings.writes("sqlite3 --safe");
  }
  const [database, ...sql] = parsed.operands;
  const statements = [...parsed.values("cmd"), ...sql];
  if (database) scan.path(database, "write");
  if (statements.length === 0) {
    if (call.stdinIsData) return codeFromStdin(call, scan);
    return scan.findings.writes("sqlite3 opens a database");
  }
  for (const statement of statements) {
    if (!statement.literal) return scan.findings.opaque("`sqlite3` runs SQL computed at run time");
    if (statement.text.length > MAX_PROGRAM_TEXT)
      return scan.findings.opaque("`sqlite3` SQL too long to inspect");
    const reason = sqliteReach(statement.text);
    if (reason) return scan.findings.opaque(`\`sqlite3\` ${reason}`);
  }
  scan.findings.writes("sqlite3 runs SQL on a local database");
};

const SQLITE_SAFE_DOT_COMMANDS = new Set([
  "headers",
  "mode",
  "tables",
  "schema",
  "indexes",
  "indices",
  "databases",
  "dump",
  "timer",
  "width",
  "nullvalue",
  "separator",
  "show",
  "stats",
  "eqp",
  "explain",
  "changes",
  "bail",
  "echo",
  "print",
  "help",
  "quit",
  "exit",
  "fullschema",
  "lint",
  "dbinfo",
  "dbconfig",
  "selftest",
  "sha3sum",
  "prompt",
  "timeout",
  "version",
  "limit",
]);

/**
 * What SQL text given to sqlite3 can reach beyond the database: a dot-command other than the listed harmless
 * ones (`.shell`, `.system`, `.output |cmd`, `.load`, `.read`, `.import`…), or a function that reads or writes
 * files or loads code. Linear: split on newlines and semicolons, then word tests.
 */
export function sqliteReach(sql: string): string | undefined {
  if (/load_extension|readfile|writefile|fts3_tokenizer|\bedit\b|\battach\b/i.test(sql))
    return "SQL calls functions that reach files or load code";
  for (const line of sql.split(/[\n;]/)) {
    const trimmed = line.trimStart();
    if (!trimmed.startsWith(".")) continue;
    const name = /^\.([A-Za-z_]+)/.exec(trimmed.slice(0, 64))?.[1]?.toLowerCase() ?? "";
    if (!SQLITE_SAFE_DOT_COMMANDS.has(name)) return `runs the dot-command .${name || "?"}`;
  }
  return undefined;
}

/** jq/yq: `env`/`$ENV` expose the environment; `--rawfile`/`--slurpfile` and operands read files. */
const jq: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "fL",
    longWithValue: ["from-file", "arg", "argjson", "slurpfile", "rawfile", "indent", "tab"],
    abbreviations: true,
  });
  const named = parsed.all("arg", "argjson", "slurpfile", "rawfile");
  for (const option of parsed.all("slurpfile", "rawfile")) {
    const index = call.args.indexOf(option.word);
    const file = call.args[index + 2];
    if (file) scan.path(file, "read");
  }
  const fromFile = parsed.values("f", "from-file");
  let operands = parsed.operands;
  if (named.length > 0) {
    // `--arg name value` takes two words; parseArgs consumed one.
    const consumed = new Set(named.map((o) => call.args[call.args.indexOf(o.word) + 2]));
    operands = operands.filter((o) => !consumed.has(o));
  }
  const filter = fromFile.length > 0 ? undefined : operands[0];
  for (const file of fromFile) scan.path(file, "read");
  if (filter) {
    if (!filter.literal) scan.findings.opaque(`\`${call.name}\` filter computed at run time`);
    else if (
      /\benv\b|\$ENV|\bstrenv\b|\benvsubst\b|\binput_filename\b|\bload(_str)?\b/.test(
        filter.text.slice(0, 65536),
      )
    )
      scan.findings.readsSecret(`\`${call.name}\` filter reads the environment or files`);
  }
  scan.findings.reads();
  checkOperands(filter ? operands.slice(1) : operands, scan, "read");
};

export const INTERPRETER_ANALYZERS: Readonly<Record<string, Analyzer>> = {
  python,
  python2: python,
  python3: python,
  pypy: python,
  pypy3: python,
  node,
  nodejs: node,
  tsx: nodeRunner,
  "ts-node": nodeRunner,
  "ts-node-esm": nodeRunner,
  esno: nodeRunner,
  esr: nodeRunner,
  "vite-node": nodeRunner,
  jiti: nodeRunner,
  "babel-node": nodeRunner,
  deno,
  perl,
  ruby,
  php,
  lua: scriptInterpreter({ kind: "interpreter", code: "e", shortWithValue: "l", interactive: "i" }),
  luajit: scriptInterpreter({ kind: "interpreter", code: "e", shortWithValue: "lbj", interactive: "i" }),
  Rscript: scriptInterpreter({ kind: "interpreter", code: "e", codeLong: ["expr"] }),
  R: scriptInterpreter({ kind: "interpreter", code: "e", codeLong: ["expr"] }),
  julia: scriptInterpreter({
    kind: "interpreter",
    code: "eE",
    codeLong: ["eval", "print"],
    shortWithValue: "CLJtpO",
    interactive: "i",
  }),
  osascript: scriptInterpreter({ kind: "interpreter", code: "e", shortWithValue: "ls" }),
  pwsh: scriptInterpreter({
    kind: "interpreter",
    code: "cC",
    codeLong: ["command", "Command", "encodedcommand", "EncodedCommand", "ec"],
    shortWithValue: "fF",
  }),
  powershell: scriptInterpreter({
    kind: "interpreter",
    code: "cC",
    codeLong: ["command", "Command", "encodedcommand", "EncodedCommand", "ec"],
  }),
  tclsh: scriptInterpreter({ kind: "interpreter", code: "" }),
  wish: scriptInterpreter({ kind: "interpreter", code: "" }),
  irb: (call, scan) => codeFromStdin(call, scan),
  pry: (call, scan) => codeFromStdin(call, scan),
  jshell: scriptInterpreter({ kind: "interpreter", code: "" }),
  ghci: scriptInterpreter({ kind: "interpreter", code: "e" }),
  runghc: scriptInterpreter({ kind: "interpreter", code: "e" }),
  runhaskell: scriptInterpreter({ kind: "interpreter", code: "e" }),
  scala: scriptInterpreter({ kind: "interpreter", code: "e" }),
  groovy: scriptInterpreter({ kind: "interpreter", code: "e" }),
  elixir: scriptInterpreter({ kind: "interpreter", code: "e", codeLong: ["eval"] }),
  erl: (call, scan) => scan.findings.opaque(`\`${call.name}\` runs an Erlang shell or code`),
  guile: scriptInterpreter({ kind: "interpreter", code: "c" }),
  racket: scriptInterpreter({ kind: "interpreter", code: "e", codeLong: ["eval"] }),
  swift: scriptInterpreter({ kind: "interpreter", code: "e" }),
  m4: (call, scan) => scan.findings.opaque(`\`${call.name}\` expands macros that can run commands (syscmd)`),
  awk,
  gawk: awk,
  mawk: awk,
  nawk: awk,
  sqlite3,
  jq,
  gojq: jq,
  yq: jq,
};
