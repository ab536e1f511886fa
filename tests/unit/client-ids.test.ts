// The typed client correlates responses by id, so one id is never waiting twice: a second command with an id
// that is still waiting is refused at once, and the first one keeps its own outcome (before, the second took
// its place and the first never settled).
import assert from "node:assert/strict";
import { test } from "node:test";
import { BridgeClient, BridgeClientClosedError } from "../../bridge/client.ts";

test("a second command with an id that is still waiting is refused; the first keeps its outcome", async () => {
  // Never connected: commands wait for the first welcome, which never comes.
  const client = new BridgeClient({ url: "ws://127.0.0.1:9/v1/rpc", token: "x".repeat(32) });
  const first = client.command({ type: "get_state", id: "same" });
  await assert.rejects(
    client.command({ type: "get_state", id: "same" }),
    /a command with id same is already waiting for its response/,
  );
  client.close();
  await assert.rejects(first, BridgeClientClosedError);
});
