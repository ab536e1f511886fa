// The bridge token never stays in an environment a tool could read. `delete process.env.X` does not change
// /proc/<pid>/environ (the kernel shows the environment the process was started with), so a bridge started
// with the token in its environment re-executes itself (process.execve, same pid) without it, handing the
// token over through a file in its private state dir, which the new image reads and unlinks (--token-file).
import { randomBytes } from "node:crypto";
import { closeSync, constants, lstatSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import path from "node:path";

export const TOKEN_ENV = "CHAT_UI_AGENT_BRIDGE_TOKEN";
/** Every variable with this prefix is the bridge's own secret: never passed on, scrubbed by the re-exec. */
export const BRIDGE_SECRET_PREFIX = "CHAT_UI_AGENT_BRIDGE_";
/** The handover file's name prefix in <state>/bridge/. */
export const HANDOVER_PREFIX = "token-handover-";

export function bridgeSecretNames(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env).filter((name) => name.startsWith(BRIDGE_SECRET_PREFIX));
}

export type Reexec = (file: string, args: string[], env: NodeJS.ProcessEnv) => never;

/** Node's process.execve (22.15+), if this runtime has it. */
export function nodeExecve(): Reexec | undefined {
  const execve = (process as unknown as { execve?: Reexec }).execve;
  return typeof execve === "function" ? execve.bind(process) : undefined;
}

/**
 * If the environment holds a bridge secret (or `always`), re-executes the bridge without it and never returns.
 * Returns the reason it did not (no secret: nothing to do → undefined; or why the secret stays in the initial
 * environment).
 */
export function reexecWithoutSecrets(input: {
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  /** <state>/bridge: created 0700 if missing. */
  bridgeStateDir: string;
  /** Whether the bridge needs the token (network mode) and has no --token-file of its own. */
  handOverToken: boolean;
  execve: Reexec | undefined;
  /** Re-execute even without a secret (Node must start again with the environment as it is now). */
  always?: boolean;
}): string | undefined {
  const secrets = bridgeSecretNames(input.env);
  if (secrets.length === 0 && !input.always) return undefined;
  if (!input.execve) {
    return "this Node has no process.execve, so the token stays in the bridge's initial environment (/proc/<pid>/environ)";
  }
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(input.env)) if (!secrets.includes(name)) env[name] = value;
  const args = [...input.argv];
  let handover: string | undefined;
  const token = input.env[TOKEN_ENV];
  if (input.handOverToken && token) {
    mkdirSync(input.bridgeStateDir, { recursive: true, mode: 0o700 });
    // lstat: a link here (planted before the bridge started) must not redirect the token elsewhere.
    const dir = lstatSync(input.bridgeStateDir);
    if (!dir.isDirectory() || (dir.mode & 0o077) !== 0 || dir.uid !== (process.geteuid?.() ?? dir.uid)) {
      return `${input.bridgeStateDir} is not private (mode ${(dir.mode & 0o777).toString(8)}), so the token was not handed over through it`;
    }
    handover = path.join(input.bridgeStateDir, `${HANDOVER_PREFIX}${randomBytes(12).toString("hex")}`);
    const fd = openSync(
      handover,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      writeSync(fd, token);
    } finally {
      closeSync(fd);
    }
    args.push("--token-file", handover);
  }
  try {
    return input.execve(process.execPath, [process.execPath, ...process.execArgv, ...args], env);
  } catch (error) {
    if (handover) rmSync(handover, { force: true });
    return `re-executing without the token failed (${(error as Error).message}); it stays in the bridge's initial environment`;
  }
}
