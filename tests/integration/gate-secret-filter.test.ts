// The secret filter end to end (issue 19, point 4), through the real bridge, real Pi and the tool executor in the
// root launch (Pi as daemon, tools as nobody): an obfuscated script in `auto` prints a workspace .env value and a
// `--tool-env` credential, as is and encoded. The person answers yes to the dialog (the script is code the gate
// cannot model); the executor withholds every value before Pi sees the result: none reaches the scripted model's
// request log, and the person's client sees that something was withheld, from which source.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it, type TestContext } from "node:test";
import { writeScriptedAgentDir } from "../../agent-runtime/dev/agent-dir.ts";
import {
  callTool,
  lastToolResult,
  lastUserText,
  type RecordedRequest,
  say,
  startScriptedModel,
} from "../../agent-runtime/dev/scripted-model.ts";
import { allowOnce, dialogText, isApprovalDialog } from "../support/approval.ts";
import { spawnBridge, TestClient } from "../support/bridge.ts";

const isRoot = process.geteuid?.() === 0;
const NOBODY = 65534;

/** "BASH <cmd>", "WRITE <path> <content>": one tool call each; a tool result ends the turn. */
function script(request: RecordedRequest) {
  if (lastToolResult(request.body) !== undefined) return say("done");
  const text = lastUserText(request.body);
  const bash = /^BASH (.+)$/s.exec(text);
  if (bash) return callTool("bash", { command: bash[1] });
  const write = /^WRITE (\S+) (.+)$/s.exec(text);
  if (write) return callTool("write", { path: write[1], content: write[2] });
  return say("nothing to do");
}

function privateDir(t: TestContext, prefix: string, mode = 0o755): string {
  const dir = mkdtempSync(path.join("/var/tmp", prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  chmodSync(dir, mode);
  return dir;
}

describe("the secret filter through the bridge and the tool executor", {
  skip: !isRoot ? "needs root to switch uids (CI runs as root)" : false,
}, () => {
  it("auto: an obfuscated script prints credentials, encoded too; the model never sees them, the person sees the note", async (t) => {
    const fileSecret = `sk_live_${randomBytes(12).toString("hex")}`;
    const envSecret = `dpl_${randomBytes(14).toString("hex")}`;
    const model = await startScriptedModel({ script });
    t.after(() => model.close());
    const base = privateDir(t, "secret-e2e-");
    const workspace = path.join(base, "ws");
    mkdirSync(workspace);
    writeFileSync(path.join(workspace, ".env"), `API_TOKEN=${fileSecret}\n`, { mode: 0o600 });
    chownSync(path.join(workspace, ".env"), NOBODY, 65534);
    chownSync(workspace, NOBODY, 65534);
    const stateDir = path.join(privateDir(t, "secret-state-"), "state");
    const policyDir = privateDir(t, "secret-policy-");
    const seed = await writeScriptedAgentDir(model.baseUrl, privateDir(t, "secret-seed-"));
    const token = `bridge-token-${randomBytes(16).toString("hex")}`;
    const bridge = spawnBridge(t, {
      args: [
        "--listen",
        "127.0.0.1:0",
        "--cwd",
        workspace,
        "--state-dir",
        stateDir,
        "--agent-user",
        "nobody",
        "--pi-user",
        "daemon",
        "--tool-env",
        "DEPLOY_TOKEN",
        "--provider",
        "scripted",
        "--model",
        "scripted-model",
        "--no-session",
      ],
      env: {
        CHAT_UI_AGENT_BRIDGE_TOKEN: token,
        PI_CODING_AGENT_DIR: seed,
        AGENT_POLICY_PATH: path.join(policyDir, "policy"),
        AGENT_POLICY: "auto",
        DEPLOY_TOKEN: envSecret,
        HOME: "/root",
      },
    });
    const port = Number((await bridge.waitForLog((l) => l.msg === "listening", 30_000)).port);
    const { client } = await TestClient.connect(`ws://127.0.0.1:${port}/v1/rpc`, { token });
    t.after(() => client.close());
    let n = 0;
    const dialogs: string[] = [];
    void (async () => {
      let from = 0;
      for (;;) {
        const dialog = await client.waitFor(isApprovalDialog, 3_600_000, from).catch(() => undefined);
        if (!dialog) return;
        from = client.frames.indexOf(dialog) + 1;
        dialogs.push(dialogText(dialog));
        client.send({
          type: "extension_ui_response",
          id: dialog.id,
          commandId: `yes-${++n}`,
          ...allowOnce(dialog),
        });
      }
    })();
    const tool = async (prompt: string) => {
      const from = client.frames.length;
      const response = await client.request({ type: "prompt", id: `p${++n}`, message: prompt }, 30_000);
      assert.equal(response.success, true, JSON.stringify(response));
      const end = await client.waitFor((f) => f.type === "tool_execution_end", 60_000, from);
      await client.waitFor((f) => f.type === "agent_settled", 30_000, from);
      return JSON.stringify(end.result);
    };
    // Obfuscated: the script reaches the run as base64, and builds the file name at run time.
    const program = [
      "import base64, os",
      "name = ''.join(['.', 'e', 'n', 'v'])",
      "value = open(name).read().split('=', 1)[1].strip()",
      "print('raw', value)",
      "print('b64', base64.b64encode(b'x' + value.encode()).decode())",
      "print('hex', value.encode().hex().upper())",
      "print('env', base64.b64encode(os.environ['DEPLOY_TOKEN'].encode()).decode())",
    ].join("\n");
    const encoded = Buffer.from(program).toString("base64");
    const written = await tool(`WRITE payload.b64 ${encoded}`);
    assert.doesNotMatch(written, /isError":true/);
    const status = await client.request({ type: "bridge_status", id: `st${++n}` });
    const guard = (status.data as { isolation: { protections: { egress: { guard: string } } } }).isolation
      .protections.egress.guard;
    const output = await tool('BASH python3 -c "$(base64 -d payload.b64)"');
    // Code the gate cannot model asks, unless the egress guard enforces (then it cannot send anything out
    // without a dialog, and runs): either way its output passes the filter.
    if (guard === "enforcing")
      assert.equal(dialogs.length, 0, "the guard enforces: no dialog for unmodeled code");
    else assert.ok(dialogs.length >= 1, "the obfuscated script is code the gate cannot model: it asked");
    assert.match(output, /withheld 4 credential values/);
    assert.match(output, /\.env/);
    assert.match(output, /\$DEPLOY_TOKEN/);
    const forms = (value: string) => [
      value,
      Buffer.from(`x${value}`).toString("base64").slice(4, 24),
      Buffer.from(value).toString("hex").toUpperCase(),
      Buffer.from(value).toString("base64").slice(0, 20),
    ];
    const seen = JSON.stringify(model.requests.map((r) => r.body));
    const delivered = JSON.stringify(client.frames);
    for (const form of [...forms(fileSecret), ...forms(envSecret)]) {
      assert.equal(seen.includes(form), false, `the model saw ${form}`);
      assert.equal(delivered.includes(form), false, `the client saw ${form}`);
    }
    assert.match(seen, /withheld: credential value from/, "the model is told a value was withheld");
  });
});
