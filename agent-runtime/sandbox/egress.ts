// The tools' egress guard: what this kernel lets the supervisor enforce (the strictest tier that works, first
// match in a table), the network modes, and the standard proxy settings tools get when the bridge runs an egress
// proxy. The guard itself is the helper (sandbox-seccomp.c, sandbox-supervise.c).
import type { KernelFeatures } from "./landlock.ts";

export const NETWORK_MODES = ["lockdown", "registries", "open"] as const;
export type NetworkMode = (typeof NETWORK_MODES)[number];
export const DEFAULT_NETWORK_MODE: NetworkMode = "registries";

/** What Pi's environment says (CHAT_UI_AGENT_EGRESS_GUARD), read by the gate through egressGuardState(). */
export const EGRESS_GUARD_ENV = "CHAT_UI_AGENT_EGRESS_GUARD";
export type EgressGuardState = "enforcing" | "degraded" | "off";

/** What the supervisor installs in the tools (landlock-exec --egress). */
export type EgressFilter = "notify" | "no-inet" | "none";

export interface EgressTier {
  filter: EgressFilter;
  /** The tools' Landlock domain handles TCP connect with no rule (--net-tcp). */
  landlockTcp: boolean;
  guard: Exclude<EgressGuardState, "off">;
  /** What tools can reach, in words (the isolation report's detail). */
  detail: string;
}

const CLOSED =
  "UDP, raw and packet sockets, MPTCP, TCP Fast Open, IP options and IPv6 routing headers, io_uring and foreign syscall ABIs are closed (seccomp)";

/** The strictest guard this kernel supports: the first row whose needs it meets. */
export const EGRESS_TIERS: readonly { needs: (f: KernelFeatures) => boolean; tier: EgressTier }[] = [
  {
    needs: (f) => f.seccompNotify && f.notifyAddfd && f.landlockNet,
    tier: {
      filter: "notify",
      landlockTcp: true,
      guard: "enforcing",
      detail: `loopback only: the supervisor performs each permitted TCP connect on its own socket and installs it in the tool; Landlock refuses every other TCP connect; ${CLOSED}`,
    },
  },
  {
    needs: (f) => f.seccompNotify && f.notifyAddfd,
    tier: {
      filter: "notify",
      landlockTcp: false,
      guard: "enforcing",
      detail: `loopback only: the supervisor performs each permitted TCP connect and each unix connect itself (no Landlock TCP rules on this kernel) and refuses other connects; ${CLOSED}`,
    },
  },
  {
    needs: (f) => f.seccompFilter,
    tier: {
      filter: "no-inet",
      landlockTcp: false,
      guard: "degraded",
      detail:
        "no seccomp user notification with ADDFD on this kernel: the tools get no inet socket at all (loopback TCP included)",
    },
  },
  {
    needs: (f) => f.landlockNet,
    tier: {
      filter: "none",
      landlockTcp: true,
      guard: "degraded",
      detail:
        "no seccomp filter on this kernel: Landlock refuses every TCP connect (loopback included); UDP and raw sockets stay open",
    },
  },
  {
    needs: () => true,
    tier: {
      filter: "none",
      landlockTcp: false,
      guard: "degraded",
      detail: "nothing on this kernel can guard the tools' network: it is open",
    },
  },
];

export function egressTier(features: KernelFeatures): EgressTier {
  for (const row of EGRESS_TIERS) if (row.needs(features)) return row.tier;
  throw new Error("unreachable: the last tier needs nothing");
}

export interface EgressPlan {
  guard: EgressGuardState;
  /** The tier applied (undefined: the operator switched the guard off, or there is no helper). */
  tier: EgressTier | undefined;
  detail: string;
}

/**
 * The guard for this launch: off when the operator switched the tools' sandbox off, degraded (no network guard)
 * without the helper, otherwise the kernel's tier.
 */
export function planEgress(input: {
  requested: boolean;
  helper: string | undefined;
  features: KernelFeatures;
}): EgressPlan {
  if (!input.requested)
    return { guard: "off", tier: undefined, detail: "switched off with the tools' sandbox (--landlock off)" };
  if (!input.helper)
    return {
      guard: "degraded",
      tier: undefined,
      detail: "the helper (landlock-exec) is not installed: the tools' network is open",
    };
  const tier = egressTier(input.features);
  return { guard: tier.guard, tier, detail: tier.detail };
}

/** A proxy URL the bridge may hand the tools: plain HTTP on loopback, a port, nothing else. */
export function checkProxyUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error("the egress proxy URL does not parse");
  }
  const loopback = ["127.0.0.1", "[::1]", "localhost"].includes(url.hostname);
  if (
    url.protocol !== "http:" ||
    !loopback ||
    url.port === "" ||
    url.username !== "" ||
    url.password !== "" ||
    (url.pathname !== "/" && url.pathname !== "") ||
    url.search !== "" ||
    url.hash !== ""
  ) {
    throw new Error("the egress proxy must be http://127.0.0.1:<port> (loopback, no path or credentials)");
  }
  return `http://${url.hostname}:${url.port}`;
}

/** Destinations every tool reaches directly (the guard lets loopback through). */
export const NO_PROXY_HOSTS = "localhost,127.0.0.1,::1";

/** The standard proxy settings, by the value each one takes (the proxy URL, the no-proxy list, or a constant). */
export const PROXY_VARIABLES: readonly { name: string; value: "url" | "noProxy" | { constant: string } }[] = [
  { name: "HTTP_PROXY", value: "url" },
  { name: "HTTPS_PROXY", value: "url" },
  { name: "ALL_PROXY", value: "url" },
  { name: "http_proxy", value: "url" },
  { name: "https_proxy", value: "url" },
  { name: "all_proxy", value: "url" },
  { name: "NO_PROXY", value: "noProxy" },
  { name: "no_proxy", value: "noProxy" },
  // npm (and npx) read their config from npm_config_* variables.
  { name: "npm_config_proxy", value: "url" },
  { name: "npm_config_https_proxy", value: "url" },
  { name: "npm_config_noproxy", value: "noProxy" },
  // pip
  { name: "PIP_PROXY", value: "url" },
  // git: http.proxy through the environment's config (it also reads http_proxy for http remotes).
  { name: "GIT_CONFIG_COUNT", value: { constant: "1" } },
  { name: "GIT_CONFIG_KEY_0", value: { constant: "http.proxy" } },
  { name: "GIT_CONFIG_VALUE_0", value: "url" },
  // Node's fetch and http use the variables above only when asked.
  { name: "NODE_USE_ENV_PROXY", value: { constant: "1" } },
];

export function proxyEnvironment(proxyUrl: string): Record<string, string> {
  const url = checkProxyUrl(proxyUrl);
  const env: Record<string, string> = {};
  for (const variable of PROXY_VARIABLES) {
    env[variable.name] =
      variable.value === "url"
        ? url
        : variable.value === "noProxy"
          ? NO_PROXY_HOSTS
          : variable.value.constant;
  }
  return env;
}
