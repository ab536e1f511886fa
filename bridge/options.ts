// Command line of bridge.mjs: the bridge's own flags and the Pi flags it forwards, each one row of a table, read by
// parseArgs (strict): an unknown flag or a bad value is a usage error (exit 2), never a flag passed on blindly.
import { isIP } from "node:net";
import type { ParseArgsOptionsConfig } from "node:util";
import { optionLines, readCommandLine, UsageError } from "../agent-runtime/cli-args.ts";
import { parseApprovalTimeout } from "../agent-runtime/policy/approval-timeout.ts";
import { NETWORK_MODES, type NetworkMode } from "../agent-runtime/policy/network-mode-file.ts";
import { defaultStateDir } from "../agent-runtime/runtime-paths.ts";

export interface BridgeOptions {
  /** Network mode address; undefined = stdio mode. */
  listen: { host: string; port: number } | undefined;
  cwd: string;
  tokenFile: string | undefined;
  gate: string | undefined;
  agentUser: string | undefined;
  /** Pi's own unprivileged user when the bridge is root (default "pi"). */
  piUser: string | undefined;
  /** Extra variable names the tools' environment passes through (repeatable --tool-env). */
  toolEnv: string[];
  /** Test and operator switch: "off" runs the tools without their Landlock domain (reported as degraded). */
  landlock: "on" | "off";
  /** The tools' network mode at start (written to the network mode file); undefined: the file's, else the default. */
  networkMode: NetworkMode | undefined;
  /** The approval timeout as given (`off` or minutes, checked); undefined: the environment's. */
  approvalTimeoutMinutes: string | undefined;
  lingerMs: number;
  idleExitMs: number;
  detachedGraceMs: number;
  helloTimeoutMs: number;
  authFailureDelayMs: number;
  killGraceMs: number;
  maxFrameBytes: number;
  replayFrames: number;
  replayBytes: number;
  maxSendQueueBytes: number;
  /** The bridge's durable state (journal, epoch, command records, Pi's session, logs); default by euid. */
  stateDir: string;
  /** The bridge's log file (rotated, size-bounded); default `<state>/logs/bridge.log`. */
  logFile: string | undefined;
  /** The package registries `auto` lets the tools reach without a dialog (JSON; default: the built-in list). */
  registriesFile: string | undefined;
  /** Test hook: a Node script run instead of Pi's CLI (fault injection). */
  piCommand: string | undefined;
  /** Flags passed to Pi after the bridge's own. */
  piArgs: string[];
}

/** A command-line mistake: one sentence on stderr, exit 2 (prestart). */
export class OptionsError extends UsageError {}

const MiB = 1024 * 1024;

/** The option fields a value of type T may be stored in (a `number` fits `number` and `number | undefined`). */
type Accepting<T> = {
  [K in keyof BridgeOptions]-?: T extends BridgeOptions[K] ? K : never;
}[keyof BridgeOptions];

function store<T>(options: BridgeOptions, key: Accepting<T>, value: T): void {
  (options as unknown as Record<string, T>)[key] = value;
}

/**
 * One row per bridge flag: its name, the value it takes (for --help), what it means and how its value is read
 * into the options. Adding a flag is adding a row here (and its field and default below).
 */
export interface BridgeFlag {
  name: string;
  value: string;
  help: string;
  set: (options: BridgeOptions, text: string, flag: string) => void;
  /** Repeatable (each use adds one). */
  multiple?: true;
}

/** Row helpers: how a flag's text becomes an option value. */
const text =
  (key: Accepting<string>) =>
  (o: BridgeOptions, v: string): void =>
    store(o, key, v);
const duration =
  (key: Accepting<number>) =>
  (o: BridgeOptions, v: string, flag: string): void =>
    store(o, key, parseDuration(v, flag));
const size =
  (key: Accepting<number>) =>
  (o: BridgeOptions, v: string, flag: string): void =>
    store(o, key, parseSize(v, flag));
const count =
  (key: Accepting<number>) =>
  (o: BridgeOptions, v: string, flag: string): void => {
    if (!/^\d{1,15}$/.test(v) || Number(v) < 1) throw new OptionsError(`${flag} must be a positive integer`);
    store(o, key, Number(v));
  };
/** One of a fixed set of words (the field's type must take each of them). */
const oneOf =
  <const W extends string>(key: Accepting<W>, words: readonly W[]) =>
  (o: BridgeOptions, v: string, flag: string): void => {
    const word = words.find((w) => w === v);
    if (word === undefined)
      throw new OptionsError(`${flag} must be one of ${words.join(", ")} (got ${JSON.stringify(v)})`);
    store(o, key, word);
  };

export const BRIDGE_FLAGS: readonly BridgeFlag[] = [
  {
    name: "listen",
    value: "HOST:PORT",
    help: "network mode: the WebSocket protocol on this loopback address (default: stdio mode)",
    set: (o, v) => {
      o.listen = parseListen(v);
    },
  },
  {
    name: "mode",
    value: "rpc",
    help: "accepted as `pi --mode rpc` takes it; rpc is the only mode",
    set: (_o, v, flag) => {
      if (v !== "rpc") throw new OptionsError(`${flag}: only "rpc" is supported (got ${v})`);
    },
  },
  { name: "cwd", value: "DIR", help: "the workspace (default: the current directory)", set: text("cwd") },
  {
    name: "token-file",
    value: "FILE",
    help: "read the token from FILE (removed once read) instead of CHAT_UI_AGENT_BRIDGE_TOKEN",
    set: text("tokenFile"),
  },
  {
    name: "gate",
    value: "FILE",
    help: "the approval gate (default: approval-gate.mjs beside bridge.mjs)",
    set: text("gate"),
  },
  {
    name: "agent-user",
    value: "USER",
    help: "run the tools as USER (bridge as root)",
    set: text("agentUser"),
  },
  {
    name: "pi-user",
    value: "USER",
    help: "run Pi as USER (bridge as root; default pi)",
    set: text("piUser"),
  },
  {
    name: "tool-env",
    value: "NAME",
    help: "pass the variable NAME through to the tools (repeatable)",
    set: (o, v) => {
      o.toolEnv.push(v);
    },
    multiple: true,
  },
  {
    name: "landlock",
    value: "on|off",
    help: "off runs the tools without their Landlock domain (reported as degraded)",
    set: oneOf("landlock", ["on", "off"]),
  },
  {
    name: "network-mode",
    value: "lockdown|registries|open",
    help: "where the tools may connect: lockdown (nowhere), registries (the default: registries, others ask), open (anywhere, reported as degraded); written to the network-mode file",
    set: oneOf("networkMode", NETWORK_MODES),
  },
  {
    name: "approval-timeout-minutes",
    value: "MINUTES|off",
    help: "deny an approval dialog nobody answered after this many minutes (decimal, up to 1440; wins over CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES; default off)",
    set: (o, v, flag) => {
      const timeout = parseApprovalTimeout(v, flag);
      if (timeout.problem) throw new OptionsError(timeout.problem);
      o.approvalTimeoutMinutes = v;
    },
  },
  {
    name: "registries-file",
    value: "JSON",
    help: 'the package registries auto lets the tools reach through the egress proxy without a dialog: {"registries":[{"name","hosts":["host","*.suffix"],"ports":[443]}]} (replaces the built-in list)',
    set: text("registriesFile"),
  },
  {
    name: "state-dir",
    value: "DIR",
    help: "durable state (default /var/lib/chat-ui-agent as root, else /var/tmp/chat-ui-agent-<uid>)",
    set: text("stateDir"),
  },
  {
    name: "log-file",
    value: "FILE",
    help: "the rotated log file (default <state>/logs/bridge.log)",
    set: text("logFile"),
  },
  {
    name: "linger",
    value: "DURATION",
    help: "keep Pi after the last client (default 60s)",
    set: duration("lingerMs"),
  },
  {
    name: "idle-exit",
    value: "DURATION",
    help: "exit after this long without a client (default 30m)",
    set: duration("idleExitMs"),
  },
  {
    name: "detached-grace",
    value: "DURATION",
    help: "keep a detached client's state (default 10m)",
    set: duration("detachedGraceMs"),
  },
  {
    name: "hello-timeout",
    value: "DURATION",
    help: "time a connection has to authenticate (default 10s)",
    set: duration("helloTimeoutMs"),
  },
  {
    name: "auth-failure-delay",
    value: "DURATION",
    help: "first delay after a failed proof, doubling to 10s (default 200ms)",
    set: duration("authFailureDelayMs"),
  },
  {
    name: "kill-grace",
    value: "DURATION",
    help: "SIGTERM to SIGKILL when ending Pi (default 5s)",
    set: duration("killGraceMs"),
  },
  {
    name: "max-frame-bytes",
    value: "SIZE",
    help: "largest client frame (default 16MiB)",
    set: size("maxFrameBytes"),
  },
  {
    name: "replay-frames",
    value: "N",
    help: "frames kept for resume (default 10000)",
    set: count("replayFrames"),
  },
  {
    name: "replay-bytes",
    value: "SIZE",
    help: "bytes kept for resume (default 32MiB)",
    set: size("replayBytes"),
  },
  {
    name: "max-send-queue-bytes",
    value: "SIZE",
    help: "bound of a slow client's send queue (default 64MiB)",
    set: size("maxSendQueueBytes"),
  },
  {
    name: "pi-command",
    value: "SCRIPT",
    help: "test hook: a Node script run instead of Pi (fault injection)",
    set: text("piCommand"),
  },
];

/**
 * Pi 0.84.2's own flags (dist/cli/args.js) the bridge forwards after its own; `value` when the flag takes one.
 * Long names only (and Pi's one-letter -c, -r): Pi's multi-letter short forms (-nt, -xt…) would be read as
 * grouped letters, so they are refused as unknown rather than misread.
 */
export interface PiFlag {
  name: string;
  value?: true;
  short?: string;
  /** Refused in network mode: the bridge owns Pi's session there (it restarts Pi on it). */
  session?: true;
  /** Never forwarded, and why. */
  refused?: string;
}

const ONLY_THE_GATE = "the bridge loads only its approval gate";
export const PI_FLAGS: readonly PiFlag[] = [
  { name: "provider", value: true },
  { name: "model", value: true },
  { name: "models", value: true },
  { name: "thinking", value: true },
  { name: "system-prompt", value: true },
  { name: "append-system-prompt", value: true },
  { name: "name", value: true },
  { name: "tools", value: true },
  { name: "exclude-tools", value: true },
  { name: "no-tools" },
  { name: "no-builtin-tools" },
  { name: "skill", value: true },
  { name: "prompt-template", value: true },
  { name: "theme", value: true },
  { name: "no-skills" },
  { name: "no-prompt-templates" },
  { name: "no-themes" },
  { name: "no-context-files" },
  { name: "no-extensions" },
  { name: "no-approve" },
  { name: "offline" },
  { name: "verbose" },
  { name: "no-session" },
  { name: "session", value: true, session: true },
  { name: "session-id", value: true, session: true },
  { name: "session-dir", value: true, session: true },
  { name: "fork", value: true, session: true },
  { name: "continue", short: "c", session: true },
  { name: "resume", short: "r", session: true },
  // They would load other code, trust the workspace or leave RPC mode.
  { name: "extension", value: true, short: "e", refused: ONLY_THE_GATE },
  { name: "approve", short: "a", refused: ONLY_THE_GATE },
  { name: "print", short: "p", refused: ONLY_THE_GATE },
  { name: "export", value: true, refused: ONLY_THE_GATE },
  // A credential on a command line is readable by every process (/proc/<pid>/cmdline).
  { name: "api-key", value: true, refused: "pass provider keys in the environment" },
];

/** What parseArgs reads: the bridge's flags, Pi's, and help/version. */
const PARSE_TABLE: ParseArgsOptionsConfig = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  ...Object.fromEntries(BRIDGE_FLAGS.map((f) => [f.name, { type: "string", multiple: true }])),
  ...Object.fromEntries(
    PI_FLAGS.map((f) => [
      f.name,
      { type: f.value ? "string" : "boolean", multiple: true, ...(f.short ? { short: f.short } : {}) },
    ]),
  ),
};
const OURS = new Map(BRIDGE_FLAGS.map((f) => [f.name, f]));
const PIS = new Map(PI_FLAGS.map((f) => [f.name, f]));

export function defaultOptions(): BridgeOptions {
  return {
    listen: undefined,
    cwd: process.cwd(),
    tokenFile: undefined,
    gate: undefined,
    agentUser: undefined,
    piUser: undefined,
    toolEnv: [],
    landlock: "on",
    networkMode: undefined,
    approvalTimeoutMinutes: undefined,
    lingerMs: 60_000,
    idleExitMs: 30 * 60_000,
    detachedGraceMs: 10 * 60_000,
    helloTimeoutMs: 10_000,
    authFailureDelayMs: 200,
    killGraceMs: 5_000,
    maxFrameBytes: 16 * MiB,
    replayFrames: 10_000,
    replayBytes: 32 * MiB,
    maxSendQueueBytes: 64 * MiB,
    stateDir: defaultStateDir(),
    logFile: undefined,
    registriesFile: undefined,
    piCommand: undefined,
    piArgs: [],
  };
}

/** "250ms", "10s", "30m", "1h" or plain milliseconds. */
export function parseDuration(text: string, flag: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  if (!match) throw new OptionsError(`${flag}: "${text}" is not a duration (e.g. 500ms, 10s, 30m, 1h)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? "ms") as "ms"];
  return Math.round(Number(match[1]) * unit);
}

/** "1024", "64KiB", "16MiB". */
export function parseSize(text: string, flag: string): number {
  const match = /^(\d+)(KiB|MiB|GiB)?$/.exec(text);
  if (!match) throw new OptionsError(`${flag}: "${text}" is not a byte size (e.g. 65536, 64KiB, 16MiB)`);
  const unit = { "": 1, KiB: 1024, MiB: MiB, GiB: 1024 * MiB }[match[2] ?? ""] ?? 1;
  const value = Number(match[1]) * unit;
  if (value < 1) throw new OptionsError(`${flag} must be at least 1`);
  return value;
}

export function isLoopbackHost(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

export function parseListen(text: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text);
  if (!match) throw new OptionsError(`--listen: "${text}" is not HOST:PORT`);
  const host = (match[1] ?? "").replace(/^\[|\]$/g, "");
  const port = Number(match[2]);
  if (port > 65_535) throw new OptionsError(`--listen: port ${port} is out of range`);
  if (!isLoopbackHost(host)) {
    throw new OptionsError(
      `--listen: ${host} is not a loopback address; the bridge listens on loopback only`,
    );
  }
  return { host, port };
}

export type Command = { kind: "run"; options: BridgeOptions } | { kind: "help" } | { kind: "version" };

/** The whole command line, in order. --help and --version win over everything else that parses. */
export function parseCommand(argv: readonly string[]): Command {
  let line: ReturnType<typeof readCommandLine>;
  try {
    line = readCommandLine(argv, PARSE_TABLE);
  } catch (error) {
    if (error instanceof UsageError) throw new OptionsError(`${error.message} (see bridge.mjs --help)`);
    throw error;
  }
  if (line.options.some((t) => t.name === "help")) return { kind: "help" };
  if (line.options.some((t) => t.name === "version")) return { kind: "version" };
  const options = defaultOptions();
  for (const token of line.options) {
    const ours = OURS.get(token.name);
    if (ours) {
      ours.set(options, token.value ?? "", token.rawName);
      continue;
    }
    const pi = PIS.get(token.name);
    if (!pi) continue;
    if (pi.refused) throw new OptionsError(`${token.rawName} cannot be forwarded to Pi: ${pi.refused}`);
    // Pi reads `--flag value`, never `--flag=value`: forwarded as separate arguments.
    options.piArgs.push(token.rawName, ...(token.value !== undefined ? [token.value] : []));
  }
  if (options.listen) {
    const session = line.options.find((t) => PIS.get(t.name)?.session);
    if (session) {
      throw new OptionsError(
        `${session.rawName} cannot be forwarded to Pi in network mode: the bridge keeps Pi's session in --state-dir`,
      );
    }
  }
  return { kind: "run", options };
}

/** The options of a run (tests, tools); a --help or --version here is a mistake. */
export function parseOptions(argv: readonly string[]): BridgeOptions {
  const command = parseCommand(argv);
  if (command.kind !== "run") throw new OptionsError(`--${command.kind} does not run a bridge`);
  return command.options;
}

/** `bridge.mjs --help`, from the tables above. */
export function bridgeHelp(): string {
  const ours = BRIDGE_FLAGS.map((f) => ({ usage: `--${f.name} ${f.value}`, help: f.help }));
  const forwarded = PI_FLAGS.filter((f) => !f.refused).map(
    (f) => `--${f.name}${f.value ? " <v>" : ""}${f.short ? ` (-${f.short})` : ""}${f.session ? "*" : ""}`,
  );
  const refused = PI_FLAGS.filter((f) => f.refused).map((f) => `--${f.name}`);
  const info = [
    { usage: "-h, --help", help: "print this help and exit" },
    { usage: "--version", help: "print the versions and exit" },
  ];
  return `usage: bridge.mjs [options] [pi options]

Starts one patched Pi with only the approval gate and fronts it: Pi-compatible NDJSON RPC on stdio, or with
--listen the resumable WebSocket protocol (/v1/rpc, /v1/health). Network mode needs a token of at least 16
characters: CHAT_UI_AGENT_BRIDGE_TOKEN or --token-file.

options:
${optionLines([...ours, ...info])}

  DURATION: 500ms, 10s, 30m, 1h or milliseconds. SIZE: bytes, or a number with KiB, MiB or GiB.

pi options, forwarded to Pi (* refused with --listen: the bridge owns Pi's session there):
${wrapWords(forwarded, 108)}
never forwarded: ${refused.join(", ")} (the gate is Pi's only extension; keys go in the environment)

exit status: 0 normal end, 1 failure, 2 bad usage (one sentence on stderr, then the JSON log line).
`;
}

function wrapWords(words: readonly string[], width: number): string {
  const lines: string[] = [];
  let line = " ";
  for (const word of words) {
    if (line.length + word.length + 2 > width) {
      lines.push(line);
      line = " ";
    }
    line += ` ${word}`;
  }
  lines.push(line);
  return lines.join("\n");
}
