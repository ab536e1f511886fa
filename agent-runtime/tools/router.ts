// The tool router, registered by the approval gate bundle in Pi's process: overrides of Pi's seven built-in
// tools (Pi's own definitions: names, descriptions, parameters, prompt snippets; only `execute` changes) and a
// `user_bash` handler, all running through one backend. With CHAT_UI_AGENT_EXECUTOR_FD set, that backend is the
// tool executor (another principal); without it, Pi's own tools run here (dev and tests: isolation degraded,
// said so in the log). The gate's tool_call handler still decides before any of this runs.
import { createHash } from "node:crypto";
import path from "node:path";
import type {
  AgentToolResult,
  BashOperations,
  ExtensionAPI,
  ExtensionContext,
  ToolDefinition,
} from "@earendil-works/pi-coding-agent";
import { loadPiPackage, loadPiPaths, type PiPaths, runningPiDir } from "../executor/pi-modules.ts";
import {
  EXECUTOR_FD_ENV,
  ROUTED_TOOLS,
  type RoutedTool,
  type SESSION_ENV_NAMES,
  TOOL_HOME_ENV,
  type ToolOptions,
} from "../executor/protocol.ts";
import { readBounded } from "../gate/bounded-read.ts";
import { SecretFilter } from "../gate/result-filter.ts";
import type { Logger } from "../log.ts";
import { personApprovals } from "../person-approvals.ts";
import { readEffectivePolicy } from "../policy/policy-store.ts";
import { userBashRefusal } from "../policy/user-bash-rule.ts";
import { verifyVetted, vettedApprovals } from "../vetted-content.ts";
import { activeToolsWithoutOverrides } from "./active-tools.ts";
import { type ExecutorCallError, ExecutorClient } from "./executor-client.ts";
import { pathTool, TOOL_TABLE } from "./tool-table.ts";

type Update = ((partial: AgentToolResult<unknown>) => void) | undefined;

/** Pi's package, loaded when the gate is (a static import would run before the bundle's Node version guard). */
type PiApi = typeof import("@earendil-works/pi-coding-agent");

/** Pi's own definition of a built-in tool, with the options Pi's settings give it (the one tool table's factory). */
function piDefinition(api: PiApi, tool: RoutedTool, cwd: string, options?: ToolOptions): ToolDefinition {
  return TOOL_TABLE[tool].create(api, cwd, {
    ...(options?.commandPrefix !== undefined ? { commandPrefix: options.commandPrefix } : {}),
    ...(options ? { autoResizeImages: options.autoResizeImages } : {}),
    // Pi's own bash would add PI_SESSION_FILE, a path into Pi's private tree: never handed to the tools.
    ...(tool === "bash" ? { bash: { spawnHook: withoutSessionFile } } : {}),
  });
}

/** Pi's bash spawn context without the session file's path. */
function withoutSessionFile<T extends { env: NodeJS.ProcessEnv }>(context: T): T {
  const env = { ...context.env };
  delete env.PI_SESSION_FILE;
  return { ...context, env };
}

const CLIENTS = Symbol.for("chat-ui-agent.executor-clients");

/**
 * One client per channel fd for the whole process: Pi runs the extension factory again for every new runtime
 * (new_session, fork, switch_session, reload), and an fd can be opened as a socket only once.
 */
function sharedClient(fd: number, log: Logger): { client: ExecutorClient; created: boolean } {
  const store = globalThis as { [CLIENTS]?: Map<number, ExecutorClient> };
  store[CLIENTS] ??= new Map();
  const existing = store[CLIENTS].get(fd);
  if (existing) return { client: existing, created: false };
  const client = ExecutorClient.fromFd(fd, log);
  store[CLIENTS].set(fd, client);
  return { client, created: true };
}

/** Parses the executor fd from Pi's environment: a small non-negative integer, or undefined (no executor). */
export function executorFd(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env[EXECUTOR_FD_ENV];
  if (raw === undefined || raw === "") return undefined;
  if (!/^\d{1,4}$/.test(raw))
    throw new Error(`${EXECUTOR_FD_ENV} must be a file descriptor number, got "${raw.slice(0, 20)}"`);
  return Number(raw);
}

export interface ToolRouting {
  mode: "executor" | "local";
  client: ExecutorClient | undefined;
}

/** Registers the overrides, the user_bash handler and (routed) the context-file guard. */
export async function registerToolRouting(
  pi: ExtensionAPI,
  log: Logger,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ToolRouting> {
  const piDir = runningPiDir(import.meta.dirname);
  const api: PiApi = await loadPiPackage(piDir);
  let client: ExecutorClient | undefined;
  let created = false;
  let configError: string | undefined;
  try {
    const fd = executorFd(env);
    if (fd !== undefined) ({ client, created } = sharedClient(fd, log));
  } catch (error) {
    // Configured but unusable: route to nothing (every call fails closed), never to local execution.
    configError = error instanceof Error ? error.message : String(error);
  }
  const routed = client !== undefined || configError !== undefined;
  const toolHome = env[TOOL_HOME_ENV] || env.HOME || "/";
  const settings = new SettingsCache(api);
  const localSecrets = new SecretFilter();
  let piPaths: Promise<PiPaths> | undefined;

  if (client && created) {
    client.hello.then(
      (hello) => log.info({ executor: hello }, "tool calls run in the tool executor"),
      (error: Error) => log.error({ err: error.message }, "the tool executor did not answer hello"),
    );
  } else if (client) {
    // A new runtime (new_session, fork…) in the same process: the channel is the one already open.
  } else if (configError) {
    log.error({ err: configError }, "tool executor misconfigured: every tool call will fail");
  } else {
    log.warn(
      `isolation degraded: no ${EXECUTOR_FD_ENV}, so tools run inside Pi's process with Pi's privileges and environment`,
    );
  }

  const executeRouted = async (
    tool: RoutedTool,
    toolCallId: string,
    params: Record<string, unknown>,
    signal: AbortSignal | undefined,
    onUpdate: Update,
    ctx: ExtensionContext,
  ): Promise<AgentToolResult<unknown>> => {
    const vetted = tool === "bash" ? vettedApprovals.take(toolCallId) : [];
    // The person's yes to exactly this command, taken once: this call (only) runs with the network.
    const networkApproved = tool === "bash" && personApprovals.take(toolCallId, params.command);
    if (!client) throw new Error(`The tool executor is unavailable (${configError}). Nothing ran.`);
    const cwd = path.resolve(ctx.cwd);
    let sent = params;
    if (pathTool(tool) && typeof params.path === "string" && !path.isAbsolute(params.path)) {
      // The gate writes the absolute path it decided on into the input. A relative path
      // here means it did not: resolve it as the gate would (Pi's function, the tools' HOME), so both agree.
      piPaths ??= loadPiPaths(piDir);
      const resolver = await piPaths;
      sent = {
        ...params,
        path: resolver.resolvePath(params.path, cwd, {
          homeDir: toolHome,
          stripAtPrefix: true,
          normalizeUnicodeSpaces: true,
        }),
      };
    }
    try {
      const result = await client.call(
        {
          tool,
          params: sent,
          cwd,
          vetted: [...vetted],
          options: settings.toolOptions(ctx),
          sessionEnv: sessionEnvironment(ctx),
          ...(networkApproved ? { networkApproved: { toolCallId } } : {}),
        },
        signal,
        (partial) =>
          onUpdate?.({ content: partial.content, details: partial.details } as AgentToolResult<unknown>),
      );
      // The executor withheld credential values before they crossed: the audit says which sources, never values.
      if (result.withheld) logWithheld(log, tool, toolCallId, result.withheld);
      return { content: result.content, details: result.details } as AgentToolResult<unknown>;
    } catch (error) {
      // Pi turns a thrown error into the tool's error result: the executor's message is the local tool's own.
      throw new Error((error as ExecutorCallError).message ?? String(error));
    }
  };

  const executeLocal = async (
    tool: RoutedTool,
    toolCallId: string,
    params: Record<string, unknown>,
    signal: AbortSignal | undefined,
    onUpdate: Update,
    ctx: ExtensionContext,
  ): Promise<AgentToolResult<unknown>> => {
    if (tool === "bash") {
      const check = verifyVetted(vettedApprovals.take(toolCallId));
      if (!check.ok) {
        throw new Error(`Refused: ${check.path} was shown for approval, but ${check.reason}. Nothing ran.`);
      }
    }
    const definition = piDefinition(api, tool, ctx.cwd, settings.toolOptions(ctx));
    // No executor: the tools run with Pi's environment and privileges, so this process withholds the values.
    const scope = { home: toolHome, workspace: path.resolve(ctx.cwd), env };
    const result = await definition.execute(
      toolCallId,
      params as never,
      signal,
      (partial) => onUpdate?.(localSecrets.filter(partial, scope, { final: false }).result),
      ctx,
    );
    const { result: filtered, withheld } = localSecrets.filter(result, scope, { final: true });
    if (withheld) logWithheld(log, tool, toolCallId, withheld);
    return filtered;
  };

  for (const tool of ROUTED_TOOLS) {
    const base = piDefinition(api, tool, process.cwd());
    pi.registerTool({
      ...base,
      execute: (toolCallId, params, signal, onUpdate, ctx) =>
        (routed ? executeRouted : executeLocal)(
          tool,
          toolCallId,
          params as Record<string, unknown>,
          signal,
          onUpdate as Update,
          ctx,
        ),
    });
  }

  const executorBash: BashOperations = {
    exec: async (command, cwd, { onData, signal }) => {
      if (!client) throw new Error(`The tool executor is unavailable (${configError}). Nothing ran.`);
      try {
        const { exitCode } = await client.userBash(command, path.resolve(cwd), signal, onData);
        return { exitCode };
      } catch (error) {
        throw new Error((error as ExecutorCallError).message ?? String(error));
      }
    },
  };

  pi.on("user_bash", () => {
    // Never throw here: a throwing handler makes Pi run the command itself, in this process.
    try {
      const effective = readEffectivePolicy(env);
      const refused = userBashRefusal(effective.policy);
      if (refused) {
        log.info({ tool: "user_bash", decision: "block", policy: effective.policy }, "user bash refused");
        return { result: refusal(`${refused} (the policy comes from ${effective.source})`) };
      }
      if (routed) return { operations: executorBash };
      return undefined;
    } catch (error) {
      return {
        result: refusal(`the approval gate failed (${error instanceof Error ? error.message : error})`),
      };
    }
  });

  pi.on("session_start", (_event, ctx) => {
    // Registering overrides of grep/find/ls makes Pi activate them; keep the tool set Pi itself would have chosen.
    const active = pi.getActiveTools();
    const wanted = activeToolsWithoutOverrides(process.argv, active, settings.defaultTools(ctx));
    if (wanted.length !== active.length) pi.setActiveTools(wanted);
  });

  if (routed) {
    pi.on("before_agent_start", async (event) => {
      // The first prompt: the executor loads Pi's tools while the model thinks.
      client?.warm();
      const guarded = await guardContextFiles(
        api.getAgentDir(),
        event.systemPrompt,
        event.systemPromptOptions?.contextFiles,
        client,
        log,
      );
      return guarded === event.systemPrompt ? undefined : { systemPrompt: guarded };
    });
  }

  return { mode: routed ? "executor" : "local", client };
}

/** The audit line for a result whose credential values were withheld (sources, never values). */
function logWithheld(
  log: Logger,
  tool: string,
  toolCallId: string,
  withheld: { count: number; sources: string[]; degraded?: string | undefined },
) {
  log.warn(
    {
      tool,
      toolCallId,
      withheld: withheld.count,
      sources: withheld.sources,
      ...(withheld.degraded ? { secretFilterDegraded: withheld.degraded } : {}),
    },
    "tool result values withheld",
  );
}

function refusal(why: string) {
  return {
    output: `Refused: ${why}. Nothing ran.`,
    exitCode: 1,
    cancelled: false,
    truncated: false,
  };
}

/** What Pi's bash tool exposes about the session (exposeSessionEnvironment), computed where the session is. */
function sessionEnvironment(
  ctx: ExtensionContext,
): Partial<Record<(typeof SESSION_ENV_NAMES)[number], string>> {
  const env: Partial<Record<(typeof SESSION_ENV_NAMES)[number], string>> = {};
  try {
    // Not the session file: that is a path into Pi's private tree (issue 17 item 8).
    env.PI_SESSION_ID = ctx.sessionManager.getSessionId();
  } catch {
    // no session manager (tests): nothing to expose
  }
  if (ctx.model) {
    env.PI_PROVIDER = ctx.model.provider;
    env.PI_MODEL = ctx.model.id;
  }
  const level = (ctx as { thinkingLevel?: unknown }).thinkingLevel;
  if (typeof level === "string") env.PI_REASONING_LEVEL = level;
  return env;
}

/** A project settings file larger than this is not handed to Pi. */
const MAX_SETTINGS_BYTES = 1024 * 1024;

/** Pi's settings that shape its built-in tools (shell prefix, image resizing), read once per cwd. */
class SettingsCache {
  private readonly api: PiApi;

  constructor(api: PiApi) {
    this.api = api;
  }

  private readonly byCwd = new Map<
    string,
    { commandPrefix: string | undefined; autoResizeImages: boolean; defaultTools: string[] | undefined }
  >();

  private entry(ctx: ExtensionContext) {
    let entry = this.byCwd.get(ctx.cwd);
    if (!entry) {
      try {
        // Pi reads the project's settings with a blocking read: only a regular file the tools have not turned
        // into a FIFO or device since Pi started (checked non-blocking) is handed to it.
        const project = readBounded(path.join(ctx.cwd, ".pi", "settings.json"), MAX_SETTINGS_BYTES);
        const readable = project.ok || project.reason === "missing";
        const settings = this.api.SettingsManager.create(ctx.cwd, this.api.getAgentDir(), {
          projectTrusted: ctx.isProjectTrusted() && readable,
        });
        entry = {
          commandPrefix: settings.getShellCommandPrefix(),
          autoResizeImages: settings.getImageAutoResize(),
          defaultTools: settings.getDefaultTools(),
        };
      } catch {
        entry = { commandPrefix: undefined, autoResizeImages: true, defaultTools: undefined };
      }
      if (this.byCwd.size > 64) this.byCwd.clear();
      this.byCwd.set(ctx.cwd, entry);
    }
    return entry;
  }

  defaultTools(ctx: ExtensionContext): string[] | undefined {
    return this.entry(ctx).defaultTools;
  }

  toolOptions(ctx: ExtensionContext): ToolOptions {
    const entry = this.entry(ctx);
    return {
      ...(entry.commandPrefix !== undefined ? { commandPrefix: entry.commandPrefix } : {}),
      autoResizeImages: entry.autoResizeImages,
      modelInput: ctx.model ? [...ctx.model.input] : null,
    };
  }
}

const WITHHELD =
  "[withheld by chat-ui-agent: the agent's tools read different content at this path, so Pi did not use what it read with its own privileges]";

/**
 * Pi reads AGENTS.md/CLAUDE.md from the workspace with its own privileges; a link planted there by a tool could
 * make it read its own secrets (/proc/self/environ, its agent dir) into the system prompt. Any context file the
 * tools cannot read identically at the same path is withheld from the prompt. Pi's own agent dir is exempt
 * (private to Pi). If the executor cannot answer, every checked file is withheld (fail closed).
 */
export async function guardContextFiles(
  piAgentDir: string,
  systemPrompt: string,
  contextFiles: readonly { path: string; content: string }[] | undefined,
  client: ExecutorClient | undefined,
  log: Logger,
): Promise<string> {
  const agentDir = path.resolve(piAgentDir);
  const checked = (contextFiles ?? []).filter(
    (f) => f.content.length > 0 && path.dirname(path.resolve(f.path)) !== agentDir,
  );
  if (checked.length === 0) return systemPrompt;
  let verdicts: { path: string; same: boolean; reason: string | null }[];
  try {
    if (!client) throw new Error("no tool executor");
    verdicts = await client.contextCheck(
      checked.map((f) => ({
        path: f.path,
        sha256: createHash("sha256").update(f.content, "utf8").digest("hex"),
      })),
    );
  } catch (error) {
    verdicts = checked.map((f) => ({
      path: f.path,
      same: false,
      reason: `not checked (${(error as Error).message})`,
    }));
  }
  let prompt = systemPrompt;
  for (const file of checked) {
    const verdict = verdicts.find((v) => v.path === file.path);
    if (verdict?.same) continue;
    log.warn(
      { path: file.path, reason: verdict?.reason ?? "no verdict" },
      "context file withheld from the model",
    );
    // Pi's own block (system-prompt.js) first; any other occurrence of the content as well.
    const block = `<project_instructions path="${file.path}">\n${file.content}\n</project_instructions>`;
    const replacement = `<project_instructions path="${file.path}">\n${WITHHELD}\n</project_instructions>`;
    prompt = prompt.split(block).join(replacement).split(file.content).join(WITHHELD);
  }
  return prompt;
}
