// The approval gate, a Pi extension (bundled to /opt/chat-ui-agent/approval-gate.mjs). Before every tool call
// it rereads the policy file, decides allow/confirm/block, and asks the person through ctx.ui.confirm.
// Only an explicit yes allows a gated call; no, cancel, abort, no UI or any error blocks it. A path tool's
// input.path is rewritten to the absolute path decided on; a grep result loses lines from credential files.
import path from "node:path";
import type {
  ExtensionAPI,
  ExtensionContext,
  ToolCallEvent,
  ToolCallEventResult,
  ToolResultEvent,
} from "@earendil-works/pi-coding-agent";
import { confirmPrompt } from "./gate/confirm-prompt.ts";
import { decide, warmUp } from "./gate/decide.ts";
import { ruleSentence } from "./gate/decision-table.ts";
import { redactForLog } from "./gate/log-redact.ts";
import { ownDir, pathContextFromEnv } from "./gate/path-context.ts";
import { loadPiPaths } from "./gate/pi-paths.ts";
import {
  installSearchExcludes,
  type SearchExcludeState,
  searchExcludeProblem,
} from "./gate/search-excludes.ts";
import { filterGrepContent, filterGrepText } from "./gate/search-result-filter.ts";
import { loadBashParser } from "./gate/shell-parser.ts";
import { createLogger } from "./log.ts";
import { networkGrantFor, personApprovals } from "./person-approvals.ts";
import { egressGuardState } from "./policy/egress-guard.ts";
import { type PolicyMode, readEffectivePolicy } from "./policy/policy-store.ts";
import { registerToolRouting } from "./tools/router.ts";
import { pathTool } from "./tools/tool-table.ts";
import { vettedApprovals } from "./vetted-content.ts";

/** What a tool_result handler may return (Pi does not export this type). */
interface ToolResultChange {
  content?: ToolResultEvent["content"];
  details?: unknown;
  isError?: boolean;
}

type Answer = "yes" | "no" | "no-ui" | "aborted" | "error" | "not-asked";

/** Grep calls the person explicitly allowed to read credential files: their results are not filtered (once). */
class ApprovedSecretSearches {
  private readonly ids = new Set<string>();
  add(id: string): void {
    this.ids.add(id);
    if (this.ids.size > 256) this.ids.delete(this.ids.values().next().value as string);
  }
  take(id: string): boolean {
    return this.ids.delete(id);
  }
}

/** Tool calls one turn may make before the gate refuses more (a bound on the per-turn id set). */
const MAX_CALLS_PER_TURN = 1024;

interface GateState {
  /** Tool call ids seen in the current turn, and whether the gate recorded something under one. */
  turnIds: Map<string, { recorded: boolean }>;
  gateDirs: string[];
  search: SearchExcludeState;
  approvedSearches: ApprovedSecretSearches;
  log: ReturnType<typeof createLogger>;
}

export default async function approvalGate(pi: ExtensionAPI): Promise<void> {
  const log = createLogger("approval-gate");
  const bundleDir = ownDir(import.meta.url);
  // Searches skip credential files: RIPGREP_CONFIG_PATH in this process, inherited by Pi's grep.
  const search = installSearchExcludes(bundleDir);
  if (search.problem) log.error({ searchExcludes: search.problem }, "search excludes degraded");
  // The gate's own files are protected wherever the bundle is installed (the image: /opt/chat-ui-agent),
  // and so is a generated exclude config.
  const gateDirs = [bundleDir, ...(search.path ? [path.dirname(search.path)] : [])];
  const state: GateState = {
    turnIds: new Map(),
    gateDirs,
    search,
    approvedSearches: new ApprovedSecretSearches(),
    log,
  };
  // Start loading the parser and Pi's path functions now so the first call does not pay for them; a failure
  // surfaces per call (as a block).
  loadBashParser()
    .then((parser) => warmUp(parser))
    .catch(() => {});
  loadPiPaths().catch((error) => log.error({ err: errorText(error) }, "Pi's path functions did not load"));

  pi.on("tool_result", async (event: ToolResultEvent, ctx: ExtensionContext) =>
    filterResult(event, ctx, state),
  );

  // Tool call ids come from the model. Within one turn Pi decides every call before running any, and the gate
  // keeps per-id records (vetted script bytes, an approved credential search) for whoever runs the call: two
  // calls sharing an id where either has such a record would swap them, so the later one is refused.
  pi.on("turn_start", async () => {
    state.turnIds.clear();
    // An approval belongs to its turn's call: an id the model reuses later never finds one.
    personApprovals.clear();
  });

  pi.on("tool_call", async (event: ToolCallEvent, ctx: ExtensionContext): Promise<ToolCallEventResult> => {
    try {
      const earlier = state.turnIds.get(event.toolCallId);
      if (earlier?.recorded || (!earlier && state.turnIds.size >= MAX_CALLS_PER_TURN))
        return duplicateId(event, log);
      return await gateToolCall(event, ctx, state, earlier !== undefined);
    } catch (error) {
      log.error(
        {
          tool: event.toolName,
          toolCallId: event.toolCallId,
          decision: "block",
          answer: "error",
          err: errorText(error),
        },
        "gate error",
      );
      return {
        block: true,
        reason: `Blocked by the approval gate: internal error (${errorText(error)}). Nothing ran.`,
      };
    }
  });
  // Built-in tools and `!` commands run through the tool executor (another principal) when one is configured.
  await registerToolRouting(pi, log);
}

async function gateToolCall(
  event: ToolCallEvent,
  ctx: ExtensionContext,
  state: GateState,
  idSeenThisTurn: boolean,
): Promise<ToolCallEventResult> {
  const { log } = state;
  const effective = readEffectivePolicy(process.env); // every call: the file may have just changed
  const context = pathContextFromEnv(ctx.cwd, process.env, state.gateDirs);
  // Only bash needs the parser, only path tools Pi's path functions: a broken one blocks those calls alone.
  const parser = event.toolName === "bash" ? await loadBashParser().catch(() => undefined) : undefined;
  const paths = pathTool(event.toolName) ? await loadPiPaths().catch(() => null) : undefined;
  const shownInput = isRecord(event.input) ? { ...event.input } : event.input;
  const decision = decide({
    policy: effective.policy,
    toolName: event.toolName,
    input: event.input,
    context,
    parser,
    paths,
    search: state.search,
    env: process.env,
    egressGuard: egressGuardState(process.env),
  });
  // The tool opens exactly the path decided on (Pi lets a tool_call handler change the input it runs with).
  if (decision.path !== undefined && isRecord(event.input))
    (event.input as { path?: string }).path = decision.path;

  let answer: Answer = "not-asked";
  let allowed = decision.decision === "allow";
  if (decision.decision === "confirm") {
    answer = await ask(event, shownInput, ctx, decision, context);
    allowed = answer === "yes";
  }
  const approvedSearch = allowed && event.toolName === "grep" && decision.kinds.includes("reads-secret");
  const records = allowed && (approvedSearch || (decision.scripts?.length ?? 0) > 0);
  if (records && idSeenThisTurn) return duplicateId(event, log);
  // The person's yes to a bash call lets that one call run with the network (person-approvals.ts). Bound to the
  // command and taken once: two calls sharing an id can never both use it, nor one run another's command with it.
  const personApproved =
    allowed &&
    answer === "yes" &&
    event.toolName === "bash" &&
    (decision.scripts?.length ?? 0) === 0 &&
    networkGrantFor(decision.kinds);
  state.turnIds.set(event.toolCallId, {
    recorded: records || (state.turnIds.get(event.toolCallId)?.recorded ?? false),
  });
  if (approvedSearch) state.approvedSearches.add(event.toolCallId);
  if (personApproved && isRecord(event.input) && typeof event.input.command === "string")
    personApprovals.record(event.toolCallId, event.input.command);
  // What the decision read (and, if asked, showed) is what this call may run: whoever executes it verifies these
  // exact bytes right before the run (vetted-content.ts), so a script rewritten in between does not run.
  if (allowed && decision.scripts?.length)
    vettedApprovals.record(
      event.toolCallId,
      decision.scripts.map((script) => script.file),
    );
  const searchProblem =
    event.toolName === "grep" ? searchExcludeProblem(state.search, process.env) : undefined;
  log.info(
    {
      tool: event.toolName,
      toolCallId: event.toolCallId,
      decision: decision.decision,
      allowed,
      effects: decision.kinds,
      rule: decision.deciding
        ? `${effective.policy} × ${decision.deciding.effect} → ${decision.deciding.decision}`
        : null,
      guard: decision.guard,
      ...(decision.unmodeled ? { unmodeled: decision.unmodeled } : {}),
      classes: decision.classes,
      reasons: decision.reasons.map(redactForLog),
      policy: effective.policy,
      policySource: effective.source,
      ...(effective.fileProblem ? { policyFileProblem: effective.fileProblem } : {}),
      ...(decision.path !== undefined ? { path: decision.path } : {}),
      ...(decision.scripts?.length
        ? {
            scripts: decision.scripts.map((s) => ({
              path: s.file.path,
              sha256: s.file.sha256,
              bytes: s.file.bytes,
            })),
          }
        : {}),
      ...(searchProblem ? { searchExcludes: searchProblem } : {}),
      answer,
      // The person's yes gives this call the network (person-approvals.ts NETWORK_GRANT).
      ...(personApproved ? { networkGrant: true } : {}),
    },
    "tool call decision",
  );
  if (allowed) return {};
  return { block: true, reason: blockReason(decision, answer, effective.policy, effective.source) };
}

async function ask(
  event: ToolCallEvent,
  shownInput: unknown,
  ctx: ExtensionContext,
  decision: ReturnType<typeof decide>,
  context: ReturnType<typeof pathContextFromEnv>,
): Promise<Answer> {
  if (!ctx.hasUI) return "no-ui";
  if (ctx.signal?.aborted) return "aborted";
  const prompt = confirmPrompt(event.toolName, shownInput, decision, context);
  try {
    // No timeout option: a dialog must never resolve on its own. The signal only dismisses it (→ false).
    const confirmed = await ctx.ui.confirm(
      prompt.title,
      prompt.message,
      ctx.signal ? { signal: ctx.signal } : undefined,
    );
    if (confirmed === true) return ctx.signal?.aborted ? "aborted" : "yes";
    return ctx.signal?.aborted ? "aborted" : "no";
  } catch {
    return "error";
  }
}

function blockReason(
  decision: ReturnType<typeof decide>,
  answer: Answer,
  policy: string,
  source: string,
): string {
  const rule = decision.deciding ? `${ruleSentence(policy as PolicyMode, decision.deciding)}. ` : "";
  const why = `${rule}${decision.classes.join(", ")}: ${decision.reasons.join("; ")}`;
  const head = {
    yes: "Blocked by the approval gate",
    "not-asked": "Blocked by the approval gate",
    no: "The person declined this tool call",
    "no-ui": "Blocked by the approval gate: it needs a person's approval and no UI is available to ask",
    aborted: "Blocked by the approval gate: the request was aborted before an answer",
    error: "Blocked by the approval gate: asking for approval failed",
  }[answer];
  return `${head} (policy ${policy} from ${source}). ${why}. Nothing ran.`;
}

function duplicateId(event: ToolCallEvent, log: ReturnType<typeof createLogger>): ToolCallEventResult {
  log.warn(
    { tool: event.toolName, toolCallId: event.toolCallId, decision: "block" },
    "duplicate tool call id",
  );
  return {
    block: true,
    reason: `Blocked by the approval gate: another tool call in this turn has the id ${JSON.stringify(event.toolCallId)}, and one of them needs a record under it. Nothing ran.`,
  };
}

/**
 * Grep results lose every line from a credential file unless the person allowed this very search to read
 * them. Never throws: Pi passes a result through unchanged when a tool_result handler throws, so an error
 * here replaces the whole result.
 */
async function filterResult(
  event: ToolResultEvent,
  ctx: ExtensionContext,
  state: GateState,
): Promise<ToolResultChange | undefined> {
  if (event.toolName !== "grep") return undefined;
  try {
    if (state.approvedSearches.take(event.toolCallId)) return undefined;
    const context = pathContextFromEnv(ctx.cwd, process.env, state.gateDirs);
    const input = isRecord(event.input) ? event.input : {};
    const root = typeof input.path === "string" && path.isAbsolute(input.path) ? input.path : context.cwd;
    const { content, withheld } = filterGrepContent(event.content, root, context);
    if (withheld === 0) return undefined;
    state.log.warn({ tool: "grep", toolCallId: event.toolCallId, withheld }, "grep result lines withheld");
    // The truncation details carry the whole output too (clients render them): filter that copy as well.
    const details = (event as { details?: unknown }).details;
    const truncation = isRecord(details) && isRecord(details.truncation) ? details.truncation : undefined;
    return {
      content: content as ToolResultEvent["content"],
      ...(truncation && typeof truncation.content === "string"
        ? {
            details: {
              ...(details as Record<string, unknown>),
              truncation: { ...truncation, content: filterGrepText(truncation.content, root, context).text },
            },
          }
        : {}),
    };
  } catch (error) {
    state.log.error(
      { tool: "grep", toolCallId: event.toolCallId, err: errorText(error) },
      "grep result filter failed",
    );
    return {
      content: [
        { type: "text", text: "The approval gate could not check this search result, so it was withheld." },
      ],
      isError: true,
    };
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
