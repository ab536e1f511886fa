// Decides whether Pi runs as the unprivileged agent user, or degraded (same uid as the bridge) and why.
import { readFileSync } from "node:fs";
import type { Isolation } from "./protocol.ts";

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

export function parsePasswd(text: string): PasswdEntry[] {
  const entries: PasswdEntry[] = [];
  for (const line of text.split("\n")) {
    const [name, , uidText, gidText, , home] = line.split(":");
    if (name === undefined || home === undefined || line.startsWith("#")) continue;
    const uid = Number(uidText);
    const gid = Number(gidText);
    if (!Number.isInteger(uid) || !Number.isInteger(gid)) continue;
    entries.push({ name, uid, gid, home });
  }
  return entries;
}

export interface IsolationDecision {
  isolation: Isolation;
  /** Spawn credentials and HOME for Pi when isolated. */
  spawnAs: { uid: number; gid: number; home: string } | undefined;
}

export function decideIsolation(input: {
  agentUser: string | undefined;
  euid: number | undefined;
  passwd: () => string;
}): IsolationDecision {
  const degraded = (reason: string, user: string | null = input.agentUser ?? null): IsolationDecision => ({
    isolation: { mode: "degraded", user, uid: null, gid: null, reason },
    spawnAs: undefined,
  });
  if (!input.agentUser) return degraded("no --agent-user given: Pi runs with the bridge's own uid");
  if (input.euid !== 0) {
    return degraded(
      `the bridge is not root (euid ${input.euid ?? "unknown"}), so it cannot switch to ${input.agentUser}`,
    );
  }
  let entries: PasswdEntry[];
  try {
    entries = parsePasswd(input.passwd());
  } catch (err) {
    return degraded(`cannot read the user database: ${(err as Error).message}`);
  }
  const entry = entries.find((e) => e.name === input.agentUser);
  if (!entry) return degraded(`user ${input.agentUser} does not exist`);
  if (entry.uid === 0 || entry.gid === 0)
    return degraded(`user ${input.agentUser} is privileged (uid/gid 0)`);
  return {
    isolation: { mode: "isolated", user: entry.name, uid: entry.uid, gid: entry.gid, reason: null },
    spawnAs: { uid: entry.uid, gid: entry.gid, home: entry.home },
  };
}

export function decideProcessIsolation(agentUser: string | undefined): IsolationDecision {
  return decideIsolation({
    agentUser,
    euid: process.geteuid?.(),
    passwd: () => readFileSync("/etc/passwd", "utf8"),
  });
}
