// The one home of the rule for a person's `!` commands (Pi's RPC `bash`): the bridge refuses them before Pi sees
// them, and the gate's user_bash handler refuses them again, both through this function.
import type { PolicyMode } from "./policy-modes.ts";

/** Why a `!` command may not run under `policy`, or undefined when it may. */
export function userBashRefusal(policy: PolicyMode): string | undefined {
  return policy === "read-only" ? "the policy is read-only, so `!` commands do not run" : undefined;
}
