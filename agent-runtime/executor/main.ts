// tool-executor.mjs: runs the agent's tool calls as the tools' principal (uid `agent`, a Landlock domain, an
// allow-listed environment), with Pi's own tool implementations. The bridge starts it; its only channel is
// the socket on fd 3 (Pi holds the other end). When that channel closes, it ends every tool it started and exits.
import { Socket } from "node:net";
import path from "node:path";
import { installSearchExcludes } from "../gate/search-excludes.ts";
import { createLogger } from "../log.ts";
import { killTree } from "../process-tree.ts";
import { loadPiChildProcess, loadPiToolFactories, loadPiToolPaths } from "./pi-modules.ts";
import { TOOL_SHELL_HELPER_ENV, TOOL_SHELL_NEST_ENV } from "./protocol.ts";
import { serveExecutor } from "./server.ts";
import { ShellSessions, toolShellLaunch } from "./shell-ops.ts";
import { ToolRunner, type ToolRunnerDeps } from "./tool-runner.ts";

/** The channel's fd in this process (the bridge puts the socket at stdio[3]). */
export const EXECUTOR_CHANNEL_FD = 3;

const log = createLogger("tool-executor");
const bundleDir = import.meta.dirname;

// The tools' environment is what the bridge gave this process (allow-listed), minus our own settings.
const helper = process.env[TOOL_SHELL_HELPER_ENV] || undefined;
const nest = process.env[TOOL_SHELL_NEST_ENV] === "1";
delete process.env[TOOL_SHELL_HELPER_ENV];
delete process.env[TOOL_SHELL_NEST_ENV];
const toolEnv: Record<string, string> = {};
for (const [name, value] of Object.entries(process.env)) if (value !== undefined) toolEnv[name] = value;
// rg runs in this process for Pi's grep (and in tool shells): it skips credential files. The same config, found
// and checked the same way as in the gate (agent-runtime/gate/search-excludes.ts).
const searchExcludes = installSearchExcludes(bundleDir, process.env);
const ripgrepConfig = searchExcludes.path;
if (ripgrepConfig) toolEnv.RIPGREP_CONFIG_PATH = ripgrepConfig;
if (searchExcludes.problem) log.error({ searchExcludes: searchExcludes.problem }, "search excludes degraded");
// Pi's tool code looks for rg/fd in <agent dir>/bin before PATH and may download them there. Point it at a
// directory nobody here can create (beside this bundle, root-owned in the image), and never download.
process.env.PI_CODING_AGENT_DIR = path.join(bundleDir, "executor-has-no-agent-dir");
process.env.PI_OFFLINE = "1";

function main(): void {
  const shell = toolShellLaunch(helper, nest);
  const sessions = new ShellSessions();
  // Pi's tool modules load on the first request, not at start: the executor starts beside Pi, and on a small
  // machine that CPU belongs to Pi's own boot (the router's first request comes with the first prompt).
  let loading: Promise<ToolRunnerDeps> | undefined;
  const deps = () => {
    loading ??= Promise.all([
      loadPiToolFactories(bundleDir),
      loadPiToolPaths(bundleDir),
      loadPiChildProcess(bundleDir),
    ]).then(([factories, toolPaths, childProcess]) => ({
      factories,
      toolPaths,
      childProcess,
      shell,
      sessions,
      toolEnv,
    }));
    return loading;
  };
  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    const killed = sessions.killAll() + killTree({ childrenOf: [process.pid] });
    log.info({ reason, killed }, "tool executor stopping");
    process.exit(0);
  };
  const socket = new Socket({ fd: EXECUTOR_CHANNEL_FD, readable: true, writable: true });
  serveExecutor(socket, {
    runner: new ToolRunner(deps),
    deps,
    hello: {
      pid: process.pid,
      uid: process.getuid?.() ?? -1,
      gid: process.getgid?.() ?? -1,
      home: toolEnv.HOME ?? "",
      shell: { file: shell.file, closesInheritedFds: shell.closesInheritedFds, nested: shell.nested },
      ripgrepConfig: ripgrepConfig ?? null,
    },
    log,
    onClose: () => stop("channel closed"),
  });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, () => stop(signal));
  log.info(
    {
      uid: process.getuid?.(),
      shell: shell.file,
      closesInheritedFds: shell.closesInheritedFds,
      ripgrepConfig,
    },
    "tool executor ready",
  );
}

try {
  main();
} catch (error) {
  log.fatal({ err: error instanceof Error ? error.message : String(error) }, "tool executor failed to start");
  process.exit(1);
}
