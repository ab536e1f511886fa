// Session grants in the real image, in each launch mode (root with a token file; the image's default user as
// sbx-server starts it, token in the environment; `--user 1000`): Pi, under another uid than the bridge in the
// root launches, reads the grants file the bridge writes. "Allow for this session" makes one grant; the same command then runs without a dialog; `git push` is
// asked yes/no and never granted; revoked, the command asks again.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { describe, it, type TestContext } from "node:test";
import { writeScriptedAgentDir } from "../../agent-runtime/dev/agent-dir.ts";
import { startScriptedModel } from "../../agent-runtime/dev/scripted-model.ts";
import { APPROVAL_CHOICES } from "../../agent-runtime/policy/grants.ts";
import { isApprovalDialog } from "../support/approval.ts";
import { type Frame, TestClient } from "../support/bridge.ts";
import { docker, execIn, freePort, testedImage } from "./support/docker.ts";
import { toolScript } from "./support/harness.ts";

const IMAGE = testedImage("chat-ui-agent-runtime:session-grants-test");

interface Mode {
  name: string;
  /** docker run --user (undefined: the image's default user, root). */
  user: string | undefined;
  token: "file" | "env";
}

const MODES: Mode[] = [
  { name: "root, --agent-user agent, token in a --token-file", user: "root", token: "file" },
  {
    name: "the image's default user, started as sbx-server would (token in the environment)",
    user: undefined,
    token: "env",
  },
  { name: "--user 1000 (one uid)", user: "1000", token: "env" },
];

async function start(t: TestContext, mode: Mode) {
  const model = await startScriptedModel({ script: toolScript });
  const seed = mkdtempSync(path.join(tmpdir(), "session-grants-seed-"));
  await writeScriptedAgentDir(model.baseUrl, seed);
  chmodSync(seed, 0o755);
  chmodSync(path.join(seed, "models.json"), 0o644);
  const port = await freePort();
  const token = `bridge-token-${randomBytes(16).toString("hex")}`;
  const bridge = [
    "node /opt/chat-ui-agent/bridge.mjs",
    `--listen 127.0.0.1:${port} --cwd /workspace --agent-user agent`,
    mode.token === "file" ? "--token-file /run/bridge-token" : "",
    "--provider scripted --model scripted-model",
  ].join(" ");
  // What sbx-server does: start the bridge with the token in its environment only (or in a private file).
  const launcher =
    mode.token === "file"
      ? `umask 077; read -r T; printf %s "$T" > /run/bridge-token; exec ${bridge}`
      : `read -r T; CHAT_UI_AGENT_BRIDGE_TOKEN="$T" exec ${bridge}`;
  const container = await docker.createContainer({
    Image: IMAGE,
    ...(mode.user ? { User: mode.user } : {}),
    Cmd: ["sh", "-c", launcher],
    Env: ["PI_CODING_AGENT_DIR=/pi-seed", "PI_OFFLINE=1", "AGENT_POLICY=ask"],
    OpenStdin: true,
    StdinOnce: false,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    HostConfig: { NetworkMode: "host", Binds: [`${seed}:/pi-seed:ro`] },
  });
  t.after(async () => {
    await container.remove({ force: true });
    await model.close();
    rmSync(seed, { recursive: true, force: true });
  });
  const io = await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true });
  docker.modem.demuxStream(io, new PassThrough(), new PassThrough());
  await container.start();
  io.write(`${token}\n`);
  const logs = async () =>
    ((await container.logs({ stdout: true, stderr: true })) as unknown as Buffer).toString("utf8");
  const deadline = Date.now() + 60_000;
  while (!(await logs()).includes('"msg":"listening"')) {
    if (Date.now() > deadline) throw new Error(`the bridge never listened:\n${(await logs()).slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const { client } = await TestClient.connect(`ws://127.0.0.1:${port}/v1/rpc`, {
    token,
    clientId: "the-person",
  });
  t.after(() => client.close());
  let n = 0;
  /** Prompts the model to run `command`; `answer` answers its dialog (if one comes); returns the turn's frames. */
  const turn = async (command: string, answer: (dialog: Frame) => Record<string, unknown>) => {
    const from = client.frames.length;
    const response = await client.request(
      { type: "prompt", id: `p-${++n}`, message: `BASH ${command}` },
      90_000,
    );
    assert.equal(response.success, true, JSON.stringify(response));
    const settled = client.waitFor((f) => f.type === "agent_settled", 120_000, from);
    const dialog = await Promise.race([client.waitFor(isApprovalDialog, 120_000, from), settled]);
    if (dialog.type === "extension_ui_request")
      client.send({ type: "extension_ui_response", id: dialog.id, commandId: `a-${++n}`, ...answer(dialog) });
    await settled.catch(async (err: Error) => {
      throw new Error(`${err.message.slice(0, 2000)}\n${(await logs()).slice(-6000)}`);
    });
    return client.frames.slice(from);
  };
  const root = async (command: string) => (await execIn(container, ["sh", "-c", command], "root")).stdout;
  return { client, turn, root, logs };
}

const dialogsIn = (frames: Frame[]) => frames.filter(isApprovalDialog);
const choose = (value: string) => () => ({ value });

describe("session grants in the image", { timeout: 20 * 60_000 }, () => {
  for (const mode of MODES) {
    it(`${mode.name}: granted, reused unasked, never for git push, revoked asks again`, async (t) => {
      const r = await start(t, mode);
      const command = "echo g >> /workspace/granted.txt";
      const first = await r.turn(command, choose(APPROVAL_CHOICES.session));
      assert.deepEqual(
        dialogsIn(first).map((d) => [d.method, d.options]),
        [["select", ["Allow once", "Allow for this session", "Deny"]]],
      );
      const granted = await r.client.waitFor((f) => f.type === "grants_changed", 30_000);
      assert.equal(granted.cause, "granted");
      const [grant] = granted.grants as Array<{ id: string; dialogId: string }>;
      assert.equal(grant?.dialogId, dialogsIn(first)[0]?.id);

      const again = await r.turn(command, () => {
        throw new Error("no dialog expected: the grant covers it");
      });
      assert.equal(dialogsIn(again).length, 0, (await r.logs()).slice(-4000));
      assert.equal(await r.root("cat /workspace/granted.txt"), "g\ng\n");

      const push = await r.turn("git push origin main", () => ({ confirmed: false }));
      assert.deepEqual(
        dialogsIn(push).map((d) => d.method),
        ["confirm"],
        "a boundary action is asked yes/no",
      );
      const listed = await r.client.request({ type: "list_grants", id: "lg" });
      assert.deepEqual(
        (listed.data as { grants: Array<{ id: string }> }).grants.map((g) => g.id),
        [grant?.id],
      );

      const revoked = await r.client.request({ type: "revoke_grant", id: "rv", grant: "all" });
      assert.equal(revoked.success, true);
      const asked = await r.turn(command, choose(APPROVAL_CHOICES.deny));
      assert.equal(dialogsIn(asked).length, 1, "revoked: it asks again");
      assert.equal(await r.root("cat /workspace/granted.txt"), "g\ng\n");
    });
  }
});
