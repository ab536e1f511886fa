// The client's Pi event types (bridge/pi-events.ts) fit what Pi 0.84.2 declares it writes in RPC mode: checked by
// the compiler (npm run typecheck compiles this file), plus the runtime list of event types.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { JsonAgentSessionEvent, RpcExtensionUIRequest } from "@earendil-works/pi-coding-agent";
import { isPiEvent, PI_EVENT_TYPES, type PiEvent } from "../../bridge/pi-events.ts";

// Every event Pi's types say it emits is a PiEvent (a field Pi adds or changes breaks the typecheck).
export function piSessionEventFits(event: JsonAgentSessionEvent): PiEvent {
  return event;
}
export function piDialogFits(request: RpcExtensionUIRequest): PiEvent {
  return request;
}
// …and every type we list is one Pi emits (none invented).
type PiEmitted = JsonAgentSessionEvent["type"] | RpcExtensionUIRequest["type"] | "extension_error";
const listedAreEmitted: readonly PiEmitted[] = PI_EVENT_TYPES;

test("every listed event type is one Pi emits, and isPiEvent tells them from the bridge's own frames", () => {
  assert.equal(new Set(listedAreEmitted).size, PI_EVENT_TYPES.length);
  assert.equal(isPiEvent({ type: "agent_settled", seq: 3 }), true);
  assert.equal(isPiEvent({ type: "message_update", seq: 4 }), true);
  for (const type of ["response", "welcome", "dialog_closed", "agent_exited", "policy_changed"])
    assert.equal(isPiEvent({ type, seq: 1 }), false, type);
});
