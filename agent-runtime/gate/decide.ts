// The one decision function: the Pi extension and `chat-ui-agent-policy explain` both call this.
import type { Parser } from "web-tree-sitter";
import type { PolicyMode } from "../policy/policy-store.ts";
import { Findings, type GateClass } from "./gate-classes.ts";
import { type PathContext, resolveToolPath } from "./path-context.ts";
import { laterExecReasonFor, tamperReasonFor } from "./protected-paths.ts";
import { sensitiveContainerFor, sensitiveRuleFor, sensitiveRuleForGlob } from "./sensitive-paths.ts";
import { classifyShell } from "./shell-classifier.ts";

export type GateDecision = "allow" | "confirm" | "block";

export interface ToolCallToDecide {
  policy: PolicyMode;
  toolName: string;
  input: unknown;
  /** Session cwd, HOME, Pi's agent dir, the policy path and the gate's own directories. */
  context: PathContext;
  /** tree-sitter-bash, from loadBashParser(); only bash calls need it (without it they are blocked). */
  parser: Parser | undefined;
}

export interface Decision {
  decision: GateDecision;
  classes: GateClass[];
  reasons: string[];
}

const READ_TOOLS = new Set(["read", "grep", "find", "ls"]);
const WRITE_TOOLS = new Set(["write", "edit"]);

export function decide(call: ToolCallToDecide): Decision {
  const findings = new Findings();
  const { toolName, policy } = call;
  const input = isRecord(call.input) ? call.input : undefined;
  if (!input) return block(findings, `malformed input for ${toolName}`);

  if (toolName === "bash") {
    if (typeof input.command !== "string")
      return block(findings, "malformed input: bash without a command string");
    if (!call.parser)
      return block(findings, "the shell parser is unavailable, so the command cannot be inspected");
    const shell = classifyShell(input.command, call.parser, call.context);
    for (const cls of shell.sortedClasses()) findings.add(cls);
    for (const reason of shell.reasons) findings.reasons.push(reason);
    if (findings.has("TAMPER")) return finish(findings, "block");
    if (policy === "read-only") return finish(findings, "block", "read-only policy blocks shell commands");
    if (policy === "ask") return finish(findings, "confirm", "ask policy confirms every shell command");
    if (findings.has("EXIT") || findings.has("SECRET") || findings.has("UNKNOWN"))
      return finish(findings, "confirm");
    return finish(findings, "allow");
  }

  if (READ_TOOLS.has(toolName)) {
    const raw = input.path ?? (toolName === "read" ? undefined : ".");
    if (typeof raw !== "string") return block(findings, `malformed input: ${toolName} without a path`);
    const file = resolveToolPath(raw, call.context);
    const rule =
      sensitiveRuleFor(file, call.context) ??
      (toolName === "read" || toolName === "grep" ? sensitiveContainerFor(file, call.context) : undefined) ??
      (toolName === "grep" && typeof input.glob === "string"
        ? sensitiveRuleForGlob(`${file}/*${input.glob}`, call.context)
        : undefined);
    if (rule) {
      findings.add("SECRET", `${toolName} touches ${rule.why}: ${raw}`);
      return finish(findings, "confirm");
    }
    findings.add("READ");
    return finish(findings, "allow");
  }

  if (WRITE_TOOLS.has(toolName)) {
    if (typeof input.path !== "string") return block(findings, `malformed input: ${toolName} without a path`);
    const file = resolveToolPath(input.path, call.context);
    findings.add("WRITE", `${toolName} ${input.path}`);
    const tamper = tamperReasonFor(file, call.context);
    if (tamper) {
      findings.add("TAMPER", tamper);
      return finish(findings, "block");
    }
    const rule = sensitiveRuleFor(file, call.context);
    if (rule) findings.add("SECRET", `${toolName} touches ${rule.why}`);
    const gitExec = laterExecReasonFor(file, call.context);
    if (gitExec) findings.add("EXIT", gitExec);
    if (policy === "read-only") return finish(findings, "block", "read-only policy blocks writes and edits");
    if (policy === "ask") return finish(findings, "confirm", "ask policy confirms every write and edit");
    return finish(findings, findings.has("SECRET") || findings.has("EXIT") ? "confirm" : "allow");
  }

  findings.add("UNKNOWN", `custom tool \`${toolName}\` (extension or MCP): its effects are unknown`);
  if (policy === "read-only") return finish(findings, "block", "read-only policy blocks custom tools");
  return finish(findings, "confirm");
}

function finish(findings: Findings, decision: GateDecision, reason?: string): Decision {
  if (reason) findings.reasons.push(reason);
  return { decision, classes: findings.sortedClasses(), reasons: [...new Set(findings.reasons)] };
}

function block(findings: Findings, reason: string): Decision {
  findings.add("UNKNOWN", reason);
  return finish(findings, "block");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
