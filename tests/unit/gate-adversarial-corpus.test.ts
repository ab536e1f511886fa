// Gate v3's held-out adversarial corpus (tests/support/fixtures/gate-adversarial-corpus.ts): every case, in a
// workspace built from its fixture, must be decided at or above its floor in `auto` with the egress guard not
// active. The per-family counts of decisions below the floor are printed (the issue reports them before/after).
import assert from "node:assert/strict";
import { realpathSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { decide } from "../../agent-runtime/gate/decide.ts";
import type { PathContext } from "../../agent-runtime/gate/path-context.ts";
import { piPathsSync } from "../../agent-runtime/gate/pi-paths.ts";
import { buildFixture } from "../support/fixture-workspace.ts";
import {
  ADVERSARIAL_CORPUS,
  type AdversarialCase,
  BASE_FILES,
  FAMILIES,
} from "../support/fixtures/gate-adversarial-corpus.ts";
import { gateParser } from "../support/gate-parser.ts";
import { tempDir } from "../support/workspace.ts";

const RANK = { allow: 0, confirm: 1, block: 2 } as const;

test("the adversarial corpus covers every family, at least 15 cases each, no duplicates", () => {
  for (const family of FAMILIES) {
    const count = ADVERSARIAL_CORPUS.filter((c) => c.family === family).length;
    assert.ok(count >= 15, `${family} has ${count} cases`);
  }
  const keys = ADVERSARIAL_CORPUS.map((c) => JSON.stringify([c.tool, c.input, c.fixture ?? null]));
  assert.equal(new Set(keys).size, keys.length, "no duplicate case");
});

test("every adversarial case is decided at or above its floor in auto (egress guard not active)", async (t) => {
  const parser = await gateParser();
  const paths = piPathsSync();
  const below = new Map<string, string[]>();
  for (const [index, item] of ADVERSARIAL_CORPUS.entries()) {
    const root = realpathSync(await tempDir(t, "gate-adv-"));
    const roots = { ws: path.join(root, "ws"), home: path.join(root, "home") };
    await buildFixture(roots, { ...item.fixture, files: { ...BASE_FILES, ...item.fixture?.files } });
    const context: PathContext = {
      cwd: roots.ws,
      home: roots.home,
      agentDir: path.join(roots.home, ".pi", "agent"),
      policyPath: "/run/chat-ui-agent/policy",
      gateDirs: ["/opt/chat-ui-agent"],
    };
    const decision = decide({
      policy: "auto",
      toolName: item.tool,
      input: structuredClone(item.input),
      context,
      parser,
      paths,
      egressGuard: "absent",
    });
    if (RANK[decision.decision] < RANK[item.floor]) {
      const list = below.get(item.family) ?? [];
      list.push(`#${index} ${describe(item)} → ${decision.decision} (${decision.reasons.join("; ")})`);
      below.set(item.family, list);
    }
  }
  const summary = FAMILIES.map((family) => {
    const total = ADVERSARIAL_CORPUS.filter((c) => c.family === family).length;
    return `${family}: ${below.get(family)?.length ?? 0} of ${total} below the floor`;
  });
  t.diagnostic(summary.join("\n"));
  const failures = [...below.values()].flat();
  t.diagnostic(`total below the floor: ${failures.length} of ${ADVERSARIAL_CORPUS.length}`);
  assert.deepEqual(failures, []);
});

function describe(item: AdversarialCase): string {
  const what =
    item.tool === "bash" ? String(item.input.command) : `${item.tool} ${JSON.stringify(item.input)}`;
  return `[${item.family}] ${what.length > 160 ? `${what.slice(0, 160)}…` : what} (floor ${item.floor})`;
}
