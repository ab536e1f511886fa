// The one table of Pi's built-in tools: name, the path field and whether it is optional, whether the tool reads,
// writes or runs a shell, and how Pi's own definition is made. The gate's decide(), the router in Pi's process and
// the tool executor all read this table (issue 21 item 3); the channel's schema takes its names from here.
import type { ToolDefinition } from "@earendil-works/pi-coding-agent";
import type { PiToolFactories } from "../executor/pi-modules.ts";

export const TOOL_NAMES = ["read", "write", "edit", "bash", "grep", "find", "ls"] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** Pi's bash tool options beyond the settings' command prefix (the executor's shell backend and environment). */
export type BashExtras = Omit<
  NonNullable<Parameters<PiToolFactories["createBashToolDefinition"]>[1]>,
  "commandPrefix"
>;

/** Options Pi's settings give its built-in tools (the channel carries the same, as ToolOptions). */
export interface ToolBuildOptions {
  /** settings.shellCommandPrefix (bash). */
  commandPrefix?: string | undefined;
  /** settings.images.autoResize (read); Pi's own default when absent. */
  autoResizeImages?: boolean | undefined;
  /** bash only: the executor's operations, environment and session variables. */
  bash?: BashExtras;
}

export interface BuiltInTool {
  name: ToolName;
  /**
   * The `path` parameter: the gate resolves it with Pi's own functions and writes the absolute, canonical path it
   * decided on back into it; the executor refuses a call whose path would open anything else. `optional`: Pi
   * defaults it to "." (the call's cwd).
   */
  path?: { optional: boolean };
  /** What the tool does with that path (bash: runs a shell). */
  access: "read" | "write" | "shell";
  /** Pi's own definition of the tool, as Pi would build it with these options. */
  create(factories: PiToolFactories, cwd: string, options?: ToolBuildOptions): ToolDefinition;
}

const definition = (value: unknown) => value as ToolDefinition;

export const TOOL_TABLE: Readonly<Record<ToolName, BuiltInTool>> = {
  read: {
    name: "read",
    path: { optional: false },
    access: "read",
    create: (f, cwd, options) =>
      definition(
        f.createReadToolDefinition(
          cwd,
          options?.autoResizeImages !== undefined
            ? { autoResizeImages: options.autoResizeImages }
            : undefined,
        ),
      ),
  },
  write: {
    name: "write",
    path: { optional: false },
    access: "write",
    create: (f, cwd) => definition(f.createWriteToolDefinition(cwd)),
  },
  edit: {
    name: "edit",
    path: { optional: false },
    access: "write",
    create: (f, cwd) => definition(f.createEditToolDefinition(cwd)),
  },
  bash: {
    name: "bash",
    access: "shell",
    create: (f, cwd, options) => {
      const prefix = options?.commandPrefix !== undefined ? { commandPrefix: options.commandPrefix } : {};
      const all = { ...options?.bash, ...prefix };
      return definition(f.createBashToolDefinition(cwd, Object.keys(all).length > 0 ? all : undefined));
    },
  },
  grep: {
    name: "grep",
    path: { optional: true },
    access: "read",
    create: (f, cwd) => definition(f.createGrepToolDefinition(cwd)),
  },
  find: {
    name: "find",
    path: { optional: true },
    access: "read",
    create: (f, cwd) => definition(f.createFindToolDefinition(cwd)),
  },
  ls: {
    name: "ls",
    path: { optional: true },
    access: "read",
    create: (f, cwd) => definition(f.createLsToolDefinition(cwd)),
  },
};

/** The built-in tool of that name, or undefined (an extension's or MCP tool). */
export function builtInTool(name: string): BuiltInTool | undefined {
  return Object.hasOwn(TOOL_TABLE, name) ? TOOL_TABLE[name as ToolName] : undefined;
}

/** The built-in tools that take a path, with whether it is optional. */
export function pathTool(name: string): { optional: boolean } | undefined {
  return builtInTool(name)?.path;
}
