// Compilers, formatters, linters and type checkers, as data (issue 19, rules as data): for each program, the
// options that make it load or run code (plug-ins, wrappers, config written in a programming language), the
// options naming files it writes, whether it rewrites its operands (and when), and the config files in the
// working directory that are code. Within its spec a program is modeled: it reads and writes the files it names.
// Outside it (such an option, a code config present) it runs code the gate does not model.
import { parseArgs } from "../shell-options.ts";
import type { Analyzer } from "../shell-scan.ts";
import { checkOperands, onlyAsksVersion } from "./common.ts";

export interface DevToolSpec {
  what: string;
  /** Short option letters that take a value. */
  shortWithValue?: string;
  /** Long options (no dashes) that take a value. */
  longWithValue?: readonly string[];
  /** Options (short letters or long names) that load or run code: plug-ins, wrappers, code configs. */
  runsCode?: readonly string[];
  /** Options whose value is a file or folder it writes. */
  writes?: readonly string[];
  /** Options whose value is a file it reads (config, input lists). */
  reads?: readonly string[];
  /** Operands: files it only reads, files it rewrites, or rewrites only with one of `inPlace`. */
  operands: "read" | "write" | "in-place";
  inPlace?: readonly string[];
  /** Config files in the working directory that are programs (their presence means the tool runs them). */
  codeConfigs?: readonly string[];
  /** Config files (read bounded) whose matching lines load plug-ins: `plugins =`, `load-plugins =`. */
  codeConfigKeys?: ReadonlyArray<{ file: string; key: RegExp }>;
  /** Extra check on the arguments (e.g. `-Xclang -load`): the reason it runs code, or undefined. */
  runsCodeWhen?: (args: readonly string[]) => string | undefined;
}

const JS_CONFIG = (base: string) =>
  ["js", "mjs", "cjs", "ts", "mts", "cts"].map((extension) => `${base}.${extension}`);

const C_COMPILER: DevToolSpec = {
  what: "compiles C/C++",
  shortWithValue: "oIDULxBF",
  longWithValue: ["param", "specs", "sysroot", "wrapper", "plugin", "target"],
  runsCode: ["wrapper", "B", "specs", "fplugin", "fpass-plugin", "plugin", "fplugin-arg"],
  writes: ["o"],
  operands: "read",
  runsCodeWhen: (args) =>
    args.some((a) => /^-(?:fplugin|fpass-plugin|wrapper|specs|B)(?:=|$)/.test(a) || a === "-load")
      ? "loads a plug-in or runs a wrapper program"
      : undefined,
};

const PRETTIER: DevToolSpec = {
  what: "formats files",
  longWithValue: ["config", "plugin", "ignore-path", "parser", "stdin-filepath", "cache-location"],
  runsCode: ["plugin"],
  reads: ["config", "ignore-path"],
  operands: "in-place",
  inPlace: ["write", "w"],
  codeConfigs: [...JS_CONFIG("prettier.config"), ...JS_CONFIG(".prettierrc")],
  runsCodeWhen: (args) => configInCode(args, "--config"),
};

const ESLINT: DevToolSpec = {
  what: "lints files",
  shortWithValue: "cf",
  longWithValue: [
    "config",
    "rulesdir",
    "plugin",
    "resolve-plugins-relative-to",
    "format",
    "output-file",
    "ext",
  ],
  runsCode: ["rulesdir", "plugin", "resolve-plugins-relative-to"],
  writes: ["o", "output-file"],
  operands: "in-place",
  inPlace: ["fix"],
  codeConfigs: JS_CONFIG("eslint.config"),
  runsCodeWhen: (args) => configInCode(args, "-c", "--config") ?? customFormatter(args),
};

/** `--config file.js`: a config written in code. */
function configInCode(args: readonly string[], ...names: string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    const value = names.includes(arg)
      ? args[i + 1]
      : names.map((n) => `${n}=`).find((p) => arg.startsWith(p))
        ? arg.slice(arg.indexOf("=") + 1)
        : undefined;
    if (value !== undefined && /\.[cm]?[jt]s$/.test(value))
      return `loads a config written in code (${value})`;
  }
  return undefined;
}

/** eslint `-f ./formatter.js`: a formatter module from a path. */
function customFormatter(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++)
    if ((args[i] === "-f" || args[i] === "--format") && /[/.]/.test(args[i + 1] ?? ""))
      return `loads a formatter module (${args[i + 1]})`;
  return undefined;
}

/** Programs by name (several names can share one spec). */
export const DEV_TOOL_SPECS: Readonly<Record<string, DevToolSpec>> = {
  cc: C_COMPILER,
  gcc: C_COMPILER,
  "g++": C_COMPILER,
  "c++": C_COMPILER,
  clang: C_COMPILER,
  "clang++": C_COMPILER,
  rustc: {
    what: "compiles Rust",
    shortWithValue: "oLlC",
    longWithValue: [
      "out-dir",
      "crate-type",
      "edition",
      "emit",
      "target",
      "cfg",
      "extern",
      "sysroot",
      "codegen",
    ],
    runsCode: ["Z"],
    writes: ["o", "out-dir"],
    operands: "read",
    runsCodeWhen: (args) =>
      args.some(
        (a, i) =>
          /^(?:-C|--codegen)$/.test(a) && /^(?:linker|link-arg|link-args|llvm-args)=/.test(args[i + 1] ?? ""),
      ) || args.some((a) => /^-C(?:linker|link-args?)=/.test(a))
        ? "runs a linker the command chose"
        : undefined,
  },
  javac: {
    what: "compiles Java",
    shortWithValue: "dsh",
    longWithValue: ["class-path", "classpath", "cp", "source-path", "release", "module-path"],
    runsCode: ["processor", "processorpath", "processor-path", "Xplugin"],
    writes: ["d", "s", "h"],
    operands: "read",
    runsCodeWhen: (args) =>
      args.some((a) => /^-(?:processor|processorpath|-processor-path|Xplugin)/.test(a))
        ? "runs annotation processors or compiler plug-ins"
        : undefined,
  },
  tsc: {
    what: "type-checks and compiles TypeScript",
    shortWithValue: "p",
    longWithValue: [
      "project",
      "outDir",
      "outFile",
      "declarationDir",
      "rootDir",
      "target",
      "module",
      "lib",
      "tsBuildInfoFile",
      "generateTrace",
    ],
    writes: ["outDir", "outFile", "declarationDir", "tsBuildInfoFile", "generateTrace"],
    reads: ["p", "project"],
    operands: "read",
  },
  prettier: PRETTIER,
  eslint: ESLINT,
  black: {
    what: "formats Python",
    longWithValue: [
      "config",
      "line-length",
      "target-version",
      "include",
      "exclude",
      "extend-exclude",
      "force-exclude",
    ],
    reads: ["config"],
    operands: "in-place",
    inPlace: [],
  },
  ruff: {
    what: "lints and formats Python",
    longWithValue: [
      "config",
      "select",
      "ignore",
      "extend-select",
      "line-length",
      "target-version",
      "output-file",
      "output-format",
      "cache-dir",
    ],
    writes: ["output-file"],
    operands: "in-place",
    inPlace: ["fix", "format"],
  },
  isort: {
    what: "sorts Python imports",
    longWithValue: ["settings-path", "settings-file", "profile"],
    operands: "in-place",
    inPlace: [],
  },
  mypy: {
    what: "type-checks Python",
    longWithValue: ["config-file", "python-version", "cache-dir", "plugins"],
    runsCode: ["plugins"],
    reads: ["config-file"],
    operands: "read",
    codeConfigKeys: ["mypy.ini", ".mypy.ini", "setup.cfg", "pyproject.toml"].map((file) => ({
      file,
      key: /^\s*plugins\s*=/m,
    })),
  },
  flake8: {
    what: "lints Python",
    longWithValue: [
      "config",
      "append-config",
      "select",
      "ignore",
      "max-line-length",
      "output-file",
      "format",
    ],
    runsCode: ["append-config"],
    writes: ["output-file"],
    reads: ["config"],
    operands: "read",
    codeConfigKeys: ["setup.cfg", "tox.ini", ".flake8"].map((file) => ({
      file,
      key: /^\s*\[flake8:local-plugins\]/m,
    })),
  },
  pylint: {
    what: "lints Python",
    longWithValue: ["rcfile", "load-plugins", "init-hook", "output", "disable", "enable"],
    runsCode: ["load-plugins", "init-hook"],
    writes: ["output"],
    reads: ["rcfile"],
    operands: "read",
    codeConfigKeys: [".pylintrc", "pylintrc", "pyproject.toml", "setup.cfg"].map((file) => ({
      file,
      key: /^\s*(?:load-plugins|init-hook)\s*=/m,
    })),
  },
  gofmt: { what: "formats Go", operands: "in-place", inPlace: ["w"] },
  "golangci-lint": {
    what: "lints Go",
    shortWithValue: "c",
    longWithValue: ["config", "out-format", "timeout", "enable", "disable"],
    reads: ["c", "config"],
    operands: "read",
  },
  rustfmt: {
    what: "formats Rust",
    longWithValue: ["config-path", "edition", "config"],
    operands: "in-place",
    inPlace: [],
  },
  "clang-format": {
    what: "formats C/C++",
    longWithValue: ["style", "assume-filename", "lines", "offset", "length"],
    operands: "in-place",
    inPlace: ["i"],
  },
  shfmt: { what: "formats shell", shortWithValue: "ilf", operands: "in-place", inPlace: ["w"] },
  shellcheck: {
    what: "lints shell",
    shortWithValue: "efsSoPW",
    longWithValue: ["exclude", "format", "shell", "severity", "source-path", "include", "enable"],
    operands: "read",
  },
  biome: {
    what: "lints and formats JavaScript/TypeScript",
    longWithValue: ["config-path", "reporter", "max-diagnostics", "log-level", "log-kind"],
    operands: "in-place",
    inPlace: ["write", "fix", "apply", "apply-unsafe"],
  },
  dprint: {
    what: "formats files",
    shortWithValue: "c",
    longWithValue: ["config"],
    operands: "in-place",
    inPlace: ["fmt"],
  },
  stylelint: {
    what: "lints CSS",
    longWithValue: ["config", "custom-syntax", "custom-formatter", "output-file"],
    runsCode: ["custom-syntax", "custom-formatter"],
    writes: ["output-file"],
    operands: "in-place",
    inPlace: ["fix"],
    codeConfigs: [...JS_CONFIG("stylelint.config"), ...JS_CONFIG(".stylelintrc")],
  },
  yamllint: { what: "lints YAML", shortWithValue: "cdf", operands: "read" },
  markdownlint: {
    what: "lints Markdown",
    shortWithValue: "cro",
    runsCode: ["r", "rules"],
    writes: ["o"],
    operands: "in-place",
    inPlace: ["fix"],
  },
  hadolint: { what: "lints Dockerfiles", shortWithValue: "c", operands: "read" },
};

function devTool(name: string, spec: DevToolSpec): Analyzer {
  return (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    const parsed = parseArgs(call.args, {
      shortWithValue: spec.shortWithValue ?? "",
      longWithValue: spec.longWithValue ?? [],
    });
    const texts = call.args.map((a) => a.text);
    const dynamic = call.args.find((a) => !a.literal && a.text.startsWith("-"));
    if (dynamic)
      return scan.findings.unmodeled(
        "construct",
        `\`${name}\` is given an option computed at run time (${dynamic.source})`,
      );
    const code = (spec.runsCode ?? []).find((option) => parsed.has(option));
    if (code)
      return scan.findings.unmodeled("config", `\`${name} --${code}\` loads code the gate does not model`);
    const when = spec.runsCodeWhen?.(texts);
    if (when) return scan.findings.unmodeled("config", `\`${name}\` ${when}`);
    const config = (spec.codeConfigs ?? []).find((file) => scan.exists(file));
    if (config)
      return scan.findings.unmodeled("config", `\`${name}\` loads ${config}, a config written in code`);
    const configs = [
      ...(spec.codeConfigKeys ?? []),
      // A config named on the command line is judged by the same keys.
      ...parsed
        .values(...(spec.reads ?? []))
        .map((word) => ({ file: word.text, key: spec.codeConfigKeys?.[0]?.key })),
    ];
    for (const { file, key } of configs) {
      if (!key) continue;
      const text = scan.config(file);
      if (text === null || (text !== undefined && key.test(text)))
        return scan.findings.unmodeled(
          "config",
          `\`${name}\` reads ${file}, which loads plug-ins the gate does not model`,
        );
    }
    for (const file of parsed.values(...(spec.reads ?? []))) scan.path(file, "read");
    for (const file of parsed.values(...(spec.writes ?? []))) scan.path(file, "write");
    const rewrites =
      spec.operands === "write" ||
      (spec.operands === "in-place" &&
        ((spec.inPlace?.length ?? 0) === 0 ||
          (spec.inPlace ?? []).some((option) => parsed.has(option) || texts.includes(option))));
    if (rewrites) scan.findings.writes(`\`${name}\` ${spec.what}`);
    else scan.findings.reads();
    const operands = parsed.operands.filter((o) => !(spec.inPlace ?? []).includes(o.text));
    checkOperands(operands, scan, "read");
    if (rewrites) checkOperands(operands, scan, "write");
  };
}

export const DEV_TOOL_ANALYZERS: Readonly<Record<string, Analyzer>> = Object.fromEntries(
  Object.entries(DEV_TOOL_SPECS).map(([name, spec]) => [name, devTool(name, spec)]),
);
