// The shell corpus through the real extension handler (the code Pi runs), in every policy: an allowed command
// runs without a dialog, a confirmed one asks once (answered "no" here, so it is blocked), a blocked one never
// asks. The same corpus goes through decide() (what `chat-ui-agent-policy explain` prints) in
// gate-shell-corpus.test.ts; this checks the handler agrees with it.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ExtensionContext, ToolCallEvent, ToolCallEventResult } from "@earendil-works/pi-coding-agent";
import type { PolicyMode } from "../../agent-runtime/policy/policy-store.ts";
import { SHELL_CORPUS } from "../support/fixtures/gate-shell-corpus.ts";
import { loadGateHandlers } from "../support/gate-api.ts";

type Handler = (event: ToolCallEvent, ctx: ExtensionContext) => Promise<ToolCallEventResult | undefined>;

async function loadHandler(): Promise<Handler> {
  const handler = (await loadGateHandlers()).get("tool_call") as Handler | undefined;
  assert.ok(handler);
  return handler;
}

test("every corpus command gets the same decision from the extension handler, in every policy", async (t) => {
  const saved = { ...process.env };
  t.after(() => {
    process.env = saved;
  });
  // The corpus's context: HOME /home/agent, cwd /work/project, the image's policy path (missing here, so the
  // policy comes from AGENT_POLICY), Pi's agent dir under HOME.
  delete process.env.PI_CODING_AGENT_DIR;
  Object.assign(process.env, {
    HOME: "/home/agent",
    AGENT_POLICY_PATH: "/run/chat-ui-agent/policy",
    LOG_LEVEL: "silent",
  });
  const handler = await loadHandler();
  const failures: string[] = [];
  for (const policy of ["auto", "ask", "read-only"] as PolicyMode[]) {
    process.env.AGENT_POLICY = policy;
    for (const [index, { cmd, auto }] of SHELL_CORPUS.entries()) {
      const expected =
        policy === "read-only" ? "block" : policy === "ask" && auto === "allow" ? "confirm" : auto;
      let asked = 0;
      const ctx = {
        hasUI: true,
        cwd: "/work/project",
        signal: undefined,
        ui: {
          confirm: async () => {
            asked++;
            return false;
          },
        },
      } as unknown as ExtensionContext;
      const event = {
        type: "tool_call",
        toolCallId: `c${index}`,
        toolName: "bash",
        input: { command: cmd },
      } as ToolCallEvent;
      const result = await handler(event, ctx);
      const got = asked > 0 ? "confirm" : result?.block ? "block" : "allow";
      if (got !== expected)
        failures.push(`${policy} ${JSON.stringify(cmd)}: expected ${expected}, got ${got}`);
      if (got === "confirm" && (asked !== 1 || result?.block !== true))
        failures.push(`${policy} ${JSON.stringify(cmd)}: a declined dialog must block (asked ${asked})`);
      if (got !== "allow" && !String(result?.reason ?? "").includes("Nothing ran"))
        failures.push(`${policy} ${JSON.stringify(cmd)}: the model must be told nothing ran`);
    }
  }
  assert.deepEqual(failures, []);
});
