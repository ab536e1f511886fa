// Where the image puts things: the one spelling of each path the runtime code relies on (the Dockerfile
// creates them; tests/image checks that it does).

/** The runtime bundles, the gate and its wasm (root-owned, read-only for everyone else). */
export const IMAGE_RUNTIME_DIR = "/opt/chat-ui-agent";
/** The policy directory: nothing in it belongs to the agent. */
export const POLICY_DIR = "/run/chat-ui-agent";
/** The live policy file, unless AGENT_POLICY_PATH says otherwise. */
export const DEFAULT_POLICY_PATH = `${POLICY_DIR}/policy`;

/** The bridge's durable state when it runs as root (the image creates it root-owned, mode 0700). */
export const ROOT_STATE_DIR = "/var/lib/chat-ui-agent";

/**
 * Where the bridge keeps its state unless --state-dir says otherwise: never in the workspace, HOME or /tmp,
 * which the agent's tools may write. As root: ROOT_STATE_DIR. Otherwise a per-uid directory under /var/tmp,
 * which the tools' Landlock domain does not grant.
 */
export function defaultStateDir(euid: number = process.geteuid?.() ?? 0): string {
  return euid === 0 ? ROOT_STATE_DIR : `/var/tmp/chat-ui-agent-${euid}`;
}
