// The policy names: spelled here once, imported by the policy store, the gate, the CLI and the wire protocol.
export const POLICY_MODES = ["auto", "ask", "read-only"] as const;
export type PolicyMode = (typeof POLICY_MODES)[number];

export function isPolicyMode(value: unknown): value is PolicyMode {
  return typeof value === "string" && (POLICY_MODES as readonly string[]).includes(value);
}
