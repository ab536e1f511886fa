// The tool corpus (classes 1, 2, 6, 8, tampering) through both `chat-ui-agent-policy explain` and the real
// extension handler, in every policy: the same decision from both, the path decided on written into the call,
// and for a confirmed call a dialog whose "no" blocks it.
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import type { ExtensionContext, ToolCallEvent, ToolCallEventResult } from "@earendil-works/pi-coding-agent";
import type { PolicyMode } from "../../agent-runtime/policy/policy-store.ts";
import { runPolicyCli } from "../../agent-runtime/policy-cli.ts";
import {
  buildToolCorpusTree,
  instantiate,
  TOOL_CORPUS,
  type ToolCorpusTree,
} from "../support/fixtures/gate-tool-corpus.ts";
import { loadGateHandlers } from "../support/gate-api.ts";
import { tempDir } from "../support/workspace.ts";

const MODES: PolicyMode[] = ["auto", "ask", "read-only"];

function envFor(tree: ToolCorpusTree): NodeJS.ProcessEnv {
  return {
    HOME: tree.home,
    PI_CODING_AGENT_DIR: tree.agent,
    AGENT_POLICY_PATH: tree.policy,
    LOG_LEVEL: "silent",
    PATH: process.env.PATH,
  };
}

async function explainAll(tree: ToolCorpusTree, policy: PolicyMode): Promise<Array<Record<string, unknown>>> {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const chunks: Buffer[] = [];
  stdout.on("data", (c: Buffer) => chunks.push(c));
  for (const c of TOOL_CORPUS)
    stdin.write(
      `${JSON.stringify({ policy, toolName: c.tool, input: instantiate(c.input, tree), cwd: tree.ws })}\n`,
    );
  stdin.end();
  const code = await runPolicyCli(["explain"], {
    stdin,
    stdout,
    stderr: new PassThrough(),
    env: envFor(tree),
    cwd: tree.ws,
  });
  assert.equal(code, 0);
  return Buffer.concat(chunks)
    .toString("utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

test("the tool corpus covers every class with several tools and spellings", () => {
  assert.ok(TOOL_CORPUS.length >= 120, `${TOOL_CORPUS.length} cases`);
  for (const klass of ["1", "2", "6", "8", "tamper", "malformed"]) {
    const cases = TOOL_CORPUS.filter((c) => c.klass === klass);
    assert.ok(cases.length >= 4, klass);
  }
  for (const tool of ["read", "write", "edit", "grep", "find", "ls"])
    assert.ok(
      TOOL_CORPUS.some((c) => c.tool === tool && c.klass === "1"),
      `class 1 covers ${tool}`,
    );
});

test("explain and the real extension decide every corpus case as expected, in every policy", async (t) => {
  const tree = await buildToolCorpusTree(await tempDir(t, "gate-tool-corpus-"));
  const saved = { ...process.env };
  t.after(() => {
    process.env = saved;
  });
  Object.assign(process.env, envFor(tree));
  // The extension, registered against a recording API (its tool_result filter too).
  const handler = (await loadGateHandlers()).get("tool_call") as
    | ((e: ToolCallEvent, c: ExtensionContext) => Promise<ToolCallEventResult>)
    | undefined;
  assert.ok(handler);
  const { writeFile } = await import("node:fs/promises");
  const failures: string[] = [];
  for (const [m, policy] of MODES.entries()) {
    const explained = await explainAll(tree, policy);
    await writeFile(tree.policy, policy);
    for (const [i, c] of TOOL_CORPUS.entries()) {
      const label = `[${policy}] ${c.tool} ${JSON.stringify(c.input)}`;
      const expected = c.expect[m];
      const byExplain = explained[i];
      if (byExplain?.decision !== expected)
        failures.push(`${label}: explain says ${byExplain?.decision} (${String(byExplain?.reasons)})`);
      const wanted = c.path ? instantiate(c.path, tree) : undefined;
      if (wanted !== undefined && expected !== "block" && byExplain?.path !== wanted)
        failures.push(`${label}: decided on ${String(byExplain?.path)}, not ${String(wanted)}`);
      // The extension: a dialog is answered "no"; allowed calls get their path rewritten.
      let dialogs = 0;
      const input = instantiate(c.input, tree) as Record<string, unknown>;
      const ctx = {
        hasUI: true,
        cwd: tree.ws,
        signal: undefined,
        ui: {
          confirm: async () => {
            dialogs++;
            return false;
          },
        },
      } as unknown as ExtensionContext;
      const result = await handler(
        { type: "tool_call", toolCallId: `${policy}-${i}`, toolName: c.tool, input } as ToolCallEvent,
        ctx,
      );
      const outcome = result?.block ? (dialogs > 0 ? "confirm" : "block") : "allow";
      if (outcome !== expected)
        failures.push(`${label}: the extension ${outcome}s (${String(result?.reason)})`);
      if (expected === "confirm" && dialogs !== 1) failures.push(`${label}: ${dialogs} dialogs`);
      if (expected === "allow" && wanted !== undefined && input.path !== wanted)
        failures.push(`${label}: input.path is ${String(input.path)} after the gate, not ${String(wanted)}`);
    }
  }
  assert.deepEqual(failures, []);
});
