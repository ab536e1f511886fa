// Issue 18 (the network mode, approved calls) in the real image, in the three launch modes, with real Pi, the
// scripted model and the shipped gate. Each container has a network namespace of its own: its loopback, and a veth
// interface with 203.0.113.7, an address that exists only there, where a sink counts every connection. Tools try
// to connect there with a test program the gate cannot model, baked into a test-only image
// (tests/image/fixtures/netmode-connect.mjs), and with curl, which the gate reads and shows as sending:
//   - registries (the default): the program, allowed without a dialog (auto, the guard enforcing), does not reach
//     it, nor does a person's `!` command, nor the program approved by the person in `ask` (a yes to run unknown
//     code is not a yes to let it out); curl approved by the person does (that call only); declined, nothing runs;
//   - lockdown (set by the operator's CLI inside the container): even approved curl does not reach it;
//   - open (set over RPC): a `!` command reaches it, and the report says egress is degraded.
// The sink's count is checked against the calls that connected. Attack code runs only inside these containers.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { before, describe, it } from "node:test";
import type { Isolation } from "../../bridge/protocol.ts";
import { type Frame, TestClient } from "../support/bridge.ts";
import {
  buildImage,
  buildProductImage,
  docker,
  execIn,
  IMAGE_BUILD_TIMEOUT_MS,
  imageTag,
} from "./support/docker.ts";
import { hostModel, until } from "./support/harness.ts";

const IMAGE = imageTag("chat-ui-agent-runtime:netmode-test");
const PROBES = imageTag("chat-ui-agent-runtime:netmode-probes");
const FIXTURES = path.join(import.meta.dirname, "fixtures");
const PORTS = { bridge: 7700, model: 7701 };
const TARGET = "203.0.113.7";
const CONNECT = "/opt/netmode-test/netmode-connect";
/** The test program (the gate cannot model it): prints REACHED or BLOCKED(<code>). */
const connect = (tag: string) => `${CONNECT} ${TARGET} 80 ${tag}`;
/** curl, which the gate reads and shows as sending: exit 7 when it could not connect (the sink never answers). */
const curl = (tag: string) =>
  `curl -sS --noproxy '*' --connect-timeout 3 -m 5 --data ${tag} http://${TARGET}:80/; echo curl=$?`;

before(
  async () => {
    await buildProductImage(IMAGE);
    const context = mkdtempSync(path.join(tmpdir(), "netmode-probes-"));
    try {
      for (const file of ["netmode-connect.mjs", "sandbox-infra.mjs"])
        copyFileSync(path.join(FIXTURES, file), path.join(context, file));
      writeFileSync(
        path.join(context, "Dockerfile"),
        [
          `FROM ${IMAGE}`,
          "USER root",
          "RUN apt-get update && apt-get install -y --no-install-recommends iproute2 && rm -rf /var/lib/apt/lists/*",
          "COPY netmode-connect.mjs sandbox-infra.mjs /opt/netmode-test/",
          `RUN mv /opt/netmode-test/netmode-connect.mjs ${CONNECT} && chmod 0755 ${CONNECT} && chmod 0644 /opt/netmode-test/sandbox-infra.mjs`,
          "",
        ].join("\n"),
      );
      const probes = await buildImage(context, PROBES);
      if (!probes.ok)
        throw new Error(
          `the probe image failed to build: ${probes.error}\n${probes.log.split("\n").slice(-40).join("\n")}`,
        );
    } finally {
      rmSync(context, { recursive: true, force: true });
    }
  },
  { timeout: IMAGE_BUILD_TIMEOUT_MS },
);

interface Mode {
  name: string;
  /** docker run --user (undefined: the image's default user); the operator's CLI runs as the same user. */
  user: string | undefined;
  token: "env" | "file";
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

describe("the network mode and approved calls in the image", { timeout: 60 * 60_000 }, () => {
  for (const mode of MODES) {
    it(`${mode.name}: lockdown, registries and open as the tools meet them; an approved call reaches the listener, an auto-allowed one does not`, async (t) => {
      const { seed, relayDir } = await hostModel(t, "netmode-image", PORTS.model);
      const token = `bridge-token-${randomBytes(16).toString("hex")}`;
      const bridge = [
        "node /opt/chat-ui-agent/bridge.mjs",
        `--listen 127.0.0.1:${PORTS.bridge} --cwd /workspace --agent-user agent`,
        mode.token === "file" ? "--token-file /run/bridge-token" : "",
        "--provider scripted --model scripted-model --no-session",
      ].join(" ");
      const launcher =
        mode.token === "file"
          ? `umask 077; read -r T; printf %s "$T" > /run/bridge-token; ${bridge}; sleep 100000`
          : `read -r T; CHAT_UI_AGENT_BRIDGE_TOKEN="$T" ${bridge}; sleep 100000`;
      const container = await docker.createContainer({
        Image: PROBES,
        ...(mode.user ? { User: mode.user } : {}),
        Cmd: ["sh", "-c", launcher],
        Env: ["PI_CODING_AGENT_DIR=/pi-seed", "PI_OFFLINE=1", "AGENT_POLICY=auto"],
        OpenStdin: true,
        StdinOnce: false,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        HostConfig: {
          NetworkMode: "none",
          // Only for root's setup through docker exec (the veth interface); no tool runs as root.
          CapAdd: ["NET_ADMIN"],
          Binds: [`${seed}:/pi-seed:ro`, `${relayDir}:/relay`],
        },
      });
      t.after(async () => {
        await container.remove({ force: true });
      });
      const io = await container.attach({
        stream: true,
        stdin: true,
        stdout: true,
        stderr: true,
        hijack: true,
      });
      docker.modem.demuxStream(io, new PassThrough(), new PassThrough());
      await container.start();
      const root = async (command: string) => {
        const result = await execIn(container, ["sh", "-c", command], "root");
        return result.stdout + result.stderr;
      };
      const infra = {
        secret: `unused-${randomBytes(8).toString("hex")}`,
        countsFile: "/run/sink-counts.json",
        modelPort: PORTS.model,
        modelSocket: "/relay/model.sock",
        bridgePort: PORTS.bridge,
        bridgeSocket: "/relay/bridge.sock",
        sbxPort: 7702,
        sbxSocket: "/relay/sbx.sock",
        sink: { hosts: [TARGET], tcpPorts: [80], udpPorts: [] },
      };
      const setup = await root(
        [
          "ip link set lo up",
          "ip link add veth0 type veth peer name veth1",
          "ip link set veth0 up",
          "ip link set veth1 up",
          `ip addr add ${TARGET}/24 dev veth0`,
          `nohup node /opt/netmode-test/sandbox-infra.mjs '${JSON.stringify(infra)}' > /run/infra.log 2>&1 &`,
          "echo SETUP_DONE",
        ].join("\n"),
      );
      assert.match(setup, /SETUP_DONE/, setup);
      await until(
        async () => (await root("cat /run/infra.log")).includes("INFRA_READY"),
        20_000,
        "the infra",
      );
      io.write(`${token}\n`);
      const logs = async () =>
        ((await container.logs({ stdout: true, stderr: true })) as unknown as Buffer).toString("utf8");
      await until(async () => (await logs()).includes('"msg":"listening"'), 90_000, "the bridge to listen");
      const { client } = await TestClient.connect(`ws+unix://${path.join(relayDir, "bridge.sock")}:/v1/rpc`, {
        token,
        clientId: "the-person",
      });
      t.after(() => client.close());

      let n = 0;
      // The person: answers every dialog with `reply`, and the test counts them.
      const person = { reply: false, dialogs: 0 };
      void (async () => {
        let from = 0;
        for (;;) {
          const dialog = await client
            .waitFor((f) => f.type === "extension_ui_request" && f.method === "confirm", 3_600_000, from)
            .catch(() => undefined);
          if (!dialog) return;
          from = client.frames.indexOf(dialog) + 1;
          person.dialogs++;
          client.send({
            type: "extension_ui_response",
            id: dialog.id,
            commandId: `answer-${++n}`,
            confirmed: person.reply,
          });
        }
      })();
      const request = (frame: Record<string, unknown>, ms?: number) =>
        client.request({ ...frame, id: `r-${++n}` }, ms);
      const egress = async () =>
        ((await request({ type: "bridge_status" })).data as { isolation: Isolation }).isolation;
      const sinkConnections = async () =>
        (JSON.parse(await root("cat /run/sink-counts.json")) as { connections: number }).connections;
      /** One bash tool call through the gate: its output and the dialogs it raised. */
      const toolCall = async (command: string, reply: boolean) => {
        person.reply = reply;
        const dialogsBefore = person.dialogs;
        const from = client.frames.length;
        const response = await request({ type: "prompt", message: `BASH ${command}` }, 30_000);
        assert.equal(response.success, true, JSON.stringify(response));
        const end = await client.waitFor((f: Frame) => f.type === "tool_execution_end", 120_000, from);
        await client.waitFor((f: Frame) => f.type === "agent_settled", 60_000, from);
        const text = (end.result as { content: { text?: string }[] }).content
          .map((c) => c.text ?? "")
          .join("");
        return { text, dialogs: person.dialogs - dialogsBefore };
      };
      /** A person's `!` command (no gate, no approval): what the mode alone lets through. */
      const userBash = async (tag: string) => {
        const response = await request({ type: "bash", command: `${CONNECT} ${TARGET} 80 ${tag}` }, 60_000);
        assert.equal(response.success, true, JSON.stringify(response));
        return JSON.stringify(response.data);
      };
      const setPolicy = async (policy: string) =>
        assert.equal((await request({ type: "set_policy", policy })).success, true);

      // registries (the default).
      const start = await egress();
      t.diagnostic(`egress: ${JSON.stringify(start.protections.egress)}`);
      assert.equal(start.protections.egress.mode, "registries");
      assert.equal(start.protections.egress.guard, "enforcing");
      assert.equal(start.protections.egress.active, true, start.protections.egress.detail);
      await setPolicy("auto");
      assert.match(await userBash("bang-registries"), /BLOCKED\(EACCES\)/);
      // Declined if asked: what runs here runs without the person's approval.
      const auto = await toolCall(connect("auto-registries"), false);
      const decisions = async () =>
        (await logs())
          .split("\n")
          .filter((l) => l.includes("tool call decision"))
          .map((l) => l.slice(0, 1500))
          .join("\n");
      assert.equal(
        auto.dialogs,
        0,
        `auto with the guard enforcing: no dialog for a program the gate cannot model\n${await decisions()}`,
      );
      assert.match(auto.text, /BLOCKED\(EACCES\)/, auto.text);
      assert.equal(await sinkConnections(), 0);

      await setPolicy("ask");
      const declined = await toolCall(curl("declined"), false);
      assert.equal(declined.dialogs, 1);
      assert.doesNotMatch(declined.text, /curl=/, "declined: nothing ran");
      // A yes to run a program the gate cannot model is a yes to run it, not to let it out.
      const approvedUnknown = await toolCall(connect("approved-unknown"), true);
      assert.equal(approvedUnknown.dialogs, 1);
      assert.match(approvedUnknown.text, /BLOCKED\(EACCES\)/, approvedUnknown.text);
      // A command the gate read entirely and showed as sending: the person's yes lets that call out.
      const approved = await toolCall(curl("approved-registries"), true);
      assert.equal(approved.dialogs, 1);
      assert.doesNotMatch(approved.text, /curl=7/, `it connected: ${approved.text}`);
      await until(async () => (await sinkConnections()) === 1, 10_000, "the approved call's connection");
      // The gate's audit line (nested in the bridge's log line) says it gave that call the network.
      assert.match(await logs(), /networkGrant\\?":true/);
      // The approval was for that call only: the next auto-allowed call is refused again.
      await setPolicy("auto");
      const after = await toolCall(connect("auto-after"), false);
      assert.equal(after.dialogs, 0, await decisions());
      assert.match(after.text, /BLOCKED\(EACCES\)/);

      // lockdown, by the operator's CLI inside the container (the bridge's user, as an operator would).
      let from = client.frames.length;
      const cli = await execIn(
        container,
        ["node", "/opt/chat-ui-agent/policy-cli.mjs", "network", "lockdown"],
        mode.user ?? "root",
      );
      assert.match(cli.stdout, /"mode":"lockdown"/, cli.stdout + cli.stderr);
      const changed = await client.waitFor((f) => f.type === "network_mode_changed", 10_000, from);
      assert.equal(changed.cause, "file");
      assert.equal((await egress()).protections.egress.mode, "lockdown");
      await setPolicy("ask");
      const lockedApproved = await toolCall(curl("approved-lockdown"), true);
      assert.equal(lockedApproved.dialogs, 1);
      assert.match(
        lockedApproved.text,
        /curl=7/,
        `lockdown overrides the person's approval: ${lockedApproved.text}`,
      );
      assert.match(await userBash("bang-lockdown"), /BLOCKED\(EACCES\)/);

      // open, over RPC: the mode alone lets a `!` command out, and the report says so.
      from = client.frames.length;
      assert.equal((await request({ type: "set_network_mode", mode: "open" })).success, true);
      await client.waitFor((f) => f.type === "network_mode_changed", 10_000, from);
      const open = await egress();
      assert.equal(open.protections.egress.mode, "open");
      assert.equal(open.protections.egress.active, false);
      assert.equal(open.mode, "degraded");
      assert.match(await userBash("bang-open"), /REACHED/);
      await until(async () => (await sinkConnections()) === 2, 10_000, "the open-mode connection");
      assert.match(await logs(), /network mode open: the tools may connect anywhere/);
      // Every connection the sink saw is one a call reported as REACHED.
      assert.equal(await sinkConnections(), 2);
    });
  }
});
