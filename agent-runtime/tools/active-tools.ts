// Pi activates every tool an extension registers (AgentSession builds its runtime with
// includeAllExtensionTools). Our overrides only replace Pi's built-ins, so the active set must stay what Pi
// would have chosen from its own flags (sdk.js: --tools, --no-tools, --no-builtin-tools; default read, bash,
// edit, write): grep, find and ls stay inactive unless asked for.

const BUILT_IN = ["read", "bash", "edit", "write", "grep", "find", "ls"];
export const PI_DEFAULT_TOOLS = ["read", "bash", "edit", "write"];

/**
 * The active tool list without the ones our registration alone turned on. `argv` is Pi's own; `defaults` is
 * Pi's settings.defaultTools when set (sdk.js uses it instead of the built-in default).
 */
export function activeToolsWithoutOverrides(
  argv: readonly string[],
  active: readonly string[],
  defaults: readonly string[] = PI_DEFAULT_TOOLS,
): string[] {
  const has = (...names: string[]) =>
    argv.some((arg) => names.some((n) => arg === n || arg.startsWith(`${n}=`)));
  // An explicit allow-list (or none at all): Pi filtered the registry by it already.
  if (has("--tools", "-t", "--no-tools", "-nt")) return [...active];
  if (has("--no-builtin-tools", "-nbt")) return active.filter((name) => !BUILT_IN.includes(name));
  return active.filter((name) => !BUILT_IN.includes(name) || defaults.includes(name));
}
