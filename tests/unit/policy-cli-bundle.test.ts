// The shipped policy CLI bundle (copied away from node_modules, called through a bin-style symlink) runs
// standalone with its wasm beside it. Needs `npm run build`; the CLI's cases run from source in
// agent-runtime/policy-cli.test.mjs.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFile, symlink } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { tempDir } from "../support/workspace.ts";

test("the shipped bundle runs standalone through a bin symlink (wasm beside it)", async (t) => {
  const buildDir = path.join(import.meta.dirname, "..", "..", "build", "opt", "chat-ui-agent");
  const dir = await tempDir(t);
  for (const file of ["policy-cli.mjs", "tree-sitter.wasm", "tree-sitter-bash.wasm"]) {
    for (let attempt = 0; ; attempt++) {
      try {
        await copyFile(path.join(buildDir, file), path.join(dir, file));
        break;
      } catch (error) {
        if (attempt >= 40) throw new Error(`${file} missing: run \`npm run build\` first (${error})`);
        await sleep(250);
      }
    }
  }
  const bin = path.join(dir, "chat-ui-agent-policy");
  await symlink(path.join(dir, "policy-cli.mjs"), bin);
  const env = { PATH: process.env.PATH, AGENT_POLICY_PATH: path.join(dir, "policy") };
  const run = (args: string[], input?: string) =>
    spawnSync(process.execPath, [bin, ...args], { cwd: dir, env, input, encoding: "utf8", timeout: 30_000 });
  const set = run(["set", "ask"]);
  assert.equal(set.status, 0, set.stderr);
  const get = run(["get"]);
  assert.deepEqual(JSON.parse(get.stdout), { policy: "ask", source: "file", path: env.AGENT_POLICY_PATH });
  const explain = run(
    ["explain"],
    '{"policy":"auto","toolName":"bash","input":{"command":"g\\"i\\"t p\'u\'sh"}}\n',
  );
  assert.equal(explain.status, 0, explain.stderr);
  const explained = JSON.parse(explain.stdout) as Record<string, unknown>;
  assert.deepEqual(
    (({ decision, classes, reasons, deciding }) => ({ decision, classes, reasons, deciding }))(explained),
    {
      decision: "confirm",
      classes: ["EXIT"],
      reasons: ["`git push` sends commits to a remote"],
      deciding: { cell: "confirm", decision: "confirm", effect: "sends" },
    },
  );
  // Outside the runtime, explain assumes no egress guard, and says so.
  assert.equal((explained.assumed as { egressGuard?: string }).egressGuard, "absent");
  assert.equal(run(["set", "bogus"]).status, 2);
});
