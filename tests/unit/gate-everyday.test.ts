// Usefulness (issue 19): the everyday set (tests/support/fixtures/gate-everyday.ts), decided in `auto` against a
// realistic repository with the egress guard enforcing: at least 95% allowed. The rest are printed.
import assert from "node:assert/strict";
import { realpathSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { decide } from "../../agent-runtime/gate/decide.ts";
import type { PathContext } from "../../agent-runtime/gate/path-context.ts";
import { buildFixture } from "../support/fixture-workspace.ts";
import { EVERYDAY_COMMANDS, EVERYDAY_PROJECT } from "../support/fixtures/gate-everyday.ts";
import { gateParser } from "../support/gate-parser.ts";
import { tempDir } from "../support/workspace.ts";

test("the everyday set is at least 150 distinct commands", () => {
  assert.ok(EVERYDAY_COMMANDS.length >= 150, `${EVERYDAY_COMMANDS.length} commands`);
  assert.equal(new Set(EVERYDAY_COMMANDS).size, EVERYDAY_COMMANDS.length);
});

test("at least 95% of everyday commands are allowed in auto with the egress guard enforcing", async (t) => {
  const parser = await gateParser();
  const root = realpathSync(await tempDir(t, "gate-everyday-"));
  const roots = { ws: path.join(root, "ws"), home: path.join(root, "home") };
  await buildFixture(roots, EVERYDAY_PROJECT);
  const context: PathContext = {
    cwd: roots.ws,
    home: roots.home,
    agentDir: path.join(roots.home, ".pi", "agent"),
    policyPath: "/run/chat-ui-agent/policy",
    gateDirs: ["/opt/chat-ui-agent"],
  };
  const asked: string[] = [];
  for (const command of EVERYDAY_COMMANDS) {
    const decision = decide({
      policy: "auto",
      toolName: "bash",
      input: { command },
      context,
      parser,
      egressGuard: "enforcing",
    });
    if (decision.decision !== "allow")
      asked.push(`${JSON.stringify(command)} → ${decision.decision} (${decision.reasons.join("; ")})`);
  }
  const allowed = EVERYDAY_COMMANDS.length - asked.length;
  const rate = allowed / EVERYDAY_COMMANDS.length;
  t.diagnostic(`allowed ${allowed} of ${EVERYDAY_COMMANDS.length} (${(rate * 100).toFixed(1)}%)`);
  for (const line of asked) t.diagnostic(line);
  assert.ok(rate >= 0.95, `only ${(rate * 100).toFixed(1)}% allowed:\n${asked.join("\n")}`);
});
