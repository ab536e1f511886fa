// The approval gate, a Pi extension (bundled to /opt/chat-ui-agent/approval-gate.mjs). Before every tool call
// it rereads the policy file, decides allow/confirm/block, and asks the person through ctx.ui.confirm.
// Only an explicit yes allows a gated call; no, cancel, abort, no UI or any error blocks it.
import type {
  ExtensionAPI,
  ExtensionContext,
  ToolCallEvent,
  ToolCallEventResult,
} from "@earendil-works/pi-coding-agent";
import { confirmPrompt } from "./gate/confirm-prompt.ts";
import { decide } from "./gate/decide.ts";
import { redactForLog } from "./gate/log-redact.ts";
import { ownDir, pathContextFromEnv } from "./gate/path-context.ts";
import { loadBashParser } from "./gate/shell-parser.ts";
import { createLogger } from "./log.ts";
import { readEffectivePolicy } from "./policy/policy-store.ts";
import { registerToolRouting } from "./tools/router.ts";

type Answer = "yes" | "no" | "no-ui" | "aborted" | "error" | "not-asked";

export default async function approvalGate(pi: ExtensionAPI): Promise<void> {
  const log = createLogger("approval-gate");
  // The gate's own files are protected wherever the bundle is installed (the image: /opt/chat-ui-agent).
  const gateDirs = [ownDir(import.meta.url)];
  // Start loading the parser now so the first bash call does not pay for it; a failure surfaces per call.
  loadBashParser().catch(() => {});

  pi.on("tool_call", async (event: ToolCallEvent, ctx: ExtensionContext): Promise<ToolCallEventResult> => {
    try {
      return await gateToolCall(event, ctx, gateDirs, log);
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
  gateDirs: string[],
  log: ReturnType<typeof createLogger>,
): Promise<ToolCallEventResult> {
  const effective = readEffectivePolicy(process.env); // every call: the file may have just changed
  const context = pathContextFromEnv(ctx.cwd, process.env, gateDirs);
  // Only bash needs the parser: a broken parser then blocks shell commands but not reads.
  const parser = event.toolName === "bash" ? await loadBashParser().catch(() => undefined) : undefined;
  const decision = decide({
    policy: effective.policy,
    toolName: event.toolName,
    input: event.input,
    context,
    parser,
  });

  let answer: Answer = "not-asked";
  let allowed = decision.decision === "allow";
  if (decision.decision === "confirm") {
    answer = await ask(event, ctx, decision, context);
    allowed = answer === "yes";
  }
  log.info(
    {
      tool: event.toolName,
      toolCallId: event.toolCallId,
      decision: decision.decision,
      allowed,
      classes: decision.classes,
      reasons: decision.reasons.map(redactForLog),
      policy: effective.policy,
      policySource: effective.source,
      ...(effective.fileProblem ? { policyFileProblem: effective.fileProblem } : {}),
      answer,
    },
    "tool call decision",
  );
  if (allowed) return {};
  return { block: true, reason: blockReason(decision, answer, effective.policy, effective.source) };
}

async function ask(
  event: ToolCallEvent,
  ctx: ExtensionContext,
  decision: ReturnType<typeof decide>,
  context: ReturnType<typeof pathContextFromEnv>,
): Promise<Answer> {
  if (!ctx.hasUI) return "no-ui";
  if (ctx.signal?.aborted) return "aborted";
  const prompt = confirmPrompt(event.toolName, event.input, decision, context);
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
  const why = `${decision.classes.join(", ")}: ${decision.reasons.join("; ")}`;
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

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
