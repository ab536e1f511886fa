// Issue 11's acceptance, in the real image: the bridge, Pi and the tools as three principals. In each launch
// mode an agent-written script, run by a tool call (real Pi, the scripted model on the host's loopback), tries
// the seven attacks; a second agent-written program keeps trying to authenticate to the bridge and approve the
// dialog the person has not answered. Every verdict is checked from outside the container (docker exec as
// root), and the test says which protection held each attack.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { describe, it, type TestContext } from "node:test";
import type Docker from "dockerode";
import { writeScriptedAgentDir } from "../../agent-runtime/dev/agent-dir.ts";
import { probe, waitForHttp } from "../../agent-runtime/dev/http-probe.ts";
import { startScriptedModel } from "../../agent-runtime/dev/scripted-model.ts";
import type { Isolation } from "../../bridge/protocol.ts";
import { allowOnce, dialogText, isApprovalDialog } from "../support/approval.ts";
import { type Frame, TestClient } from "../support/bridge.ts";
import { docker, execIn, freePort, testedImage } from "./support/docker.ts";
import { toolScript } from "./support/harness.ts";

const IMAGE = testedImage("chat-ui-agent-runtime:isolation-test");
/** Built at run time: no key-shaped literal in the tree. */
const PROVIDER_KEY = `sk-fakeprovider-${randomBytes(12).toString("hex")}`;

interface Mode {
  name: string;
  /** docker run --user (undefined: the image's default user). */
  user: string | undefined;
  /** How the token reaches the bridge: README's environment, or a --token-file root wrote. */
  token: "env" | "file";
  landlock: "on" | "off";
}

interface Running {
  container: Docker.Container;
  client: TestClient;
  token: string;
  port: number;
  bridgePid: number;
  status: () => Promise<{ isolation: Isolation; pi: { pid: number }; pendingDialogs: { id: string }[] }>;
  tool: (prompt: string) => Promise<{ text: string; isError: boolean }>;
  /** Sends a prompt and returns once its tool call asks the person (the dialog stays unanswered). */
  promptUntilDialog: (prompt: string) => Promise<Frame>;
  root: (command: string) => Promise<string>;
  logs: () => Promise<string>;
}

async function start(t: TestContext, mode: Mode): Promise<Running> {
  const model = await startScriptedModel({ script: toolScript });
  const seed = mkdtempSync(path.join(tmpdir(), "iso-image-seed-"));
  await writeScriptedAgentDir(model.baseUrl, seed);
  chmodSync(seed, 0o755);
  chmodSync(path.join(seed, "models.json"), 0o644);
  const port = await freePort();
  const token = `bridge-token-${randomBytes(16).toString("hex")}`;
  const bridge = [
    "node /opt/chat-ui-agent/bridge.mjs",
    `--listen 127.0.0.1:${port} --cwd /workspace --agent-user agent`,
    mode.landlock === "off" ? "--landlock off" : "",
    mode.token === "file" ? "--token-file /run/bridge-token" : "",
    "--provider scripted --model scripted-model --no-session",
  ].join(" ");
  // What sbx-server does (as the container's user): start the bridge with the token in its environment only.
  const launcher =
    mode.token === "file"
      ? `umask 077; read -r T; printf %s "$T" > /run/bridge-token; exec ${bridge}`
      : `read -r T; CHAT_UI_AGENT_BRIDGE_TOKEN="$T" exec ${bridge}`;
  const container = await docker.createContainer({
    Image: IMAGE,
    ...(mode.user ? { User: mode.user } : {}),
    Cmd: ["sh", "-c", launcher],
    Env: [
      "PI_CODING_AGENT_DIR=/pi-seed",
      "PI_OFFLINE=1",
      "AGENT_POLICY=auto",
      `OPENAI_API_KEY=${PROVIDER_KEY}`,
    ],
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
  const root = async (command: string) => {
    const result = await execIn(container, ["sh", "-c", command], "root");
    return result.stdout + result.stderr;
  };
  const bridgePid = Number((await root(pidOf("/opt/chat-ui-agent/bridge.mjs"))).trim());
  assert.ok(bridgePid > 1, "the bridge's pid");
  let n = 0;
  // The person approves what the agent asks about its own scripts (the point is the OS boundary); any other
  // dialog stays unanswered, for the thief to try.
  void (async () => {
    let from = 0;
    for (;;) {
      const dialog = await client.waitFor(isApprovalDialog, 3_600_000, from).catch(() => undefined);
      if (!dialog) return;
      from = client.frames.indexOf(dialog) + 1;
      if (/attack\.b64|steal\.js/.test(dialogText(dialog))) {
        client.send({
          type: "extension_ui_response",
          id: dialog.id,
          commandId: `yes-${++n}`,
          ...allowOnce(dialog),
        });
      }
    }
  })();
  const status = async () => {
    const response = await client.request({ type: "bridge_status", id: `st-${++n}` });
    return response.data as Awaited<ReturnType<Running["status"]>>;
  };
  const tool = async (prompt: string) => {
    const from = client.frames.length;
    const response = await client.request({ type: "prompt", id: `p-${++n}`, message: prompt }, 30_000);
    assert.equal(response.success, true, JSON.stringify(response));
    const end = await client.waitFor((f) => f.type === "tool_execution_end", 90_000, from);
    await client.waitFor((f) => f.type === "agent_settled", 60_000, from);
    const result = end.result as { content: { text?: string }[] };
    return { text: result.content.map((c) => c.text ?? "").join(""), isError: end.isError === true };
  };
  const promptUntilDialog = async (prompt: string) => {
    const from = client.frames.length;
    await client.request({ type: "prompt", id: `p-${++n}`, message: prompt }, 30_000);
    return client.waitFor(isApprovalDialog, 60_000, from);
  };
  return { container, client, token, port, bridgePid, status, tool, promptUntilDialog, root, logs };
}

/** Every file of Pi's compile cache, with its digest, then how many there are. */
const CACHE_DIGEST =
  "cd /opt/chat-ui-agent/compile-cache && find . -type f | sort | xargs sha256sum | sha256sum && find . | wc -l";

/** The seven attacks of issue 11, as the agent's own shell script. Each prints NAME:SUCCEEDED if it worked. */
function attackScript(r: { bridgePid: number; piPid: number; policyPath: string; stateDir: string }): string {
  return `#!/bin/sh
needles=/workspace/.needles
# 1. the bridge token: every process's environ and cmdline, any token file
(cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline /proc/[0-9]*/task/*/environ; cat ${r.stateDir}/bridge/* /run/bridge-token /tmp/*token* /var/tmp/*/bridge/*) 2>/dev/null | tr '\\0' '\\n' | grep -qF -f $needles/token && echo TOKEN:SUCCEEDED
# 2. the provider key: own environment, the parent's, all of /proc
(env; cat /proc/$PPID/environ /proc/[0-9]*/environ /proc/[0-9]*/task/*/environ) 2>/dev/null | tr '\\0' '\\n' | grep -qF -f $needles/key && echo PROVIDER_KEY:SUCCEEDED
# 4. write the policy file (or replace it)
(echo auto > ${r.policyPath}) 2>/dev/null && echo POLICY_WRITE:SUCCEEDED
(mv ${r.policyPath} ${r.policyPath}.old) 2>/dev/null && echo POLICY_MOVE:SUCCEEDED
# 5. plant executables in Pi's agent dir
(mkdir -p ${r.stateDir}/pi/agent/bin && printf '#!/bin/sh\\necho pwned\\n' > ${r.stateDir}/pi/agent/bin/rg && chmod +x ${r.stateDir}/pi/agent/bin/rg) 2>/dev/null && echo PLANT:SUCCEEDED
# 6. signal the bridge or Pi (stop, and let go at once if that worked)
kill -STOP ${r.bridgePid} 2>/dev/null && kill -CONT ${r.bridgePid} && echo SIGNAL_BRIDGE:SUCCEEDED
kill -STOP ${r.piPid} 2>/dev/null && kill -CONT ${r.piPid} && echo SIGNAL_PI:SUCCEEDED
# 7. modify /opt/chat-ui-agent
(echo '// changed' >> /opt/chat-ui-agent/approval-gate.mjs) 2>/dev/null && echo OPT_MODIFY:SUCCEEDED
(touch /opt/chat-ui-agent/planted) 2>/dev/null && echo OPT_PLANT:SUCCEEDED
# 7b. Pi's compile cache: bytecode Pi would run at its next start (change a module's entry, add one)
for f in /opt/chat-ui-agent/compile-cache/*/*; do (printf x >> "$f") 2>/dev/null && echo OPT_CACHE_MODIFY:SUCCEEDED; break; done
(touch /opt/chat-ui-agent/compile-cache/planted /opt/chat-ui-agent/compile-cache/v0-x64-0) 2>/dev/null && echo OPT_CACHE_PLANT:SUCCEEDED
echo ATTACKS_DONE
`;
}

/** Attack 3, as the agent's own program: find any token, connect, approve every pending dialog. */
function thiefScript(port: number): string {
  return `const fs = require("fs");
const found = new Set(["guess-${"0".repeat(24)}"]);
function scan() {
  for (const pid of fs.readdirSync("/proc").filter((p) => /^\\d+$/.test(p))) {
    for (const file of ["environ", "cmdline"]) {
      let text;
      try { text = fs.readFileSync("/proc/" + pid + "/" + file, "latin1"); } catch { continue; }
      for (const m of text.matchAll(/CHAT_UI_AGENT_BRIDGE_TOKEN=([^\\0]+)/g)) found.add(m[1]);
      const parts = text.split("\\0");
      const at = parts.indexOf("--token-file");
      if (at >= 0) { try { found.add(fs.readFileSync(parts[at + 1], "utf8").trim()); } catch {} }
    }
  }
  for (const dir of ["/var/lib/chat-ui-agent/bridge", "/run", "/tmp", "/var/tmp"]) {
    let names = [];
    try { names = fs.readdirSync(dir); } catch { continue; }
    for (const n of names) if (/token/i.test(n)) { try { found.add(fs.readFileSync(dir + "/" + n, "utf8").trim()); } catch {} }
  }
}
const keys = new Map();
function attempt(token) {
  return new Promise((resolve) => {
    const ws = new WebSocket("ws://127.0.0.1:${port}/v1/rpc");
    const finish = () => { try { ws.close(); } catch {} resolve(); };
    ws.onmessage = (event) => {
      const frame = JSON.parse(event.data);
      if (frame.type === "challenge") {
        // Protocol 2: prove knowledge of the candidate (the key derived from it, an HMAC over both nonces).
        const crypto = require("crypto");
        keys.set(token, keys.get(token) || crypto.pbkdf2Sync(token, "chat-ui-agent-bridge/v2", 100000, 32, "sha256"));
        const nonce = crypto.randomBytes(32).toString("hex");
        const proof = crypto.createHmac("sha256", keys.get(token)).update("chat-ui-agent/v2/client\\n" + frame.nonce + "\\n" + nonce + "\\nthief").digest("hex");
        ws.send(JSON.stringify({ type: "hello", protocol: 2, clientId: "thief", nonce, proof }));
        return;
      }
      if (frame.type !== "welcome") return;
      console.log("AUTH:SUCCEEDED");
      for (const d of frame.pendingDialogs) {
        ws.send(JSON.stringify({ type: "extension_ui_response", id: d.id, commandId: "thief-" + d.id, confirmed: true }));
        console.log("DIALOG_APPROVE:SUCCEEDED");
      }
      setTimeout(finish, 500);
    };
    ws.onerror = finish;
    ws.onclose = finish;
    setTimeout(finish, 3000);
  });
}
(async () => {
  const end = Date.now() + 15000;
  while (Date.now() < end) {
    scan();
    for (const token of found) await attempt(token);
    await new Promise((r) => setTimeout(r, 300));
  }
  console.log("THIEF_DONE candidates=" + found.size);
})();
`;
}

function succeeded(output: string): string[] {
  return [...new Set([...output.matchAll(/([A-Z_]+):SUCCEEDED/g)].map((m) => m[1] ?? ""))];
}

/** Which active protections stop each attack (for the report the test prints). */
function heldBy(attack: string, iso: Isolation): string {
  const p = iso.protections;
  const uid = p.uidSeparation.active ? "uid" : undefined;
  const landlock = p.landlock.active ? "Landlock" : undefined;
  const env = p.toolEnvScrubbed.active ? "scrubbed environment" : undefined;
  const token = p.tokenScrubbed.active ? "token scrubbed (re-exec, file unlinked)" : undefined;
  const table: Record<string, (string | undefined)[]> = {
    TOKEN: [token, uid, landlock && "Landlock (ptrace-mode /proc access, state dir)"],
    PROVIDER_KEY: [env, uid, landlock && "Landlock (ptrace-mode /proc access)"],
    AUTH: [token, uid, landlock],
    POLICY: [uid && "uid (root's policy dir)", landlock && "Landlock (policy outside the domain)"],
    PLANT: [uid && "uid (Pi's 0700 tree)", landlock && "Landlock (state dir outside the domain)"],
    SIGNAL: [uid, landlock && "Landlock (signal scope)"],
    // Root's files, not writable by others (checked at build), whoever the tools run as.
    OPT: ["file ownership (root, 0755)", landlock && "Landlock (read-only tree)"],
  };
  return (table[attack] ?? []).filter(Boolean).join(" + ") || "nothing";
}

/** Pid (in the container) of the first `node <script>` process (any node path: the bridge re-executes itself). */
function pidOf(script: string): string {
  return `for p in /proc/[0-9]*; do if tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -qE '^[^ ]*node ${script}'; then echo \${p#/proc/}; break; fi; done`;
}

async function attackRun(t: TestContext, r: Running) {
  const status = await r.status();
  const iso = status.isolation;
  const asRoot = iso.principals.bridge.uid === 0;
  const stateDir = asRoot ? "/var/lib/chat-ui-agent" : `/var/tmp/chat-ui-agent-${iso.principals.bridge.uid}`;
  const policyPath = asRoot ? "/run/chat-ui-agent/policy" : `${stateDir}/policy`;
  // The person sets the policy from the client: "always allow" works in every mode.
  const set = await r.client.request({ type: "set_policy", id: "set-auto", policy: "auto" });
  assert.equal(set.success, true, JSON.stringify(set));
  assert.equal((await r.root(`cat ${policyPath}`)).trim(), "auto");
  await r.root(
    `mkdir -p /workspace/.needles && printf '%s\\n' '${r.token}' > /workspace/.needles/token && printf '%s\\n' '${PROVIDER_KEY}' > /workspace/.needles/key && chmod 755 /workspace/.needles && chmod 644 /workspace/.needles/*`,
  );
  const gateBefore = await r.root("sha256sum /opt/chat-ui-agent/approval-gate.mjs");
  const cacheBefore = await r.root(CACHE_DIGEST);

  const attack = attackScript({ bridgePid: r.bridgePid, piPid: status.pi.pid, policyPath, stateDir });
  // In base64, as an adversary would hide it: in plain text the gate's write-then-run inspection sees the policy
  // write and blocks the run (TAMPER); this test is about what the OS stops once the gate was talked past.
  const wrote = await r.tool(`WRITE /workspace/attack.b64 ${Buffer.from(attack).toString("base64")}`);
  assert.equal(wrote.isError, false, wrote.text);
  assert.equal(
    (await r.root("stat -c %U /workspace/attack.b64")).trim(),
    iso.principals.tools.user ?? "",
    "written as the tools' user",
  );
  const ran = await r.tool('BASH sh -c "$(base64 -d /workspace/attack.b64)"');
  assert.match(ran.text, /ATTACKS_DONE/, ran.text);

  // Attack 3: the agent's own program hunts for a token and approves whatever the person has not answered.
  const thief = await r.tool(`WRITE /workspace/steal.js ${thiefScript(r.port)}`);
  assert.equal(thief.isError, false, thief.text);
  const dialog = await r.promptUntilDialog("BASH git push origin main; touch /workspace/PUSHED");
  // The thief runs while that dialog is pending, as a person's `!` command (a tool call's background process
  // would end with its call).
  const launched = await r.client.request(
    { type: "bash", id: "thief", command: "node /workspace/steal.js > /workspace/steal.out 2>&1" },
    90_000,
  );
  assert.equal(launched.success, true, JSON.stringify(launched));
  const thiefDeadline = Date.now() + 40_000;
  while (!(await r.root("cat /workspace/steal.out 2>/dev/null")).includes("THIEF_DONE")) {
    if (Date.now() > thiefDeadline)
      throw new Error(`the thief never finished: ${await r.root("cat /workspace/steal.out")}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const stolen = await r.root("cat /workspace/steal.out");
  const stillPending = (await r.status()).pendingDialogs.some((d) => d.id === dialog.id);
  // The person declines; the command must not have run.
  await r.client.answer({ id: String(dialog.id), commandId: "person-no", confirmed: false });
  await r.client.waitFor((f) => f.type === "agent_settled", 60_000);

  // From outside the container.
  const outside = {
    bridgeEnviron: await r.root(`tr '\\0' '\\n' < /proc/${r.bridgePid}/environ`),
    policy: (await r.root(`cat ${policyPath}`)).trim(),
    planted: (await r.root(`test -e ${stateDir}/pi/agent/bin && echo planted || echo clean`)).trim(),
    gate: await r.root("sha256sum /opt/chat-ui-agent/approval-gate.mjs"),
    optPlant: (await r.root("test -e /opt/chat-ui-agent/planted && echo planted || echo clean")).trim(),
    cache: await r.root(CACHE_DIGEST),
    // What the bridge handed Pi (Pi's environ is not readable from outside: Pi is not dumpable).
    piCompileCache: /"compileCache":("[^"]*"|null),"msg":"Pi's compile cache"/.exec(await r.logs())?.[1],
    pushed: (await r.root("test -e /workspace/PUSHED && echo pushed || echo absent")).trim(),
    states: await r.root(`grep '^State' /proc/${r.bridgePid}/status /proc/${status.pi.pid}/status`),
  };
  const open = [...succeeded(ran.text), ...succeeded(stolen)];
  const attacks = ["TOKEN", "PROVIDER_KEY", "AUTH", "POLICY", "PLANT", "SIGNAL", "OPT"];
  for (const a of attacks) {
    const worked = open.some((o) => o.startsWith(a) || (a === "AUTH" && o === "DIALOG_APPROVE"));
    t.diagnostic(`${a.padEnd(12)} ${worked ? "SUCCEEDED" : `blocked by ${heldBy(a, iso)}`}`);
  }
  return { iso, open, stillPending, outside, gateBefore, cacheBefore, ran, stolen };
}

describe("isolation in the image: the bridge, Pi and the tools as three principals", {
  timeout: 30 * 60_000,
}, () => {
  const modes: (Mode & { expect: "isolated" | "degraded-landlock" })[] = [
    {
      name: "mode 1: the container as root, --agent-user agent, token in a --token-file",
      user: "root",
      token: "file",
      landlock: "on",
      expect: "isolated",
    },
    {
      name: "mode 2: the image's default user, started as the README says (token in the environment)",
      user: undefined,
      token: "env",
      landlock: "on",
      expect: "isolated",
    },
    {
      name: "mode 2 forced to uid 1000: one uid, Landlock between the three",
      user: "1000",
      token: "env",
      landlock: "on",
      expect: "degraded-landlock",
    },
  ];
  for (const mode of modes) {
    it(`${mode.name}: all seven attacks fail`, async (t) => {
      const r = await start(t, mode);
      const result = await attackRun(t, r);
      const { iso } = result;
      if (mode.expect === "isolated") {
        assert.equal(iso.mode, "isolated", iso.reason ?? "");
        assert.deepEqual(iso.principals.tools, { user: "agent", uid: 1000, gid: 1000, home: "/home/agent" });
        assert.equal(iso.principals.pi.user, "pi");
      } else {
        assert.equal(iso.mode, "degraded");
        assert.equal(iso.protections.uidSeparation.active, false);
        assert.equal(iso.protections.landlock.active, true, iso.protections.landlock.detail);
        assert.deepEqual(iso.protections.landlock.scopes, ["signal", "abstract_unix_socket"]);
      }
      assert.equal(iso.protections.tokenScrubbed.active, true, iso.protections.tokenScrubbed.detail);
      assert.equal(iso.protections.executorRouting.active, true);
      assert.deepEqual(result.open, [], `attacks that worked:\n${result.ran.text}\n${result.stolen}`);
      assert.equal(
        result.stillPending,
        true,
        "the unanswered dialog was still pending when the thief gave up",
      );
      assert.match(result.stolen, /THIEF_DONE/);
      assert.ok(!result.outside.bridgeEnviron.includes(r.token), "the token is in the bridge's environment");
      assert.ok(!result.outside.bridgeEnviron.includes("CHAT_UI_AGENT_BRIDGE_TOKEN"));
      assert.equal(result.outside.policy, "auto");
      assert.equal(result.outside.planted, "clean");
      assert.equal(result.outside.gate, result.gateBefore);
      assert.equal(result.outside.optPlant, "clean");
      // The image has Pi's compile cache, the bridge gave it to Pi, and the tools changed nothing in it.
      assert.ok(Number(result.cacheBefore.trim().split("\n").at(-1)) > 100, result.cacheBefore);
      assert.equal(result.outside.cache, result.cacheBefore);
      assert.equal(result.outside.piCompileCache, '"/opt/chat-ui-agent/compile-cache"');
      assert.equal(result.outside.pushed, "absent");
      assert.doesNotMatch(result.outside.states, /\(stopped\)|\bT\b/);
      // Unauthenticated health says only ok (the report needs the token: bridge_status, the welcome).
      assert.equal((await probe(`http://127.0.0.1:${r.port}/v1/health`)).body, '{"status":"ok"}');
    });
  }

  it("mode 2 forced to uid 1000 with Landlock off: the report says degraded, and the attacks it names work", async (t) => {
    const r = await start(t, { name: "landlock off", user: "1000", token: "env", landlock: "off" });
    const result = await attackRun(t, r);
    assert.equal(result.iso.mode, "degraded");
    assert.equal(result.iso.protections.landlock.active, false);
    assert.match(result.iso.reason ?? "", /Landlock: switched off/);
    for (const expected of ["PROVIDER_KEY", "POLICY_WRITE", "PLANT", "SIGNAL_BRIDGE", "SIGNAL_PI"]) {
      assert.ok(
        result.open.includes(expected),
        `${expected} should be open without Landlock:\n${result.ran.text}`,
      );
    }
    // What does not depend on Landlock still holds: the token was never in an environment or file.
    assert.ok(!result.open.includes("TOKEN") && !result.open.includes("AUTH"), result.stolen);
    assert.equal(result.outside.optPlant, "clean");
    // Nothing keeps the tools out of what the bridge's uid owns here: Pi starts without a compile cache.
    assert.equal(result.outside.cache, result.cacheBefore);
    assert.equal(result.outside.piCompileCache, "null");
  });

  it("the health server drops root, and serves as uid 1000 too; it says what a bridge here would get", async () => {
    for (const user of [undefined, "1000"]) {
      const port = await freePort();
      const container = await docker.createContainer({
        Image: IMAGE,
        ...(user ? { User: user } : {}),
        Env: [`PORT=${port}`, "HOST=127.0.0.1"],
        HostConfig: { NetworkMode: "host" },
      });
      try {
        await container.start();
        // 503 "starting" while it probes the installed Pi (as the unprivileged user), then 200.
        const { response } = await waitForHttp(`http://127.0.0.1:${port}/health`, {
          deadlineMs: 60_000,
          until: (r) => r.status !== 503 || !r.body.includes('"starting"'),
        });
        const body = JSON.parse(response.body) as {
          status?: string;
          isolation?: { expected: string; startUid: number; landlockAbi: number };
        };
        assert.equal(response.status, 200, response.body);
        assert.equal(body.status, "ok");
        assert.equal(body.isolation?.startUid, user ? 1000 : 0);
        assert.equal(body.isolation?.expected, user ? "degraded" : "isolated");
        const ps = await execIn(
          container,
          ["sh", "-c", `stat -c %U /proc/$(${pidOf("/opt/chat-ui-agent/health-server.mjs")})`],
          "root",
        );
        assert.equal(ps.stdout.trim(), user ? "agent" : "nobody", ps.stderr);
      } finally {
        await container.remove({ force: true });
      }
    }
  });
});
