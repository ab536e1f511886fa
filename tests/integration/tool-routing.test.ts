// The router in Pi's process (real Pi, the built gate bundle, no bridge): with no executor configured, Pi's own
// tools run in Pi's process and the gate says isolation is degraded; a person's `!` command is refused under
// read-only without ever running; with an executor configured but unusable, nothing falls back to Pi's process.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import {
  callTool,
  lastToolResult,
  lastUserText,
  type RecordedRequest,
  say,
} from "../../agent-runtime/dev/scripted-model.ts";
import { root } from "../support/bridge.ts";
import { startPiSession } from "../support/pi.ts";
import { tempDir } from "../support/workspace.ts";

const gate = path.join(root, "build", "opt", "chat-ui-agent", "approval-gate.mjs");

function script(request: RecordedRequest) {
  if (lastToolResult(request.body) !== undefined) return say("done");
  const text = lastUserText(request.body);
  const write = /^WRITE (\S+) (.+)$/s.exec(text);
  if (write) return callTool("write", { path: write[1], content: write[2] });
  return say("nothing to do");
}

async function prompt(pi: Awaited<ReturnType<typeof startPiSession>>["pi"], message: string) {
  const from = pi.lines.length;
  await pi.request({ type: "prompt", message });
  const end = await pi.waitFor((l) => l.type === "tool_execution_end", 30_000, from);
  await pi.waitFor((l) => l.type === "agent_settled", 30_000, from);
  const result = end.result as { content: { text?: string }[] };
  return { isError: end.isError === true, text: result.content.map((c) => c.text ?? "").join("") };
}

describe("tool router in Pi's process", () => {
  it("without an executor: Pi's own tools run here, degraded and said so; `!` refused under read-only", async (t) => {
    const { pi, cwd } = await startPiSession(
      t,
      { script },
      { extensions: [gate], env: { AGENT_POLICY: "auto" } },
    );
    const written = await prompt(pi, `WRITE ${path.join(cwd, "a.txt")} local`);
    assert.equal(written.isError, false, written.text);
    assert.equal(existsSync(path.join(cwd, "a.txt")), true);
    assert.match(pi.stderr, /isolation degraded: no CHAT_UI_AGENT_EXECUTOR_FD/);
    const ran = await pi.request({ type: "bash", command: "echo ran-locally" });
    assert.equal((ran.data as { output: string }).output, "ran-locally\n");

    const policy = path.join(await tempDir(t, "routing-policy-"), "policy");
    writeFileSync(policy, "read-only\n");
    const { pi: readOnly, cwd: roCwd } = await startPiSession(
      t,
      { script },
      { extensions: [gate], env: { AGENT_POLICY_PATH: policy } },
    );
    const refused = await readOnly.request({ type: "bash", command: `touch ${path.join(roCwd, "bang")}` });
    assert.equal(refused.success, true);
    assert.match((refused.data as { output: string }).output, /Refused: the policy is read-only/);
    assert.equal(existsSync(path.join(roCwd, "bang")), false);
  });

  it("with an executor configured but unusable: every call fails, nothing runs in Pi's process", async (t) => {
    // fd 9 is not open in Pi: the router cannot reach any executor.
    const { pi, cwd } = await startPiSession(
      t,
      { script },
      { extensions: [gate], env: { AGENT_POLICY: "auto", CHAT_UI_AGENT_EXECUTOR_FD: "9" } },
    );
    const written = await prompt(pi, `WRITE ${path.join(cwd, "b.txt")} never`);
    assert.equal(written.isError, true);
    assert.match(written.text, /tool executor/i);
    assert.equal(existsSync(path.join(cwd, "b.txt")), false);
    const bang = await pi.request({ type: "bash", command: `touch ${path.join(cwd, "bang")}` });
    assert.equal(bang.success, false);
    assert.equal(existsSync(path.join(cwd, "bang")), false);
  });
});
