// The bridge token never stays in an environment a tool could read. `delete process.env.X` does not change
// /proc/<pid>/environ (the kernel shows the environment the process was started with), so a bridge started
// with the token in its environment re-executes itself (process.execve, same pid) without it, handing the
// token over through a file in its private state dir, which the new image reads and unlinks (--token-file).
// The same re-exec gives the bridge a private HOME and no NODE_PATH: Node fixes its module search path
// ($HOME/.node_modules, $HOME/.node_libraries, NODE_PATH) when it starts, and under `--user 1000` the HOME a
// launcher passes is the tools' HOME.
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

/** Variables that make Node load code from where they point, whatever the bundle imports. */
export const MODULE_PATH_VARIABLES = ["NODE_PATH"] as const;

/** The bridge's own HOME: <state>/bridge/home, private like the rest of <state>/bridge. */
export function privateHomeOf(bridgeStateDir: string): string {
  return path.join(bridgeStateDir, "home");
}

/** True when the environment already is what the bridge must run with (nothing to re-execute for). */
export function needsReexec(env: NodeJS.ProcessEnv, privateHome: string | undefined): boolean {
  if (bridgeSecretNames(env).length > 0) return true;
  if (privateHome === undefined) return false;
  return env.HOME !== privateHome || MODULE_PATH_VARIABLES.some((name) => env[name] !== undefined);
}

/**
 * Re-executes the bridge without its secrets (and, given `privateHome`, with that HOME and no module path
 * variables) and never returns. Returns the reason it did not: nothing to do → undefined; otherwise why the
 * environment stays as it was (the secret in the initial environment, or the launcher's HOME).
 */
export function reexecWithoutSecrets(input: {
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  /** <state>/bridge: created 0700 if missing. */
  bridgeStateDir: string;
  /** Whether the bridge needs the token (network mode) and has no --token-file of its own. */
  handOverToken: boolean;
  execve: Reexec | undefined;
  /** The bridge's HOME (privateHomeOf(bridgeStateDir)); omitted: HOME and NODE_PATH are left as they are. */
  privateHome?: string;
}): string | undefined {
  if (!needsReexec(input.env, input.privateHome)) return undefined;
  const secrets = bridgeSecretNames(input.env);
  if (!input.execve) {
    return secrets.length > 0
      ? "this Node has no process.execve, so the token stays in the bridge's initial environment (/proc/<pid>/environ)"
      : "this Node has no process.execve, so the bridge keeps the HOME and NODE_PATH it was started with";
  }
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(input.env)) if (!secrets.includes(name)) env[name] = value;
  const homeProblem = input.privateHome && withPrivateHome(env, input.bridgeStateDir, input.privateHome);
  // Without a private HOME there is still the token to take out of the environment; otherwise nothing to do.
  if (homeProblem && secrets.length === 0) return homeProblem;
  const args = [...input.argv];
  let handover: string | undefined;
  const token = input.env[TOKEN_ENV];
  if (input.handOverToken && token) {
    const problem = privateDirProblem(input.bridgeStateDir);
    if (problem) return `${problem}, so the token was not handed over through it`;
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
    return `re-executing the bridge failed (${(error as Error).message}): ${
      secrets.length > 0
        ? "the token stays in its initial environment"
        : "it keeps the HOME it was started with"
    }`;
  }
}

/**
 * Points `env` at the private HOME (created if missing) without NODE_PATH; returns why it could not. The
 * operator's Pi configuration keeps meaning what it meant with the launcher's HOME (Pi's own rule).
 */
function withPrivateHome(env: NodeJS.ProcessEnv, bridgeStateDir: string, home: string): string | undefined {
  try {
    const problem = privateDirProblem(bridgeStateDir) ?? privateDirProblem(home);
    if (problem) return `${problem}: the bridge keeps the HOME it was started with`;
  } catch (error) {
    return `cannot make the bridge's HOME ${home} (${(error as NodeJS.ErrnoException).code ?? error}): it keeps the HOME it was started with`;
  }
  const launcherHome = env.HOME;
  const agentDir = env.PI_CODING_AGENT_DIR;
  if (launcherHome && agentDir === undefined)
    env.PI_CODING_AGENT_DIR = path.join(launcherHome, ".pi", "agent");
  else if (launcherHome && agentDir?.startsWith("~/"))
    env.PI_CODING_AGENT_DIR = path.join(launcherHome, agentDir.slice(2));
  env.HOME = home;
  for (const name of MODULE_PATH_VARIABLES) delete env[name];
  return undefined;
}

/** Creates `dir` 0700 if missing; says why it is not private (a link, another owner, open mode), if it is not. */
function privateDirProblem(dir: string): string | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // lstat: a link here (planted before the bridge started) must not redirect anything elsewhere.
  const st = lstatSync(dir);
  if (!st.isDirectory() || (st.mode & 0o077) !== 0 || st.uid !== (process.geteuid?.() ?? st.uid)) {
    return `${dir} is not private (mode ${(st.mode & 0o777).toString(8)}, uid ${st.uid})`;
  }
  return undefined;
}
