// The first thing bridge.mjs evaluates: check the command line and start Pi, before the heavier modules
// (logger, schemas, WebSocket) load, so Pi boots in parallel with them. Nothing is started unless every
// check passes (fail closed); errors are reported by main once the logger exists.
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { findPiInstall, type PiInstall } from "../agent-runtime/pi-install.ts";
import { type AgentLaunch, startAgent } from "./agent-launch.ts";
import { decideProcessIsolation, type IsolationDecision } from "./isolation.ts";
import { type BridgeOptions, OptionsError, parseOptions } from "./options.ts";
import type { PiChild } from "./pi-child.ts";
import { type EndTreeResult, endTree } from "./process-tree.ts";
import { ensurePiSessionDir, type OpenedState, openStateDir } from "./state-dir.ts";

export const TOKEN_ENV = "CHAT_UI_AGENT_BRIDGE_TOKEN";

export class StartupError extends Error {}

export interface Started {
  ok: true;
  options: BridgeOptions;
  token: string | undefined;
  gate: string;
  pi: PiInstall;
  decision: IsolationDecision;
  state: OpenedState;
  /** Processes of an earlier bridge on this state dir that were still running (and were ended). */
  leftovers: EndTreeResult;
  /** How to start the agent again (the supervisor restarts Pi with it, on the current session). */
  launch: AgentLaunch;
  child: PiChild;
}

export type Prestart = Started | { ok: false; error: Error; exitCode: number };

function readToken(options: BridgeOptions): string {
  let token = process.env[TOKEN_ENV];
  if (options.tokenFile) {
    try {
      token = readFileSync(options.tokenFile, "utf8").trim();
    } catch (err) {
      throw new StartupError(`cannot read --token-file: ${(err as NodeJS.ErrnoException).code ?? err}`);
    }
  }
  if (!token || token.trim().length === 0) {
    throw new StartupError(`network mode needs a token: set ${TOKEN_ENV} or pass --token-file`);
  }
  if (token.length < 16) throw new StartupError("the bridge token must be at least 16 characters");
  return token;
}

function resolveGate(options: BridgeOptions): string {
  // import.meta.dirname is bridge.mjs's own directory: prestart stays in the entry file (build.mjs splits only
  // the rest into chunks/), and a gate missing from there refuses the start (tested in bridge-stdio).
  const gate = path.resolve(options.gate ?? path.join(import.meta.dirname, "approval-gate.mjs"));
  try {
    if (statSync(gate).isFile()) return gate;
  } catch {}
  throw new StartupError(`approval gate not found at ${gate}: refusing to start Pi without it`);
}

/** Pi's environment: ours minus every bridge secret; the agent user's HOME when isolated. */
export function piEnvironment(home: string | undefined, user: string | null): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith("CHAT_UI_AGENT_BRIDGE_")) continue;
    env[key] = value;
  }
  if (home !== undefined) {
    env.HOME = home;
    if (user) {
      env.USER = user;
      env.LOGNAME = user;
    }
  }
  return env;
}

async function start(): Promise<Prestart> {
  try {
    const options = parseOptions(process.argv.slice(2));
    const token = options.listen ? readToken(options) : undefined;
    // The token stays in this process only; nothing we spawn inherits it.
    delete process.env[TOKEN_ENV];
    const gate = resolveGate(options);
    const cwd = path.resolve(options.cwd);
    if (!statSync(cwd, { throwIfNoEntry: false })?.isDirectory()) {
      throw new StartupError(`--cwd ${cwd} is not a directory`);
    }
    const pi = findPiInstall(import.meta.dirname);
    const decision = decideProcessIsolation(options.agentUser);
    const state = await openStateDir(options.stateDir, { workspace: cwd });
    const markerPrefix = `${state.identity.stateId}.`;
    // A bridge that died (kill -9, OOM) could not end its Pi and tools: they go before a new Pi opens the session.
    const leftovers = await endTree({ markers: [markerPrefix] }, { signal: "SIGKILL" });
    const euid = process.geteuid?.() ?? 0;
    const launch: AgentLaunch = {
      node: process.execPath,
      entry: options.piCommand ? path.resolve(options.piCommand) : pi.cliPath,
      gate,
      forwarded: options.piArgs,
      cwd,
      env: piEnvironment(decision.spawnAs?.home, decision.isolation.user),
      spawnAs: decision.spawnAs,
      markerPrefix,
      session: options.listen
        ? { dir: ensurePiSessionDir(state.paths, euid, decision.spawnAs), current: state.session }
        : undefined,
    };
    const child = startAgent(launch);
    return { ok: true, options, token, gate, pi, decision, state, leftovers, launch, child };
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    return { ok: false, error, exitCode: err instanceof OptionsError ? 2 : 1 };
  }
}

export const prestart: Prestart = await start();
