// The approval gate, a Pi extension (bundled to /opt/chat-ui-agent/approval-gate.mjs). Before every tool call
// it rereads the policy file, decides allow/confirm/block, and asks the person: a `select` of "Allow once / Allow
// for this session / Deny" when a session grant may cover the call (session-grants.ts), a yes/no `confirm` for a
// boundary action. Only an explicit allow runs a gated call; no, cancel, abort, a timeout, no UI or any error
// blocks it. A session answer asks the bridge for a grant of the command's shape; a grant the bridge wrote for
// this Pi session lets the same shape run unasked, as long as the call is still grantable. A path tool's
// input.path is rewritten to the absolute path decided on; a grep result loses lines from credential files.
import path from "node:path";
import type {
  ExtensionAPI,
  ExtensionContext,
  ToolCallEvent,
  ToolCallEventResult,
  ToolResultEvent,
} from "@earendil-works/pi-coding-agent";
import { type CommandShape, commandShape } from "./gate/command-shape.ts";
import { confirmPrompt } from "./gate/confirm-prompt.ts";
import { decide, warmUp } from "./gate/decide.ts";
import { ruleSentence } from "./gate/decision-table.ts";
import { watchDialogIds, withDialogId } from "./gate/dialog-id.ts";
import { redactForLog } from "./gate/log-redact.ts";
import { ownDir, pathContextFromEnv } from "./gate/path-context.ts";
import { loadPiPaths } from "./gate/pi-paths.ts";
import {
  installSearchExcludes,
  type SearchExcludeState,
  searchExcludeProblem,
} from "./gate/search-excludes.ts";
import { filterGrepContent, filterGrepText } from "./gate/search-result-filter.ts";
import { grantApplies, lookUpCommandGrant } from "./gate/session-grants.ts";
import { loadBashParser } from "./gate/shell-parser.ts";
import { createLogger } from "./log.ts";
import { networkGrantFor, personApprovals } from "./person-approvals.ts";
import { approvalTimeout, describeTimeout } from "./policy/approval-timeout.ts";
import { egressGuardState } from "./policy/egress-guard.ts";
import { APPROVAL_CHOICES, GRANT_REQUEST_STATUS_KEY, type GrantRequest } from "./policy/grants.ts";
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

/** "session": allowed, and a grant asked for; "granted": a session grant let it run unasked. */
type Answer =
  | "yes"
  | "session"
  | "granted"
  | "no"
  | "timed-out"
  | "no-ui"
  | "aborted"
  | "error"
  | "not-asked";
const ALLOWING: ReadonlySet<Answer> = new Set(["yes", "session", "granted"]);

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
  /** The gate can learn Pi's dialog ids (dialog-id.ts): without them no dialog offers a session grant. */
  dialogIds: boolean;
  /** The operator's approval timeout (approval-timeout.ts); undefined: dialogs wait for an answer. */
  timeoutMs: number | undefined;
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
  const timeout = approvalTimeout(process.env);
  if (timeout.problem) log.error({ approvalTimeout: timeout.problem }, "approval timeout setting ignored");
  const dialogIds = watchDialogIds();
  if (!dialogIds) log.error({}, "Pi's dialog ids cannot be learned: no dialog offers a session grant");
  const state: GateState = {
    turnIds: new Map(),
    gateDirs,
    search,
    approvedSearches: new ApprovedSecretSearches(),
    log,
    dialogIds,
    timeoutMs: timeout.ms,
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
  let grantId: string | undefined;
  let dialogId: string | undefined;
  let grantProblem: string | undefined;
  if (decision.decision === "confirm") {
    // A grantable call has a shape; a grant of it (this Pi session, read now) runs it without a dialog.
    const shape = grantShape(event, decision, effective.policy, parser, context.cwd);
    const sessionId = shape ? piSessionId(ctx) : undefined;
    const lookup = shape && sessionId ? lookUpCommandGrant(process.env, shape.key, sessionId) : undefined;
    grantProblem = lookup?.grant === undefined ? lookup?.problem : undefined;
    if (lookup?.grant && ctx.signal?.aborted) {
      answer = "aborted";
    } else if (lookup?.grant) {
      answer = "granted";
      grantId = lookup.grant.id;
    } else {
      const offer = shape && sessionId && state.dialogIds ? shape : undefined;
      const asked = await ask(event, shownInput, ctx, decision, context, offer, state.timeoutMs);
      answer = asked.answer;
      dialogId = asked.dialogId;
      if (answer === "session" && offer && dialogId) requestGrant(ctx, offer, dialogId);
    }
    allowed = ALLOWING.has(answer);
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
      ...(grantId ? { grant: grantId } : {}),
      ...(dialogId ? { dialogId } : {}),
      ...(answer === "session" ? { grantRequested: dialogId !== undefined } : {}),
      ...(grantProblem ? { grantsFileProblem: grantProblem } : {}),
    },
    "tool call decision",
  );
  if (allowed) return {};
  return {
    block: true,
    reason: blockReason(decision, answer, effective.policy, effective.source, state.timeoutMs),
  };
}

/** The shape a session grant would cover, when this call may be covered by one at all. */
function grantShape(
  event: ToolCallEvent,
  decision: ReturnType<typeof decide>,
  policy: PolicyMode,
  parser: Awaited<ReturnType<typeof loadBashParser>> | undefined,
  cwd: string,
): CommandShape | undefined {
  if (event.toolName !== "bash" || !parser || !isRecord(event.input)) return undefined;
  if (!grantApplies(decision.decision, policy, decision.kinds)) return undefined;
  const command = event.input.command;
  return typeof command === "string" ? commandShape(command, parser, cwd, decision.scripts) : undefined;
}

/** Pi's session id (grants belong to one); undefined when unknown, and then no grant is used or offered. */
function piSessionId(ctx: ExtensionContext): string | undefined {
  try {
    const id = ctx.sessionManager.getSessionId();
    return typeof id === "string" && id.length > 0 ? id : undefined;
  } catch {
    return undefined;
  }
}

/** Asks the bridge to keep a grant: it does so only if it relayed the person's session answer to `dialogId`. */
function requestGrant(ctx: ExtensionContext, shape: CommandShape, dialogId: string): void {
  const request: GrantRequest = { kind: "command", key: shape.key, label: shape.label, dialogId };
  ctx.ui.setStatus(GRANT_REQUEST_STATUS_KEY, JSON.stringify(request));
}

const SESSION_NOTE =
  "Allow for this session: this exact command (the same words, from the same directory, running the same script bytes) runs without asking until the grant is revoked or the session ends. Anything else still asks.";

/**
 * Asks the person: a select of APPROVAL_CHOICES when `offer` (a session grant may cover the call), else a yes/no
 * confirm. With the operator's timeout Pi resolves an unanswered dialog with its default (no choice, false):
 * denied, and reported as "timed-out" (the gate's own timer, started first, says the time ran out).
 */
async function ask(
  event: ToolCallEvent,
  shownInput: unknown,
  ctx: ExtensionContext,
  decision: ReturnType<typeof decide>,
  context: ReturnType<typeof pathContextFromEnv>,
  offer: CommandShape | undefined,
  timeoutMs: number | undefined,
): Promise<{ answer: Answer; dialogId?: string }> {
  if (!ctx.hasUI) return { answer: "no-ui" };
  if (ctx.signal?.aborted) return { answer: "aborted" };
  const prompt = confirmPrompt(event.toolName, shownInput, decision, context);
  const options = {
    ...(ctx.signal ? { signal: ctx.signal } : {}),
    ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
  };
  let expired = false;
  const timer = timeoutMs !== undefined ? setTimeout(() => (expired = true), timeoutMs) : undefined;
  const denied = (): Answer => (ctx.signal?.aborted ? "aborted" : expired ? "timed-out" : "no");
  try {
    if (offer) {
      const choices = [APPROVAL_CHOICES.once, APPROVAL_CHOICES.session, APPROVAL_CHOICES.deny];
      // Pi's select has a title only: the whole prompt goes there.
      const opened = withDialogId(() =>
        ctx.ui.select(`${prompt.title}\n\n${prompt.message}\n\n${SESSION_NOTE}`, choices, options),
      );
      const chosen = await opened.value;
      const ids = opened.dialogId ? { dialogId: opened.dialogId } : {};
      if (ctx.signal?.aborted) return { answer: "aborted", ...ids };
      if (chosen === APPROVAL_CHOICES.once) return { answer: "yes", ...ids };
      if (chosen === APPROVAL_CHOICES.session) return { answer: "session", ...ids };
      return { answer: chosen === undefined ? denied() : "no", ...ids };
    }
    const confirmed = await ctx.ui.confirm(prompt.title, prompt.message, options);
    if (confirmed === true) return { answer: ctx.signal?.aborted ? "aborted" : "yes" };
    return { answer: denied() };
  } catch {
    return { answer: "error" };
  } finally {
    clearTimeout(timer);
  }
}

function blockReason(
  decision: ReturnType<typeof decide>,
  answer: Answer,
  policy: string,
  source: string,
  timeoutMs: number | undefined,
): string {
  const rule = decision.deciding ? `${ruleSentence(policy as PolicyMode, decision.deciding)}. ` : "";
  const why = `${rule}${decision.classes.join(", ")}: ${decision.reasons.join("; ")}`;
  const head = {
    yes: "Blocked by the approval gate",
    session: "Blocked by the approval gate",
    granted: "Blocked by the approval gate",
    "not-asked": "Blocked by the approval gate",
    no: "The person declined this tool call",
    "timed-out": `Not run: the person did not answer the approval dialog within ${describeTimeout(timeoutMs ?? 0)} (the operator's approval timeout). This is not a refusal: nobody answered. You may make the same call again later to ask again, or tell the person it is waiting for their approval`,
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
