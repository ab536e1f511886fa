// The gate extension loaded the way Pi loads it (its default export called with an ExtensionAPI, awaited),
// against a recording stand-in: tests get the handlers it registered by event name.
import approvalGate from "../../agent-runtime/approval-gate.ts";
import { type AnyHandler, recordingExtensionApi } from "../../agent-runtime/dev/extension-api.ts";

export type { AnyHandler };

export async function loadGateHandlers(): Promise<Map<string, AnyHandler>> {
  const { api, handlers } = recordingExtensionApi();
  await approvalGate(api);
  return handlers;
}
