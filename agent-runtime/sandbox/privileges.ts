// What the health server (the image's default command) does with root, and what it can say about the isolation
// a bridge started in this container would get. It needs no privilege to serve, so as root it drops to an
// unprivileged user before listening; started as uid 1000 (a Space), it serves as it is.
import { readFileSync } from "node:fs";
import { planEgress } from "./egress.ts";
import type { LandlockProbe } from "./landlock.ts";
import { LANDLOCK_SCOPES_ABI } from "./landlock.ts";

export interface UserEntry {
  name: string;
  uid: number;
  gid: number;
}

export function lookupUser(name: string, passwd: string): UserEntry | undefined {
  for (const line of passwd.split("\n")) {
    const [entryName, , uid, gid] = line.split(":");
    if (
      entryName === name &&
      uid !== undefined &&
      gid !== undefined &&
      /^\d+$/.test(uid) &&
      /^\d+$/.test(gid)
    ) {
      return { name, uid: Number(uid), gid: Number(gid) };
    }
  }
  return undefined;
}

/** As root: setgroups([]), setgid, setuid to `user`; then proves root is gone. Throws if it cannot. */
export function dropRoot(
  user: string,
  passwd: string = readFileSync("/etc/passwd", "utf8"),
): UserEntry | undefined {
  if (process.geteuid?.() !== 0) return undefined;
  const entry = lookupUser(user, passwd);
  if (!entry || entry.uid === 0 || entry.gid === 0)
    throw new Error(`cannot drop root: no unprivileged user ${user}`);
  process.setgroups?.([]);
  process.setgid?.(entry.gid);
  process.setuid?.(entry.uid);
  if (process.geteuid?.() === 0 || process.getuid?.() === 0 || process.getegid?.() === 0) {
    throw new Error("dropping root did not take effect");
  }
  return entry;
}

export interface IsolationCapability {
  /** What a bridge started now as the README says (as the container's start user, --agent-user agent) gets. */
  expected: "isolated" | "degraded";
  /** The uid the container started this process with (before any drop). */
  startUid: number;
  landlockAbi: number;
  reasons: string[];
}

export function isolationCapability(input: {
  startUid: number;
  landlock: LandlockProbe;
  passwd: string;
  agentUser?: string;
  piUser?: string;
}): IsolationCapability {
  const reasons: string[] = [];
  if (input.startUid !== 0) {
    reasons.push(
      `the container runs as uid ${input.startUid}: the bridge, Pi and the tools will share one uid`,
    );
  } else {
    for (const [role, name] of [
      ["tools", input.agentUser ?? "agent"],
      ["Pi", input.piUser ?? "pi"],
    ] as const) {
      const entry = lookupUser(name, input.passwd);
      if (!entry || entry.uid === 0) reasons.push(`no unprivileged ${role} user ${name}`);
    }
  }
  const abi = input.landlock.abi;
  if (abi === 0)
    reasons.push(`Landlock: ${"reason" in input.landlock ? input.landlock.reason : "unavailable"}`);
  else if (abi < LANDLOCK_SCOPES_ABI)
    reasons.push(`Landlock ABI ${abi} cannot scope signals and abstract sockets`);
  const egress = planEgress({
    requested: true,
    helper: input.landlock.helper,
    features: input.landlock.features,
  });
  if (egress.guard !== "enforcing") reasons.push(`egress: ${egress.detail}`);
  return {
    expected: reasons.length === 0 ? "isolated" : "degraded",
    startUid: input.startUid,
    landlockAbi: abi,
    reasons,
  };
}
