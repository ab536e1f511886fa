// Wrappers (programs whose payload is another command), shells, shell builtins and schedulers.
import { isCredentialVariable } from "../credential-variables.ts";
import { parseArgs, valueWord } from "../shell-options.ts";
import type { Analyzer, ProgramCall, Scan } from "../shell-scan.ts";
import { DYNAMIC, type ShellWord, syntheticWord } from "../shell-words.ts";
import { joinedScript, onlyAsksVersion, opaqueProgram, textAt, unknownArgument } from "./common.ts";

/** env and sudo take any word with `=` before the command as an assignment (the name need not be valid shell). */
const ASSIGNMENT = /^[^=]+=/;

interface WrapperSpec {
  shortWithValue?: string;
  longWithValue?: readonly string[];
  /** Operands before the payload (timeout's duration, chroot's root, taskset's mask). */
  leading?: number;
  /** Options naming the directory the payload runs in. */
  chdir?: readonly string[];
  /** `VAR=value` words after the options set the payload's environment. */
  assignments?: boolean;
  /** What an empty payload means. */
  empty?: "nothing" | "shell-from-stdin";
  /** Options that make the wrapper run its payload through a shell (`sudo -s cmd`). */
  shellOptions?: readonly string[];
  /** Options after which the wrapper itself is something else (strace -p attaches to a process). */
  opaqueOptions?: Record<string, string>;
  /** Options whose value is a file the wrapper writes. */
  writes?: readonly string[];
  /** The wrapper routes the payload's traffic elsewhere (torsocks, proxychains). */
  network?: string;
  /** A shell keyword or builtin, not a program: the payload runs in this shell (`time cd x` moves it). */
  sameShell?: boolean;
}

/** Runs the payload of a wrapper described by `spec`. */
function wrapper(spec: WrapperSpec): Analyzer {
  return (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    const parsed = parseArgs(call.args, {
      shortWithValue: spec.shortWithValue,
      longWithValue: spec.longWithValue,
      abbreviations: true,
      stopAtOperand: true,
    });
    for (const [option, why] of Object.entries(spec.opaqueOptions ?? {})) {
      if (parsed.has(option)) return scan.findings.opaque(`\`${call.name}\` ${why}`);
    }
    for (const value of parsed.values(...(spec.writes ?? []))) scan.path(value, "write");
    if (spec.network) scan.findings.sends(`\`${call.name}\` ${spec.network}`);
    let payload = parsed.operands.slice(spec.leading ?? 0);
    if (spec.assignments) {
      let count = 0;
      while (payload[count] && ASSIGNMENT.test(payload[count]?.text ?? "")) count++;
      // `time IFS=:` (a keyword before assignments alone) changes this shell; before a command, its environment.
      const persists = spec.sameShell === true && count === payload.length;
      for (const word of payload.slice(0, count)) {
        const eq = word.text.indexOf("=");
        scan.assignment(word.text.slice(0, eq), valueWord(word, eq + 1), { persists });
      }
      payload = payload.slice(count);
    }
    const cwd = parsed.values(...(spec.chdir ?? [])).at(-1);
    const viaShell = (spec.shellOptions ?? []).some((option) => parsed.has(option));
    if (payload.length === 0) {
      if (spec.empty === "shell-from-stdin" || viaShell)
        return scan.findings.opaque(`\`${call.name}\` starts a shell reading commands from stdin`);
      return scan.findings.reads();
    }
    if (viaShell) return scan.script(joinedScript(payload), `${call.name} -s`, { cwd });
    scan.command(payload, { cwd, stdinIsData: call.stdinIsData, sameShell: spec.sameShell ?? false });
  };
}

const sudo = wrapper({
  shortWithValue: "ugCDhprtUTR",
  longWithValue: [
    "user",
    "group",
    "close-from",
    "chdir",
    "host",
    "prompt",
    "role",
    "type",
    "other-user",
    "command-timeout",
    "chroot",
  ],
  chdir: ["D", "chdir"],
  assignments: true,
  shellOptions: ["s", "i", "shell", "login"],
  opaqueOptions: {
    e: "edits files as another user (sudoedit)",
    edit: "edits files as another user (sudoedit)",
  },
});

const env: Analyzer = (call, scan) => {
  const args = call.args;
  let i = 0;
  let cwd: ShellWord | undefined;
  /** What the payload runs without: every variable (`env -i`), or the ones `-u` names. */
  let cleared = false;
  const unset: ShellWord[] = [];
  for (; i < args.length; i++) {
    const arg = args[i];
    if (!arg) break;
    const text = arg.text;
    if (
      text === "-S" ||
      text === "--split-string" ||
      text.startsWith("--split-string=") ||
      /^-[a-zA-Z]*S./.test(text)
    ) {
      const inline = text.startsWith("--split-string=")
        ? text.slice(15)
        : /^-[a-zA-Z]*S(.+)$/s.exec(text)?.[1];
      const script = inline !== undefined ? syntheticWord(inline, arg.literal) : args[i + 1];
      const tail = args.slice(inline !== undefined ? i + 1 : i + 2);
      if (!script?.literal || tail.some((t) => !t.literal))
        return scan.findings.opaque("`env -S` splits text computed at run time");
      const joined = [script.text, ...tail.map((t) => quote(t.text))].join(" ");
      return scan.script(syntheticWord(joined), "env -S", { cwd });
    }
    if (["-u", "--unset", "-C", "--chdir", "-P", "-a", "--argv0"].includes(text)) {
      if (text === "-C" || text === "--chdir") cwd = args[i + 1];
      const name = args[i + 1];
      if ((text === "-u" || text === "--unset") && name) unset.push(name);
      i++;
      continue;
    }
    if (text.startsWith("--unset=") || /^-u./.test(text)) {
      unset.push(syntheticWord(text.startsWith("--") ? text.slice(8) : text.slice(2), arg.literal));
      continue;
    }
    if (text === "-" || text === "-i" || text === "--ignore-environment") {
      cleared = true;
      continue;
    }
    if (text.startsWith("--chdir=")) {
      cwd = syntheticWord(text.slice(8), arg.literal);
      continue;
    }
    if (text === "--") {
      i++;
      break;
    }
    if (text.startsWith("-") && text.length > 1) continue;
    if (ASSIGNMENT.test(text)) {
      scan.assignment(text.slice(0, text.indexOf("=")), valueWord(arg, text.indexOf("=") + 1));
      continue;
    }
    if (!arg.literal) return scan.findings.opaque("`env` runs a command computed at run time");
    break;
  }
  const payload = args.slice(i);
  if (payload.length === 0) return scan.findings.readsSecret("`env` prints environment variables");
  scan.command(payload, { cwd, stdinIsData: call.stdinIsData, environment: { cleared, unset } });
};

function quote(text: string): string {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

/** xargs: the payload gets arguments the gate cannot see (from stdin or `-a file`). */
const xargs: Analyzer = (call, scan) => {
  // GNU: -i[R], -e[EOF], -l[N] (and --replace[=R]…) take only attached values.
  const parsed = parseArgs(call.args, {
    shortWithValue: "adEILnPs",
    shortWithAttachedValue: "iel",
    longWithValue: ["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"],
    abbreviations: true,
    stopAtOperand: true,
  });
  for (const file of parsed.values("a", "arg-file")) scan.path(file, "read");
  const replace = parsed.get("I", "i", "replace");
  const token = replace?.value?.text ?? (replace ? "{}" : undefined);
  let payload = parsed.operands;
  if (payload.length === 0) payload = [syntheticWord("echo")];
  if (token && token.length > 0) {
    payload = payload.map((word) =>
      word.text.includes(token)
        ? {
            ...word,
            text: word.text.replaceAll(token, DYNAMIC),
            forms: word.forms.map((f) => f.replaceAll(token, DYNAMIC)),
            literal: false,
          }
        : word,
    );
  } else {
    payload = [...payload, unknownArgument("arguments xargs reads")];
  }
  scan.findings.reads();
  scan.command(payload, { stdinIsData: false });
};

/** GNU parallel: `cmd ::: args` runs cmd per argument; with no command the arguments are commands. */
const parallel: Analyzer = (call, scan) => {
  const separator = call.args.findIndex((a) => a.text === ":::" || a.text === "::::" || a.text === ":::+");
  const head = separator === -1 ? call.args : call.args.slice(0, separator);
  const parsed = parseArgs(head, { shortWithValue: "jSaIdEnNLlkX", stopAtOperand: true });
  if (parsed.operands.length === 0) {
    if (separator === -1) return scan.findings.opaque("`parallel` runs commands read from stdin");
    for (const word of call.args.slice(separator + 1)) {
      if (word.text === ":::" || word.text === "::::") break;
      scan.script(word, "parallel");
    }
    return;
  }
  scan.command([...parsed.operands, unknownArgument("arguments parallel substitutes")], {
    stdinIsData: false,
  });
};

/** `watch [opts] cmd…`: the words are joined and run by `sh -c` (or exec'd with -x). */
const watch: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "nq",
    longWithValue: ["interval", "equexit", "differences"],
    stopAtOperand: true,
  });
  if (parsed.operands.length === 0) return scan.findings.reads();
  if (parsed.has("x", "exec")) return scan.command(parsed.operands);
  scan.script(joinedScript(parsed.operands), "watch");
};

/** `flock [opts] file cmd…` or `flock [opts] file -c cmd`. */
const flock: Analyzer = (call, scan) => {
  // `flock [opts] file -c cmd` (options may follow the file) or `flock [opts] file cmd…`.
  const spec = {
    shortWithValue: "wEc",
    longWithValue: ["timeout", "conflict-exit-code", "command"],
    abbreviations: true,
  };
  const head = parseArgs(call.args, { ...spec, stopAtOperand: true });
  const command =
    head.get("c", "command")?.value ?? parseArgs(head.operands.slice(1), spec).get("c", "command")?.value;
  if (command) return scan.script(command, "flock -c");
  const payload = head.operands.slice(1);
  if (payload.length === 0) return scan.findings.reads();
  scan.command(payload);
};

/** `su [opts] [user] [-c cmd]`, `runuser`: no -c means an interactive shell reading stdin. */
const su: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "cgGsuw",
    longWithValue: [
      "command",
      "session-command",
      "group",
      "supp-group",
      "shell",
      "user",
      "whitelist-environment",
    ],
    abbreviations: true,
  });
  const command = parsed.get("c", "command", "session-command")?.value;
  if (command) return scan.script(command, `${call.name} -c`);
  if (call.name === "runuser" && parsed.operands.length > 1 && parsed.has("u", "user"))
    return scan.command(parsed.operands);
  if (call.name === "runuser" && parsed.has("u", "user") && parsed.operands.length > 0)
    return scan.command(parsed.operands);
  scan.findings.opaque(`\`${call.name}\` starts a shell reading commands from stdin`);
};

/** `script [opts] [file]`: records a shell session; -c runs a command. */
const script: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "cEeIOBTt",
    longWithValue: [
      "command",
      "echo",
      "log-in",
      "log-out",
      "log-io",
      "log-timing",
      "logging-format",
      "output-limit",
    ],
    abbreviations: true,
  });
  for (const file of parsed.operands) scan.path(file, "write");
  const command = parsed.get("c", "command")?.value;
  if (command) return scan.script(command, "script -c");
  scan.findings.opaque("`script` starts a shell reading commands from stdin");
};

const SHELL_OPTIONS_WITH_VALUE = new Set(["-o", "+o", "-O", "+O", "--rcfile", "--init-file"]);

/** sh/bash/zsh/…: `-c script`, a script file, or commands from stdin. */
const shell: Analyzer = (call, scan) => {
  const args = call.args;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg) break;
    if (!arg.literal) return scan.findings.opaque(`\`${call.name}\` with arguments computed at run time`);
    const text = arg.text;
    if (text === "--" || text === "-") {
      const file = args[i + 1];
      return file ? runScript(call, file, scan) : stdinShell(call, scan);
    }
    if (SHELL_OPTIONS_WITH_VALUE.has(text)) {
      if (text === "--rcfile" || text === "--init-file") {
        const file = args[i + 1];
        if (file) scan.path(file, "read");
      }
      i++;
      continue;
    }
    if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(text)) return scan.script(args[i + 1], `${call.name} -c`);
    if (call.name === "fish" && (text === "-C" || text === "--init-command")) {
      scan.script(args[i + 1], "fish -C");
      i++;
      continue;
    }
    if (/^-[a-zA-Z]*s[a-zA-Z]*$/.test(text)) return stdinShell(call, scan);
    if (text.startsWith("-") || text.startsWith("+")) continue;
    return runScript(call, arg, scan);
  }
  stdinShell(call, scan);
};

function runScript(call: ProgramCall, file: ShellWord, scan: Scan) {
  scan.localCode("shell-script", call.name, [file]);
}

function stdinShell(call: ProgramCall, scan: Scan) {
  scan.findings.opaque(
    `\`${call.name}\` reads commands from stdin${call.stdinIsData ? " (piped or heredoc)" : ""}`,
  );
}

const source: Analyzer = (call, scan) => {
  const file = call.args[0];
  if (!file) return scan.findings.reads();
  if (!file.literal) return scan.findings.opaque(`\`${call.name}\` of a script path computed at run time`);
  scan.localCode("shell-script", call.name, [file]);
};

const evalBuiltin: Analyzer = (call, scan) => {
  scan.findings.opaque("`eval` runs text as code");
  if (call.args.length > 0) scan.script(joinedScript(call.args), "eval");
};

const exec: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, { shortWithValue: "a", stopAtOperand: true });
  if (parsed.operands.length === 0) return scan.findings.reads(); // `exec 3>file`: redirections only
  // `exec -c` runs the command with an empty environment.
  scan.command(parsed.operands, { stdinIsData: call.stdinIsData, environment: { cleared: parsed.has("c") } });
};

const command: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, { stopAtOperand: true });
  if (parsed.has("v", "V")) return scan.findings.reads();
  if (parsed.operands.length === 0) return scan.findings.reads();
  scan.command(parsed.operands, { stdinIsData: call.stdinIsData, sameShell: true });
};

const builtin: Analyzer = (call, scan) => {
  if (call.args.length === 0) return scan.findings.reads();
  scan.command(call.args, { stdinIsData: call.stdinIsData, sameShell: true });
};

const trap: Analyzer = (call, scan) => {
  const first = call.args[0];
  if (!first || first.text === "-p" || first.text === "-l" || first.text === "-" || /^\d+$/.test(first.text))
    return scan.findings.reads();
  scan.script(first, "trap");
};

const alias: Analyzer = (call, scan) => {
  if (call.args.some((a) => a.text.includes("=") || !a.literal))
    return scan.findings.opaque("defines an alias (a hidden command)");
  scan.findings.reads();
};

const cd: Analyzer = (call, scan) => {
  const target = call.args.find((a) => !/^-[LPe@]+$/.test(a.text));
  if (target?.text === "-")
    return scan.findings.writesUnlisted(
      "`cd -` returns to a directory the gate did not track: later relative paths may name any file",
    );
  scan.chdir(target);
  scan.findings.reads();
};

/** Builtins that print, test or change only the shell's own state. */
const harmlessBuiltin: Analyzer = (_call, scan) => {
  scan.findings.reads();
};

/**
 * A variable name with a subscript (`a[$(cmd)]`) given to a builtin that assigns, tests or unsets it: bash
 * evaluates the subscript as arithmetic, and a command substitution in it runs.
 */
function subscriptRuns(name: ShellWord | undefined, scan: Scan, program: string): boolean {
  if (!name) return false;
  if (!name.literal || /\[.*[$`]/.test(name.text)) {
    scan.findings.opaque(`\`${program}\` evaluates a subscript computed at run time (${name.source})`);
    return true;
  }
  return false;
}

/** test / [ : `-v name[sub]` evaluates the subscript. */
const testBuiltin: Analyzer = (call, scan) => {
  for (let i = 0; i < call.args.length; i++)
    if (call.args[i]?.text === "-v" && subscriptRuns(call.args[i + 1], scan, call.name)) return;
  scan.findings.reads();
};

const set: Analyzer = (call, scan) => {
  if (call.args.length === 0) return scan.findings.readsSecret("`set` prints all variables");
  // `set -- x y` sets the positional parameters: values the gate does not track (arithmetic on $1 runs `[$(…)]`).
  const dash = call.args.findIndex((a) => a.text === "--" || !a.text.startsWith("-"));
  if (dash !== -1)
    for (const name of ["1", "2", "3", "4", "5", "6", "7", "8", "9", "@", "*"]) scan.forget(name);
  scan.findings.reads();
};

const shopt: Analyzer = (call, scan) => {
  if (call.args.some((a) => a.text === "expand_aliases" || !a.literal))
    return scan.findings.opaque("`shopt` changes how commands expand (aliases)");
  scan.findings.reads();
};

const hash: Analyzer = (call, scan) => {
  if (call.args.some((a) => a.text.startsWith("-p") || !a.literal))
    return scan.findings.opaque("`hash -p` makes a command name run another file");
  scan.findings.reads();
};

const enable: Analyzer = (call, scan) => {
  if (call.args.some((a) => /^-[a-zA-Z]*f/.test(a.text) || !a.literal))
    return scan.findings.opaque("`enable -f` loads a builtin from a shared library");
  scan.findings.reads();
};

/** `read x`, `mapfile a`, `getopts s x`: the named variables now hold data the gate cannot see. */
const read: Analyzer = (call, scan) => {
  const mapfile = call.name !== "read";
  const parsed = parseArgs(call.args, { shortWithValue: mapfile ? "dnOsuCc" : "adinNptu" });
  if (mapfile && parsed.has("C")) return scan.findings.opaque(`\`${call.name} -C\` runs a callback command`);
  for (const name of [...parsed.operands, ...parsed.values("a")]) {
    if (subscriptRuns(name, scan, call.name)) return;
    scan.forget(name.text);
  }
  scan.findings.reads();
};

/** printf and echo print their arguments (credential variables are caught where they expand). */
const printfBuiltin: Analyzer = (call, scan) => {
  if (call.name === "printf") {
    const target = parseArgs(call.args, { shortWithValue: "v", stopAtOperand: true }).get("v")?.value;
    if (subscriptRuns(target, scan, call.name)) return;
    if (target) scan.forget(target.text);
  }
  scan.findings.reads();
};

const pi: Analyzer = (call, scan) => {
  const sub = textAt(call.args, 0);
  if (["install", "remove", "uninstall", "update", "config"].includes(sub))
    return scan.findings.changesGate(`\`pi ${sub}\` changes Pi's settings or extensions`);
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  scan.findings.opaque("starts another agent outside this gate");
};

const policyCli: Analyzer = (call, scan) => {
  const sub = textAt(call.args, 0);
  if (call.args[0]?.literal && (sub === "get" || sub === "explain" || sub === "--help"))
    return scan.findings.reads();
  scan.findings.changesGate("runs the policy tool to change the policy");
};

const busybox: Analyzer = (call, scan) => {
  if (call.args.length === 0 || onlyAsksVersion(call.args)) return scan.findings.reads();
  scan.command(call.args, { stdinIsData: call.stdinIsData });
};

/** `hyperfine 'cmd'…`: every operand and the prepare/setup/cleanup values are shell scripts. */
const hyperfine: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "wrmMpcsSLu",
    longWithValue: [
      "warmup",
      "runs",
      "min-runs",
      "max-runs",
      "prepare",
      "conclude",
      "cleanup",
      "setup",
      "shell",
      "parameter-scan",
      "parameter-step-size",
      "parameter-list",
      "export-asciidoc",
      "export-csv",
      "export-json",
      "export-markdown",
      "export-orgmode",
      "output",
      "command-name",
      "time-unit",
      "style",
      "sort",
      "reference",
      "input",
    ],
    abbreviations: true,
  });
  const shellOption = parsed.get("S", "shell")?.value;
  if (shellOption && !["bash", "sh", "none", "/bin/sh", "/bin/bash"].includes(shellOption.text))
    return scan.findings.opaque("`hyperfine --shell` runs commands through a program the gate does not know");
  for (const file of parsed.values(
    "export-asciidoc",
    "export-csv",
    "export-json",
    "export-markdown",
    "export-orgmode",
  ))
    scan.path(file, "write");
  for (const script of parsed.values("p", "prepare", "c", "cleanup", "s", "setup", "conclude", "reference"))
    scan.script(script, "hyperfine");
  for (const operand of parsed.operands) scan.script(operand, "hyperfine");
};

const nohup = wrapper({});
/**
 * Tool-version managers and environment runners whose payload follows a subcommand (`mise exec -- cmd`,
 * `asdf exec cmd`, `rbenv exec cmd`): `subcommands` maps each runner subcommand to how its payload starts.
 */
function subcommandWrapper(
  subcommands: Record<string, "payload" | "after-dashes" | "script-option">,
  withValue = "",
): Analyzer {
  return (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    const [sub, ...rest] = call.args;
    const mode = sub ? subcommands[sub.text] : undefined;
    if (!sub || !mode) {
      scan.findings.writes(`runs \`${call.name}${sub ? ` ${sub.text}` : ""}\``);
      return;
    }
    const parsed = parseArgs(rest, {
      shortWithValue: withValue,
      longWithValue: ["command", "run", "using", "node", "shell"],
      stopAtOperand: mode === "payload",
    });
    const inline = parsed.get("c", "command", "run")?.value;
    if (inline) return scan.script(inline, `${call.name} ${sub.text}`);
    const payload = mode === "after-dashes" ? parsed.afterDoubleDash : parsed.operands;
    if (payload.length === 0) return scan.findings.opaque(`\`${call.name} ${sub.text}\` starts a shell`);
    scan.command(payload, { stdinIsData: call.stdinIsData });
  };
}

/** dotenv-cli, env-cmd: load an env file (usually `.env`) into the payload's environment. */
function envFileRunner(defaultFile: string, fileOptions: string): Analyzer {
  return (call, scan) => {
    const parsed = parseArgs(call.args, {
      shortWithValue: fileOptions,
      longWithValue: ["file", "environments", "rc-file"],
      stopAtOperand: true,
    });
    const files = parsed.values(...fileOptions.split(""), "file", "rc-file");
    for (const file of files.length ? files : [syntheticWord(defaultFile)]) scan.path(file, "read");
    scan.findings.readsSecret(`\`${call.name}\` loads an environment file into the command`);
    const payload = parsed.operands[0]?.text === "--" ? parsed.operands.slice(1) : parsed.operands;
    if (payload.length) scan.command(payload);
  };
}

/** direnv: `exec dir cmd` runs dir's .envrc (shell code) first. */
const direnv: Analyzer = (call, scan) => {
  const [sub, dir, ...payload] = call.args;
  if (sub?.text !== "exec") {
    if (sub?.text === "allow" || sub?.text === "permit" || sub?.text === "grant")
      return scan.findings.sends("`direnv allow` lets an .envrc run in later shells");
    return scan.findings.reads();
  }
  const base = dir?.literal ? dir.text.replace(/\/+$/, "") : undefined;
  if (base === undefined) return scan.findings.opaque("`direnv exec` of a directory computed at run time");
  scan.localCode("shell-script", "direnv exec", [syntheticWord(`${base}/.envrc`)]);
  if (payload.length) scan.command(payload, { cwd: dir });
};

/** watchexec, chokidar, onchange: run a command (through a shell) when files change. */
const watcher: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "cewdiprs",
    longWithValue: [
      "command",
      "exts",
      "watch",
      "ignore",
      "debounce",
      "shell",
      "signal",
      "on-busy-update",
      "filter",
      "delay",
    ],
    abbreviations: true,
  });
  const shellName = parsed.get("shell")?.value;
  if (shellName && !["bash", "sh", "none", "zsh"].includes(shellName.text))
    return scan.findings.opaque(
      `\`${call.name} --shell\` runs commands through a program the gate does not know`,
    );
  const command = parsed.values("c", "command");
  if (command.length) {
    for (const script of command) scan.script(script, call.name);
    return;
  }
  const payload = parsed.afterDoubleDash.length
    ? parsed.afterDoubleDash
    : call.name === "watchexec"
      ? parsed.operands
      : [];
  if (payload.length === 0) return scan.findings.reads();
  if (call.name === "watchexec" && parsed.afterDoubleDash.length === 0)
    return scan.script(joinedScript(payload), "watchexec");
  scan.command(payload);
};

/** `sg group -c cmd` / `sg group cmd`: the command is run by /bin/sh -c. */
const sg: Analyzer = (call, scan) => {
  const rest = call.args.slice(1);
  if (rest[0]?.text === "-c") return scan.script(rest[1], "sg -c");
  if (rest.length === 0) return scan.findings.opaque("`sg` starts a shell");
  scan.script(joinedScript(rest), "sg");
};

/**
 * `export`, `declare`, `typeset`, `local`, `readonly` reached as plain commands (tree-sitter parses `"export" -p`
 * as a command, bash runs the builtin): printing variables is a secret read; assignments go through the rule.
 */
const declaration: Analyzer = (call, scan) => {
  const flags = call.args.filter((a) => a.text.startsWith("-") || a.text.startsWith("+"));
  const operands = call.args.filter((a) => !a.text.startsWith("-") && !a.text.startsWith("+"));
  if (call.args.some((a) => !a.literal && !a.text.includes("=")))
    return scan.findings.opaque(`\`${call.name}\` of names computed at run time`);
  const prints = operands.length === 0 && !flags.some((f) => /f/.test(f.text));
  if (prints || flags.some((f) => /^-[a-zA-Z]*p/.test(f.text))) {
    const named = operands.find((o) => isCredentialVariable(o.text.split("=")[0] ?? ""));
    if (prints || named || operands.length === 0)
      scan.findings.readsSecret(`\`${call.name}\` prints variables`);
  }
  for (const operand of operands) {
    const eq = operand.text.indexOf("=");
    if (eq > 0)
      scan.assignment(operand.text.slice(0, eq).replace(/\+$/, ""), valueWord(operand, eq + 1), {
        persists: true,
      });
  }
  scan.findings.reads();
};

/**
 * A shell keyword where a command name should be: tree-sitter misread the structure (`! for …; do cmd; done`
 * gives commands named `for` and `do`). What bash runs is not what the tree says: opaque, and the words after
 * the keyword are still classified as a command (a tamper stays visible).
 */
const misparsedKeyword: Analyzer = (call, scan) => {
  scan.findings.opaque(
    `the parser read the keyword \`${call.name}\` as a command: the command's structure is not trusted`,
  );
  if (call.args.length) scan.command(call.args);
};

const WRAPPERS: Record<string, Analyzer> = {
  sudo,
  doas: wrapper({ shortWithValue: "uC", assignments: false, shellOptions: ["s"] }),
  pkexec: wrapper({ longWithValue: ["user"] }),
  env,
  xargs,
  parallel,
  watch,
  flock,
  su,
  runuser: su,
  script,
  timeout: wrapper({ shortWithValue: "sk", longWithValue: ["signal", "kill-after"], leading: 1 }),
  nohup,
  setsid: nohup,
  nice: wrapper({ shortWithValue: "n", longWithValue: ["adjustment"] }),
  ionice: wrapper({ shortWithValue: "cnp", longWithValue: ["class", "classdata", "pid", "pgid", "uid"] }),
  stdbuf: wrapper({ shortWithValue: "ioe", longWithValue: ["input", "output", "error"] }),
  time: wrapper({
    shortWithValue: "fo",
    longWithValue: ["format", "output"],
    writes: ["o", "output"],
    sameShell: true,
    assignments: true,
  }),
  chronic: nohup,
  unbuffer: nohup,
  caffeinate: nohup,
  catchsegv: nohup,
  tini: wrapper({ shortWithValue: "peg" }),
  "dumb-init": nohup,
  "with-contenv": nohup,
  eatmydata: nohup,
  fakeroot: wrapper({ shortWithValue: "ls", longWithValue: ["lib", "faked", "save-file", "load-file"] }),
  taskset: wrapper({ shortWithValue: "", leading: 1 }),
  chrt: wrapper({ shortWithValue: "T", leading: 1 }),
  numactl: wrapper({
    shortWithValue: "mNCipPw",
    longWithValue: ["membind", "cpunodebind", "physcpubind", "interleave", "preferred", "localalloc"],
  }),
  prlimit: wrapper({ shortWithValue: "p" }),
  chroot: wrapper({ longWithValue: ["userspec", "groups"], leading: 1, empty: "shell-from-stdin" }),
  unshare: wrapper({
    shortWithValue: "S",
    longWithValue: ["setuid", "setgid", "root", "wd", "propagation", "setgroups"],
    chdir: ["wd"],
  }),
  setpriv: wrapper({
    longWithValue: [
      "reuid",
      "regid",
      "groups",
      "inh-caps",
      "ambient-caps",
      "bounding-set",
      "securebits",
      "pdeathsig",
      "selinux-label",
      "apparmor-profile",
      "landlock-access",
      "landlock-rule",
    ],
  }),
  "ssh-agent": wrapper({ shortWithValue: "aEPt" }),
  "dbus-run-session": wrapper({ longWithValue: ["config-file", "dbus-daemon"] }),
  "xvfb-run": wrapper({
    shortWithValue: "nsfpe",
    longWithValue: ["server-num", "server-args", "auth-file", "error-file", "xauth-protocol"],
  }),
  valgrind: wrapper({ longWithValue: ["log-file", "tool"] }),
  strace: wrapper({
    shortWithValue: "abeEIoOpPsSuU",
    writes: ["o", "output"],
    opaqueOptions: { p: "attaches to a running process", attach: "attaches to a running process" },
  }),
  ltrace: wrapper({
    shortWithValue: "aAeEDlnopsSuxX",
    writes: ["o", "output"],
    opaqueOptions: { p: "attaches to a running process" },
  }),
  torsocks: wrapper({ network: "sends the payload's traffic through Tor" }),
  proxychains: wrapper({ shortWithValue: "f", network: "sends the payload's traffic through proxies" }),
  proxychains4: wrapper({ shortWithValue: "f", network: "sends the payload's traffic through proxies" }),
  firejail: wrapper({}),
  retry: wrapper({ shortWithValue: "tdm", longWithValue: ["times", "delay", "until"] }),
  entr: wrapper({ shortWithValue: "" }),
  mpirun: wrapper({ shortWithValue: "n", longWithValue: ["np", "host", "hostfile"] }),
  srun: wrapper({ shortWithValue: "nNcpt" }),
  ccache: nohup,
  distcc: nohup,
  busybox,
  toybox: busybox,
  hyperfine,
  bash: shell,
  sh: shell,
  dash: shell,
  zsh: shell,
  ksh: shell,
  mksh: shell,
  ash: shell,
  yash: shell,
  rbash: shell,
  fish: shell,
  tcsh: shell,
  csh: shell,
  source,
  ".": source,
  eval: evalBuiltin,
  exec,
  command,
  builtin,
  trap,
  alias,
  cd,
  pushd: cd,
  popd: harmlessBuiltin,
  set,
  shopt,
  hash,
  enable,
  read,
  mapfile: read,
  readarray: read,
  getopts: (call, scan) => {
    for (const name of call.args.slice(1, 2)) {
      if (subscriptRuns(name, scan, "getopts")) return;
      scan.forget(name.text);
    }
    scan.findings.reads();
  },
  printf: printfBuiltin,
  echo: printfBuiltin,
  true: harmlessBuiltin,
  false: harmlessBuiltin,
  ":": harmlessBuiltin,
  test: testBuiltin,
  "[": testBuiltin,
  exit: harmlessBuiltin,
  return: harmlessBuiltin,
  shift: harmlessBuiltin,
  wait: (call, scan) => {
    const target = parseArgs(call.args, { shortWithValue: "p" }).get("p")?.value;
    if (subscriptRuns(target, scan, "wait")) return;
    if (target) scan.forget(target.text);
    scan.findings.reads();
  },
  jobs: harmlessBuiltin,
  break: harmlessBuiltin,
  continue: harmlessBuiltin,
  let: harmlessBuiltin,
  umask: harmlessBuiltin,
  ulimit: harmlessBuiltin,
  type: harmlessBuiltin,
  which: harmlessBuiltin,
  whereis: harmlessBuiltin,
  kill: harmlessBuiltin,
  disown: harmlessBuiltin,
  times: harmlessBuiltin,
  dirs: harmlessBuiltin,
  sleep: harmlessBuiltin,
  unalias: harmlessBuiltin,
  fc: opaqueProgram("re-runs commands from the shell history"),
  bind: opaqueProgram("binds keys to commands"),
  complete: opaqueProgram("registers completion commands"),
  coproc: opaqueProgram("starts a coprocess"),
  ...Object.fromEntries(
    [
      "for",
      "do",
      "done",
      "while",
      "until",
      "if",
      "then",
      "else",
      "elif",
      "fi",
      "case",
      "esac",
      "select",
      "function",
      "in",
      "{",
      "}",
      "[[",
      "]]",
    ].map((keyword) => [keyword, misparsedKeyword]),
  ),
  // `! ! cmd`: bash reads repeated pipeline negations; tree-sitter makes the second `!` a command name.
  "!": (call, scan) => {
    let i = 0;
    while (i < call.args.length && /^[A-Za-z_][A-Za-z0-9_]*\+?=/.test(call.args[i]?.text ?? "")) i++;
    // Assignments alone stay in this shell (`! IFS=:`); before a command they are its environment.
    const persists = i === call.args.length;
    for (const word of call.args.slice(0, i)) {
      const eq = word.text.indexOf("=");
      scan.assignment(word.text.slice(0, eq).replace(/\+$/, ""), valueWord(word, eq + 1), { persists });
    }
    if (i < call.args.length) scan.command(call.args.slice(i), { sameShell: true });
    else scan.findings.reads();
  },
  export: declaration,
  declare: declaration,
  typeset: declaration,
  local: declaration,
  readonly: declaration,
  unset: (call, scan) => {
    for (const name of call.args) {
      if (name.text.startsWith("-")) continue;
      if (subscriptRuns(name, scan, "unset")) return;
      scan.forget(name.literal ? name.text : DYNAMIC); // a name computed at run time can be any variable
    }
    scan.findings.reads();
  },
  pi,
  "chat-ui-agent-policy": policyCli,
  // Schedulers, multiplexers, debuggers: the commands they run are not on this command line.
  at: opaqueProgram("schedules commands the gate will not see"),
  batch: opaqueProgram("schedules commands the gate will not see"),
  crontab: opaqueProgram("schedules commands the gate will not see"),
  "systemd-run": opaqueProgram("runs commands outside this session"),
  launchctl: opaqueProgram("schedules commands the gate will not see"),
  tmux: opaqueProgram("runs commands in terminal sessions the gate does not see (new-session, send-keys)"),
  screen: opaqueProgram("runs commands in terminal sessions the gate does not see"),
  expect: opaqueProgram("runs a script that types into other programs"),
  gdb: opaqueProgram("can run shell commands and attach to processes"),
  lldb: opaqueProgram("can run shell commands and attach to processes"),
  nsenter: opaqueProgram("enters another process's namespaces"),
  bwrap: opaqueProgram("runs a command in a sandbox the gate does not model"),
  capsh: opaqueProgram("runs a shell with changed capabilities"),
  "nohup-later": opaqueProgram("schedules commands the gate will not see"),
  envdir: opaqueProgram("sets environment variables from files the gate does not read"),
  chpst: opaqueProgram("runs a command with settings (an env directory) the gate does not read"),
  proot: opaqueProgram("runs a command in a rootless container the gate does not model"),
  sudoedit: opaqueProgram("edits files as another user"),
  newgrp: opaqueProgram("starts a shell"),
  run0: opaqueProgram("runs a command through the service manager"),
  machinectl: opaqueProgram("runs commands in another machine"),
  "start-stop-daemon": opaqueProgram("starts a daemon"),
  sg,
  // Run a command as another user or in another context: the payload follows one leading operand.
  gosu: wrapper({ leading: 1 }),
  "su-exec": wrapper({ leading: 1 }),
  setuidgid: wrapper({ leading: 1 }),
  "s6-setuidgid": wrapper({ leading: 1 }),
  runcon: wrapper({ shortWithValue: "turl", leading: 1 }),
  cgexec: wrapper({ shortWithValue: "g" }),
  ifne: wrapper({}),
  lckdo: wrapper({ shortWithValue: "w", leading: 1 }),
  nocache: nohup,
  "qemu-x86_64": wrapper({ shortWithValue: "LEUcgsBRdDpr" }),
  "qemu-aarch64": wrapper({ shortWithValue: "LEUcgsBRdDpr" }),
  perf: (call, scan) => {
    const [sub, ...rest] = call.args;
    if (
      !sub ||
      !["stat", "record", "trace", "ftrace", "mem", "sched", "kvm", "c2c", "lock"].includes(sub.text)
    )
      return scan.findings.reads();
    const parsed = parseArgs(rest, { shortWithValue: "eopCcGFmIrtuTjBdsLNKMPWDx", stopAtOperand: true });
    if (parsed.has("p", "pid", "a", "all-cpus"))
      return scan.findings.opaque("`perf` attaches to running processes");
    if (parsed.operands.length)
      scan.command(parsed.operands[0]?.text === "--" ? parsed.operands.slice(1) : parsed.operands);
  },
  "run-parts": (call, scan) => {
    const dir = call.args.filter((a) => !a.text.startsWith("-")).at(-1);
    if (call.args.some((a) => a.text === "--test" || a.text === "--list")) return scan.findings.reads();
    scan.findings.opaque(`\`run-parts\` runs every program in ${dir?.source ?? "a directory"}`);
  },
  ts: opaqueProgram("queues commands to run later"),
  tsp: opaqueProgram("queues commands to run later"),
  nq: opaqueProgram("queues commands to run later"),
  pueue: opaqueProgram("queues commands to run later"),
  dtach: opaqueProgram("runs a command in a detached session"),
  abduco: opaqueProgram("runs a command in a detached session"),
  mise: subcommandWrapper({ exec: "after-dashes", x: "after-dashes" }, "c"),
  rtx: subcommandWrapper({ exec: "after-dashes", x: "after-dashes" }, "c"),
  asdf: subcommandWrapper({ exec: "payload" }),
  rbenv: subcommandWrapper({ exec: "payload" }),
  pyenv: subcommandWrapper({ exec: "payload" }),
  nodenv: subcommandWrapper({ exec: "payload" }),
  goenv: subcommandWrapper({ exec: "payload" }),
  volta: subcommandWrapper({ run: "payload" }),
  fnm: subcommandWrapper({ exec: "after-dashes" }),
  nvm: subcommandWrapper({ exec: "payload", run: "payload" }),
  corepack: (call, scan) => (call.args.length ? scan.command(call.args) : scan.findings.reads()),
  scl: subcommandWrapper({ enable: "payload" }),
  nix: subcommandWrapper({ shell: "after-dashes", develop: "after-dashes", run: "after-dashes" }, "c"),
  "nix-shell": (call, scan) => {
    const parsed = parseArgs(call.args, {
      longWithValue: ["run", "command", "packages", "arg", "argstr", "attr", "expr"],
      shortWithValue: "pAIE",
    });
    const script = parsed.get("run", "command")?.value;
    if (script) return scan.script(script, "nix-shell --run");
    scan.findings.opaque("`nix-shell` starts a shell or evaluates a Nix expression");
  },
  flatpak: opaqueProgram("runs sandboxed applications the gate does not model"),
  dotenv: envFileRunner(".env", "e"),
  "dotenv-cli": envFileRunner(".env", "e"),
  "env-cmd": envFileRunner(".env", "fr"),
  direnv,
  watchexec: watcher,
  chokidar: watcher,
  onchange: watcher,
  gtimeout: wrapper({ shortWithValue: "sk", longWithValue: ["signal", "kill-after"], leading: 1 }),
  faketime: wrapper({ shortWithValue: "", leading: 1 }),
  setarch: wrapper({ leading: 1 }),
  linux32: nohup,
  linux64: nohup,
  rlwrap: wrapper({ shortWithValue: "aAbcCefhHiIlmnNoOpPrRsStvwz" }),
  trickle: wrapper({ shortWithValue: "udwtlsnL" }),
  cpulimit: wrapper({ shortWithValue: "lpe", longWithValue: ["limit", "pid", "exe"] }),
  daemonize: wrapper({ shortWithValue: "aceEopuvl" }),
  fakechroot: nohup,
};

export const WRAPPER_ANALYZERS: Readonly<Record<string, Analyzer>> = WRAPPERS;
