// Issue 17's "FIFO named pytest.ini" row and its PI_SESSION_FILE leak, in the real image, in the two launch modes
// the row names: root (--agent-user agent), and the image's default user started as sbx-server would (through
// the sbx stand-in: token in the environment, stdout and stderr discarded).
//  1. The agent's own tool call makes a FIFO (no writer) of every config file the gate reads before a test
//     runner or build tool runs; then it calls pytest. Before the fix the gate's pytest-config reader opened it
//     blocking: Pi's main thread hung in openat, an abort got no answer, and health said ok. Now: Pi answers
//     (get_state) while the call runs, the call is answered, an abort ends the tool (which opens the FIFO as
//     pytest would), and health says ok only because it is true (Pi answers).
//  2. PI_SESSION_FILE (a path into Pi's private tree) is in neither Pi's environment nor the tools' (a tool call
//     and a person's `!` command).
//  3. The tools fill the disk the workspace shares with the state dir, and the bridge is started again (after a
//     crash; chat-ui would restart it): before, it exited at once (ENOSPC writing its token hand-over and lock),
//     where nobody sees it (sbx-server discards stderr). Now it frees its disk reserve, starts, serves, reports
//     durability degraded ("the disk is full"), and recovers with the disk (root).
// The attack commands are data (fixtures/survival-reads-attacks.json) and run only inside the container.
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
import { TestClient } from "../support/bridge.ts";
import { docker, execIn, freePort, testedImage } from "./support/docker.ts";
import { toolScript } from "./support/harness.ts";

const IMAGE = testedImage("chat-ui-agent-runtime:survival-reads-test");
const SUPPORT = path.join(import.meta.dirname, "support");
const WS = "/workspace";

const ATTACKS = JSON.parse(
  readFileSync(path.join(import.meta.dirname, "fixtures", "survival-reads-attacks.json"), "utf8"),
) as Record<"plantFifos" | "pytestCall" | "showEnv" | "fillDisk" | "afterRestart" | "remedyFreeDisk", string>;
const attack = (name: keyof typeof ATTACKS, ws = WS) => ATTACKS[name].replaceAll("{WS}", ws);

interface Mode {
  key: "root" | "sbx";
  name: string;
}

const MODES: Mode[] = [
  { key: "root", name: "root, --agent-user agent" },
  { key: "sbx", name: "the image's default user, started as sbx-server would (token in the environment)" },
];

async function until<T>(
  what: string,
  ms: number,
  probe: () => Promise<T | undefined>,
  logs: () => Promise<string>,
) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}\n${(await logs()).slice(-6000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface Running {
  client: TestClient;
  /** Another connection of the person's client (after a restart of the bridge). */
  connect: () => Promise<TestClient>;
  container: Docker.Container;
  port: number;
  logs: () => Promise<string>;
  root: (command: string) => Promise<string>;
  status: () => Promise<BridgeStatus>;
}

/** Starts the container and the bridge in `mode`; the person's client is connected. */
/** A small disk (tmpfs) shared by the workspace and the state dir, as a Space's one disk, with the bridge
 * started again by its launcher whenever it exits (as chat-ui would start it again). */
const SMALL_DISK = { ws: "/data/workspace", state: "/data/state" };

async function start(t: TestContext, mode: Mode, smallDisk = false): Promise<Running> {
  const model = await startScriptedModel({ script: toolScript });
  const seed = mkdtempSync(path.join(tmpdir(), "survival-reads-seed-"));
  await writeScriptedAgentDir(model.baseUrl, seed);
  chmodSync(seed, 0o755);
  chmodSync(path.join(seed, "models.json"), 0o644);
  const [port, sbxPort] = [await freePort(), await freePort()];
  const token = `bridge-token-${randomBytes(16).toString("hex")}`;
  const sbxToken = randomBytes(16).toString("hex");
  const argv = [
    "node",
    "/opt/chat-ui-agent/bridge.mjs",
    "--listen",
    `127.0.0.1:${port}`,
    "--cwd",
    smallDisk ? SMALL_DISK.ws : WS,
    ...(smallDisk ? ["--state-dir", SMALL_DISK.state] : []),
    "--agent-user",
    "agent",
    "--provider",
    "scripted",
    "--model",
    "scripted-model",
  ];
  const env = ["PI_CODING_AGENT_DIR=/pi-seed", "PI_OFFLINE=1", "AGENT_POLICY=auto"];
  // root: the token arrives on stdin and is put in the bridge's environment only. sbx: the stand-in starts it.
  const container = await docker.createContainer({
    Image: IMAGE,
    ...(mode.key === "root" ? { User: "root" } : {}),
    Cmd:
      mode.key === "root"
        ? [
            "sh",
            "-c",
            smallDisk
              ? `mkdir -p ${SMALL_DISK.ws} && chown agent:agent ${SMALL_DISK.ws} && mkdir -m 700 ${SMALL_DISK.state}; read -r T; while :; do CHAT_UI_AGENT_BRIDGE_TOKEN="$T" ${argv.join(" ")}; sleep 1; done`
              : `read -r T; CHAT_UI_AGENT_BRIDGE_TOKEN="$T" exec ${argv.join(" ")}`,
          ]
        : ["node", "/sbx/sbx-standin.mjs"],
    Env: mode.key === "root" ? env : [...env, `PORT=${sbxPort}`, "HOST=127.0.0.1", `SBX_TOKEN=${sbxToken}`],
    OpenStdin: true,
    StdinOnce: false,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    HostConfig: {
      NetworkMode: "host",
      Binds: [`${seed}:/pi-seed:ro`, `${SUPPORT}:/sbx:ro`],
      ...(smallDisk ? { Tmpfs: { "/data": "rw,size=48m,mode=0755" } } : {}),
    },
  });
  t.after(async () => {
    await container.remove({ force: true });
    await model.close();
    rmSync(seed, { recursive: true, force: true });
  });
  const io = await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true });
  docker.modem.demuxStream(io, new PassThrough(), new PassThrough());
  await container.start();
  const containerLogs = async () =>
    ((await container.logs({ stdout: true, stderr: true })) as unknown as Buffer).toString("utf8");
  const sbx = (route: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${sbxPort}${route}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "x-sandbox-token": sbxToken },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  let logs = containerLogs;
  if (mode.key === "root") {
    io.write(`${token}\n`);
  } else {
    await until(
      "the sbx stand-in",
      30_000,
      async () => ((await fetch(`http://127.0.0.1:${sbxPort}/`)).ok ? true : undefined),
      containerLogs,
    );
    const started = await sbx("/exec", { id: "bridge", argv, env: { CHAT_UI_AGENT_BRIDGE_TOKEN: token } });
    assert.equal(started.status, 200, await started.text());
    // The stand-in keeps the tail of the bridge's stderr (sbx-server would discard it).
    logs = async () => ((await (await sbx("/jobs/bridge")).json()) as { stderr: string }).stderr;
  }
  await until(
    "the bridge to listen",
    60_000,
    async () => ((await logs()).includes('"msg":"listening"') ? true : undefined),
    logs,
  );
  const connect = async () => {
    const { client } = await TestClient.connect(`ws://127.0.0.1:${port}/v1/rpc`, {
      token,
      clientId: "the-person",
    });
    t.after(() => client.close());
    return client;
  };
  const client = await connect();
  let n = 0;
  const status = async () =>
    BridgeStatus.parse((await client.request({ type: "bridge_status", id: `st-${++n}` }, 30_000)).data);
  const root = async (command: string) => {
    const r = await execIn(container, ["sh", "-c", command], "root");
    return r.stdout + r.stderr;
  };
  return { client, container, port, logs, root, status, connect };
}

/** Runs one BASH turn; every dialog it raises is answered yes. Resolves with the tool's output. */
async function toolCall(r: Running, command: string, id: string): Promise<string> {
  const { client } = r;
  let from = client.frames.length;
  const response = await client.request({ type: "prompt", id, message: `BASH ${command}` }, 60_000);
  assert.equal(response.success, true, JSON.stringify(response));
  for (let answered = 0; ; answered++) {
    const next = await client.waitFor(
      (f) => f.type === "tool_execution_end" || (f.type === "extension_ui_request" && f.method === "confirm"),
      90_000,
      from,
    );
    if (next.type === "tool_execution_end") {
      await client.waitFor((f) => f.type === "agent_settled", 60_000, from);
      return ((next.result as { content: { text?: string }[] }).content ?? [])
        .map((c) => c.text ?? "")
        .join("");
    }
    assert.ok(answered < 5, "at most a few dialogs for one call");
    from = client.frames.indexOf(next) + 1;
    await client.answer({ id: String(next.id), commandId: `yes-${id}-${answered}`, confirmed: true });
  }
}

for (const mode of MODES) {
  describe(`issue 17's hung-read row in the image, ${mode.name}`, { timeout: 20 * 60_000 }, () => {
    it("FIFOs named like every config file the gate reads, then pytest: Pi answers, the call is answered, an abort ends it, health tells the truth", async (t) => {
      const r = await start(t, mode);
      assert.match(await toolCall(r, attack("plantFifos"), "p-plant"), /PLANTED/);
      assert.match(await r.root(`ls -l ${WS}/pytest.ini ${WS}/package.json`), /^p.*pytest\.ini/m);

      const { client } = r;
      const from = client.frames.length;
      const call = await client.request({
        type: "prompt",
        id: "p-pytest",
        message: `BASH ${attack("pytestCall")}`,
      });
      assert.equal(call.success, true, JSON.stringify(call));
      // The gate has read (or refused to read) every FIFO before it asks or lets the call run: either comes.
      const first = await client.waitFor(
        (f) =>
          f.type === "tool_execution_start" || (f.type === "extension_ui_request" && f.method === "confirm"),
        60_000,
        from,
      );
      if (first.type === "extension_ui_request") {
        // Why it asks: the configuration pytest would read is not a regular file the gate can read.
        assert.match(
          String(first.message),
          /not a regular file|configuration is unknown/,
          String(first.message),
        );
        const yes = await client.answer({ id: String(first.id), commandId: "yes-pytest", confirmed: true });
        assert.equal(yes.success, true);
      }
      await client.waitFor((f) => f.type === "tool_execution_start", 60_000, from);
      // The tool now blocks in the FIFO's open (as pytest would). Pi itself answers, and health says ok because
      // Pi answers (the watchdog would report a hung Pi; a hung tool is the tools' own business).
      const state = await client.request({ type: "get_state", id: "g-during" }, 10_000);
      assert.equal(state.success, true, JSON.stringify(state));
      const during = await r.status();
      assert.deepEqual(during.health, { ok: true, reason: null, detail: null });
      assert.equal((await fetch(`http://127.0.0.1:${r.port}/v1/health`)).status, 200);
      // The person aborts: the abort is answered and the turn ends.
      const abort = await client.request({ type: "abort", id: "abort-pytest" }, 30_000);
      assert.equal(abort.success, true, JSON.stringify(abort));
      const end = await client.waitFor((f) => f.type === "tool_execution_end", 30_000, from);
      assert.equal(end.isError, true);
      await client.waitFor((f) => f.type === "agent_settled", 30_000, from);
      const after = await r.status();
      assert.equal(after.pi.state, "running");
      assert.equal(after.pi.restarts, 0, "Pi was never hung, so never restarted");
      assert.deepEqual(after.health, { ok: true, reason: null, detail: null });
      assert.equal((await client.request({ type: "get_state", id: "g-after" })).success, true);
      // No ps in the image: every live command line, from /proc.
      const commands = await r.root(
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done",
      );
      assert.doesNotMatch(commands, /^cat pytest\.ini/m, "the aborted tool is gone");
    });

    it("PI_SESSION_FILE is in neither Pi's environment nor the tools' (a tool call, a `!` command)", async (t) => {
      const r = await start(t, mode);
      const pid = (await r.status()).pi.pid;
      assert.ok(pid);
      // Pi runs as its own uid: root without CAP_SYS_PTRACE may not read its environment, that uid may.
      const uid = /^Uid:\s+(\d+)/m.exec(await r.root(`cat /proc/${pid}/status`))?.[1];
      assert.ok(uid, "Pi's uid");
      const piEnv = (await execIn(r.container, ["sh", "-c", `tr '\\0' '\\n' < /proc/${pid}/environ`], uid))
        .stdout;
      assert.match(piEnv, /^PATH=/m, "Pi's environment was read");
      assert.doesNotMatch(piEnv, /PI_SESSION_FILE/);
      const toolEnv = await toolCall(r, attack("showEnv"), "p-env");
      assert.match(toolEnv, /ENV_END/);
      assert.match(toolEnv, /^PATH=/m);
      assert.doesNotMatch(toolEnv, /PI_SESSION_FILE/);
      const bang = await r.client.request(
        { type: "bash", id: "bang-env", command: attack("showEnv") },
        60_000,
      );
      assert.equal(bang.success, true, JSON.stringify(bang));
      const output = String((bang.data as { output?: string } | undefined)?.output ?? "");
      assert.match(output, /ENV_END/);
      assert.doesNotMatch(output, /PI_SESSION_FILE/);
      const sessionFile = (await r.status()).durability.session?.file;
      if (sessionFile) assert.doesNotMatch(`${toolEnv}\n${output}`, new RegExp(escapeRegExp(sessionFile)));
    });
  });
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

describe("a bridge started again on the disk the tools filled (root, --agent-user agent)", {
  timeout: 20 * 60_000,
}, () => {
  it("it starts, serves, reports durability degraded (the disk is full), and recovers with the disk", async (t) => {
    const r = await start(t, MODES[0] as Mode, true);
    const ws = SMALL_DISK.ws;
    const reserve = `${SMALL_DISK.state}/bridge/disk-reserve`;
    assert.equal((await r.status()).durability.journal, "ok");
    assert.match(await r.root(`stat -c %s ${reserve}`), /^1048576$/m, "the bridge keeps its reserve");
    // The tools fill the disk the workspace shares with the state dir (a process of theirs, while the bridge is
    // idle: so its journal was not retired, and a new start frees nothing by cleaning it).
    const fill = await execIn(r.container, ["sh", "-c", attack("fillDisk", ws)], "agent");
    assert.match(fill.stdout, /FILL_EXIT=1/, fill.stderr);
    assert.match(await r.root(`df -k ${ws} | tail -1`), /\s100%\s/, "the disk is full");
    // The bridge goes (killed from outside, as a crash would) and its launcher starts it again on the full disk.
    const bridges = () =>
      r.root(
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -Eqs '^(/usr/local/bin/)?node /opt/chat-ui-agent/bridge.mjs' && basename $p; done",
      );
    const before = (await bridges()).trim().split("\n").filter(Boolean);
    assert.ok(before.length > 0, "the bridge runs");
    await r.root(`kill -9 ${before.join(" ")}`);
    const client = await until(
      "the bridge started again on the full disk to serve",
      90_000,
      async () => {
        const again = await r.connect();
        return again;
      },
      r.logs,
    );
    const status = async (id: string) =>
      BridgeStatus.parse((await client.request({ type: "bridge_status", id }, 30_000)).data);
    const degraded = await status("st-full");
    assert.equal(degraded.durability.journal, "degraded", JSON.stringify(degraded.durability));
    assert.match(degraded.durability.problem ?? "", /the disk is full/);
    assert.equal(degraded.pi.state, "running");
    assert.deepEqual(degraded.health, { ok: true, reason: null, detail: null }, "delivery goes on");
    assert.match(
      await toolCall({ ...r, client }, attack("afterRestart", ws), "p-after"),
      /BACK_ON_A_FULL_DISK/,
    );
    // Space comes back: durability and the reserve with it.
    await r.root(attack("remedyFreeDisk", ws));
    await until(
      "durability to recover",
      120_000,
      async () => ((await status(`st-${Date.now()}`)).durability.journal === "ok" ? true : undefined),
      r.logs,
    );
    assert.match(await r.root(`stat -c %s ${reserve}`), /^1048576$/m, "the reserve is back");
  });
});
