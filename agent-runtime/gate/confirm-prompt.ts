// The dialog a person answers: exactly what will run or be touched, and why it was gated.
import { statSync } from "node:fs";
import type { Decision } from "./decide.ts";
import type { PathContext } from "./path-context.ts";

const MAX_SHOWN = 4000;

export interface ConfirmPrompt {
  title: string;
  message: string;
}

export function confirmPrompt(
  toolName: string,
  input: unknown,
  decision: Decision,
  ctx: PathContext,
): ConfirmPrompt {
  const record = (typeof input === "object" && input !== null ? input : {}) as Record<string, unknown>;
  // The path the decision was made on (and that the gate wrote into the call), never a re-resolution of the input.
  const file = decision.path ?? String(record.path ?? "");
  const why = whyLines(decision);
  const lines: string[] = [];
  let title: string;
  if (toolName === "bash") {
    title = "Allow this shell command?";
    lines.push("Command:", clip(String(record.command ?? "")));
    lines.push(`Working directory: ${ctx.cwd}`);
    for (const script of decision.scripts ?? []) {
      lines.push(
        "",
        `It runs ${script.what}: ${script.file.path} (${script.file.bytes} bytes, sha256 ${script.file.sha256})`,
        "----",
        script.text,
        "----",
      );
    }
    if (decision.scripts?.length)
      lines.push(
        "A yes covers exactly these bytes, once: if a file changes before the run, it does not run.",
      );
  } else if (toolName === "write") {
    const content = String(record.content ?? "");
    title = `Allow writing ${record.path}?`;
    lines.push(`File: ${file}`);
    lines.push(
      `${existingSize(file)} → new content ${Buffer.byteLength(content)} bytes, ${lineCount(content)} lines`,
    );
  } else if (toolName === "edit") {
    const edits = Array.isArray(record.edits) ? (record.edits as Array<Record<string, unknown>>) : [];
    title = `Allow editing ${record.path}?`;
    lines.push(`File: ${file} (${existingSize(file)})`);
    lines.push(`${edits.length} edit(s):`);
    for (const edit of edits.slice(0, 5)) {
      const oldText = String(edit.oldText ?? "");
      const newText = String(edit.newText ?? "");
      lines.push(
        `  -${lineCount(oldText)} +${lineCount(newText)} lines: ${JSON.stringify(firstLine(oldText))} → ${JSON.stringify(firstLine(newText))}`,
      );
    }
    if (edits.length > 5) lines.push(`  … and ${edits.length - 5} more`);
  } else if (decision.path !== undefined) {
    title = `Allow ${toolName} of ${String(record.path ?? ".")}?`;
    lines.push(`Path: ${file}`);
    if (toolName === "grep" && typeof record.glob === "string") lines.push(`Glob: ${record.glob}`);
  } else {
    title = `Allow the tool "${toolName}"?`;
    lines.push("Input:", clip(safeJson(input)));
  }
  lines.push(why);
  return { title, message: lines.join("\n") };
}

/** Why it asks: the effects, the rule that decided, and (for code the gate cannot model) which case applied. */
export function whyLines(decision: Decision): string {
  const lines = [
    `Why: ${decision.classes.join(", ")}${decision.reasons.length ? ` — ${decision.reasons.join("; ")}` : ""}`,
  ];
  if (decision.deciding)
    lines.push(
      `Rule: ${decision.deciding.effect} → ${decision.deciding.decision} (effects: ${decision.kinds.join(", ")})`,
    );
  if (decision.unmodeled === "confirmed")
    lines.push(
      `It runs code the gate cannot model, and the egress guard is ${decision.guard === "absent" ? "not active" : decision.guard}: nothing stops it from sending data out, so it asks.`,
    );
  return lines.join("\n");
}

function existingSize(file: string): string {
  try {
    const stat = statSync(file);
    return stat.isFile() ? `existing file ${stat.size} bytes` : "existing non-file";
  } catch {
    return "new file";
  }
}

function lineCount(text: string): number {
  if (text.length === 0) return 0;
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}

function firstLine(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 60 ? `${line.slice(0, 60)}…` : line;
}

function clip(text: string): string {
  return text.length > MAX_SHOWN
    ? `${text.slice(0, MAX_SHOWN)}\n… (${text.length - MAX_SHOWN} more characters)`
    : text;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return "(input not serialisable)";
  }
}
