// The operator's approval timeout: off unless set. After it, an unanswered dialog is denied, and the model is told
// that nobody answered (not that the person refused). Nothing ever approves on a timeout: Pi resolves an expired
// dialog with its default (no choice, or false), which the gate reads as a denial.

/** Minutes (a decimal, e.g. `30` or `0.5`), set by the operator in the bridge's (and so Pi's) environment. */
export const APPROVAL_TIMEOUT_ENV = "CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES";
/** At most a day. */
export const MAX_APPROVAL_TIMEOUT_MINUTES = 1440;

export type ApprovalTimeout = { ms: number | undefined; problem?: string };

/** The timeout in ms (undefined: off). An invalid value is reported and means off, as before the option. */
export function approvalTimeout(env: NodeJS.ProcessEnv): ApprovalTimeout {
  const raw = env[APPROVAL_TIMEOUT_ENV];
  if (raw === undefined || raw === "" || raw === "off") return { ms: undefined };
  const minutes = /^\d{1,4}(\.\d{1,3})?$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isFinite(minutes) || minutes <= 0 || minutes > MAX_APPROVAL_TIMEOUT_MINUTES)
    return {
      ms: undefined,
      problem: `${APPROVAL_TIMEOUT_ENV} must be minutes in (0, ${MAX_APPROVAL_TIMEOUT_MINUTES}] or "off", got ${JSON.stringify(raw.slice(0, 40))}: no timeout`,
    };
  return { ms: Math.max(1, Math.round(minutes * 60_000)) };
}

/** "30 minutes", "1.5 seconds": for the model and the person. */
export function describeTimeout(ms: number): string {
  return ms >= 60_000 ? `${+(ms / 60_000).toFixed(2)} minutes` : `${+(ms / 1000).toFixed(2)} seconds`;
}
