// The bridge's health as the network side reads it: `health()` of the composed core (interfaces: ok, reason,
// detail). Until the core has it, an adapter derives the same shape from what the core reports today; once it
// does, this module only forwards.
import type { BridgeCore } from "./core.ts";

export type HealthReason =
  | "starting_too_long"
  | "pi_hung"
  | "crash_loop"
  | "refused"
  | "agent_exited"
  | "delivery_frozen"
  | "shutting_down";

export interface BridgeHealth {
  ok: boolean;
  reason: HealthReason | null;
  detail: string | null;
}

export type HealthSource = Pick<BridgeCore, "piStatus" | "isShuttingDown">;

export function coreHealth(core: HealthSource): BridgeHealth {
  const composed = (core as { health?: () => BridgeHealth }).health;
  if (typeof composed === "function") return composed.call(core);
  if (core.isShuttingDown) return { ok: false, reason: "shutting_down", detail: null };
  const pi = core.piStatus();
  if (pi.state === "refused") return { ok: false, reason: "refused", detail: pi.problem };
  if (pi.state === "exited") return { ok: false, reason: "agent_exited", detail: pi.problem };
  return { ok: true, reason: null, detail: null };
}
