// The tools' environment: an allow-list, never the bridge's or Pi's environment minus some names. Provider
// keys, the bridge token, sbx-server's token and anything else the start environment holds stay out unless an
// operator names a variable explicitly (--tool-env NAME).

/** Variables tools get from the start environment. */
export const TOOL_ENV_ALLOWED = ["PATH", "LANG", "TERM", "TZ", "TMPDIR"] as const;
/** Locale variables (LC_ALL, LC_CTYPE, …) pass too. */
const LOCALE = /^LC_[A-Z_]+$/;
/** Never passed, whatever an operator asks: the bridge's own secrets. */
const NEVER = /^CHAT_UI_AGENT_BRIDGE_/;

export const DEFAULT_TOOL_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** A variable name an operator may pass through (POSIX-portable name, not a bridge secret). */
export function isPassableName(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name) && !NEVER.test(name);
}

export interface ToolEnvOptions {
  home: string;
  user: string | undefined;
  /** The bridge's run marker, kept in every tool process. */
  runMarker: { name: string; value: string };
  /** Names an operator passes through explicitly. */
  passThrough: readonly string[];
}

export function toolEnvironment(source: NodeJS.ProcessEnv, options: ToolEnvOptions): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if ((TOOL_ENV_ALLOWED as readonly string[]).includes(name) || LOCALE.test(name)) env[name] = value;
  }
  for (const name of options.passThrough) {
    const value = source[name];
    if (isPassableName(name) && value !== undefined) env[name] = value;
  }
  env.PATH ??= DEFAULT_TOOL_PATH;
  env.HOME = options.home;
  if (options.user) {
    env.USER = options.user;
    env.LOGNAME = options.user;
  }
  env[options.runMarker.name] = options.runMarker.value;
  return env;
}
