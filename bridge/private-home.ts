// The bridge never loads code from a place the tools can write. Its bundle requires nothing but Node builtins
// (scripts/build.mjs settles the optional ones), and on top of that its module search path holds no folder a
// launcher pointed it at: Node computes that path ($HOME/.node_modules, $HOME/.node_libraries, NODE_PATH) once,
// at start, and under `--user 1000` a launcher's HOME is the tools' HOME. So the first thing the bridge does is
// take a private HOME (<state>/bridge/home), drop NODE_PATH (Pi inherits neither) and have Node compute the path
// again; a re-execution (which costs a second Node start, about 100 ms before Pi starts) is the fallback only.
import { lstatSync, mkdirSync } from "node:fs";
import Module from "node:module";
import path from "node:path";

/** Variables that make Node load code from where they point, whatever the bundle imports. */
export const MODULE_PATH_VARIABLES = ["NODE_PATH"] as const;

/** The HOME the bridge was started with, while it runs with its private one (read once by prestart). */
export const LAUNCHER_HOME_ENV = "CHAT_UI_AGENT_LAUNCHER_HOME";

/** The bridge's own HOME: <state>/bridge/home, private like the rest of <state>/bridge. */
export function privateHomeOf(bridgeStateDir: string): string {
  return path.join(bridgeStateDir, "home");
}

/** Creates `dir` 0700 if missing; says why it is not private (a link, another owner, open mode), if it is not. */
export function privateDirProblem(dir: string): string | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // lstat: a link here (planted before the bridge started) must not redirect anything elsewhere.
  const st = lstatSync(dir);
  if (!st.isDirectory() || (st.mode & 0o077) !== 0 || st.uid !== (process.geteuid?.() ?? st.uid)) {
    return `${dir} is not private (mode ${(st.mode & 0o777).toString(8)}, uid ${st.uid})`;
  }
  return undefined;
}

/**
 * Points `env` at the private HOME (created if missing) without NODE_PATH; returns why it could not. The
 * operator's Pi configuration keeps meaning what it meant with the launcher's HOME (Pi's own rule).
 */
export function withPrivateHome(env: NodeJS.ProcessEnv, bridgeStateDir: string): string | undefined {
  const home = privateHomeOf(bridgeStateDir);
  try {
    const problem = privateDirProblem(bridgeStateDir) ?? privateDirProblem(home);
    if (problem) return `${problem}: the bridge keeps the HOME it was started with`;
  } catch (error) {
    return `cannot make the bridge's HOME ${home} (${(error as NodeJS.ErrnoException).code ?? error}): it keeps the HOME it was started with`;
  }
  const launcherHome = env.HOME;
  // Kept across the bridge's own re-execution (which starts with the private HOME already set).
  if (launcherHome && launcherHome !== home) env[LAUNCHER_HOME_ENV] ??= launcherHome;
  const agentDir = env.PI_CODING_AGENT_DIR;
  if (launcherHome && launcherHome !== home) {
    if (agentDir === undefined) env.PI_CODING_AGENT_DIR = path.join(launcherHome, ".pi", "agent");
    else if (agentDir.startsWith("~/")) env.PI_CODING_AGENT_DIR = path.join(launcherHome, agentDir.slice(2));
  }
  env.HOME = home;
  for (const name of MODULE_PATH_VARIABLES) delete env[name];
  return undefined;
}

type ModuleInternals = { _initPaths?: () => void; globalPaths?: string[] };

/**
 * Has Node compute its global module folders again from the (now private) environment. Returns the folders it
 * searches now, or undefined when this Node cannot (then the caller re-executes).
 */
export function recomputeModulePaths(): string[] | undefined {
  const internals = Module as unknown as ModuleInternals;
  if (typeof internals._initPaths !== "function") return undefined;
  internals._initPaths();
  return internals.globalPaths ? [...internals.globalPaths] : undefined;
}

/** Whether every folder Node searches beyond node_modules is the private HOME's or Node's own prefix. */
export function modulePathsArePrivate(paths: readonly string[], home: string, execPath: string): boolean {
  const prefix = path.resolve(execPath, "..", "..", "lib", "node");
  return paths.every(
    (p) => p === prefix || p === path.join(home, ".node_modules") || p === path.join(home, ".node_libraries"),
  );
}
