// The extension's tool-side handlers on their own: duplicate tool call ids within a turn, the grep result filter
// (and its fail-closed error path), and the approval that lifts it for exactly one call.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import type { ExtensionContext, ToolCallEvent } from "@earendil-works/pi-coding-agent";
import { loadGateHandlers } from "../support/gate-api.ts";
import { tempDir } from "../support/workspace.ts";

type Handler = (event: unknown, ctx: ExtensionContext) => Promise<unknown>;

async function gate(t: import("node:test").TestContext, policy: string) {
  const root = await tempDir(t, "gate-ext-");
  const ws = path.join(root, "ws");
  await mkdir(ws);
  await writeFile(path.join(root, "policy"), policy);
  await writeFile(path.join(ws, ".env"), "TOKEN=x\n");
  const saved = { ...process.env };
  t.after(() => {
    process.env = saved;
  });
  Object.assign(process.env, {
    HOME: root,
    AGENT_POLICY_PATH: path.join(root, "policy"),
    LOG_LEVEL: "silent",
  });
  const handlers = (await loadGateHandlers()) as Map<string, Handler>;
  let answer = false;
  const ctx = {
    hasUI: true,
    cwd: ws,
    signal: undefined,
    ui: { confirm: async () => answer },
  } as unknown as ExtensionContext;
  const call = (toolCallId: string, toolName: string, input: Record<string, unknown>) =>
    handlers.get("tool_call")?.(
      { type: "tool_call", toolCallId, toolName, input } as ToolCallEvent,
      ctx,
    ) as Promise<{
      block?: boolean;
      reason?: string;
    }>;
  const result = (toolCallId: string, input: Record<string, unknown>, content: unknown) =>
    handlers.get("tool_result")?.(
      { type: "tool_result", toolCallId, toolName: "grep", input, content, isError: false },
      ctx,
    ) as Promise<{ content?: Array<{ text: string }>; isError?: boolean } | undefined>;
  const turn = () => handlers.get("turn_start")?.({ type: "turn_start" }, ctx);
  return { ws, call, result, turn, setAnswer: (yes: boolean) => (answer = yes) };
}

test("two calls of one turn cannot share an id when either needs a record under it; a new turn may reuse it", async (t) => {
  const g = await gate(t, "auto");
  // Plain calls keep nothing per id: sharing one is harmless.
  assert.deepEqual(await g.call("x0", "read", { path: "README.md" }), {});
  assert.deepEqual(await g.call("x0", "read", { path: "README.md" }), {});
  // An approved credential search keeps a record under its id: a second call with that id is refused…
  g.setAnswer(true);
  assert.deepEqual(await g.call("x1", "grep", { pattern: "TOKEN", path: ".env" }), {});
  const again = await g.call("x1", "read", { path: "README.md" });
  assert.equal(again.block, true);
  assert.match(String(again.reason), /another tool call in this turn has the id/);
  // …and so is a call that would record under an id an earlier call of the turn used.
  assert.deepEqual(await g.call("y1", "read", { path: "README.md" }), {});
  assert.equal((await g.call("y1", "grep", { pattern: "TOKEN", path: ".env" })).block, true);
  await g.turn();
  assert.deepEqual(await g.call("x1", "read", { path: "README.md" }), {});
});

test("grep results lose credential lines unless the person allowed that very search; errors withhold everything", async (t) => {
  const g = await gate(t, "read-only");
  const lines = ".env:1: TOKEN=x\nsrc/a.ts:3: ordinary";
  const input = { pattern: "x", path: g.ws };
  const filtered = await g.result("g1", input, [{ type: "text", text: lines }]);
  assert.doesNotMatch(String(filtered?.content?.[0]?.text), /TOKEN/);
  assert.match(String(filtered?.content?.[0]?.text), /ordinary/);
  // An explicit yes to a search of .env itself: that one result passes unfiltered, the next one does not.
  g.setAnswer(true);
  const envInput = { pattern: "TOKEN", path: ".env" };
  assert.deepEqual(await g.call("g2", "grep", envInput), {});
  assert.equal(await g.result("g2", envInput, [{ type: "text", text: "TOKEN=x" }]), undefined);
  const later = await g.result("g2", { pattern: "x", path: g.ws }, [{ type: "text", text: lines }]);
  assert.doesNotMatch(String(later?.content?.[0]?.text), /TOKEN/);
  // A result the filter cannot read is replaced, never passed through.
  const broken = await g.result("g3", input, null);
  assert.equal(broken?.isError, true);
  assert.match(String(broken?.content?.[0]?.text), /withheld/);
});
