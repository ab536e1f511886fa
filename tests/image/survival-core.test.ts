// Issue 17's rows that the bridge core answers, in the real image: each attack is run by the agent's own tool
// call (real Pi, the scripted model on the host's loopback), and its effect is checked from outside.
//  1. The tools fill the disk the workspace shares with the state dir: the journal fails with ENOSPC. Frames
//     keep flowing (sent from memory), durability says degraded, and once space is back the journal is
//     written again (root).
//  2. A `.git` gitfile whose `commondir` is a FIFO, then the Pi pair restarted (forced from outside: in the new
//     world the tools cannot kill the executor): every new Pi hangs in its own git lookup at start. It is
//     reported (`starting_too_long`, health not ok), killed and started again (root, and --user 1000).
// The attack commands are data (fixtures/survival-core-attacks.json) and run only inside the container.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { describe, it, type TestContext } from "node:test";
import type Docker from "dockerode";
import { writeScriptedAgentDir } from "../../agent-runtime/dev/agent-dir.ts";
import { startScriptedModel } from "../../agent-runtime/dev/scripted-model.ts";
import { BridgeStatus } from "../../bridge/protocol.ts";
import { allowOnce, isApprovalDialog } from "../support/approval.ts";
import { type Frame, TestClient } from "../support/bridge.ts";
import { docker, execIn, freePort, testedImage } from "./support/docker.ts";
import { toolScript } from "./support/harness.ts";

const IMAGE = testedImage("chat-ui-agent-runtime:survival-core-test");

const ATTACKS = JSON.parse(
  readFileSync(path.join(import.meta.dirname, "fixtures", "survival-core-attacks.json"), "utf8"),
) as Record<"fillDisk" | "remedyFreeDisk" | "afterRecovery" | "fifoGitfile" | "remedyUnblockFifo", string>;
const attack = (name: keyof typeof ATTACKS, workspace: string) => ATTACKS[name].replaceAll("{WS}", workspace);

interface Launch {
  /** docker run --user (undefined: root). */
  user: string | undefined;
  workspace: string;
  /** Extra bridge flags. */
  flags: string;
  /** Shell run (as the container's user) before the bridge starts. */
  prepare?: string;
  hostConfig?: Docker.HostConfig;
}

interface Running {
  container: Docker.Container;
  client: TestClient;
  welcome: Frame;
  status: () => Promise<BridgeStatus>;
  /** Sends a prompt whose tool call runs `command`; resolves with every frame of the turn once it settles. */
  turn: (command: string, ms?: number) => Promise<Frame[]>;
  /** Sends a prompt whose tool call runs `command`; resolves with the tool's output once the turn settles. */
  bash: (command: string, ms?: number) => Promise<string>;
  root: (command: string) => Promise<string>;
  logs: () => Promise<string>;
}

async function start(t: TestContext, launch: Launch): Promise<Running> {
  const model = await startScriptedModel({ script: toolScript });
  const seed = mkdtempSync(path.join(tmpdir(), "survival-core-seed-"));
  await writeScriptedAgentDir(model.baseUrl, seed);
  chmodSync(seed, 0o755);
  chmodSync(path.join(seed, "models.json"), 0o644);
  const port = await freePort();
  const token = `bridge-token-${randomBytes(16).toString("hex")}`;
  const bridge = [
    "node /opt/chat-ui-agent/bridge.mjs",
    `--listen 127.0.0.1:${port} --cwd ${launch.workspace} --agent-user agent ${launch.flags}`,
    "--provider scripted --model scripted-model",
  ].join(" ");
  // What sbx-server does: start the bridge with the token in its environment only.
  const launcher = `${launch.prepare ?? ":"}; read -r T; CHAT_UI_AGENT_BRIDGE_TOKEN="$T" exec ${bridge}`;
  const container = await docker.createContainer({
    Image: IMAGE,
    ...(launch.user ? { User: launch.user } : { User: "root" }),
    Cmd: ["sh", "-c", launcher],
    Env: ["PI_CODING_AGENT_DIR=/pi-seed", "PI_OFFLINE=1", "AGENT_POLICY=auto"],
    OpenStdin: true,
    StdinOnce: false,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    HostConfig: { NetworkMode: "host", Binds: [`${seed}:/pi-seed:ro`], ...launch.hostConfig },
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
  const { client, welcome } = await TestClient.connect(`ws://127.0.0.1:${port}/v1/rpc`, {
    token,
    clientId: "the-person",
  });
  t.after(() => client.close());
  let n = 0;
  // The person says yes to what the agent asks: this test is about availability, not the gate.
  void (async () => {
    let from = 0;
    for (;;) {
      const dialog = await client.waitFor(isApprovalDialog, 3_600_000, from).catch(() => undefined);
      if (!dialog) return;
      from = client.frames.indexOf(dialog) + 1;
      client.send({
        type: "extension_ui_response",
        id: dialog.id,
        commandId: `yes-${++n}`,
        ...allowOnce(dialog),
      });
    }
  })();
  const status = async () =>
    BridgeStatus.parse((await client.request({ type: "bridge_status", id: `st-${++n}` }, 30_000)).data);
  const bash = async (command: string, ms = 90_000) => {
    const from = client.frames.length;
    const response = await client.request({ type: "prompt", id: `p-${++n}`, message: `BASH ${command}` }, ms);
    assert.equal(response.success, true, JSON.stringify(response));
    const seen = () =>
      client.frames
        .slice(from)
        .map((f) => `${f.seq}:${f.type}`)
        .join(" ");
    const end = await client
      .waitFor((f) => f.type === "tool_execution_end", ms, from)
      .catch(async (err: Error) => {
        throw new Error(
          `${err.message.slice(0, 2000)}\nframes since the prompt: ${seen()}\n${(await logs()).slice(-8000)}`,
        );
      });
    await client.waitFor((f) => f.type === "agent_settled", ms, from);
    const result = end.result as { content: { text?: string }[] };
    return result.content.map((c) => c.text ?? "").join("");
  };
  const turn = async (command: string, ms = 90_000) => {
    const from = client.frames.length;
    const response = await client.request({ type: "prompt", id: `p-${++n}`, message: `BASH ${command}` }, ms);
    assert.equal(response.success, true, JSON.stringify(response));
    await client
      .waitFor((f) => f.type === "agent_settled", ms, from)
      .catch(async (err: Error) => {
        throw new Error(`${err.message.slice(0, 2000)}\n${(await logs()).slice(-8000)}`);
      });
    return client.frames.slice(from);
  };
  const root = async (command: string) => {
    const result = await execIn(container, ["sh", "-c", command], "root");
    return result.stdout + result.stderr;
  };
  return { container, client, welcome, status, turn, bash, root, logs };
}

async function until<T>(
  what: string,
  ms: number,
  probe: () => Promise<T | undefined>,
  logs: () => Promise<string>,
) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}\n${(await logs()).slice(-6000)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe("the bridge core survives what the tools do to the disk and to Pi's start", {
  timeout: 30 * 60_000,
}, () => {
  it("root: the workspace's disk (shared with the state dir) filled: frames keep flowing, durability degrades, then recovers", async (t) => {
    const ws = "/data/workspace";
    const r = await start(t, {
      user: undefined,
      workspace: ws,
      flags: "--state-dir /data/state",
      // One small tmpfs for both, as a Space's disk is one.
      prepare: `mkdir -p ${ws} && chown agent:agent ${ws} && mkdir -m 700 /data/state`,
      hostConfig: { Tmpfs: { "/data": "rw,size=48m,mode=0755" } },
    });
    const epoch = String(r.welcome.epoch);
    assert.equal((await r.status()).durability.journal, "ok");

    // The agent fills the disk. Pi itself may fail its turn on ENOSPC (its session is on that disk too): what
    // matters is that every frame it writes still reaches the person, and that the bridge answers.
    const fill = await r.turn(attack("fillDisk", ws));
    assert.ok(
      fill.some((f) => f.type === "agent_settled"),
      "the turn's frames arrived, to its end",
    );
    assert.match(await r.root(`df -k ${ws} | tail -1`), /\s100%\s/, "the disk is full");
    const degraded = await r.status();
    assert.equal(degraded.durability.journal, "degraded", JSON.stringify(degraded.durability));
    assert.match(degraded.durability.problem ?? "", /ENOSPC/);
    assert.deepEqual(degraded.health, { ok: true, reason: null, detail: null }, "delivery goes on");
    const identity = JSON.parse(await r.root("cat /data/state/bridge/identity.json")) as { epoch?: string };
    assert.notEqual(identity.epoch, epoch, "the epoch is retired while the journal misses frames");

    // Space comes back.
    await r.root(attack("remedyFreeDisk", ws));
    await until(
      "the journal to be written again",
      120_000,
      async () => ((await r.status()).durability.journal === "ok" ? true : undefined),
      r.logs,
    );
    assert.match(await r.bash(attack("afterRecovery", ws)), /AFTER_RECOVERY_MARKER/);
    const after = await r.status();
    assert.equal(after.epoch, epoch);
    assert.deepEqual(after.health, { ok: true, reason: null, detail: null });
    const journaled = await r.root("cat /data/state/bridge/journal/*.ndjson");
    assert.match(journaled, /AFTER_RECOVERY_MARKER/, "new frames are journaled again");
    assert.match(
      journaled,
      /"journal":"degraded"/,
      "and those sent from memory meanwhile were written at recovery",
    );
    const restored = JSON.parse(await r.root("cat /data/state/bridge/identity.json")) as { epoch?: string };
    assert.equal(restored.epoch, epoch, "the epoch is back");
  });

  for (const user of [undefined, "1000"]) {
    it(`${user ? "--user 1000" : "root"}: a .git whose commondir is a FIFO hangs every new Pi at start: reported, killed, started again`, async (t) => {
      const ws = "/workspace";
      const r = await start(t, { user, workspace: ws, flags: "" });
      assert.match(await r.bash(attack("fifoGitfile", ws)), /PLANTED/);
      const first = await r.status();
      assert.deepEqual(first.health, { ok: true, reason: null, detail: null });
      // The pair restarted from outside (the tools cannot kill the executor any more).
      await r.root(`kill -9 ${first.pi.pid}`);
      const reported = await until(
        "health to report a hung start",
        60_000,
        async () => {
          const s = await r.status();
          return s.health.reason === "starting_too_long" ? s : undefined;
        },
        r.logs,
      );
      assert.equal(reported.health.ok, false);
      assert.equal(reported.pi.state, "starting");
      const hungPid = reported.pi.pid;
      assert.notEqual(hungPid, first.pi.pid);
      const retried = await until(
        "the hung Pi to be killed and another started",
        90_000,
        async () => {
          const s = await r.status();
          return s.pi.pid !== hungPid && s.pi.pid !== null && s.pi.state === "starting" ? s : undefined;
        },
        r.logs,
      );
      assert.equal(retried.health.reason, "starting_too_long");
      assert.match(retried.health.detail ?? "", /killed and started again/);
      assert.equal(
        (await r.root(`kill -0 ${hungPid} 2>/dev/null && echo alive || echo gone`)).trim(),
        "gone",
      );
      // The person's side removes the trap: a Pi starts and serves again.
      const from = r.client.frames.length;
      await until(
        "a Pi to serve again",
        120_000,
        async () => {
          await r.root(attack("remedyUnblockFifo", ws));
          const s = await r.status();
          return s.pi.state === "running" ? s : undefined;
        },
        r.logs,
      );
      await r.client.waitFor((f) => f.type === "agent_restarted", 30_000, from);
      assert.deepEqual((await r.status()).health, { ok: true, reason: null, detail: null });
    });
  }
});
