// Turns a bridge client's events into a readable live transcript for an operator.
// Pure presentation: it never answers anything itself.

import type { Grant } from "../../agent-runtime/policy/grants.ts";
import type { BridgeClient, BridgeFrame } from "../client.ts";
import type { PendingDialog } from "../protocol.ts";

export interface TranscriptWriter {
  write(text: string): void;
}

type Content = { type: string; text?: string };

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return (content as Content[])
    .filter((part) => part.type === "text")
    .map((part) => part.text ?? "")
    .join("");
}

function indent(text: string, prefix: string, maxLines = 12): string {
  const lines = text.trimEnd().split("\n");
  const shown = lines.slice(0, maxLines).map((line) => `${prefix}${line}`);
  if (lines.length > maxLines) shown.push(`${prefix}… (${lines.length - maxLines} more lines)`);
  return shown.join("\n");
}

/** The full dialog as the person must see it: what will run and why it was gated. */
export function describeDialog(dialog: PendingDialog, options: { prompt?: boolean } = {}): string {
  // A select carries everything in its title (Pi's select has no message): its first line heads the dialog.
  const [head, ...rest] = String(dialog.title ?? dialog.method).split("\n");
  const lines = [`[approval] ${head}`];
  if (rest.length > 0) lines.push(indent(rest.join("\n").replace(/^\n+/, ""), "  │ ", 60));
  const message = typeof dialog.message === "string" ? dialog.message : undefined;
  if (message) lines.push(indent(message, "  │ ", 40));
  if (dialog.method === "select") {
    (dialog.options ?? []).forEach((option, index) => {
      lines.push(`  ${index + 1}) ${option}`);
    });
  }
  if (options.prompt) lines.push(dialogPrompt(dialog));
  return lines.join("\n");
}

/** What to type: `[y/n]` for a confirm, the numbers for a select, text for input. */
export function dialogPrompt(dialog: PendingDialog): string {
  if (dialog.method === "confirm") return "allow? [y/n]";
  if (dialog.method === "select") return `choose [1-${dialog.options?.length ?? 0}]`;
  return "type your answer";
}

/** The grants in force, one a line (for /grants and grants_changed). */
export function describeGrants(grants: readonly Grant[]): string {
  if (grants.length === 0) return "  (no session grants)";
  return grants
    .map(
      (grant) =>
        `  ${grant.id}  ${grant.kind}  ${grant.label || grant.key}${grant.by ? `  (by ${grant.by})` : ""}`,
    )
    .join("\n");
}

export class Transcript {
  private streamingText = false;

  private readonly out: TranscriptWriter;
  /** Dialogs end with what to type (an interactive client answers them). */
  private readonly prompts: boolean;

  constructor(out: TranscriptWriter, options: { prompts?: boolean } = {}) {
    this.out = out;
    this.prompts = options.prompts === true;
  }

  /** Subscribes to every client event worth showing. Returns an unsubscribe function. */
  attach(client: BridgeClient): () => void {
    const onFrame = (frame: BridgeFrame) => this.frame(frame);
    const onState = (state: string, detail: { attempt: number; closeCode?: number; failure?: Error }) => {
      if (state === "resuming") {
        const why = detail.failure
          ? `: ${detail.failure.message}`
          : detail.closeCode
            ? ` (${detail.closeCode})`
            : "";
        this.line(`… connection lost${why}; reconnecting`);
      } else if (state === "closed") {
        this.line("connection closed");
      }
    };
    const onResumed = (info: { fromSeq: number; headSeq: number }) =>
      this.line(
        `✓ resumed from seq ${info.fromSeq}: ${info.headSeq - info.fromSeq} missed frame(s) replayed, nothing lost`,
      );
    const onReset = (info: { reason: string }) =>
      this.line(
        info.reason === "new"
          ? "connected (fresh view from the bridge's snapshot)"
          : `reset: ${info.reason === "cursor_too_old" ? "cursor too old" : info.reason}; rebuilt from snapshot`,
      );
    client.on("frame", onFrame);
    client.on("state", onState);
    client.on("resumed", onResumed);
    client.on("reset", onReset);
    return () => {
      client.off("frame", onFrame);
      client.off("state", onState);
      client.off("resumed", onResumed);
      client.off("reset", onReset);
    };
  }

  line(text: string): void {
    this.endStreaming();
    this.out.write(`${text}\n`);
  }

  frame(frame: BridgeFrame): void {
    switch (frame.type) {
      case "message_update": {
        const event = frame.assistantMessageEvent as { type?: string; delta?: string } | undefined;
        if (event?.type === "text_delta" && event.delta) {
          if (!this.streamingText) this.out.write("assistant: ");
          this.streamingText = true;
          this.out.write(event.delta);
        }
        return;
      }
      case "message_start": {
        const message = frame.message as { role?: string; content?: unknown } | undefined;
        if (message?.role === "user") this.line(`user: ${textOf(message.content)}`);
        return;
      }
      case "message_end":
        this.endStreaming();
        return;
      case "tool_execution_start":
        this.line(`▶ ${String(frame.toolName)} ${JSON.stringify(frame.args)}`);
        return;
      case "tool_execution_end": {
        const result = frame.result as { content?: unknown } | undefined;
        const text = textOf(result?.content);
        const verdict = frame.isError ? "✗ blocked or failed" : "✓ done";
        this.line(`  ${verdict}${text ? `:\n${indent(text, "  │ ")}` : ""}`);
        return;
      }
      case "queue_update":
        this.line(
          `queue: steering ${JSON.stringify(frame.steering)}, follow-up ${JSON.stringify(frame.followUp)}`,
        );
        return;
      case "extension_ui_request":
        if (["confirm", "select", "input", "editor"].includes(String(frame.method))) {
          this.line(describeDialog(frame as unknown as PendingDialog, { prompt: this.prompts }));
        } else if (frame.method === "notify") {
          this.line(`[notice] ${String(frame.message)}`);
        }
        return;
      case "dialog_closed":
        this.line(
          frame.reason === "timed_out"
            ? `[approval] dialog ${String(frame.id).slice(0, 8)} timed out: nobody answered, so it was denied (the agent may ask again)`
            : `[approval] dialog ${String(frame.id).slice(0, 8)} refused (${String(frame.reason)})`,
        );
        return;
      case "grants_changed": {
        const grants = Array.isArray(frame.grants) ? (frame.grants as Grant[]) : [];
        this.line(
          `grants ${String(frame.cause).replace("_", " ")}: ${grants.length} in force\n${describeGrants(grants)}`,
        );
        return;
      }
      case "policy_changed": {
        const current = frame.current as { policy?: string; source?: string } | undefined;
        const how =
          frame.cause === "set_policy"
            ? "set by a client"
            : `changed outside the bridge (${current?.source})`;
        this.line(`policy: ${String(frame.previous ?? "?")} → ${String(current?.policy)} (${how})`);
        return;
      }
      case "agent_settled":
        this.line("(agent idle)");
        return;
      case "agent_exited":
        this.line(`agent exited (code ${String(frame.code)}, signal ${String(frame.signal)})`);
        return;
      case "response":
        if (frame.success === false) {
          this.line(`! ${String(frame.command)} failed: ${String(frame.error ?? frame.code ?? "")}`);
        }
        return;
      case "error":
        this.line(`! bridge error ${String(frame.code)}: ${String(frame.message)}`);
        return;
    }
  }

  private endStreaming(): void {
    if (this.streamingText) this.out.write("\n");
    this.streamingText = false;
  }
}
