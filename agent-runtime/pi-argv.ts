// Pi's minimal argv, defined once: the bridge's Pi, the one-shot patch probe, the dev harness and the bench's
// raw-Pi baseline all start Pi from these lists. Kept free of imports, so the bridge's prestart stays light.

/** RPC mode, no discovered extensions, and no approval of project-local trust (our gate decides). */
export const PI_RPC_FLAGS: readonly string[] = ["--mode", "rpc", "--no-extensions", "--no-approve"];

/** Nothing of the machine either: no session, no network, no skills, prompt templates, context files, themes. */
const BARE_FLAGS: readonly string[] = [
  "--no-session",
  "--offline",
  "--no-skills",
  "--no-prompt-templates",
  "--no-context-files",
  "--no-themes",
];

/** Pi behind the bridge: only our gate loaded; the caller's own Pi flags come last. */
export function bridgePiArgv(entry: string, gate: string, forwarded: readonly string[]): string[] {
  return [entry, ...PI_RPC_FLAGS, "-e", gate, ...forwarded];
}

/** A bare Pi (the patch probe, test harnesses): `mode` other than rpc only for tests of Pi's other modes. */
export function barePiArgv(entry: string, mode = "rpc"): string[] {
  const rpc = PI_RPC_FLAGS.slice(2);
  return [entry, "--mode", mode, ...rpc, ...BARE_FLAGS];
}
