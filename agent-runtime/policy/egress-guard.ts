// The tools' egress guard, as the gate sees it: the one reader of CHAT_UI_AGENT_EGRESS_GUARD (set in Pi's
// environment by the launch plan; the egress stream will extend this to the network mode). "enforcing" means a
// tool process cannot reach anything but loopback without an approved call or the egress proxy, so code the gate
// cannot model may run in `auto` without a dialog: it cannot send anything out unasked.

export const EGRESS_GUARD_ENV = "CHAT_UI_AGENT_EGRESS_GUARD";

export const EGRESS_GUARD_STATES = ["enforcing", "degraded", "off", "absent"] as const;
/**
 * `enforcing`: loopback only, everything else through the egress proxy or an approved call. `degraded`: something
 * could not be enforced. `off`: switched off by the operator. `absent`: not set, or a value this gate does not know
 * (a process outside the runtime, an older launcher): treated as no guard.
 */
export type EgressGuardState = (typeof EGRESS_GUARD_STATES)[number];

export function egressGuardState(env: NodeJS.ProcessEnv = process.env): EgressGuardState {
  const raw = env[EGRESS_GUARD_ENV];
  return raw === "enforcing" || raw === "degraded" || raw === "off" ? raw : "absent";
}

/** Only an enforcing guard stands in for a dialog. */
export function guardEnforcing(state: EgressGuardState): boolean {
  return state === "enforcing";
}
