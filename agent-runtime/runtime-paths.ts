// Where the image puts things: the one spelling of each path the runtime code relies on (the Dockerfile
// creates them; tests/image checks that it does).

/** The runtime bundles, the gate and its wasm (root-owned, read-only for everyone else). */
export const IMAGE_RUNTIME_DIR = "/opt/chat-ui-agent";
/** The policy directory: nothing in it belongs to the agent. */
export const POLICY_DIR = "/run/chat-ui-agent";
/** The live policy file, unless AGENT_POLICY_PATH says otherwise. */
export const DEFAULT_POLICY_PATH = `${POLICY_DIR}/policy`;
