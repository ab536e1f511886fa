// What the egress proxy does with a destination, as a table: the operator's network mode, the person's policy,
// and what the destination is (granted for this session, a package registry, anything else). Every decision
// names the row that made it, for the audit log and the dialog.
import {
  isNetworkMode,
  NETWORK_MODES,
  type NetworkMode,
} from "../../agent-runtime/policy/network-mode-file.ts";
import type { PolicyMode } from "../../agent-runtime/policy/policy-modes.ts";

// The one definition of the modes (the sandbox's), re-exported for the egress parts.
export { isNetworkMode, NETWORK_MODES, type NetworkMode };

/** What the destination is, as far as the rules care. */
export type DestinationClass = "granted" | "registry" | "other";

export type EgressAction = "allow" | "ask" | "deny";

export interface EgressRule {
  /** Stable name, written in the audit log and shown in dialogs. */
  name: string;
  mode: NetworkMode | "*";
  policy: PolicyMode | "*";
  destination: DestinationClass | "*";
  action: EgressAction;
  why: string;
}

/** First matching row wins; the last row matches everything (deny). */
export const EGRESS_RULES: readonly EgressRule[] = [
  {
    name: "lockdown",
    mode: "lockdown",
    policy: "*",
    destination: "*",
    action: "deny",
    why: "the network is locked down: nothing leaves",
  },
  {
    name: "open",
    mode: "open",
    policy: "*",
    destination: "*",
    action: "allow",
    why: "the network is open (the guard is off: degraded)",
  },
  {
    name: "read-only",
    mode: "*",
    policy: "read-only",
    destination: "*",
    action: "deny",
    why: "the policy is read-only: nothing leaves",
  },
  {
    name: "session-grant",
    mode: "*",
    policy: "*",
    destination: "granted",
    action: "allow",
    why: "the person allowed this destination for the session",
  },
  {
    name: "auto-registry",
    mode: "registries",
    policy: "auto",
    destination: "registry",
    action: "allow",
    why: "a package registry, allowed in auto",
  },
  {
    name: "ask-new",
    mode: "registries",
    policy: "*",
    destination: "*",
    action: "ask",
    why: "a destination the person has not allowed",
  },
  {
    name: "default-deny",
    mode: "*",
    policy: "*",
    destination: "*",
    action: "deny",
    why: "no rule allows it",
  },
];

export function egressRule(mode: NetworkMode, policy: PolicyMode, destination: DestinationClass): EgressRule {
  const rule = EGRESS_RULES.find(
    (row) =>
      (row.mode === "*" || row.mode === mode) &&
      (row.policy === "*" || row.policy === policy) &&
      (row.destination === "*" || row.destination === destination),
  );
  // The table ends with a catch-all; this only satisfies the type checker.
  return rule ?? (EGRESS_RULES.at(-1) as EgressRule);
}
