// What the bridge core is built with: every dependency and the few options in which the transports differ.
import type { Logger } from "../../agent-runtime/log.ts";
import type { GrantStore } from "../grants/grant-store.ts";
import type { IdempotencyStore } from "../idempotency.ts";
import type { AgentUnit } from "../pi-child.ts";
import type { Durability, Isolation } from "../protocol.ts";
import type { RestartPolicy } from "../restart-policy.ts";
import type { Clock } from "./clock.ts";
import type { SessionInfo } from "./mirror.ts";
import type { NetworkModeAccess } from "./network-mode-relay.ts";
import type { PolicyAccess } from "./policy-relay.ts";
import type { WatchdogOptions } from "./watchdog.ts";

export interface CoreOptions {
  epoch: string;
  /** Reported in bridge_status; nothing in the core depends on it. */
  transport: "network" | "stdio";
  /** Every command and dialog answer must carry an id (its idempotency key). */
  requireIds: boolean;
  detachedGraceMs: number;
  idleExitMs: number;
  maxFrameBytes: number;
  /** How long to keep serving replay once no Pi will serve again; 0: shut down at once. */
  lingerMs: number;
  /** The live isolation report (it changes if the tool executor stops). */
  isolation: () => Isolation;
  policy: PolicyAccess;
  /** The tools' network mode (get/set_network_mode, network_mode_changed); without it those commands fail. */
  network?: NetworkModeAccess;
  log: Logger;
  clock?: Clock;
  /** Called when the bridge should shut down (idle exit, no Pi will serve again). */
  requestShutdown: (reason: string, exitCode?: number) => void;
  /** Command records (restored from the state dir by the caller, if durable). */
  idempotency?: IdempotencyStore;
  /** Starts a new agent unit on the current session; without it, Pi is never restarted. */
  restartAgent?: () => AgentUnit;
  restartPolicy?: RestartPolicy;
  watchdog?: Partial<WatchdogOptions>;
  /** The session grants (restored from the state dir by the caller, if durable); in memory otherwise. */
  grants?: GrantStore;
  /** Pi reported another session (new_session, switch_session…): the caller persists it. */
  onSession?: (session: SessionInfo) => void;
  /** The set of open dialog ids changed: the caller persists it (closed at the next start). */
  onOpenDialogs?: (ids: string[]) => void;
  durability: () => Durability;
}
