// Runs one routed tool call with Pi's own tool implementation, after the executor's own two checks: the path
// the gate decided on is the one Pi's tool will open (resolved again here, as the tool resolves it, with the
// tools' HOME), and vetted files still hold the bytes the person approved (bash).
import path from "node:path";
import type { AgentToolResult, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { SecretFilter } from "../gate/result-filter.ts";
import { pathTool, TOOL_TABLE } from "../tools/tool-table.ts";
import { verifyVetted } from "../vetted-content.ts";
import type { PiChildProcess, PiToolFactories, PiToolPaths } from "./pi-modules.ts";
import type { CallErrorCode, ToolCallRequest, ToolResultShape } from "./protocol.ts";
import { createShellOperations, type ShellLaunch, type ShellSessions } from "./shell-ops.ts";

export class CallError extends Error {
  readonly code: CallErrorCode;

  constructor(code: CallErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

export interface ToolRunnerDeps {
  factories: PiToolFactories;
  toolPaths: PiToolPaths;
  childProcess: PiChildProcess;
  shell: ShellLaunch;
  sessions: ShellSessions;
  /** The tools' environment (allow-listed by the bridge), plus the ripgrep config. */
  toolEnv: Record<string, string>;
}

/** Why a call's path may not run here, or undefined when Pi's tool will open exactly that path. */
export function pathRefusal(request: ToolCallRequest, toolPaths: PiToolPaths): string | undefined {
  const spec = pathTool(request.tool);
  if (!spec) return undefined;
  const raw = request.params.path;
  if (raw === undefined && spec.optional) return undefined;
  if (typeof raw !== "string") return "the path parameter is not a string";
  if (!path.isAbsolute(raw)) {
    return `the path "${raw.slice(0, 200)}" is not the absolute path the approval gate decided on`;
  }
  let resolved: string;
  try {
    resolved =
      request.tool === "read"
        ? toolPaths.resolveReadPath(raw, request.cwd)
        : toolPaths.resolveToCwd(raw, request.cwd);
  } catch (error) {
    return `the path cannot be resolved (${(error as Error).message})`;
  }
  if (resolved !== raw) {
    return `the path "${raw.slice(0, 200)}" resolves to "${resolved.slice(0, 200)}" for the tools, not to the path the approval gate decided on`;
  }
  return undefined;
}

type Update = (partial: ToolResultShape) => void;

export class ToolRunner {
  private readonly load: () => Promise<ToolRunnerDeps>;
  /** What the tools' credential files and variables hold, withheld from every result (result-filter.ts). */
  private readonly secrets = new SecretFilter();

  /** `load` gives the dependencies (Pi's modules load on first use). */
  constructor(load: () => Promise<ToolRunnerDeps>) {
    this.load = load;
  }

  async run(request: ToolCallRequest, signal: AbortSignal, onUpdate: Update): Promise<ToolResultShape> {
    let deps: ToolRunnerDeps;
    try {
      deps = await this.load();
    } catch (error) {
      throw new CallError(
        "internal",
        `the tool executor cannot load Pi's tools: ${(error as Error).message}`,
      );
    }
    const refusal = pathRefusal(request, deps.toolPaths);
    if (refusal) throw new CallError("refused", `Refused by the tool executor: ${refusal}. Nothing ran.`);
    if (request.tool === "bash") {
      if (typeof request.params.command !== "string") {
        throw new CallError("invalid_request", "bash needs a string command");
      }
      // Immediately before the run: the person approved these bytes, and only these.
      const vetted = verifyVetted(request.vetted);
      if (!vetted.ok) {
        throw new CallError(
          "refused",
          `Refused by the tool executor: ${vetted.path} was shown for approval, but ${vetted.reason}. Nothing ran.`,
        );
      }
    }
    const tool = this.definition(request, deps);
    const ctx = {
      model: request.options.modelInput ? { input: request.options.modelInput } : undefined,
    } as unknown as ExtensionContext;
    // Credential values the tools could print are withheld here, before anything reaches Pi (issue 19, point 4).
    const scope = { home: deps.toolEnv.HOME ?? "/", workspace: request.cwd, env: deps.toolEnv };
    const filtered = (shape: ToolResultShape, final: boolean): ToolResultShape => {
      const { result, withheld } = this.secrets.filter(shape, scope, { final });
      return withheld ? { ...result, withheld } : result;
    };
    let result: AgentToolResult<unknown>;
    try {
      result = await tool.execute(
        request.id,
        request.params as never,
        signal,
        (partial: AgentToolResult<unknown>) => onUpdate(filtered(shapeOf(partial), false)),
        ctx,
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new CallError(signal.aborted ? "aborted" : "tool_error", message);
    }
    return filtered(shapeOf(result), true);
  }

  /** Pi's own definition of the tool (the one tool table's factory), with Pi's settings and our shell backend. */
  private definition(request: ToolCallRequest, deps: ToolRunnerDeps) {
    const { factories, toolEnv } = deps;
    const { cwd, options } = request;
    const env = { ...toolEnv, ...request.sessionEnv };
    return TOOL_TABLE[request.tool].create(factories, cwd, {
      autoResizeImages: options.autoResizeImages,
      ...(options.commandPrefix !== undefined ? { commandPrefix: options.commandPrefix } : {}),
      ...(request.tool === "bash"
        ? {
            bash: {
              operations: createShellOperations(deps.shell, deps.childProcess, deps.sessions),
              // Pi's session variables come from the request (the executor has no session); the rest of the
              // environment is the tools' allow-list, never this process's own.
              exposeSessionEnvironment: false,
              spawnHook: (context) => ({ ...context, env }),
            },
          }
        : {}),
    });
  }
}

function shapeOf(result: AgentToolResult<unknown>): ToolResultShape {
  return {
    content: result.content as ToolResultShape["content"],
    ...(result.details !== undefined ? { details: result.details } : {}),
  };
}
