// The operator's approval timeout: off unless set. After it, an unanswered dialog is denied, and the model is told
// that nobody answered (not that the person refused). Nothing ever approves on a timeout: Pi resolves an expired
// dialog with its default (no choice, or false), which the gate reads as a denial.

/**
 * Minutes (a decimal, e.g. `30` or `0.5`), set by the operator in the bridge's environment or by the bridge's
 * `--approval-timeout-minutes` (which wins): the bridge puts the value it checked in Pi's environment, where the
 * gate reads it.
 */
export const APPROVAL_TIMEOUT_ENV = "CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES";
/** At most a day. */
export const MAX_APPROVAL_TIMEOUT_MINUTES = 1440;

export type ApprovalTimeout = { ms: number | undefined; problem?: string };

/**
 * The one reading of a timeout setting (the variable's value or the flag's): `off`, or decimal minutes in
 * (0, MAX]. Anything else, the empty string included, is a problem naming `source`, and means off.
 */
export function parseApprovalTimeout(raw: string, source: string): ApprovalTimeout {
  if (raw === "off") return { ms: undefined };
  const minutes = /^\d{1,4}(\.\d{1,3})?$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isFinite(minutes) || minutes <= 0 || minutes > MAX_APPROVAL_TIMEOUT_MINUTES)
    return {
      ms: undefined,
      problem: `${source} must be minutes in (0, ${MAX_APPROVAL_TIMEOUT_MINUTES}] or "off", got ${JSON.stringify(raw.slice(0, 40))}`,
    };
  return { ms: Math.max(1, Math.round(minutes * 60_000)) };
}

/** The timeout in ms from the environment (undefined: off); an unset or empty variable is off. */
export function approvalTimeout(env: NodeJS.ProcessEnv): ApprovalTimeout {
  const raw = env[APPROVAL_TIMEOUT_ENV];
  if (raw === undefined || raw === "") return { ms: undefined };
  return parseApprovalTimeout(raw, APPROVAL_TIMEOUT_ENV);
}

/** "30 minutes", "1.5 seconds": for the model and the person. */
export function describeTimeout(ms: number): string {
  return ms >= 60_000 ? `${+(ms / 60_000).toFixed(2)} minutes` : `${+(ms / 1000).toFixed(2)} seconds`;
}
