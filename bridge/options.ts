// Command line of bridge.mjs: the bridge's own flags, validated; everything else is forwarded to Pi.
import { isIP } from "node:net";
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

export class OptionsError extends Error {}

const MiB = 1024 * 1024;

type Spec = {
  key: keyof BridgeOptions;
  kind: "string" | "duration" | "size" | "count" | "listen" | "list" | "onoff";
};

const FLAGS: Record<string, Spec> = {
  "--listen": { key: "listen", kind: "listen" },
  "--cwd": { key: "cwd", kind: "string" },
  "--token-file": { key: "tokenFile", kind: "string" },
  "--gate": { key: "gate", kind: "string" },
  "--agent-user": { key: "agentUser", kind: "string" },
  "--pi-user": { key: "piUser", kind: "string" },
  "--tool-env": { key: "toolEnv", kind: "list" },
  "--landlock": { key: "landlock", kind: "onoff" },
  "--linger": { key: "lingerMs", kind: "duration" },
  "--idle-exit": { key: "idleExitMs", kind: "duration" },
  "--detached-grace": { key: "detachedGraceMs", kind: "duration" },
  "--hello-timeout": { key: "helloTimeoutMs", kind: "duration" },
  "--auth-failure-delay": { key: "authFailureDelayMs", kind: "duration" },
  "--kill-grace": { key: "killGraceMs", kind: "duration" },
  "--max-frame-bytes": { key: "maxFrameBytes", kind: "size" },
  "--replay-frames": { key: "replayFrames", kind: "count" },
  "--replay-bytes": { key: "replayBytes", kind: "size" },
  "--max-send-queue-bytes": { key: "maxSendQueueBytes", kind: "size" },
  "--pi-command": { key: "piCommand", kind: "string" },
  "--state-dir": { key: "stateDir", kind: "string" },
  "--log-file": { key: "logFile", kind: "string" },
  "--registries-file": { key: "registriesFile", kind: "string" },
};

/**
 * Pi flags a caller may not forward: they would load other code, trust the workspace or leave RPC mode, or
 * (--api-key) put a credential on a command line, which every process can read in /proc/<pid>/cmdline.
 */
const REFUSED_PI_FLAGS = new Set([
  "-e",
  "--extension",
  "-a",
  "--approve",
  "-p",
  "--print",
  "--export",
  "--api-key",
]);

/** Pi's session flags: in network mode the bridge owns the session (it restarts Pi on it), so none may be forwarded. */
const SESSION_PI_FLAGS = new Set([
  "--session",
  "--session-id",
  "--session-dir",
  "--fork",
  "--continue",
  "-c",
  "--resume",
  "-r",
]);

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

export function parseOptions(argv: readonly string[]): BridgeOptions {
  const options = defaultOptions();
  const set = options as unknown as Record<string, unknown>;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (name === "--mode") {
      const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (value !== "rpc")
        throw new OptionsError(`--mode: only "rpc" is supported (got ${value ?? "nothing"})`);
      continue;
    }
    const spec = FLAGS[name];
    if (!spec) {
      if (name === "--api-key") {
        throw new OptionsError("--api-key cannot be forwarded to Pi: pass provider keys in the environment");
      }
      if (REFUSED_PI_FLAGS.has(name)) {
        throw new OptionsError(`${name} cannot be forwarded to Pi: the bridge loads only its approval gate`);
      }
      options.piArgs.push(arg);
      continue;
    }
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === "") throw new OptionsError(`${name} needs a value`);
    switch (spec.kind) {
      case "string":
        set[spec.key] = value;
        break;
      case "duration":
        set[spec.key] = parseDuration(value, name);
        break;
      case "size":
        set[spec.key] = parseSize(value, name);
        break;
      case "count": {
        if (!/^\d+$/.test(value) || Number(value) < 1)
          throw new OptionsError(`${name} must be a positive integer`);
        set[spec.key] = Number(value);
        break;
      }
      case "listen":
        options.listen = parseListen(value);
        break;
      case "list":
        (set[spec.key] as string[]).push(value);
        break;
      case "onoff":
        if (value !== "on" && value !== "off") throw new OptionsError(`${name} must be "on" or "off"`);
        set[spec.key] = value;
        break;
    }
  }
  if (options.listen) {
    const sessionFlag = options.piArgs.find((a) => SESSION_PI_FLAGS.has(a.split("=")[0] ?? a));
    if (sessionFlag) {
      throw new OptionsError(
        `${sessionFlag} cannot be forwarded to Pi in network mode: the bridge keeps Pi's session in --state-dir`,
      );
    }
  }
  return options;
}
