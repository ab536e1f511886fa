// The shell classifier over an adversarial corpus, through the same decide() the extension and the CLI use.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decide } from "../../agent-runtime/gate/decide.ts";
import { CORPUS_CONTEXT, SHELL_CORPUS } from "../support/fixtures/gate-shell-corpus.ts";
import { gateParser } from "../support/gate-parser.ts";

const context = CORPUS_CONTEXT;

test("the corpus is large and adversarial enough", () => {
  assert.ok(SHELL_CORPUS.length >= 150, `corpus has ${SHELL_CORPUS.length} commands`);
  assert.equal(new Set(SHELL_CORPUS.map((c) => c.cmd)).size, SHELL_CORPUS.length, "no duplicates");
  for (const kind of ["allow", "confirm", "block"]) assert.ok(SHELL_CORPUS.some((c) => c.auto === kind));
});

test("every corpus command gets its expected decision in auto, ask and read-only", async () => {
  const parser = await gateParser();
  const failures: string[] = [];
  for (const { cmd, auto, has = [] } of SHELL_CORPUS) {
    const run = (policy: "auto" | "ask" | "read-only") =>
      decide({ policy, toolName: "bash", input: { command: cmd }, context, parser });
    const inAuto = run("auto");
    const missing = has.filter((cls) => !inAuto.classes.includes(cls));
    if (inAuto.decision !== auto || missing.length > 0) {
      failures.push(
        `${JSON.stringify(cmd)}: expected ${auto} with [${has}], got ${inAuto.decision} [${inAuto.classes}] (${inAuto.reasons.join("; ")})`,
      );
    }
    const inAsk = run("ask").decision;
    const expectedAsk = auto === "block" ? "block" : "confirm";
    if (inAsk !== expectedAsk)
      failures.push(`${JSON.stringify(cmd)} in ask: expected ${expectedAsk}, got ${inAsk}`);
    const inReadOnly = run("read-only").decision;
    if (inReadOnly !== "block")
      failures.push(`${JSON.stringify(cmd)} in read-only: expected block, got ${inReadOnly}`);
    if (inAuto.decision !== "allow" && inAuto.reasons.length === 0)
      failures.push(`${JSON.stringify(cmd)}: no reason given`);
  }
  assert.deepEqual(failures, []);
});
