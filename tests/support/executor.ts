// The BUILT tool executor (build/opt/chat-ui-agent/tool-executor.mjs) as its own process, spoken to through the
// same client Pi's router uses. As root, it can run as another uid and inside the Landlock domain the bridge
// would give it, started through the same helper.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import type { Socket } from "node:net";
import path from "node:path";
import type { TestContext } from "node:test";
import { TOOL_SHELL_HELPER_ENV, TOOL_SHELL_NEST_ENV } from "../../agent-runtime/executor/protocol.ts";
import { createLogger } from "../../agent-runtime/log.ts";
import {
  findLandlockHelper,
  landlockArgs,
  probeLandlock,
  toolsDomain,
} from "../../agent-runtime/sandbox/landlock.ts";
import { ExecutorClient } from "../../agent-runtime/tools/executor-client.ts";
import { root } from "./bridge.ts";

export const bundleDir = path.join(root, "build", "opt", "chat-ui-agent");
export const executorBundle = path.join(bundleDir, "tool-executor.mjs");
export const landlockHelper = findLandlockHelper(bundleDir);
export const landlockAbi = probeLandlock(landlockHelper).abi;

export interface StartedExecutor {
  client: ExecutorClient;
  child: ChildProcess;
  pid: number;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface ExecutorOptions {
  workspace: string;
  home: string;
  uid?: number;
  gid?: number;
  /** Apply the tools' Landlock domain (through the helper), as the bridge does. */
  landlock?: boolean;
  /** Start tool shells through the fd-closing helper (default true). */
  shellHelper?: boolean;
  /** Nest a Landlock domain per tool shell (default: when `landlock`), as the bridge asks. */
  nest?: boolean;
  env?: Record<string, string>;
  /** Also hand the executor an open fd at this number (as a parent like sbx-server might, by accident). */
  strayFd?: number;
}

export function startExecutor(t: TestContext, options: ExecutorOptions): StartedExecutor {
  if (!existsSync(executorBundle))
    throw new Error(`${executorBundle} is missing: run \`node scripts/build.mjs\` first`);
  if ((options.landlock || options.shellHelper !== false) && !landlockHelper) {
    throw new Error("the Landlock helper was not built (gcc missing?): it is required for these tests");
  }
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: options.home,
    LANG: "C.UTF-8",
    ...(options.shellHelper !== false && landlockHelper ? { [TOOL_SHELL_HELPER_ENV]: landlockHelper } : {}),
    ...((options.nest ?? options.landlock) ? { [TOOL_SHELL_NEST_ENV]: "1" } : {}),
    ...options.env,
  };
  const domain = toolsDomain({
    workspace: options.workspace,
    toolHome: options.home,
    runtime: [bundleDir, process.execPath, path.join(root, "node_modules")],
  });
  const [file, args] =
    options.landlock && landlockHelper
      ? [landlockHelper, [...landlockArgs(domain, landlockAbi), "--", process.execPath, executorBundle]]
      : [process.execPath, [executorBundle]];
  const child = spawn(file, args, {
    cwd: options.workspace,
    env,
    stdio: [
      "ignore",
      "ignore",
      "pipe",
      "pipe",
      ...(options.strayFd !== undefined
        ? Array.from({ length: options.strayFd - 3 }, (_, i) =>
            i === options.strayFd! - 4 ? "pipe" : "ignore",
          )
        : []),
    ] as ("ignore" | "pipe")[],
    detached: true,
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid ?? options.uid } : {}),
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("close", (code, signal) => resolve({ code, signal }));
  });
  const client = new ExecutorClient(child.stdio[3] as Socket, createLogger("test-router", "silent"));
  client.warm();
  t.after(async () => {
    try {
      process.kill(-(child.pid ?? 0), "SIGKILL");
    } catch {}
    await exited;
  });
  return { client, child, pid: child.pid ?? -1, stderr: () => stderr, exited };
}

export const callOptions = { autoResizeImages: true, modelInput: ["text", "image"] };

/** A tool call request body (no id/type) with defaults. */
export function call(
  tool: string,
  params: Record<string, unknown>,
  cwd: string,
  extra: Record<string, unknown> = {},
) {
  return {
    tool,
    params,
    cwd,
    vetted: [],
    options: callOptions,
    sessionEnv: {},
    ...extra,
  } as Parameters<ExecutorClient["call"]>[0];
}
