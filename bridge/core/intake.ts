// Intake: one client frame's text in, one decision out. The only size check after the transport's hard cap
// (ws maxPayload, the stdin line bound), one JSON.parse, one depth scan, and at most one zod parse. Pure: it
// publishes nothing and touches no state, so every path is testable on its own.
import { capText, MAX_FRAME_DEPTH, nestsDeeperThan, usableId } from "../frame-input.ts";
import { BRIDGE_COMMAND_TYPES, CLIENT_FRAME_TYPES, ClientFrame } from "../protocol.ts";
import { errorFrame, type Frame, failure, isRecord } from "./frames.ts";

export const DIALOG_ANSWER = "extension_ui_response";

/** The commands the bridge answers itself. */
export type BridgeCommand = Extract<
  ClientFrame,
  {
    type:
      | "get_policy"
      | "bridge_status"
      | "set_policy"
      | "list_grants"
      | "revoke_grant"
      | "set_network_mode"
      | "get_network_mode";
  }
>;

export type Intake =
  /** Bad input: publish `frame` (an error frame, or a failed response when the frame had a usable id). */
  | { kind: "reject"; frame: Frame }
  | { kind: "ack"; seq: number }
  /** An answer to a dialog (checked against the dialog itself by the dialog book). */
  | { kind: "answer"; frame: Frame; dialogId: string | undefined; commandId: string | undefined }
  /** An answer that cannot be taken: it declines the dialog it names, if that one is pending. */
  | { kind: "bad_answer"; dialogId: string | undefined; problem: string }
  | { kind: "bridge"; id: string | undefined; command: BridgeCommand; payload: Frame }
  | { kind: "pi"; id: string | undefined; type: string; payload: Frame };

export interface IntakeOptions {
  maxFrameBytes: number;
  /** Every command and answer must carry its id (the idempotency key): network mode. */
  requireIds: boolean;
}

export function oversized(maxFrameBytes: number): Frame {
  return errorFrame("frame_too_large", `frame exceeds --max-frame-bytes (${maxFrameBytes})`);
}

export function readClientFrame(text: string, options: IntakeOptions): Intake {
  if (Buffer.byteLength(text) > options.maxFrameBytes) {
    return { kind: "reject", frame: oversized(options.maxFrameBytes) };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return reject("invalid_json", capText(`frame is not JSON: ${(err as Error).message}`));
  }
  // JSON.parse is iterative; everything after it (schemas, digests, Pi) must never see deep data.
  if (nestsDeeperThan(text, MAX_FRAME_DEPTH)) {
    const problem = `frame nests deeper than ${MAX_FRAME_DEPTH} levels`;
    const id = isRecord(parsed) ? usableId(parsed.id) : undefined;
    const type = isRecord(parsed) && typeof parsed.type === "string" ? capText(parsed.type, 64) : "unknown";
    if (id !== undefined && type !== DIALOG_ANSWER)
      return { kind: "reject", frame: failure(id, type, "invalid_frame", problem) };
    return reject("invalid_frame", problem);
  }
  if (!isRecord(parsed) || typeof parsed.type !== "string") {
    return reject("invalid_frame", "a frame is a JSON object with a string `type`");
  }
  const type = parsed.type;
  const rawId = parsed.id;
  const id = usableId(rawId);
  if (!CLIENT_FRAME_TYPES.includes(type)) {
    return reject("unknown_type", `unknown frame type "${capText(type, 64)}"`, id);
  }
  if (type === DIALOG_ANSWER) return readAnswer(parsed, options);
  if (type === "hello")
    return reject("invalid_frame", "hello is only valid as the first frame of a connection");
  if (rawId !== undefined && id === undefined) {
    // Never echoed: an id of any length would come back as a frame of that length.
    return reject("invalid_frame", "`id` must be a string of 1 to 256 characters");
  }
  const check = ClientFrame.safeParse(parsed);
  if (!check.success) {
    const problem = capText(
      check.error.issues.map((i) => `${capText(i.path.join("."), 64) || "frame"}: ${i.message}`).join("; "),
    );
    if (id !== undefined) return { kind: "reject", frame: failure(id, type, "invalid_frame", problem) };
    return reject("invalid_frame", problem);
  }
  const frame = check.data;
  if (frame.type === "ack") return { kind: "ack", seq: frame.seq };
  if (id === undefined && options.requireIds) {
    return reject("missing_id", `a ${type} command needs an "id" (its idempotency key)`);
  }
  if (BRIDGE_COMMAND_TYPES.has(frame.type)) {
    return { kind: "bridge", id, command: frame as BridgeCommand, payload: parsed };
  }
  return { kind: "pi", id, type, payload: parsed };
}

function readAnswer(frame: Frame, options: IntakeOptions): Intake {
  const dialogId = usableId(frame.id);
  const rawCommandId = frame.commandId;
  const commandId = usableId(rawCommandId);
  if (rawCommandId !== undefined && commandId === undefined) {
    return {
      kind: "bad_answer",
      dialogId,
      problem: "commandId must be a non-empty string of at most 256 chars",
    };
  }
  if (commandId === undefined && options.requireIds) {
    return { kind: "bad_answer", dialogId, problem: 'an answer needs a "commandId" (its idempotency key)' };
  }
  return { kind: "answer", frame, dialogId, commandId };
}

function reject(code: string, message: string, id?: string): Intake {
  return { kind: "reject", frame: errorFrame(code, message, id) };
}
