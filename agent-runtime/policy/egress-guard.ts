// The tools' egress guard, as the gate sees it: the one reader of CHAT_UI_AGENT_EGRESS_GUARD (set in Pi's
// environment by the launch plan: what the kernel lets the supervisor enforce) and of the operator's network mode
// (the file beside the policy file, reread before each call: it changes at run time). "enforcing" means a tool
// process cannot reach anything but loopback without an approved call or the egress proxy, so code the gate
// cannot model may run in `auto` without a dialog: it cannot send anything out unasked.
import { networkModePathOf, readNetworkModeFile } from "./network-mode-file.ts";
import { policyPath } from "./policy-store.ts";

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
  const kernel = raw === "enforcing" || raw === "degraded" || raw === "off" ? raw : "absent";
  return kernel === "enforcing" ? guardUnderNetworkMode(env) : kernel;
}

/**
 * What an enforcing guard is worth under the operator's network mode: `open` switches it off (any destination);
 * a file that cannot be read as a mode counts as degraded (fail closed: the gate asks again). A missing file is the
 * default mode (the bridge writes the file at start and rewrites it if it disappears).
 */
function guardUnderNetworkMode(env: NodeJS.ProcessEnv): EgressGuardState {
  const read = readNetworkModeFile(networkModePathOf(policyPath(env)));
  if (read.ok) return read.mode === "open" ? "off" : "enforcing";
  return read.problem === "missing" ? "enforcing" : "degraded";
}

/** Only an enforcing guard stands in for a dialog. */
export function guardEnforcing(state: EgressGuardState): boolean {
  return state === "enforcing";
}
