// The extension's handler fails closed on every non-yes path: no UI, a throwing or odd confirm, an abort.
// (Behaviour inside real Pi is in tests/integration/approval-gate.test.ts; this covers paths Pi cannot easily trigger.)
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import type {
  ExtensionAPI,
  ExtensionContext,
  ToolCallEvent,
  ToolCallEventResult,
} from "@earendil-works/pi-coding-agent";
import approvalGate from "../../agent-runtime/approval-gate.ts";
import { redactForLog } from "../../agent-runtime/gate/log-redact.ts";
import { tempDir } from "../support/workspace.ts";

type Handler = (event: ToolCallEvent, ctx: ExtensionContext) => Promise<ToolCallEventResult | undefined>;

function loadHandler(): Handler {
  let handler: Handler | undefined;
  approvalGate({
    on: (name: string, h: Handler) => {
      if (name === "tool_call") handler = h;
    },
    // The gate bundle also registers the tool router's overrides (agent-runtime/tools/router.ts).
    registerTool: () => {},
  } as unknown as ExtensionAPI);
  assert.ok(handler, "the extension registers a tool_call handler");
  return handler;
}

const bash = (command: string) =>
  ({ type: "tool_call", toolCallId: "t1", toolName: "bash", input: { command } }) as ToolCallEvent;

function context(
  cwd: string,
  confirm: () => Promise<unknown>,
  extra: Partial<ExtensionContext> = {},
): ExtensionContext {
  return { hasUI: true, cwd, signal: undefined, ui: { confirm }, ...extra } as unknown as ExtensionContext;
}

test("only an explicit true allows; everything else blocks with a reason", async (t) => {
  const dir = await tempDir(t);
  const policyFile = path.join(dir, "policy");
  await writeFile(policyFile, "ask");
  const saved = { ...process.env };
  t.after(() => {
    process.env = saved;
  });
  Object.assign(process.env, { AGENT_POLICY_PATH: policyFile, LOG_LEVEL: "silent", HOME: dir });
  const handler = loadHandler();
  const run = (confirm: () => Promise<unknown>, extra?: Partial<ExtensionContext>) =>
    handler(bash("echo hi > f"), context(dir, confirm, extra));

  assert.deepEqual(await run(async () => true), {});
  for (const [label, confirm, extra, reason] of [
    ["no", async () => false, undefined, /declined/],
    ["a truthy non-boolean", async () => "yes", undefined, /declined/],
    [
      "a throwing dialog",
      async () => Promise.reject(new Error("ui gone")),
      undefined,
      /asking for approval failed/,
    ],
    ["no UI", async () => true, { hasUI: false }, /no UI is available/],
    ["an aborted run", async () => true, { signal: AbortSignal.abort() }, /aborted/],
  ] as const) {
    const result = await run(confirm, extra as Partial<ExtensionContext> | undefined);
    assert.equal(result?.block, true, label);
    assert.match(String(result?.reason), reason, label);
    assert.match(String(result?.reason), /policy ask from file/, label);
  }

  // An exception inside the gate itself (here: a context whose cwd getter throws) blocks too.
  const broken = {
    hasUI: true,
    get cwd(): string {
      throw new Error("boom");
    },
    ui: { confirm: async () => true },
  } as unknown as ExtensionContext;
  const result = await handler(bash("ls"), broken);
  assert.equal(result?.block, true);
  assert.match(String(result?.reason), /internal error \(boom\)/);
});

test("log reasons are scrubbed of secret-looking values", () => {
  // Token-shaped values are assembled at run time so no credential-looking literal is ever committed.
  const fakeToken = (seed: string) => `ghp_${seed.repeat(30).slice(0, 36)}`;
  const scrubbed = redactForLog(
    `\`git -c http.extraheader=Authorization: Bearer ${fakeToken("abc")}\` ... GITHUB_TOKEN=${fakeToken("123")} https://user:hunter2@example.com/x`,
  );
  assert.equal(scrubbed.includes("ghp_"), false, scrubbed);
  assert.equal(scrubbed.includes("hunter2"), false, scrubbed);
  assert.match(scrubbed, /git -c http\.extraheader/);
});
