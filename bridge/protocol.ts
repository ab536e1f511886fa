// Bridge protocol v2: every frame shape, defined once. The bridge, the typed client and the tests
// import these schemas; docs/protocol.md is checked against them (tests/unit/bridge-protocol-doc.test.ts).
import type { RpcCommand } from "@earendil-works/pi-coding-agent";
import { z } from "zod";
import { GRANT_ID, Grant } from "../agent-runtime/policy/grants.ts";
import { POLICY_MODES } from "../agent-runtime/policy/policy-modes.ts";
import { NETWORK_MODES } from "../agent-runtime/sandbox/egress.ts";

export const PROTOCOL_VERSION = 2;

/** A nonce or a proof of the handshake (bridge/handshake.ts): 32 bytes as lowercase hex. */
const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

/** WebSocket close codes the bridge uses. */
export const CloseCode = {
  /** Normal close while the bridge shuts down. */
  goingAway: 1001,
  /** A wrong proof, a malformed/late hello or a protocol-1 hello (a failed proof waits a growing delay). */
  unauthorized: 4001,
  /** A newer hello took over as the controller. */
  superseded: 4002,
  /** The client could not keep up (its unsent backlog overflowed); it should resume. */
  tooSlow: 4008,
  /** Too many connections were waiting to authenticate: the oldest was let go. Retry. */
  busy: 4029,
} as const;

/** Pi 0.84.2 RPC commands (rpc-types.d.ts) plus the patch's replace_queue. */
export const PI_COMMAND_TYPES = [
  "prompt",
  "steer",
  "follow_up",
  "abort",
  "new_session",
  "get_state",
  "set_model",
  "cycle_model",
  "get_available_models",
  "set_thinking_level",
  "cycle_thinking_level",
  "get_available_thinking_levels",
  "set_steering_mode",
  "set_follow_up_mode",
  "compact",
  "set_auto_compaction",
  "set_auto_retry",
  "abort_retry",
  "bash",
  "abort_bash",
  "get_session_stats",
  "export_html",
  "switch_session",
  "fork",
  "clone",
  "get_fork_messages",
  "get_entries",
  "get_tree",
  "get_last_assistant_text",
  "set_session_name",
  "get_messages",
  "get_commands",
  "replace_queue",
] as const;
export type PiCommandType = (typeof PI_COMMAND_TYPES)[number];

/** Commands our patch adds to Pi's RPC handler (Pi's own types do not know them). */
type PatchCommandType = "replace_queue";
// Compile-time check (npm run typecheck): the list above is exactly the installed Pi's RpcCommand types plus
// the patch's, so a Pi upgrade that adds, renames or drops a command fails to type-check, naming it.
({}) as {
  missingFromList: Exclude<RpcCommand["type"] | PatchCommandType, PiCommandType>;
  unknownToPi: Exclude<PiCommandType, RpcCommand["type"] | PatchCommandType>;
} satisfies { missingFromList: never; unknownToPi: never };

/** Commands after which Pi starts a new session object (its queues vanish without a queue_update). */
export const SESSION_REPLACING_COMMANDS: ReadonlySet<string> = new Set([
  "new_session",
  "switch_session",
  "fork",
  "clone",
]);

/**
 * Commands that only read: running one twice changes nothing. After a genuine epoch change (the bridge's
 * state was lost) a client may resend these; any other command's outcome is unknown and must not be resent.
 */
export const READ_ONLY_COMMANDS: ReadonlySet<string> = new Set([
  "get_state",
  "get_messages",
  "get_available_models",
  "get_available_thinking_levels",
  "get_session_stats",
  "get_fork_messages",
  "get_entries",
  "get_tree",
  "get_last_assistant_text",
  "get_commands",
  "get_policy",
  "bridge_status",
  "get_network_mode",
]);

/** Dialog methods that wait for an answer; every other extension_ui_request is fire-and-forget. */
export const DIALOG_METHODS = ["select", "confirm", "input", "editor"] as const;
export type DialogMethod = (typeof DIALOG_METHODS)[number];

/** Longest string accepted as an input/editor answer. */
export const MAX_DIALOG_TEXT_BYTES = 1024 * 1024;

const commandId = z.string().min(1).max(256);

// ---------------------------------------------------------------- client → bridge

/**
 * The client's answer to the challenge: its own nonce and its proof (HMAC over both nonces and the client id with
 * the key derived from the token). The token itself never crosses the wire.
 */
export const HelloFrame = z.strictObject({
  type: z.literal("hello"),
  protocol: z.literal(PROTOCOL_VERSION),
  clientId: z.string().min(1).max(256),
  nonce: hex64,
  proof: hex64,
  resume: z
    .strictObject({
      epoch: z.string().regex(/^[0-9a-f]{32}$/),
      lastSeq: z.number().int().nonnegative(),
    })
    .optional(),
});
export type HelloFrame = z.infer<typeof HelloFrame>;

export const AckFrame = z.strictObject({ type: z.literal("ack"), seq: z.number().int().nonnegative() });

/** An answer to a pending dialog; the kind-specific checks happen against the dialog itself. */
export const ExtensionUiResponseFrame = z.looseObject({
  type: z.literal("extension_ui_response"),
  id: z.string().min(1).max(256),
  commandId: commandId.optional(),
  confirmed: z.boolean().optional(),
  value: z.string().optional(),
  cancelled: z.boolean().optional(),
});

export const PolicyName = z.enum(POLICY_MODES);
export type PolicyName = z.infer<typeof PolicyName>;

export const SetPolicyFrame = z.strictObject({
  type: z.literal("set_policy"),
  id: commandId,
  policy: PolicyName,
  expected: PolicyName.optional(),
});

export const GetPolicyFrame = z.strictObject({ type: z.literal("get_policy"), id: commandId });

export const BridgeStatusFrame = z.strictObject({ type: z.literal("bridge_status"), id: commandId });

/** The session grants in force ("Allow for this session" answers): answered with `{grants}`. */
export const ListGrantsFrame = z.strictObject({ type: z.literal("list_grants"), id: commandId });

/** Revokes one session grant by its id, or every one (`"all"`): answered with `{revoked}`. */
export const RevokeGrantFrame = z.strictObject({
  type: z.literal("revoke_grant"),
  id: commandId,
  grant: z.union([GRANT_ID, z.literal("all")]),
});

/** The operator's network mode for the tools (lockdown | registries | open); written to the network mode file. */
export const NetworkModeName = z.enum(NETWORK_MODES);
export type NetworkModeName = z.infer<typeof NetworkModeName>;

/** Sets the tools' network mode: answered with `{previous, current}` (NetworkModeReport each). */
export const SetNetworkModeFrame = z.strictObject({
  type: z.literal("set_network_mode"),
  id: commandId,
  mode: NetworkModeName,
});

/** The network mode in force: answered with a NetworkModeReport. */
export const GetNetworkModeFrame = z.strictObject({ type: z.literal("get_network_mode"), id: commandId });

/** Any Pi RPC command; its other fields are Pi's to validate. `id` is mandatory in network mode. */
export const PiCommandFrame = z.looseObject({
  type: z.enum(PI_COMMAND_TYPES),
  id: commandId.optional(),
});

/** The commands the bridge answers itself (with a response, like Pi's). */
const BRIDGE_COMMAND_FRAMES = [
  SetPolicyFrame,
  GetPolicyFrame,
  BridgeStatusFrame,
  ListGrantsFrame,
  RevokeGrantFrame,
  SetNetworkModeFrame,
  GetNetworkModeFrame,
] as const;

/** Their types, read off the schemas (the intake routes by this). */
export const BRIDGE_COMMAND_TYPES: ReadonlySet<string> = new Set(
  BRIDGE_COMMAND_FRAMES.map((frame) => frame.shape.type.value),
);

/** The frames the bridge answers itself (everything else is a Pi command). */
const BRIDGE_CLIENT_FRAMES = [
  HelloFrame,
  AckFrame,
  ExtensionUiResponseFrame,
  ...BRIDGE_COMMAND_FRAMES,
] as const;

export const ClientFrame = z.discriminatedUnion("type", [...BRIDGE_CLIENT_FRAMES, PiCommandFrame]);
export type ClientFrame = z.infer<typeof ClientFrame>;

/** Every `type` a client may send, read off the schemas above (never a hand-kept copy). */
export const CLIENT_FRAME_TYPES: readonly string[] = [
  ...BRIDGE_CLIENT_FRAMES.map((frame) => frame.shape.type.value),
  ...PI_COMMAND_TYPES,
];

// ---------------------------------------------------------------- bridge → client

const seq = z.number().int().nonnegative();

/** A dialog Pi is waiting on: Pi's extension_ui_request, plus the seq it was sent with. */
export const PendingDialog = z.looseObject({
  id: z.string(),
  method: z.enum(DIALOG_METHODS),
  title: z.string().optional(),
  options: z.array(z.string()).optional(),
  timeout: z.number().optional(),
  seq,
});
export type PendingDialog = z.infer<typeof PendingDialog>;

export const QueueSnapshot = z.strictObject({
  steering: z.array(z.string()),
  followUp: z.array(z.string()),
});
export type QueueSnapshot = z.infer<typeof QueueSnapshot>;

const ExitInfo = z.strictObject({ code: z.number().int().nullable(), signal: z.string().nullable() });

export const PiStatus = z.strictObject({
  pid: z.number().int().nullable(),
  /**
   * starting: spawned, being probed (commands wait); running: proved patched, serving; restarting: exited,
   * hung or not spawned, a new Pi follows; exited: gone for good (shutdown, stdio mode); refused: failed the
   * patch probe (nothing served).
   */
  state: z.enum(["starting", "running", "restarting", "exited", "refused"]),
  exit: ExitInfo.nullable(),
  /** Whether this Pi passed the behavioural patch probes (null while probing). */
  patched: z.boolean().nullable(),
  /** Why Pi is refused or gone (null while all is well). */
  problem: z.string().nullable(),
  /** Restarts within the last 10 minutes (the first 3 quick; beyond, a crash loop with a long backoff). */
  restarts: z.number().int().nonnegative(),
});
export type PiStatus = z.infer<typeof PiStatus>;

/** One protection: whether it holds now, and what it does or why it does not. */
export const Protection = z.strictObject({ active: z.boolean(), detail: z.string() });

/**
 * The three principals (bridge, Pi, tools) and each protection between them (issue 11). `mode` is "isolated"
 * only when every protection holds; otherwise "degraded", with one reason per missing protection.
 */
export const Isolation = z.strictObject({
  mode: z.enum(["isolated", "degraded"]),
  /** The tools' user (what --agent-user names), its uid and gid. */
  user: z.string().nullable(),
  uid: z.number().int().nullable(),
  gid: z.number().int().nullable(),
  /** All reasons in one line (null when isolated). */
  reason: z.string().nullable(),
  reasons: z.array(z.string()),
  /** What the bridge refused or corrected at start to keep a protection (a tools-writable policy file…). */
  notes: z.array(z.string()),
  principals: z.strictObject({
    bridge: z.strictObject({ uid: z.number().int() }),
    pi: z.strictObject({ user: z.string().nullable(), uid: z.number().int(), gid: z.number().int() }),
    tools: z.strictObject({
      user: z.string().nullable(),
      uid: z.number().int(),
      gid: z.number().int(),
      home: z.string(),
    }),
  }),
  protections: z.strictObject({
    /** Bridge, Pi and tools on three uids (needs root). */
    uidSeparation: Protection,
    /** The tools' Landlock domain: filesystem rules, and from ABI 6 signal and abstract-socket scopes. */
    landlock: z.strictObject({
      active: z.boolean(),
      abi: z.number().int(),
      scopes: z.array(z.enum(["signal", "abstract_unix_socket"])),
      detail: z.string(),
    }),
    /** Tools get an allow-listed environment (no provider keys, no tokens). */
    toolEnvScrubbed: Protection,
    /** The bridge token is in no environment or file a tool can read. */
    tokenScrubbed: Protection,
    /** Built-in tools and `!` commands run in the tool executor, not in Pi's process. */
    executorRouting: Protection,
    /**
     * The tools' network (issue 18): loopback only, the rest through the egress proxy or an approved call.
     * `guard` is what the kernel lets the supervisor enforce; `mode` the operator's network mode.
     */
    egress: z.strictObject({
      active: z.boolean(),
      guard: z.enum(["enforcing", "degraded", "off"]),
      mode: z.enum(["lockdown", "registries", "open"]),
      filter: z.enum(["notify", "no-inet", "none"]).nullable(),
      kernel: z.strictObject({
        landlockAbi: z.number().int(),
        landlockNet: z.boolean(),
        seccompFilter: z.boolean(),
        seccompNotify: z.boolean(),
        notifyAddfd: z.boolean(),
      }),
      detail: z.string(),
    }),
    /**
     * Tool processes end with their call, their pair and the bridge (a subreaper above each); they hold at most
     * `nproc` tasks, below the container's budget; the OOM killer takes them first.
     */
    toolProcesses: z.strictObject({
      active: z.boolean(),
      nproc: z.number().int().nullable(),
      containerPids: z.number().int().nullable(),
      oomScoreAdj: z.number().int().nullable(),
      detail: z.string(),
    }),
  }),
});
export type Isolation = z.infer<typeof Isolation>;

export const PolicyReport = z.strictObject({
  policy: PolicyName,
  source: z.enum(["file", "env", "default"]),
  path: z.string(),
  fileProblem: z.string().optional(),
});
export type PolicyReport = z.infer<typeof PolicyReport>;

/** What a client needs to rebuild its view when it cannot replay. */
export const Snapshot = z.strictObject({
  /** Pi's get_state data (null if Pi never answered). */
  state: z.record(z.string(), z.unknown()).nullable(),
  queue: QueueSnapshot,
  pendingDialogs: z.array(PendingDialog),
  policy: PolicyReport.nullable(),
  pi: PiStatus,
  agentBusy: z.boolean(),
  /** Which protections hold between the bridge, Pi and the tools (the same report as bridge_status). */
  isolation: Isolation,
  /** The session grants in force. */
  grants: z.array(Grant),
});
export type Snapshot = z.infer<typeof Snapshot>;

export const ResetReason = z.enum(["new", "epoch_changed", "cursor_too_old"]);

/** The bridge's first frame on every connection (it speaks first). Connection-scoped: no seq, never replayed. */
export const ChallengeFrame = z.strictObject({
  type: z.literal("challenge"),
  protocol: z.literal(PROTOCOL_VERSION),
  nonce: hex64,
});
export type ChallengeFrame = z.infer<typeof ChallengeFrame>;

/**
 * The answer to an accepted hello. Connection-scoped: seq 0, never replayed. `proof` shows the bridge knows the
 * token (HMAC over both nonces, the client id and the epoch); a client believes nothing before it checks it.
 */
export const WelcomeFrame = z.strictObject({
  type: z.literal("welcome"),
  seq: z.literal(0),
  protocol: z.literal(PROTOCOL_VERSION),
  proof: hex64,
  epoch: z.string().regex(/^[0-9a-f]{32}$/),
  headSeq: seq,
  resumed: z.boolean(),
  reset: ResetReason.nullable(),
  pendingDialogs: z.array(PendingDialog),
  snapshot: Snapshot,
});
export type WelcomeFrame = z.infer<typeof WelcomeFrame>;

/** A response to a command (Pi's, relayed with the client's id, or the bridge's own). */
export const ResponseFrame = z.looseObject({
  type: z.literal("response"),
  seq,
  id: z.string().optional(),
  command: z.string(),
  success: z.boolean(),
  error: z.string().optional(),
  code: z.string().optional(),
  data: z.unknown().optional(),
});

export const ErrorCode = z.enum([
  "invalid_json",
  "frame_too_large",
  "invalid_frame",
  "unknown_type",
  "missing_id",
]);

/** Bad input that cannot be answered as a response (no usable id). The connection carries on. */
export const ErrorFrame = z.strictObject({
  type: z.literal("error"),
  seq,
  code: ErrorCode,
  message: z.string(),
  id: z.string().optional(),
});

export const DialogClosedFrame = z.strictObject({
  type: z.literal("dialog_closed"),
  seq,
  id: z.string(),
  outcome: z.literal("refused"),
  reason: z.enum([
    "malformed_answer",
    "detached_grace",
    "cancelled",
    "timed_out",
    "shutdown",
    "agent_exited",
  ]),
});

export const AgentExitedFrame = z.strictObject({
  type: z.literal("agent_exited"),
  seq,
  code: z.number().int().nullable(),
  signal: z.string().nullable(),
  /**
   * "exited" (shutdown or stdio: final), "unverified: …" (failed the patch probe: final), or "crash_loop" (Pi
   * keeps exiting; the bridge keeps retrying with a long backoff, and `agent_restarted` follows once one serves).
   */
  reason: z.string().optional(),
});

/**
 * A new Pi took over on the same session: after Pi exited unexpectedly (`agent_exited` cause), or when the
 * bridge itself restarted on its state dir (`bridge_restarted`). Pi's queues and any running turn are gone;
 * dialogs it held were closed before this frame; the conversation (the session) is kept.
 */
export const AgentRestartedFrame = z.strictObject({
  type: z.literal("agent_restarted"),
  seq,
  cause: z.enum(["agent_exited", "bridge_restarted"]),
  previous: ExitInfo.nullable(),
  pid: z.number().int().nullable(),
  restarts: z.number().int().nonnegative(),
  sessionId: z.string().nullable(),
});

/** Every other Pi stdout line (events, extension_ui_request…), passed through with a seq. */
export const PiEventFrame = z.looseObject({ type: z.string(), seq });

/**
 * The effective policy changed: by `set_policy`, or observed after someone else (the operator's
 * `chat-ui-agent-policy set`, a direct file edit) changed it: the bridge watches the file, and rereads it when Pi
 * starts a tool call, so the change is announced at once, and always before that tool call.
 */
export const PolicyChangedFrame = z.strictObject({
  type: z.literal("policy_changed"),
  seq,
  previous: PolicyName.nullable(),
  current: PolicyReport,
  cause: z.enum(["set_policy", "observed"]),
});

/**
 * The session grants changed: one was made ("Allow for this session"), revoked (revoke_grant), or all ended with
 * Pi's session. `grants` is the whole list now in force.
 */
export const GrantsChangedFrame = z.strictObject({
  type: z.literal("grants_changed"),
  seq,
  cause: z.enum(["granted", "revoked", "session_changed"]),
  grants: z.array(Grant),
});

/** The network mode in force, its file, and why the file does not hold it (null when it does). */
export const NetworkModeReport = z.strictObject({
  mode: NetworkModeName,
  path: z.string(),
  problem: z.string().nullable(),
});
export type NetworkModeReport = z.infer<typeof NetworkModeReport>;

/**
 * The tools' network mode changed: by `set_network_mode`, or in the file (the operator's `chat-ui-agent-policy
 * network`, an edit). The tools' supervisor applies it at once; the isolation report follows (`open`: degraded).
 */
export const NetworkModeChangedFrame = z.strictObject({
  type: z.literal("network_mode_changed"),
  seq,
  previous: NetworkModeName,
  current: NetworkModeReport,
  cause: z.enum(["set_network_mode", "file"]),
});

/** The frames the bridge makes itself (every other numbered frame is a Pi event passed through). */
const BRIDGE_FRAMES = [
  ChallengeFrame,
  WelcomeFrame,
  ResponseFrame,
  ErrorFrame,
  DialogClosedFrame,
  AgentExitedFrame,
  AgentRestartedFrame,
  PolicyChangedFrame,
  GrantsChangedFrame,
  NetworkModeChangedFrame,
] as const;

/** Every `type` the bridge itself sends, read off the schemas above (never a hand-kept copy). */
export const BRIDGE_FRAME_TYPES: readonly string[] = BRIDGE_FRAMES.map((frame) => frame.shape.type.value);

/** Where the bridge keeps its state, whether its journal is written, and where its log file is. */
export const Durability = z.strictObject({
  stateDir: z.string().nullable(),
  /**
   * ok: every frame is journaled before it is sent; off: stdio mode; degraded: writes fail (see problem), frames
   * are sent from memory, writes are retried, and this epoch is not resumed after a bridge restart until they work.
   */
  journal: z.enum(["ok", "off", "degraded"]),
  problem: z.string().nullable(),
  /** The log file (its path only, never its contents). */
  logFile: z.string().nullable(),
  session: z.strictObject({ id: z.string(), file: z.string().nullable() }).nullable(),
});
export type Durability = z.infer<typeof Durability>;

/** Why the bridge is not healthy (GET /v1/health answers 503 then). */
export const HealthReason = z.enum([
  "starting_too_long",
  "pi_hung",
  "crash_loop",
  "refused",
  "agent_exited",
  "delivery_frozen",
  "shutting_down",
]);
export type HealthReason = z.infer<typeof HealthReason>;

export const Health = z.strictObject({
  ok: z.boolean(),
  reason: HealthReason.nullable(),
  detail: z.string().nullable(),
});
export type Health = z.infer<typeof Health>;

/** The bridge's own bridge_status data. */
export const BridgeStatus = z.strictObject({
  epoch: z.string(),
  headSeq: seq,
  firstSeq: seq,
  mode: z.enum(["network", "stdio"]),
  pi: PiStatus,
  isolation: Isolation,
  policy: PolicyReport.nullable(),
  pendingDialogs: z.array(PendingDialog),
  client: z.strictObject({
    attached: z.boolean(),
    clientId: z.string().nullable(),
    ackedSeq: seq.nullable(),
  }),
  agentBusy: z.boolean(),
  shuttingDown: z.boolean(),
  durability: Durability,
  health: Health,
});
export type BridgeStatus = z.infer<typeof BridgeStatus>;

/** Error codes in responses the bridge itself produces. */
export const BridgeResponseError = z.enum([
  "invalid_frame",
  "idempotency_conflict",
  "ui_request_not_pending",
  "invalid_ui_response",
  "agent_exited",
  "agent_unverified",
  "agent_starting",
  "outcome_unknown",
  "shutting_down",
  "policy_conflict",
  "invalid_policy",
  "symlink_target",
  "io_error",
  "policy_blocks_bash",
  "grant_not_found",
  "network_mode_unavailable",
]);
export type BridgeResponseError = z.infer<typeof BridgeResponseError>;

/** A failed response the bridge made itself (not relayed from Pi): its `code` is one of the bridge's. */
export const BridgeFailureResponse = ResponseFrame.extend({
  success: z.literal(false),
  error: z.string(),
  code: BridgeResponseError,
});

/** The codes of BridgeFailureResponse, read off the schema. */
export const BRIDGE_RESPONSE_ERRORS: readonly BridgeResponseError[] =
  BridgeFailureResponse.shape.code.options;

/** Schemas by name, for docs and JSON Schema export. */
export const schemas = {
  HelloFrame,
  AckFrame,
  ExtensionUiResponseFrame,
  SetPolicyFrame,
  GetPolicyFrame,
  BridgeStatusFrame,
  ListGrantsFrame,
  RevokeGrantFrame,
  SetNetworkModeFrame,
  GetNetworkModeFrame,
  PiCommandFrame,
  ChallengeFrame,
  WelcomeFrame,
  ResponseFrame,
  ErrorFrame,
  DialogClosedFrame,
  AgentExitedFrame,
  AgentRestartedFrame,
  PolicyChangedFrame,
  GrantsChangedFrame,
  NetworkModeChangedFrame,
  BridgeFailureResponse,
  PiEventFrame,
  Snapshot,
  PendingDialog,
  BridgeStatus,
} as const;
