// The channel between Pi's process (the router in the gate bundle) and the tool executor: JSON Lines over the
// socket the bridge hands to both (Pi's fd 3, the executor's fd 3). Defined once; both ends and the tests import
// these schemas. Everything that crosses is validated: the executor runs as the tools' principal and trusts
// nothing it is sent beyond what the gate already decided; Pi trusts nothing the executor answers beyond shape.
import { z } from "zod";
import { TOOL_NAMES, type ToolName } from "../tools/tool-table.ts";

export const EXECUTOR_PROTOCOL_VERSION = 1;

// The channel's environment variables live in env-names.ts (no zod there: the bridge's prestart imports them).
export { EXECUTOR_FD_ENV, TOOL_HOME_ENV, TOOL_SHELL_HELPER_ENV, TOOL_SHELL_NEST_ENV } from "./env-names.ts";

/** Longest line either side accepts. Read results carry base64 images (Pi caps what it sends the model). */
export const MAX_EXECUTOR_FRAME_BYTES = 64 * 1024 * 1024;
/** Calls the executor runs at once; more are refused (Pi's parallel tool mode stays well under this). */
export const MAX_CONCURRENT_CALLS = 64;

/** The built-in tools routed to the executor (Pi's own implementations run there): the one tool table's names. */
export const ROUTED_TOOLS = TOOL_NAMES;
export type RoutedTool = ToolName;

/**
 * What Pi's bash tool exposes about the session (createBashTool's exposeSessionEnvironment), less any path into
 * Pi's private tree: PI_SESSION_FILE names Pi's session file, which the tools have no business knowing.
 */
export const SESSION_ENV_NAMES = ["PI_SESSION_ID", "PI_PROVIDER", "PI_MODEL", "PI_REASONING_LEVEL"] as const;

const callId = z.string().min(1).max(512);
const text = (max: number) => z.string().max(max);
/** Absolute, NUL-free: what every path crossing the channel must be. */
export const AbsolutePath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => p.startsWith("/") && !p.includes("\0"), "must be an absolute path without NUL");

const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

export const VettedFileSchema = z.strictObject({
  path: AbsolutePath,
  sha256,
  bytes: z.number().int().nonnegative(),
});

// ---------------------------------------------------------------- Pi → executor

export const HelloRequest = z.strictObject({
  type: z.literal("hello"),
  protocol: z.literal(EXECUTOR_PROTOCOL_VERSION),
});

/** Options Pi's own tool definitions take from Pi's settings; forwarded so the executor builds the same tools. */
export const ToolOptions = z.strictObject({
  /** settings.shellCommandPrefix (bash). */
  commandPrefix: text(64 * 1024).optional(),
  /** settings.images.autoResize (read). */
  autoResizeImages: z.boolean(),
  /** The current model's input kinds (read's non-vision note), or null when Pi has no model. */
  modelInput: z.array(text(32)).max(16).nullable(),
});

export const ToolCallRequest = z.strictObject({
  type: z.literal("call"),
  id: callId,
  tool: z.enum(ROUTED_TOOLS),
  /** The tool's parameters after the gate (Pi validated them against the tool's schema). */
  params: z.record(z.string().max(256), z.unknown()),
  cwd: AbsolutePath,
  /** Files a dialog showed for this call, to verify immediately before a bash run. */
  vetted: z.array(VettedFileSchema).max(64),
  options: ToolOptions,
  sessionEnv: z.partialRecord(z.enum(SESSION_ENV_NAMES), text(4096)),
  /**
   * Present only when the gate confirmed this bash call and the person approved it (the router sets it from the
   * gate's own record, person-approvals.ts; never from the model's input): the call runs with the network.
   */
  networkApproved: z.strictObject({ toolCallId: callId }).optional(),
});

/** A person's `!` command (Pi's RPC `bash`): runs through the same shell, streamed back as raw bytes. */
export const UserBashRequest = z.strictObject({
  type: z.literal("user_bash"),
  id: callId,
  command: text(1024 * 1024),
  cwd: AbsolutePath,
});

export const AbortRequest = z.strictObject({ type: z.literal("abort"), id: callId });

/**
 * Context files (AGENTS.md…) Pi loaded with its own privileges: does the tools' principal read the same bytes
 * at that path? If not (a symlink to Pi's secrets, /proc/self/environ…), the router keeps them from the model.
 */
export const ContextCheckRequest = z.strictObject({
  type: z.literal("context_check"),
  id: callId,
  files: z.array(z.strictObject({ path: AbsolutePath, sha256 })).max(64),
});

export const ExecutorRequest = z.discriminatedUnion("type", [
  HelloRequest,
  ToolCallRequest,
  UserBashRequest,
  AbortRequest,
  ContextCheckRequest,
]);
export type ExecutorRequest = z.infer<typeof ExecutorRequest>;
export type ToolCallRequest = z.infer<typeof ToolCallRequest>;
export type UserBashRequest = z.infer<typeof UserBashRequest>;
export type ToolOptions = z.infer<typeof ToolOptions>;

// ---------------------------------------------------------------- executor → Pi

/** Pi's tool result content: text or image (loose: Pi's own shapes pass through untouched). */
export const ResultContent = z.union([
  z.looseObject({ type: z.literal("text"), text: z.string() }),
  z.looseObject({ type: z.literal("image"), data: z.string(), mimeType: z.string().max(128) }),
]);

export const ToolResultSchema = z.looseObject({
  content: z.array(ResultContent).max(10_000),
  details: z.unknown().optional(),
  /**
   * Credential values the executor withheld from this result (or partial result) before sending it: how many,
   * and where they came from (files, `$VARIABLES`), never the values. The router logs it for the audit.
   */
  withheld: z
    .strictObject({
      count: z.number().int().nonnegative(),
      sources: z.array(z.string().max(512)).max(64),
      degraded: z.string().max(512).optional(),
    })
    .optional(),
});
export type ToolResultShape = z.infer<typeof ToolResultSchema>;

export const HelloResponse = z.strictObject({
  type: z.literal("hello"),
  protocol: z.literal(EXECUTOR_PROTOCOL_VERSION),
  pid: z.number().int(),
  uid: z.number().int(),
  gid: z.number().int(),
  home: z.string(),
  /** How tool shells start: through the fd-closing helper, or bash directly (fds above 2 leak to tools). */
  shell: z.strictObject({ file: z.string(), closesInheritedFds: z.boolean(), nested: z.boolean() }),
  ripgrepConfig: z.string().nullable(),
});

export const UpdateFrame = z.strictObject({
  type: z.literal("update"),
  id: callId,
  partial: ToolResultSchema,
});
export const DataFrame = z.strictObject({
  type: z.literal("data"),
  id: callId,
  /** Raw output bytes, base64 (a chunk may end inside a UTF-8 sequence). */
  chunk: z.string().max(16 * 1024 * 1024),
});
export const ResultFrame = z.strictObject({
  type: z.literal("result"),
  id: callId,
  result: ToolResultSchema,
});
export const ExitFrame = z.strictObject({
  type: z.literal("exit"),
  id: callId,
  exitCode: z.number().int().nullable(),
});

export const CallErrorCode = z.enum([
  /** The tool itself failed (Pi's error message, as the local tool would have thrown it). */
  "tool_error",
  "aborted",
  "timeout",
  /** The executor refused before running: path resolves elsewhere, vetted content changed, bad params. */
  "refused",
  "invalid_request",
  "busy",
  "internal",
]);
export type CallErrorCode = z.infer<typeof CallErrorCode>;

export const CallErrorFrame = z.strictObject({
  type: z.literal("error"),
  id: callId,
  code: CallErrorCode,
  message: z.string().max(8 * 1024 * 1024),
});

export const ContextCheckResult = z.strictObject({
  type: z.literal("context_check"),
  id: callId,
  files: z.array(z.strictObject({ path: z.string(), same: z.boolean(), reason: z.string().nullable() })),
});

/** A line the executor could not take as a request (no usable id to answer). */
export const ProtocolErrorFrame = z.strictObject({
  type: z.literal("protocol_error"),
  message: z.string().max(4096),
});

export const ExecutorResponse = z.discriminatedUnion("type", [
  HelloResponse,
  UpdateFrame,
  DataFrame,
  ResultFrame,
  ExitFrame,
  CallErrorFrame,
  ContextCheckResult,
  ProtocolErrorFrame,
]);
export type ExecutorResponse = z.infer<typeof ExecutorResponse>;
export type HelloResponse = z.infer<typeof HelloResponse>;

/** Short, single-line description of a zod failure (never echoes values). */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join(".") || "frame"}: ${issue.message}`)
    .join("; ")
    .slice(0, 1000);
}
