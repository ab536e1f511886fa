// The one decision function: the Pi extension and `chat-ui-agent-policy explain` both call this. Every analysis
// reports effects (effects.ts); the decision is the policy table's (decision-table.ts) strictest row among them.
import type { Parser } from "web-tree-sitter";
import { type EgressGuardState, egressGuardState } from "../policy/egress-guard.ts";
import type { PolicyMode } from "../policy/policy-store.ts";
import { builtInTool } from "../tools/tool-table.ts";
import { credentialContentRule } from "./credential-content.ts";
import { type AppliedRow, applyTable, type GateDecision } from "./decision-table.ts";
import { type Effect, type EffectKind, Findings, type GateClass } from "./effects.ts";
import { inspectLocalCode, type ShownScript } from "./local-code.ts";
import { canonicalIn, type PathContext, pathContextFromEnv } from "./path-context.ts";
import { type PiPaths, piPathsSync, resolveToolInputPath } from "./pi-paths.ts";
import { laterExecReasonFor, tamperReasonFor } from "./protected-paths.ts";
import { grepSecretReason, type SearchExcludeState } from "./search-excludes.ts";
import { sensitiveContainerFor, sensitiveRuleByName, sensitiveRuleFor } from "./sensitive-paths.ts";
import { classifyShell } from "./shell-classifier.ts";
import { Budget } from "./shell-limits.ts";

export type { GateDecision } from "./decision-table.ts";

export interface ToolCallToDecide {
  policy: PolicyMode;
  toolName: string;
  input: unknown;
  /** Session cwd, the tools' HOME, Pi's agent dir, the policy path and the gate's own directories. */
  context: PathContext;
  /** tree-sitter-bash, from loadBashParser(); only bash calls need it (without it they are blocked). */
  parser: Parser | undefined;
  /**
   * Pi's own path functions, from loadPiPaths() (default: piPathsSync()); null when they failed to load. Without
   * them every path tool is blocked.
   */
  paths?: PiPaths | null | undefined;
  /** The search exclude config (search-excludes.ts); absent means searches are not protected by it. */
  search?: SearchExcludeState | undefined;
  /** Where RIPGREP_CONFIG_PATH is read from (the gate's process env). */
  env?: NodeJS.ProcessEnv;
  /** The tools' egress guard (policy/egress-guard.ts); absent: read from `env` (no variable: no guard). */
  egressGuard?: EgressGuardState;
}

export interface Decision {
  decision: GateDecision;
  /** Every kind of effect the call has (complete, whatever the number of effects). */
  kinds: EffectKind[];
  /** The effects, for people (bounded, in the order found). */
  effects: Effect[];
  /** The table rows that applied (policy × effect), and the one that decided. */
  rows: AppliedRow[];
  deciding?: AppliedRow;
  /** The egress guard state the decision assumed. */
  guard: EgressGuardState;
  /**
   * Code the gate cannot model: "confirmed" (no enforcing guard: it asks) or "guard" (the enforcing egress guard
   * lets it run; its output still passes the secret filter). Absent when none runs.
   */
  unmodeled?: "confirmed" | "guard";
  /** The coarse classes (EXIT, SECRET…), derived from the kinds, for dialogs and the audit line. */
  classes: GateClass[];
  /** The effects' sentences, for people. Nothing is decided on them. */
  reasons: string[];
  /**
   * For bash: the local code the command runs, read and inspected. The dialog shows it; the exact bytes are what
   * an allowed call records as vetted (the executor verifies them right before the run).
   */
  scripts?: ShownScript[];
  /**
   * For read/write/edit/grep/find/ls: the absolute, canonical path the decision was made on. The gate writes it
   * into the call's `input.path`, so the tool opens exactly this file.
   */
  path?: string;
}

const WARM_UP_COMMANDS = [
  "git status && rg -n x src | head -5 > out.txt",
  'npm test; python3 x.py; cat .env; for f in *.md; do sed -n 1p "$f"; done',
];

/**
 * Decides a few commands once, so the first real decision does not pay for compiling the classifier (a cold
 * first call can run past the time budget and be asked as "too complex"). Reads nothing but missing paths.
 */
export function warmUp(parser: Parser): void {
  const context = pathContextFromEnv("/nonexistent", { HOME: "/nonexistent" });
  for (const command of WARM_UP_COMMANDS)
    decide({ policy: "auto", toolName: "bash", input: { command }, context, parser, egressGuard: "absent" });
}

export function decide(call: ToolCallToDecide): Decision {
  const findings = new Findings();
  const guard = call.egressGuard ?? egressGuardState(call.env ?? {});
  const verdict = (extra: Partial<Decision> = {}) => finish(findings, call.policy, guard, extra);
  const { toolName } = call;
  const input = isRecord(call.input) ? call.input : undefined;
  if (!input) return refuse(findings, `malformed input for ${toolName}`, verdict);
  const tool = builtInTool(toolName);

  if (tool?.access === "shell") {
    findings.record({ kind: "runs-shell", why: "" });
    if (typeof input.command !== "string")
      return refuse(findings, "malformed input: bash without a command string", verdict);
    if (!call.parser)
      return refuse(findings, "the shell parser is unavailable, so the command cannot be inspected", verdict);
    // One time and work budget for the command and every script the inspection below classifies (≤ 50 ms).
    const budget = new Budget();
    const classify: typeof classifyShell = (script, parser, context) =>
      classifyShell(script, parser, context, { budget });
    const shell = classify(input.command, call.parser, call.context);
    findings.merge(shell);
    // Write, then run: what the local code does decides, and the dialog shows it.
    if (shell.localCode.length === 0 || findings.has("changes-gate")) return verdict();
    const inspected = inspectLocalCode(shell, call.context, call.parser, classify, {
      command: input.command,
      budget,
    });
    findings.merge(inspected.findings);
    return verdict(inspected.shown.length > 0 ? { scripts: inspected.shown } : {});
  }

  if (tool?.path) {
    const raw = input.path;
    if (raw !== undefined && typeof raw !== "string")
      return refuse(findings, `malformed input: ${toolName} with a path that is not a string`, verdict);
    if (!tool.path.optional && typeof raw !== "string")
      return refuse(findings, `malformed input: ${toolName} without a path`, verdict);
    const paths = call.paths === undefined ? piPathsSync() : call.paths;
    if (!paths)
      return refuse(
        findings,
        "Pi's path resolution is unavailable, so the path cannot be decided on",
        verdict,
      );
    const resolved = resolveToolInputPath(
      paths,
      toolName,
      raw,
      { cwd: call.context.cwd, toolHome: call.context.home },
      (absolute) => canonicalIn(call.context, absolute),
    );
    if (!resolved.ok)
      return refuse(findings, `${toolName} ${JSON.stringify(clip(raw ?? "."))}: ${resolved.reason}`, verdict);
    const file = resolved.path;
    // The spelled path counts too: /proc/<pid>/fd/N, /proc/<pid>/root/… are sensitive even where their
    // target (another namespace's view, a deleted file) looks ordinary once resolved.
    const spelled = sensitiveRuleByName(resolved.lexical, call.context);
    const shown = clip(raw ?? ".");

    if (tool.access === "read") {
      const secret =
        (spelled ? `touches ${spelled.why}` : undefined) ??
        (toolName === "grep"
          ? grepSecretReason(file, input.glob, call.context, call.search, call.env ?? process.env)?.reason
          : readSecretReason(toolName, file, call.context));
      if (secret) findings.readsSecret(`${toolName} ${shown}: ${secret}`, file);
      else findings.reads(file);
      return verdict({ path: file });
    }

    findings.writes(`${toolName} ${shown}`, file);
    const tamper = tamperReasonFor(file, call.context);
    if (tamper) findings.changesGate(tamper, file);
    const rule = sensitiveRuleFor(file, call.context) ?? spelled;
    if (rule) findings.readsSecret(`${toolName} touches ${rule.why}`, file);
    const later = laterExecReasonFor(file, call.context);
    if (later) findings.writesRunsLater(later, file);
    return verdict({ path: file });
  }

  findings.record({
    kind: "custom-tool",
    subject: toolName,
    why: `custom tool \`${toolName}\` (extension or MCP): its effects are unknown`,
  });
  return verdict();
}

/** read/find/ls: a credential file itself (by name, location, hard link or content); read also a folder of them. */
function readSecretReason(toolName: string, file: string, ctx: PathContext): string | undefined {
  const rule =
    sensitiveRuleFor(file, ctx) ?? (toolName === "read" ? sensitiveContainerFor(file, ctx) : undefined);
  if (rule) return `touches ${rule.why}`;
  if (toolName !== "read") return undefined;
  const content = credentialContentRule(file);
  return content ? `holds ${content}` : undefined;
}

function finish(
  findings: Findings,
  policy: PolicyMode,
  guard: EgressGuardState,
  extra: Partial<Decision>,
): Decision {
  const table = applyTable(policy, findings.kinds, guard);
  return {
    decision: table.decision,
    kinds: table.rows.map((row) => row.effect),
    effects: findings.effects,
    rows: table.rows,
    ...(table.deciding ? { deciding: table.deciding } : {}),
    guard,
    ...(table.unmodeled ? { unmodeled: table.unmodeled } : {}),
    classes: findings.classes(),
    reasons: findings.reasons(),
    ...extra,
  };
}

function refuse(findings: Findings, why: string, verdict: () => Decision): Decision {
  findings.record({ kind: "malformed", why });
  return verdict();
}

/** Reasons quote inputs: never more than a line of them (they are logged and shown to the model). */
function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
