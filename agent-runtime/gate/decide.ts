// The one decision function: the Pi extension and `chat-ui-agent-policy explain` both call this.
import { existsSync } from "node:fs";
import type { Parser } from "web-tree-sitter";
import type { PolicyMode } from "../policy/policy-store.ts";
import { Findings, type GateClass } from "./gate-classes.ts";
import { inspectLocalCode, type ShownScript } from "./local-code.ts";
import { canonicalIn, type PathContext, pathContextFromEnv } from "./path-context.ts";
import { PATH_TOOLS, type PiPaths, piPathsSync, resolveToolInputPath } from "./pi-paths.ts";
import { laterExecReasonFor, tamperReasonFor } from "./protected-paths.ts";
import { grepSecretReason, type SearchExcludeState } from "./search-excludes.ts";
import { sensitiveContainerFor, sensitiveRuleByName, sensitiveRuleFor } from "./sensitive-paths.ts";
import { classifyShell } from "./shell-classifier.ts";
import { Budget } from "./shell-limits.ts";

export type GateDecision = "allow" | "confirm" | "block";

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
}

export interface Decision {
  decision: GateDecision;
  classes: GateClass[];
  reasons: string[];
  /**
   * For bash: the local code the command runs, read and inspected (class 7). The dialog shows it; the exact
   * bytes are what an allowed call records as vetted (the executor verifies them right before the run).
   */
  scripts?: ShownScript[];
  /**
   * For read/write/edit/grep/find/ls: the absolute, canonical path the decision was made on. The gate writes it
   * into the call's `input.path`, so the tool opens exactly this file.
   */
  path?: string;
}

const READ_TOOLS = new Set(["read", "grep", "find", "ls"]);
/** Shell findings that write whole trees (a file the command then runs may appear without being named). */
const TREE_WRITES =
  /\b(?:clone|checkout|switch|pull|merge|rebase|reset|restore|stash|apply|extract|unpack|unzip|untar|tar|7z|cpio|download|rsync|copies|copy|moves|move|symlink)\b/i;

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
    decide({ policy: "auto", toolName: "bash", input: { command }, context, parser });
}

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
    // One time and work budget for the command and every script the inspection below classifies (≤ 50 ms).
    const budget = new Budget();
    const classify: typeof classifyShell = (script, parser, context) =>
      classifyShell(script, parser, context, { budget });
    const shell = classify(input.command, call.parser, call.context);
    for (const cls of shell.sortedClasses()) findings.add(cls);
    for (const reason of shell.reasons) findings.reasons.push(reason);
    if (findings.has("TAMPER")) return finish(findings, "block");
    if (policy === "read-only") return finish(findings, "block", "read-only policy blocks shell commands");
    // Write, then run: what the local code does decides, and the dialog shows it.
    let scripts: ShownScript[] = [];
    if (shell.localCode.length > 0) {
      // Whole-tree writes (clone, checkout, extract, copy…) can create any file the command then runs.
      const commandWrites = shell.reasons.some(
        (r) => !r.startsWith("runs local code") && TREE_WRITES.test(r),
      );
      // Local code runs beside other local code (a generator, then the tests): either may write the other's files.
      // (Only runs that can run anything: a build hook or script that is not there runs nothing.)
      const runs = shell.localCode.filter(
        (run) =>
          run.kind !== "git-config" && (run.paths.length === 0 || run.paths.some((file) => existsSync(file))),
      ).length;
      const verdict = inspectLocalCode(shell.localCode, call.context, call.parser, classify, {
        command: input.command,
        commandWrites: commandWrites || shell.writesUnknown,
        otherRuns: runs > 1,
        written: shell.written,
      });
      for (const cls of verdict.classes) findings.add(cls);
      findings.reasons.push(...verdict.reasons);
      scripts = verdict.shown;
    }
    const withScripts = (decision: Decision): Decision =>
      scripts.length > 0 ? { ...decision, scripts } : decision;
    if (findings.has("TAMPER")) return withScripts(finish(findings, "block"));
    if (policy === "ask")
      return withScripts(finish(findings, "confirm", "ask policy confirms every shell command"));
    if (findings.has("EXIT") || findings.has("SECRET") || findings.has("UNKNOWN"))
      return withScripts(finish(findings, "confirm"));
    return withScripts(finish(findings, "allow"));
  }

  const pathTool = PATH_TOOLS.get(toolName);
  if (pathTool) {
    const raw = input.path;
    if (raw !== undefined && typeof raw !== "string")
      return block(findings, `malformed input: ${toolName} with a path that is not a string`);
    if (!pathTool.optional && typeof raw !== "string")
      return block(findings, `malformed input: ${toolName} without a path`);
    const paths = call.paths === undefined ? piPathsSync() : call.paths;
    if (!paths)
      return block(findings, "Pi's path resolution is unavailable, so the path cannot be decided on");
    const resolved = resolveToolInputPath(
      paths,
      toolName,
      raw,
      { cwd: call.context.cwd, toolHome: call.context.home },
      (absolute) => canonicalIn(call.context, absolute),
    );
    if (!resolved.ok)
      return block(findings, `${toolName} ${JSON.stringify(clip(raw ?? "."))}: ${resolved.reason}`);
    const file = resolved.path;
    // The spelled path counts too: /proc/<pid>/fd/N, /proc/<pid>/root/… are sensitive even where their
    // target (another namespace's view, a deleted file) looks ordinary once resolved.
    const spelled = sensitiveRuleByName(resolved.lexical, call.context);
    const shown = clip(raw ?? ".");
    const decided = (decision: Decision) => ({ ...decision, path: file });

    if (READ_TOOLS.has(toolName)) {
      const secret =
        (spelled ? `touches ${spelled.why}` : undefined) ??
        (toolName === "grep"
          ? grepSecretReason(file, input.glob, call.context, call.search, call.env ?? process.env)?.reason
          : readSecretReason(toolName, file, call.context));
      if (secret) {
        findings.add("SECRET", `${toolName} ${shown}: ${secret}`);
        return decided(finish(findings, "confirm"));
      }
      findings.add("READ");
      return decided(finish(findings, "allow"));
    }

    findings.add("WRITE", `${toolName} ${shown}`);
    const tamper = tamperReasonFor(file, call.context);
    if (tamper) {
      findings.add("TAMPER", tamper);
      return decided(finish(findings, "block"));
    }
    const rule = sensitiveRuleFor(file, call.context) ?? spelled;
    if (rule) findings.add("SECRET", `${toolName} touches ${rule.why}`);
    const later = laterExecReasonFor(file, call.context);
    if (later) findings.add("EXIT", later);
    if (policy === "read-only")
      return decided(finish(findings, "block", "read-only policy blocks writes and edits"));
    if (policy === "ask")
      return decided(finish(findings, "confirm", "ask policy confirms every write and edit"));
    return decided(finish(findings, findings.has("SECRET") || findings.has("EXIT") ? "confirm" : "allow"));
  }

  findings.add("UNKNOWN", `custom tool \`${toolName}\` (extension or MCP): its effects are unknown`);
  if (policy === "read-only") return finish(findings, "block", "read-only policy blocks custom tools");
  return finish(findings, "confirm");
}

/** read/find/ls: a credential file itself (by name, location or hard link); read also a folder of them. */
function readSecretReason(toolName: string, file: string, ctx: PathContext): string | undefined {
  const rule =
    sensitiveRuleFor(file, ctx) ?? (toolName === "read" ? sensitiveContainerFor(file, ctx) : undefined);
  return rule ? `touches ${rule.why}` : undefined;
}

function finish(findings: Findings, decision: GateDecision, reason?: string): Decision {
  if (reason) findings.reasons.push(reason);
  return { decision, classes: findings.sortedClasses(), reasons: [...new Set(findings.reasons)] };
}

function block(findings: Findings, reason: string): Decision {
  findings.add("UNKNOWN", reason);
  return finish(findings, "block");
}

/** Reasons quote inputs: never more than a line of them (they are logged and shown to the model). */
function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
