// Pending dialogs (Pi's select/confirm/input/editor requests) and the rules an answer must meet.
import { DIALOG_METHODS, type DialogMethod, MAX_DIALOG_TEXT_BYTES, type PendingDialog } from "./protocol.ts";

/** The part of an answer Pi reads, after validation against the dialog's kind. */
export type DialogAnswer = { cancelled: true } | { confirmed: boolean } | { value: string };

export type AnswerCheck = { ok: true; answer: DialogAnswer } | { ok: false; problem: string };

export function isDialogMethod(method: unknown): method is DialogMethod {
  return typeof method === "string" && (DIALOG_METHODS as readonly string[]).includes(method);
}

/** Checks an extension_ui_response against the dialog it answers: the kind and the offered options. */
export function checkAnswer(dialog: PendingDialog, frame: Record<string, unknown>): AnswerCheck {
  if (frame.cancelled !== undefined) {
    if (frame.cancelled === true && frame.confirmed === undefined && frame.value === undefined) {
      return { ok: true, answer: { cancelled: true } };
    }
    return { ok: false, problem: "cancelled must be true and come alone" };
  }
  switch (dialog.method) {
    case "confirm":
      if (typeof frame.confirmed === "boolean" && frame.value === undefined) {
        return { ok: true, answer: { confirmed: frame.confirmed } };
      }
      return { ok: false, problem: "a confirm dialog takes a boolean `confirmed`" };
    case "select":
      if (typeof frame.value !== "string" || frame.confirmed !== undefined) {
        return { ok: false, problem: "a select dialog takes a string `value`" };
      }
      if (!(dialog.options ?? []).includes(frame.value)) {
        return { ok: false, problem: "`value` is not one of the offered options" };
      }
      return { ok: true, answer: { value: frame.value } };
    case "input":
    case "editor":
      if (typeof frame.value !== "string" || frame.confirmed !== undefined) {
        return { ok: false, problem: `an ${dialog.method} dialog takes a string \`value\`` };
      }
      if (Buffer.byteLength(frame.value) > MAX_DIALOG_TEXT_BYTES) {
        return { ok: false, problem: `\`value\` exceeds ${MAX_DIALOG_TEXT_BYTES} bytes` };
      }
      return { ok: true, answer: { value: frame.value } };
  }
}

/** Builds the tracked form of an extension_ui_request line, or undefined if it is not a dialog. */
export function toPendingDialog(line: Record<string, unknown>, seq: number): PendingDialog | undefined {
  if (typeof line.id !== "string" || !isDialogMethod(line.method)) return undefined;
  const { type: _type, ...rest } = line;
  const options = Array.isArray(line.options) ? line.options.filter((o) => typeof o === "string") : undefined;
  return { ...rest, id: line.id, method: line.method, ...(options ? { options } : {}), seq } as PendingDialog;
}
