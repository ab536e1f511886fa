// The gate extension loaded the way Pi loads it (its default export called with an ExtensionAPI, awaited),
// against a recording stand-in: tests get the handlers it registered by event name. Calls the tests do not
// care about (registerTool, setActiveTools…) are accepted and ignored.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import approvalGate from "../../agent-runtime/approval-gate.ts";

// biome-ignore lint/suspicious/noExplicitAny: handlers of different events take different events
export type AnyHandler = (...args: any[]) => any;

export async function loadGateHandlers(): Promise<Map<string, AnyHandler>> {
  const handlers = new Map<string, AnyHandler>();
  const api = new Proxy(
    {
      on: (name: string, handler: AnyHandler) => {
        handlers.set(name, handler);
      },
      getActiveTools: () => [],
    } as Record<string, unknown>,
    { get: (target, key: string) => (key in target ? target[key] : () => undefined) },
  );
  await approvalGate(api as unknown as ExtensionAPI);
  return handlers;
}
