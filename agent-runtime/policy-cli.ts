#!/usr/bin/env node
// chat-ui-agent-policy: the operator's view of the live approval policy.
//   get [--state-dir DIR]                effective policy and its source (file / env / default)
//   set <auto|ask|read-only> [--expected <mode>] [--state-dir DIR]   atomic write; conflict if --expected
//           does not match. Both use the file the bridge uses: AGENT_POLICY_PATH when this uid can write its
//           directory (root in the image), else <state dir>/policy (a bridge started without root).
//   network [lockdown|registries|open] [--state-dir DIR]   the tools' network mode (the file beside the policy
//           file): shown without a mode, written atomically with one; a running bridge applies it at once.
//   explain [--policy P --tool T --input JSON] [--cwd DIR] [--egress-guard STATE]   the gate's own decision
//           function, with the effects it found and the policy table's rows that applied; without --tool, reads
//           NDJSON {"policy","toolName","input"[,"cwd"][,"egressGuard"]} on stdin and writes one JSON line each.
//           Outside the runtime it assumes no egress guard unless --egress-guard says otherwise, and says so.
// Exit codes: 0 ok, 1 I/O or runtime failure, 2 bad usage or input, 3 policy conflict.
import { realpathSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { ParseArgsOptionsConfig } from "node:util";
import { z } from "zod";
import { readCommandLine, UsageError } from "./cli-args.ts";
import { decide, warmUp } from "./gate/decide.ts";
import { ownDir, pathContextFromEnv } from "./gate/path-context.ts";
import { loadPiPaths } from "./gate/pi-paths.ts";
import { loadBashParser } from "./gate/shell-parser.ts";
import { EGRESS_GUARD_STATES, type EgressGuardState } from "./policy/egress-guard.ts";
import {
  DEFAULT_NETWORK_MODE,
  isNetworkMode,
  NETWORK_MODES,
  networkModePathOf,
  readNetworkModeFile,
  writeNetworkModeFile,
} from "./policy/network-mode-file.ts";
import {
  choosePolicyPath,
  isPolicyMode,
  POLICY_MODES,
  policyPath,
  readEffectivePolicy,
  setPolicy,
} from "./policy/policy-store.ts";
import { defaultStateDir } from "./runtime-paths.ts";
import { versionLine } from "./version.ts";

export const EXIT = { ok: 0, failure: 1, usage: 2, conflict: 3 } as const;

/** Each command's usage (its --help); `chat-ui-agent-policy --help` prints them all. */
const COMMAND_USAGE: Record<string, string> = {
  get: `chat-ui-agent-policy get [--state-dir <dir>]
      the effective policy and where it comes from (file, env or default)`,
  set: `chat-ui-agent-policy set <${POLICY_MODES.join("|")}> [--expected <mode>] [--state-dir <dir>]
      writes the policy file the bridge reads (atomic); exit 3 when --expected does not match`,
  network: `chat-ui-agent-policy network [${NETWORK_MODES.join("|")}] [--state-dir <dir>]
      the tools' network mode: shown without a mode; a running bridge applies a new one at once`,
  explain: `chat-ui-agent-policy explain [--policy <mode>] [--tool <name>] [--input <json>] [--cwd <dir>]
                              [--egress-guard ${EGRESS_GUARD_STATES.join("|")}]
      the gate's decision for one call (without --tool: NDJSON lines {"policy","toolName","input"} on stdin,
      one JSON line out each); the egress guard is assumed absent unless given, as outside the runtime`,
};

const USAGE = `usage:
${Object.values(COMMAND_USAGE)
  .map((u) => `  ${u}`)
  .join("\n")}
  chat-ui-agent-policy --help | --version
exit status: 0 ok, 1 I/O or runtime failure, 2 bad usage or input, 3 policy conflict`;

/** A command's own options, plus its --help. */
function readCommand<const O extends ParseArgsOptionsConfig>(
  command: string,
  args: readonly string[],
  options: O,
  positionals = 0,
) {
  const line = readCommandLine(args, { ...options, help: { type: "boolean", short: "h" } }, positionals);
  if ((line.values as { help?: boolean }).help) throw new HelpRequest(`usage: ${COMMAND_USAGE[command]}`);
  return line;
}

/** `<command> --help`: the command's usage on stdout, exit 0. */
class HelpRequest extends Error {}

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export async function runPolicyCli(argv: string[], io: CliIo): Promise<number> {
  const out = (value: unknown) => io.stdout.write(`${JSON.stringify(value)}\n`);
  try {
    const [command, ...rest] = argv;
    switch (command) {
      case "get": {
        const { values } = readCommand("get", rest, { "state-dir": { type: "string" } });
        out(readEffectivePolicy(bridgePolicyEnv(io.env, values["state-dir"])));
        return EXIT.ok;
      }
      case "set":
        return await runSet(rest, io, out);
      case "network":
        return await runNetwork(rest, io, out);
      case "explain":
        return await runExplain(rest, io, out);
      case "help":
      case "--help":
      case "-h":
        io.stdout.write(`${USAGE}\n`);
        return EXIT.ok;
      case "--version":
        io.stdout.write(`${versionLine("chat-ui-agent-policy")}\n`);
        return EXIT.ok;
      default:
        throw new UsageError(
          command === undefined
            ? "missing command"
            : command.startsWith("-")
              ? `unknown option ${command}`
              : `unknown command "${command}"`,
        );
    }
  } catch (error) {
    if (error instanceof HelpRequest) {
      io.stdout.write(`${error.message}\n`);
      return EXIT.ok;
    }
    if (error instanceof UsageError) {
      io.stderr.write(`chat-ui-agent-policy: ${(error as Error).message}\n${USAGE}\n`);
      return EXIT.usage;
    }
    io.stderr.write(`chat-ui-agent-policy: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.failure;
  }
}

/** The environment with AGENT_POLICY_PATH set to the file a bridge with that state dir uses (choosePolicyPath). */
function bridgePolicyEnv(env: NodeJS.ProcessEnv, stateDir: string | undefined): NodeJS.ProcessEnv {
  if (stateDir !== undefined && stateDir.length === 0) throw new UsageError("--state-dir needs a directory");
  return { ...env, AGENT_POLICY_PATH: choosePolicyPath(env, stateDir ?? defaultStateDir()) };
}

async function runSet(args: string[], io: CliIo, out: (v: unknown) => void): Promise<number> {
  const { values, positionals } = readCommand(
    "set",
    args,
    { expected: { type: "string" }, "state-dir": { type: "string" } },
    1,
  );
  if (positionals.length !== 1) throw new UsageError("set takes exactly one policy");
  const policy = positionals[0];
  if (!isPolicyMode(policy))
    throw new UsageError(`invalid policy ${JSON.stringify(policy)}: use ${POLICY_MODES.join(", ")}`);
  if (values.expected !== undefined && !isPolicyMode(values.expected)) {
    throw new UsageError(
      `invalid --expected ${JSON.stringify(values.expected)}: use ${POLICY_MODES.join(", ")}`,
    );
  }
  const result = await setPolicy({
    policy,
    ...(values.expected !== undefined && isPolicyMode(values.expected) ? { expected: values.expected } : {}),
    env: bridgePolicyEnv(io.env, values["state-dir"]),
  });
  out(result);
  if (result.ok) return EXIT.ok;
  if (result.error === "policy_conflict") {
    io.stderr.write(
      `chat-ui-agent-policy: conflict: expected ${values.expected} but the effective policy is ${result.current.policy} (${result.current.source})\n`,
    );
    return EXIT.conflict;
  }
  io.stderr.write(`chat-ui-agent-policy: ${result.error}: ${result.message}\n`);
  return result.error === "invalid_policy" ? EXIT.usage : EXIT.failure;
}

async function runNetwork(args: string[], io: CliIo, out: (v: unknown) => void): Promise<number> {
  const { values, positionals } = readCommand("network", args, { "state-dir": { type: "string" } }, 1);
  const file = networkModePathOf(policyPath(bridgePolicyEnv(io.env, values["state-dir"])));
  const mode = positionals[0];
  if (mode === undefined) {
    const read = readNetworkModeFile(file);
    // A missing file is the default mode (a bridge writes it at start); anything else unusable is said as such.
    if (read.ok) out({ mode: read.mode, path: file, problem: null });
    else if (read.problem === "missing") out({ mode: DEFAULT_NETWORK_MODE, path: file, problem: "missing" });
    else {
      out({ mode: null, path: file, problem: read.problem });
      io.stderr.write(`chat-ui-agent-policy: the network mode file ${file} is not usable: ${read.problem}\n`);
      return EXIT.failure;
    }
    return EXIT.ok;
  }
  if (!isNetworkMode(mode))
    throw new UsageError(`invalid network mode ${JSON.stringify(mode)}: use ${NETWORK_MODES.join(", ")}`);
  const before = readNetworkModeFile(file);
  try {
    await writeNetworkModeFile(file, mode);
  } catch (err) {
    io.stderr.write(`chat-ui-agent-policy: ${(err as Error).message}\n`);
    return EXIT.failure;
  }
  out({ ok: true, previous: before.ok ? before.mode : null, current: { mode, path: file } });
  return EXIT.ok;
}

const ExplainLine = z.strictObject({
  policy: z.enum(POLICY_MODES).optional(),
  toolName: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  cwd: z.string().min(1).optional(),
  egressGuard: z.enum(EGRESS_GUARD_STATES).optional(),
});

async function runExplain(args: string[], io: CliIo, out: (v: unknown) => void): Promise<number> {
  const { values } = readCommand("explain", args, {
    policy: { type: "string" },
    tool: { type: "string" },
    input: { type: "string" },
    cwd: { type: "string" },
    "egress-guard": { type: "string" },
  });
  const flagGuard = values["egress-guard"];
  if (flagGuard !== undefined && !(EGRESS_GUARD_STATES as readonly string[]).includes(flagGuard))
    throw new UsageError(`invalid --egress-guard ${flagGuard}: use ${EGRESS_GUARD_STATES.join(", ")}`);
  const parser = await loadBashParser();
  warmUp(parser);
  // Without Pi's path functions (a bundle copied away from its node_modules), path tools explain as blocked.
  const paths = await loadPiPaths().catch(() => null);
  const gateDirs = [ownDir(import.meta.url)];
  const explainOne = (raw: unknown): { ok: boolean; value: unknown } => {
    const parsed = ExplainLine.safeParse(raw);
    if (!parsed.success)
      return { ok: false, value: { error: "invalid_call", message: z.prettifyError(parsed.error) } };
    const call = parsed.data;
    const context = pathContextFromEnv(call.cwd ?? values.cwd ?? io.cwd, io.env, gateDirs);
    const policy = call.policy ?? readEffectivePolicy(io.env).policy;
    // Outside the runtime no guard is known: assume none (the strict reading) unless told.
    const guard = (call.egressGuard ?? flagGuard ?? "absent") as EgressGuardState;
    const decision = decide({
      policy,
      toolName: call.toolName,
      input: call.input,
      context,
      parser,
      paths,
      // The search excludes are assumed active, as they are in the gate (it installs them at load).
      search: { path: undefined, searchCwd: context.cwd, assumed: true },
      egressGuard: guard,
    });
    return {
      ok: true,
      value: {
        ...decision,
        // The policy table's rows as they applied, strictest last decided: `policy × effect → decision`.
        table: decision.rows.map(
          (row) =>
            `${policy} × ${row.effect} → ${row.decision}${row.cell === "guarded" ? ` (guarded: egress guard ${guard})` : ""}`,
        ),
        assumed: {
          egressGuard: guard,
          source: call.egressGuard || flagGuard ? "given" : "default: outside the runtime, no egress guard",
        },
      },
    };
  };

  if (values.tool !== undefined || values.input !== undefined) {
    if (values.tool === undefined) throw new UsageError("--input needs --tool");
    let input: unknown = {};
    if (values.input !== undefined) {
      try {
        input = JSON.parse(values.input);
      } catch {
        throw new UsageError("--input is not valid JSON");
      }
    }
    const result = explainOne({
      toolName: values.tool,
      input,
      ...(values.policy ? { policy: values.policy } : {}),
    });
    out(result.value);
    return result.ok ? EXIT.ok : EXIT.usage;
  }
  if (values.policy !== undefined && !isPolicyMode(values.policy))
    throw new UsageError(`invalid --policy ${values.policy}`);

  let status: number = EXIT.ok;
  const lines = createInterface({ input: io.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (line.trim() === "") continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      out({ error: "invalid_json", message: "line is not JSON" });
      status = EXIT.usage;
      continue;
    }
    if (values.policy && typeof raw === "object" && raw !== null && !("policy" in raw)) {
      raw = { ...raw, policy: values.policy };
    }
    const result = explainOne(raw);
    out(result.value);
    if (!result.ok) status = EXIT.usage;
  }
  return status;
}

// Run when executed directly (the bundle, or `node --import tsx agent-runtime/policy-cli.ts`).
function invokedDirectly(): boolean {
  try {
    // realpath both sides: npm's bin link (chat-ui-agent-policy) is a symlink to the bundle.
    return (
      process.argv[1] !== undefined &&
      realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
    );
  } catch {
    return false;
  }
}
if (invokedDirectly()) {
  const code = await runPolicyCli(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
  });
  process.exitCode = code;
}
