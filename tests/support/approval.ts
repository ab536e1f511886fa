// The gate's approval dialogs as a test person answers them: a grantable call is a `select` of "Allow once /
// Allow for this session / Deny" (its whole prompt in the title), a boundary action a yes/no `confirm`.
import { APPROVAL_CHOICES } from "../../agent-runtime/policy/grants.ts";

type Line = { type: string; method?: unknown; title?: unknown; message?: unknown; [key: string]: unknown };

export const isApprovalDialog = (f: Line): boolean =>
  f.type === "extension_ui_request" && (f.method === "confirm" || f.method === "select");

/** The answer fields for "yes, this once". */
export const allowOnce = (dialog: Line): { confirmed: true } | { value: string } =>
  dialog.method === "select" ? { value: APPROVAL_CHOICES.once } : { confirmed: true };

/** The answer fields for "no". */
export const deny = (dialog: Line): { confirmed: false } | { value: string } =>
  dialog.method === "select" ? { value: APPROVAL_CHOICES.deny } : { confirmed: false };

/** What the person reads (a select has no message). */
export const dialogText = (dialog: Line): string =>
  `${String(dialog.title ?? "")}\n${String(dialog.message ?? "")}`;
