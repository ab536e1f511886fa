// bridge.mjs's command line: one table row per flag, parsed strictly, Pi's flags forwarded as Pi reads them.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { readCommandLine, UsageError } from "../../agent-runtime/cli-args.ts";
import { parseApprovalTimeout } from "../../agent-runtime/policy/approval-timeout.ts";
import {
  BRIDGE_FLAGS,
  bridgeHelp,
  OptionsError,
  PI_FLAGS,
  parseCommand,
  parseOptions,
} from "../../bridge/options.ts";

const root = path.resolve(import.meta.dirname, "..", "..");
const piArgsSource = readFileSync(
  path.join(root, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "cli", "args.js"),
  "utf8",
);

test("every Pi flag in the table is one Pi 0.84.2 reads, with the same arity", () => {
  for (const flag of PI_FLAGS) {
    const branch = new RegExp(
      `arg === "--${flag.name}"((?: \\|\\| arg === "-[a-z]+")?\\)? && i \\+ 1 < args\\.length)?`,
    ).exec(piArgsSource);
    assert.ok(branch, `Pi reads --${flag.name}`);
    // Pi's value flags are the ones guarded by `i + 1 < args.length` (or read a value themselves: --name).
    const takesValue = branch[1] !== undefined || flag.name === "name";
    assert.equal(Boolean(flag.value), takesValue, `--${flag.name} takes a value in Pi: ${takesValue}`);
    if (flag.short) assert.match(piArgsSource, new RegExp(`arg === "-${flag.short}"`), `-${flag.short}`);
  }
});

test("Pi's flags are forwarded in order, as separate arguments; --flag=value too", () => {
  const options = parseOptions(["--model=m", "--provider", "p", "--no-session", "--thinking=high", "-c"]);
  assert.deepEqual(options.piArgs, [
    "--model",
    "m",
    "--provider",
    "p",
    "--no-session",
    "--thinking",
    "high",
    "-c",
  ]);
  assert.deepEqual(parseOptions(["--tool-env", "A", "--tool-env=B"]).toolEnv, ["A", "B"]);
});

test("mistakes are OptionsError (exit 2) in our words: unknown, misread, valueless, positional, refused", () => {
  const refused: [string[], RegExp][] = [
    [["--bogus"], /^unknown option --bogus/],
    [["-nt"], /^unknown option -n/],
    [["--cwd"], /^--cwd needs a value/],
    [["--cwd", "--gate", "x"], /^--cwd needs a value \(for one that starts with "-", write --cwd=--gate\)/],
    [["--system-prompt", "-x"], /^--system-prompt needs a value/],
    [["--offline=1"], /^--offline takes no value/],
    [["prompt text"], /^unexpected argument "prompt text"/],
    [["--", "--extension"], /^unexpected argument "--extension"/],
    [["--api-key", "k"], /^--api-key cannot be forwarded to Pi: pass provider keys in the environment$/],
    [["-e", "x.mjs"], /^-e cannot be forwarded to Pi: the bridge loads only its approval gate$/],
    [["--replay-frames", "1e3"], /^--replay-frames must be a positive integer$/],
    [["--mode", "json"], /^--mode: only "rpc" is supported/],
    [["--listen", "127.0.0.1:1", "-r"], /^-r cannot be forwarded to Pi in network mode/],
    [["--help"], /^--help does not run a bridge/],
  ];
  for (const [argv, message] of refused) {
    assert.throws(
      () => parseOptions(argv),
      (e: unknown) => e instanceof OptionsError && message.test(e.message),
      argv.join(" "),
    );
  }
  assert.equal(new OptionsError("x") instanceof UsageError, true);
});

test("--approval-timeout-minutes: the variable's parser, its values kept as given; anything else is exit 2", () => {
  assert.equal(parseOptions([]).approvalTimeoutMinutes, undefined);
  for (const value of ["off", "30", "0.5", "1440"])
    assert.equal(parseOptions(["--approval-timeout-minutes", value]).approvalTimeoutMinutes, value);
  assert.equal(parseOptions(["--approval-timeout-minutes=2"]).approvalTimeoutMinutes, "2");
  assert.throws(
    () => parseOptions(["--approval-timeout-minutes="]),
    (e: unknown) => e instanceof OptionsError && /^--approval-timeout-minutes needs a value/.test(e.message),
  );
  assert.ok(parseApprovalTimeout("", "x").problem, "an empty value is no setting");
  for (const bad of ["0", "-1", "1e3", "abc", "1441", " 5", "5m", "0.0001", "NaN", "Infinity", "OFF"]) {
    // The same values the variable refuses (gate-session-grants.test.ts), and the same sentence with the flag named.
    assert.ok(parseApprovalTimeout(bad, "x").problem, bad);
    assert.throws(
      () => parseOptions([`--approval-timeout-minutes=${bad}`]),
      (e: unknown) =>
        e instanceof OptionsError &&
        /^--approval-timeout-minutes must be minutes in \(0, 1440\] or "off", got /.test(e.message),
      JSON.stringify(bad),
    );
  }
});

test("--help and --version win over anything else that parses; an unknown flag still does not", () => {
  assert.deepEqual(parseCommand(["--listen", "8.8.8.8:1", "--help"]), { kind: "help" });
  assert.deepEqual(parseCommand(["-h"]), { kind: "help" });
  assert.deepEqual(parseCommand(["--version", "--model", "m"]), { kind: "version" });
  assert.throws(() => parseCommand(["--help", "--bogus"]), OptionsError);
});

test("the help lists every bridge flag and every forwarded Pi flag from the tables", () => {
  const help = bridgeHelp();
  for (const flag of BRIDGE_FLAGS) assert.ok(help.includes(`--${flag.name} ${flag.value}`), flag.name);
  for (const flag of PI_FLAGS) assert.ok(help.includes(`--${flag.name}`), flag.name);
});

test("readCommandLine: strict, bounded positionals, prototype names are not options", () => {
  const options = { out: { type: "string" }, quiet: { type: "boolean", short: "q" } } as const;
  const line = readCommandLine(["a", "-q", "--out=x"], options, 1);
  assert.deepEqual(line.positionals, ["a"]);
  assert.equal(line.values.out, "x");
  assert.equal(line.values.quiet, true);
  assert.throws(() => readCommandLine(["a", "b"], options, 1), /unexpected argument "b"/);
  assert.throws(() => readCommandLine(["--constructor"], options), /unknown option --constructor/);
  assert.throws(() => readCommandLine(["--__proto__"], options), /unknown option --__proto__/);
  assert.throws(() => readCommandLine(["-qx"], options), /unknown option -x/);
});
