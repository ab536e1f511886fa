// Pi 0.84.2's RPC events, typed for client users: what patched Pi writes on stdout besides responses (its
// AgentSessionEvent through toJsonEvent, extension dialogs and errors), as the bridge relays them with a `seq`.
// Written from Pi's own declarations (pi-agent-core types.d.ts, pi-ai types.d.ts, pi-coding-agent
// core/agent-session.d.ts, modes/json-event.js, modes/rpc/rpc-mode.js), without importing Pi: a client needs
// none of it. tests/unit/pi-events-types.ts checks at compile time that Pi's own event types fit these.

export interface PiTextContent {
  type: "text";
  text: string;
  textSignature?: string;
}
export interface PiThinkingContent {
  type: "thinking";
  thinking: string;
  thinkingSignature?: string;
  redacted?: boolean;
}
export interface PiImageContent {
  type: "image";
  data: string;
  mimeType: string;
}
export interface PiToolCall {
  type: "toolCall";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  thoughtSignature?: string;
  namespace?: string;
}

export interface PiUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning?: number;
  totalTokens: number;
  cost: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
}

export type PiStopReason = "pending" | "stop" | "length" | "toolUse" | "error" | "aborted" | "deferred";

export interface PiUserMessage {
  role: "user";
  content: string | (PiTextContent | PiImageContent)[];
  timestamp: number;
}
export interface PiAssistantMessage {
  role: "assistant";
  content: (PiTextContent | PiThinkingContent | PiToolCall)[];
  api: string;
  provider: string;
  model: string;
  usage: PiUsage;
  stopReason: PiStopReason;
  /** Set when stopReason is "error" (or "aborted"): what went wrong. */
  errorMessage?: string;
  timestamp: number;
}
export interface PiToolResultMessage {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: (PiTextContent | PiImageContent)[];
  details?: unknown;
  isError: boolean;
  timestamp: number;
}
/** The coding agent's own message kinds (a `!` command's output, extension messages, summaries); their other
 * fields are as Pi's core/messages.d.ts defines them. */
export type PiOtherMessage = { role: "bashExecution" | "custom" | "branchSummary" | "compactionSummary" };
export type PiMessage = PiUserMessage | PiAssistantMessage | PiToolResultMessage | PiOtherMessage;

/** A streaming step of the assistant's message (message_update): Pi drops the partial message from each. */
export type PiAssistantMessageEvent =
  | { type: "start" }
  | { type: "text_start" | "thinking_start" | "toolcall_start"; contentIndex: number }
  | { type: "text_delta" | "thinking_delta" | "toolcall_delta"; contentIndex: number; delta: string }
  | { type: "text_end" | "thinking_end"; contentIndex: number; content: string }
  | { type: "toolcall_end"; contentIndex: number; toolCall: PiToolCall }
  | { type: "done"; reason: "stop" | "length" | "toolUse" | "deferred"; message: PiAssistantMessage }
  | { type: "error"; reason: "aborted" | "error"; error: PiAssistantMessage };

type CompactionReason = "manual" | "threshold" | "overflow";

/** An extension's request to the UI: a dialog Pi waits on (select/confirm/input/editor) or a notice. */
export type PiExtensionUiRequest = { type: "extension_ui_request"; id: string } & (
  | { method: "select"; title: string; options: string[]; timeout?: number }
  | { method: "confirm"; title: string; message: string; timeout?: number }
  | { method: "input"; title: string; placeholder?: string; timeout?: number }
  | { method: "editor"; title: string; prefill?: string }
  | { method: "notify"; message: string; notifyType?: "info" | "warning" | "error" }
  | { method: "setStatus"; statusKey: string; statusText: string | undefined }
  | { method: "setWidget"; widgetKey: string; widgetLines: string[] | undefined; widgetPlacement?: string }
  | { method: "setTitle"; title: string }
  | { method: "set_editor_text"; text: string }
);

/** Every event Pi 0.84.2 emits in RPC mode (responses aside). */
export type PiEvent =
  | { type: "agent_start" }
  /** The agent loop ended; `willRetry`: an automatic retry follows (so the agent is not idle yet). */
  | { type: "agent_end"; messages: PiMessage[]; willRetry: boolean }
  /** Idle: no run, no retry, nothing queued. */
  | { type: "agent_settled" }
  | { type: "turn_start" }
  | { type: "turn_end"; message: PiMessage; toolResults: PiToolResultMessage[] }
  | { type: "message_start" | "message_end"; message: PiMessage }
  | { type: "message_update"; usage?: PiUsage; assistantMessageEvent: PiAssistantMessageEvent }
  | { type: "tool_execution_start"; toolCallId: string; toolName: string; args: unknown }
  | {
      type: "tool_execution_update";
      toolCallId: string;
      toolName: string;
      args: unknown;
      partialResult: unknown;
    }
  | { type: "tool_execution_end"; toolCallId: string; toolName: string; result: unknown; isError: boolean }
  | { type: "queue_update"; steering: readonly string[]; followUp: readonly string[] }
  | { type: "compaction_start"; reason: CompactionReason }
  | {
      type: "compaction_end";
      reason: CompactionReason;
      result: unknown;
      aborted: boolean;
      willRetry: boolean;
      errorMessage?: string;
    }
  | { type: "auto_retry_start"; attempt: number; maxAttempts: number; delayMs: number; errorMessage: string }
  | { type: "auto_retry_end"; success: boolean; attempt: number; finalError?: string }
  | {
      type: "summarization_retry_scheduled";
      attempt: number;
      maxAttempts: number;
      delayMs: number;
      errorMessage: string;
    }
  | {
      type: "summarization_retry_attempt_start";
      source: "branchSummary" | "compaction";
      reason?: CompactionReason;
    }
  | { type: "summarization_retry_finished" }
  | { type: "entry_appended"; entry: { type: string; id: string } }
  | { type: "session_info_changed"; name: string | undefined }
  | { type: "thinking_level_changed"; level: string }
  /** Output of a `bash` command (`id` is that command's id). */
  | { type: "bash_execution_update"; id?: string; delta: string }
  | { type: "extension_error"; extensionPath: string; event: string; error: string }
  | PiExtensionUiRequest;

export type PiEventType = PiEvent["type"];

/** A Pi event as the bridge relays it: numbered. */
export type PiEventFrame = PiEvent & { seq: number };

/** Every event type, as data (the client tells Pi's events from the bridge's own frames with it). */
export const PI_EVENT_TYPES = [
  "agent_start",
  "agent_end",
  "agent_settled",
  "turn_start",
  "turn_end",
  "message_start",
  "message_end",
  "message_update",
  "tool_execution_start",
  "tool_execution_update",
  "tool_execution_end",
  "queue_update",
  "compaction_start",
  "compaction_end",
  "auto_retry_start",
  "auto_retry_end",
  "summarization_retry_scheduled",
  "summarization_retry_attempt_start",
  "summarization_retry_finished",
  "entry_appended",
  "session_info_changed",
  "thinking_level_changed",
  "bash_execution_update",
  "extension_error",
  "extension_ui_request",
] as const satisfies readonly PiEventType[];

// Every member of the union is listed above (a type added to PiEvent without its name fails to compile).
type Unlisted = Exclude<PiEventType, (typeof PI_EVENT_TYPES)[number]>;
const everyTypeListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyTypeListed;

const EVENT_TYPES: ReadonlySet<string> = new Set(PI_EVENT_TYPES);

/** Whether a relayed frame is one of Pi's events (its fields are then as typed; not re-validated). */
export function isPiEvent(frame: { type: string; seq: number }): frame is PiEventFrame {
  return EVENT_TYPES.has(frame.type);
}
