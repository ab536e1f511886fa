// A recording stand-in for Pi's ExtensionAPI, for tests and benches that load an extension's default export
// the way Pi does (called with the API, awaited) without Pi: it keeps the handlers by event name and accepts
// every other call (registerTool, setActiveTools…) as a no-op.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

// biome-ignore lint/suspicious/noExplicitAny: handlers of different events take different events
export type AnyHandler = (...args: any[]) => any;

export function recordingExtensionApi(): { api: ExtensionAPI; handlers: Map<string, AnyHandler> } {
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
  return { api: api as unknown as ExtensionAPI, handlers };
}
