// "Start the agent": everything needed to start Pi, again and again, the same way. prestart starts the first
// one; the supervisor in core.ts restarts through the same function on the current session.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { PiChild, piArgv } from "./pi-child.ts";
import type { SessionRecord } from "./state-dir.ts";

export interface AgentLaunch {
  node: string;
  entry: string;
  gate: string;
  forwarded: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  spawnAs: { uid: number; gid: number } | undefined;
  /** `<stateId>.`: every run marker of this state dir starts with it. */
  markerPrefix: string;
  /** Network mode: the session dir, and the session Pi is on now (updated when Pi reports another). */
  session: { dir: string; current: SessionRecord } | undefined;
}

/** Pi's session flags: its exact session file when that exists, otherwise the session id (created if missing). */
export function sessionArgv(dir: string, record: SessionRecord): string[] {
  if (record.sessionFile && existsSync(record.sessionFile)) {
    return ["--session-dir", dir, "--session", record.sessionFile];
  }
  return ["--session-dir", dir, "--session-id", record.sessionId];
}

const bootNonce = randomBytes(6).toString("hex");
let generation = 0;

/** Starts the agent: one Pi, marked with a run id of its own under the state dir's prefix. */
export function startAgent(launch: AgentLaunch): PiChild {
  const runId = `${launch.markerPrefix}${bootNonce}-${generation++}`;
  const session = launch.session ? sessionArgv(launch.session.dir, launch.session.current) : [];
  return new PiChild({
    node: launch.node,
    args: piArgv(launch.entry, launch.gate, [...session, ...launch.forwarded]),
    cwd: launch.cwd,
    env: launch.env,
    spawnAs: launch.spawnAs,
    runId,
  });
}
