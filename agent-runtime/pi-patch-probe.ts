// Behavioural proof that a running Pi has our RPC patches: the file hash (pi-patch-status.ts) says what is on
// disk, this says what actually answers on stdin/stdout. Both probes are harmless on any Pi: a malformed
// replace_queue changes nothing, and an answer for a dialog id nobody asked changes nothing.
//
// Patched Pi (reference §1.5, §2.2): replace_queue with a malformed body → `invalid_request`;
// a correlated extension_ui_response for an unknown id → `ui_request_not_pending`.
// Unpatched Pi: "Unknown command: replace_queue", and silence for the correlated answer.

export interface PatchProbe {
  /** What the probe proves, for logs and refusals. */
  name: "replace_queue" | "correlated_ui_response";
  /** The command line to write to Pi (with the given correlation id). */
  frame(id: string): Record<string, unknown>;
  /** The response code a patched Pi answers with. */
  expectedCode: string;
}

export const PATCH_PROBES: readonly PatchProbe[] = [
  {
    name: "replace_queue",
    frame: (id) => ({ type: "replace_queue", id, expected: "not a snapshot", replacement: null }),
    expectedCode: "invalid_request",
  },
  {
    name: "correlated_ui_response",
    frame: (id) => ({
      type: "extension_ui_response",
      id: `patch-probe-unknown-dialog-${id}`,
      commandId: id,
      cancelled: true,
    }),
    expectedCode: "ui_request_not_pending",
  },
];

export type ProbeVerdict = { ok: true } | { ok: false; reason: string };

/**
 * Judges Pi's answer (a parsed `response` line, or undefined if none came before the caller's deadline or
 * before a later command was answered) to one probe.
 */
export function judgeProbe(probe: PatchProbe, response: Record<string, unknown> | undefined): ProbeVerdict {
  if (response === undefined) {
    return { ok: false, reason: `${probe.name}: Pi did not answer (an unpatched Pi stays silent)` };
  }
  if (response.success === false && response.code === probe.expectedCode) return { ok: true };
  const error = typeof response.error === "string" ? response.error.slice(0, 120) : undefined;
  const code = typeof response.code === "string" ? response.code : "none";
  return {
    ok: false,
    reason: `${probe.name}: expected code ${probe.expectedCode}, got ${code}${error ? ` (${error})` : ""}`,
  };
}
