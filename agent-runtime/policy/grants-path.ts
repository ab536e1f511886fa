// Where the gate finds the session grants file (grants.ts): the variable the bridge sets in Pi's environment. Kept
// apart from grants.ts (the file's zod schemas) so the bridge's prestart imports no zod.

/** Where the bridge writes the grants file and the gate reads it (set by the bridge in Pi's environment). */
export const GRANTS_PATH_ENV = "CHAT_UI_AGENT_GRANTS_PATH";
