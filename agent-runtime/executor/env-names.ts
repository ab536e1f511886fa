// The environment variables the bridge sets for Pi and the tool executor about the executor's channel and the
// tools' shell. Kept apart from protocol.ts (the channel's zod schemas) so the bridge's prestart imports no zod.

/** Env var (Pi's) naming the fd of its end of the channel; unset means no executor (local, degraded). */
export const EXECUTOR_FD_ENV = "CHAT_UI_AGENT_EXECUTOR_FD";
/** Env var (Pi's) holding the tools' HOME, which is what `~` means in a tool path. */
export const TOOL_HOME_ENV = "CHAT_UI_AGENT_TOOL_HOME";
/** Env var (the executor's, set by the bridge) naming the helper tool shells start through (fd closing). */
export const TOOL_SHELL_HELPER_ENV = "CHAT_UI_AGENT_TOOL_SHELL_HELPER";
/** Env var (the executor's): "1" when it runs in a Landlock domain, so each tool shell nests its own. */
export const TOOL_SHELL_NEST_ENV = "CHAT_UI_AGENT_TOOL_SHELL_NEST";
