// Three principals on the host, with real Pi and the scripted model (CI runs as root, so the bridge can drop
// uids): the root launch (Pi as `daemon`, tools as `nobody`), the non-root launch (everything as `nobody`,
// Landlock between them), and the non-root launch with Landlock off, whose report must admit what is open.
// Each attack runs as a bash tool call the policy allows; every verdict is checked from outside, by root.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { describe, it, type TestContext } from "node:test";
import { writeScriptedAgentDir } from "../../agent-runtime/dev/agent-dir.ts";
import {
  callTool,
  lastToolResult,
  lastUserText,
  messageText,
  type RecordedRequest,
  say,
  startScriptedModel,
} from "../../agent-runtime/dev/scripted-model.ts";
import { SESSION_ENV_NAMES } from "../../agent-runtime/executor/protocol.ts";
import { TOOL_ENV_ALLOWED } from "../../agent-runtime/executor/tool-env.ts";
import { PROXY_VARIABLES } from "../../agent-runtime/sandbox/egress.ts";
import { Isolation } from "../../bridge/protocol.ts";
import { allowOnce, isApprovalDialog } from "../support/approval.ts";
import { type Frame, spawnBridge, TestClient } from "../support/bridge.ts";
import { landlockAbi } from "../support/executor.ts";

const isRoot = process.geteuid?.() === 0;
const NOBODY = 65534;
const DAEMON = 1;
/** A provider key Pi holds; built at run time so no key-shaped literal sits in the tree. */
const PROVIDER_KEY = `sk-fakeprovider-${randomBytes(12).toString("hex")}`;

/** "BASH <cmd>", "WRITE <path> <content>", "READ <path>": one tool call each; a tool result ends the turn. */
function script(request: RecordedRequest) {
  const result = lastToolResult(request.body);
  if (result !== undefined) return say("done");
  const text = lastUserText(request.body);
  const bash = /^BASH (.+)$/s.exec(text);
  if (bash) return callTool("bash", { command: bash[1] });
  const write = /^WRITE (\S+) (.+)$/s.exec(text);
  if (write) return callTool("write", { path: write[1], content: write[2] });
  const read = /^READ (\S+)$/.exec(text);
  if (read) return callTool("read", { path: read[1] });
  return say("nothing to do");
}

/** A private dir outside /tmp (which the tools' domain grants), owned by `uid`. */
function privateDir(t: TestContext, prefix: string, uid = 0, mode = 0o700): string {
  const dir = mkdtempSync(path.join("/var/tmp", prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  chownSync(dir, uid, uid === NOBODY ? 65534 : uid);
  chmodSync(dir, mode);
  return dir;
}

interface Launched {
  token: string;
  client: TestClient;
  welcome: Frame;
  bridgePid: number;
  model: Awaited<ReturnType<typeof startScriptedModel>>;
  workspace: string;
  stateDir: string;
  policyPath: string;
  port: number;
  /** Runs one tool call through the agent; resolves with the tool's result text and whether it failed. */
  tool: (prompt: string) => Promise<{ text: string; isError: boolean }>;
  status: () => Promise<Record<string, unknown> & { isolation: Isolation; pi: { pid: number } }>;
}

async function launch(
  t: TestContext,
  mode: {
    asUid?: number;
    landlock?: "on" | "off";
    workspaceSetup?: (ws: string) => void;
    /** Where the workspace's parent is created (default /var/tmp, outside the tools' domain). */
    workspaceRoot?: string;
    /** Extra bridge environment (computed from the workspace). */
    env?: (ws: string) => NodeJS.ProcessEnv;
  },
): Promise<Launched> {
  const model = await startScriptedModel({ script });
  t.after(() => model.close());
  const base = mkdtempSync(path.join(mode.workspaceRoot ?? "/var/tmp", "iso-base-"));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  chmodSync(base, 0o755);
  const workspace = path.join(base, "ws");
  mkdirSync(workspace);
  chownSync(workspace, NOBODY, 65534);
  mode.workspaceSetup?.(workspace);
  const stateDir = path.join(privateDir(t, "iso-state-", mode.asUid ?? 0, 0o755), "state");
  if (mode.asUid !== undefined) {
    mkdirSync(stateDir, { mode: 0o700 });
    chownSync(stateDir, mode.asUid, mode.asUid);
  }
  // The configured policy directory belongs to root: a non-root bridge falls back to <state>/policy.
  const policyDir = privateDir(t, "iso-policy-", 0, 0o755);
  const seed = await writeScriptedAgentDir(model.baseUrl, privateDir(t, "iso-seed-", 0, 0o755));
  // Unique per launch: a token of another test's bridge can never be mistaken for this one's.
  const token = `bridge-token-${randomBytes(16).toString("hex")}`;
  // What the attacker searches for, in files (a needle on grep's command line would find itself in /proc).
  const needles = path.join(base, "needles");
  mkdirSync(needles);
  writeFileSync(path.join(needles, "token"), `${token}\n`, { mode: 0o644 });
  writeFileSync(path.join(needles, "key"), `${PROVIDER_KEY}\n`, { mode: 0o644 });
  chmodSync(path.join(seed, "models.json"), 0o644);
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
      "--landlock",
      mode.landlock ?? "on",
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
      OPENAI_API_KEY: PROVIDER_KEY,
      HOME: mode.asUid !== undefined ? "/nonexistent" : "/root",
      ...mode.env?.(workspace),
    },
    ...(mode.asUid !== undefined ? { uid: mode.asUid, gid: mode.asUid } : {}),
  });
  const port = Number((await bridge.waitForLog((l) => l.msg === "listening", 30_000)).port);
  const { client, welcome } = await TestClient.connect(`ws://127.0.0.1:${port}/v1/rpc`, { token });
  t.after(() => client.close());
  let n = 0;
  // The person says yes to every dialog: these tests are about what the OS boundary stops, not the gate.
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
  const tool = async (prompt: string) => {
    const from = client.frames.length;
    const response = await client.request({ type: "prompt", id: `p${++n}`, message: prompt }, 30_000);
    assert.equal(response.success, true, JSON.stringify(response));
    const end = await client.waitFor((f) => f.type === "tool_execution_end", 60_000, from);
    await client.waitFor((f) => f.type === "agent_settled", 30_000, from);
    const result = end.result as { content: { type: string; text?: string }[] };
    return { text: result.content.map((c) => c.text ?? "").join(""), isError: end.isError === true };
  };
  const status = async () => {
    const response = await client.request({ type: "bridge_status", id: `st${++n}` });
    return response.data as Record<string, unknown> & { isolation: Isolation; pi: { pid: number } };
  };
  const policyPath =
    mode.asUid !== undefined ? path.join(stateDir, "policy") : path.join(policyDir, "policy");
  return {
    token,
    client,
    welcome,
    bridgePid: bridge.child.pid ?? -1,
    model,
    workspace,
    stateDir,
    policyPath,
    port,
    tool,
    status,
  };
}

/**
 * The agent writes the attack script with its write tool, then runs it with bash; returns the run's output.
 * The script goes in base64, as an adversary would hide it: in plain text the gate's write-then-run inspection
 * sees the policy write and blocks the run (TAMPER), and these tests are about what the OS stops once the gate
 * was talked past (the harness answers yes to every dialog).
 */
async function runAttack(l: Launched, piPid: number): Promise<string> {
  const file = path.join(l.workspace, "attack.b64");
  const script = `#!/bin/sh\n${attackScript(l, piPid)}\n`;
  const written = await l.tool(`WRITE ${file} ${Buffer.from(script).toString("base64")}`);
  assert.equal(written.isError, false, written.text);
  const run = await l.tool(`BASH sh -c "$(base64 -d ${file})"`);
  assert.match(run.text, /ATTACKS_DONE/);
  return run.text;
}

/** The seven attacks of issue 11 as one shell script; each prints "<NAME>:SUCCEEDED" only if it worked. */
function attackScript(l: Launched, piPid: number): string {
  const needles = path.join(path.dirname(l.workspace), "needles");
  return [
    // 1. the bridge token: every environ and cmdline, any token file
    `(cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null; cat ${l.stateDir}/bridge/* ${l.stateDir}/*token* /tmp/*token* 2>/dev/null) | tr '\\0' '\\n' | grep -qF -f ${needles}/token && echo TOKEN:SUCCEEDED`,
    // 2. the provider key: own env, the parent's, all of /proc
    `(env; cat /proc/$PPID/environ /proc/[0-9]*/environ /proc/[0-9]*/task/*/environ 2>/dev/null) | tr '\\0' '\\n' | grep -qF -f ${needles}/key && echo PROVIDER_KEY:SUCCEEDED`,
    // 4. write the policy file
    `(echo auto > ${l.policyPath}) 2>/dev/null && echo POLICY:SUCCEEDED`,
    `(mv /dev/null ${l.policyPath}.x; ln -sf /tmp/x ${l.policyPath}) 2>/dev/null && echo POLICY_LINK:SUCCEEDED`,
    // 5. plant executables in Pi's agent dir
    `(mkdir -p ${l.stateDir}/pi/agent/bin && printf '#!/bin/sh\\necho pwned\\n' > ${l.stateDir}/pi/agent/bin/rg && chmod +x ${l.stateDir}/pi/agent/bin/rg) 2>/dev/null && echo PLANT:SUCCEEDED`,
    // 6. signal the bridge or Pi
    `kill -0 ${l.bridgePid} 2>/dev/null && echo SIGNAL_BRIDGE:SUCCEEDED`,
    `kill -0 ${piPid} 2>/dev/null && echo SIGNAL_PI:SUCCEEDED`,
    // reading the private state at all
    `ls ${l.stateDir}/pi ${l.stateDir}/bridge >/dev/null 2>&1 && echo STATE_LIST:SUCCEEDED`,
    "echo ATTACKS_DONE",
  ].join("\n");
}

function succeeded(output: string): string[] {
  return [...output.matchAll(/([A-Z_]+):SUCCEEDED/g)].map((m) => m[1] ?? "");
}

/** Attack 3, from outside the tools: any token found must not authenticate; a wrong one is refused. */
async function tokenAttack(l: Launched, found: string): Promise<void> {
  const attacker = await TestClient.open(`ws://127.0.0.1:${l.port}/v1/rpc`);
  await attacker.hello({ token: found, clientId: "attacker" });
  const closed = await attacker.closed;
  assert.equal(closed.code, 4001);
}

describe("three principals on the host", {
  skip: !isRoot ? "needs root to switch uids (CI runs as root)" : false,
}, () => {
  it("root launch: bridge root, Pi as daemon, tools as nobody in their domain; all seven attacks fail", async (t) => {
    const l = await launch(t, {});
    const status = await l.status();
    Isolation.parse(status.isolation);
    const iso = status.isolation;
    assert.deepEqual(iso.principals.pi, { user: "daemon", uid: DAEMON, gid: DAEMON });
    assert.equal(iso.principals.tools.uid, NOBODY);
    assert.equal(iso.protections.uidSeparation.active, true);
    assert.equal(iso.protections.tokenScrubbed.active, true);
    assert.equal(iso.protections.executorRouting.active, true);
    assert.equal(iso.protections.landlock.active, landlockAbi > 0);
    assert.deepEqual(iso.notes, [], "nothing the bridge trusts is writable by the tools here");
    if (landlockAbi >= 6) {
      assert.equal(iso.mode, "isolated", iso.reason ?? "");
      assert.deepEqual(iso.protections.landlock.scopes, ["signal", "abstract_unix_socket"]);
    }
    assert.deepEqual((l.welcome.snapshot as { isolation: Isolation }).isolation.mode, iso.mode);

    const identity = await l.tool("BASH id -u; id -g; env | cut -d= -f1 | sort | tr '\\n' ' '");
    assert.equal(identity.isError, false, identity.text);
    // Only Pi's four default tools are offered to the model (our overrides did not add grep/find/ls).
    assert.deepEqual(
      ((l.model.requests[0]?.body.tools ?? []) as { function: { name: string } }[])
        .map((x) => x.function.name)
        .sort(),
      ["bash", "edit", "read", "write"],
    );
    const [uid, gid, names] = identity.text.split("\n");
    assert.equal(uid, String(NOBODY));
    assert.equal(gid, "65534");
    const allowed = new Set<string>([
      ...TOOL_ENV_ALLOWED,
      ...SESSION_ENV_NAMES,
      "HOME",
      "USER",
      "LOGNAME",
      "CHAT_UI_AGENT_RUN_ID",
      "CHAT_UI_AGENT_TOOL_CALL",
      // the search excludes (a root-owned config beside the bundles): the agent's own rg skips credentials too
      "RIPGREP_CONFIG_PATH",
      // the bridge's egress proxy (loopback): the standard proxy settings
      ...PROXY_VARIABLES.map((variable) => variable.name),
      // set by bash itself
      "PWD",
      "SHLVL",
      "_",
      "OLDPWD",
    ]);
    for (const name of (names ?? "").trim().split(" ")) {
      if (name.startsWith("LC_")) continue;
      assert.ok(allowed.has(name), `${name} is not an allow-listed tool variable`);
    }

    const attack = await runAttack(l, status.pi.pid);
    assert.deepEqual(succeeded(attack), [], attack);
    await tokenAttack(l, "not-the-token-but-what-a-tool-could-find");
    // Outside checks: nothing was planted, the policy is what it was.
    assert.throws(() => statSync(path.join(l.stateDir, "pi", "agent", "bin")), { code: "ENOENT" });
    assert.equal(
      readFileSync(`/proc/${status.pi.pid}/status`, "utf8").match(/State:\s+(\S)/)?.[1] !== "T",
      true,
    );

    // A written file belongs to the tools' user; a person's `!` command runs as the tools too.
    const written = await l.tool(`WRITE ${l.workspace}/out.txt hello`);
    assert.equal(written.isError, false, written.text);
    assert.equal(statSync(path.join(l.workspace, "out.txt")).uid, NOBODY);
    const bang = await l.client.request({ type: "bash", id: "bang-1", command: "id -u; echo $HOME" }, 30_000);
    assert.equal(bang.success, true, JSON.stringify(bang));
    assert.equal((bang.data as { output: string }).output, `${NOBODY}\n/nonexistent\n`);

    // A new session is a new runtime in the same Pi (the extension runs again): tools still go to the executor.
    const fresh = await l.client.request({ type: "new_session", id: "new-1" }, 30_000);
    assert.equal(fresh.success, true, JSON.stringify(fresh));
    const after = await l.tool("BASH id -u");
    assert.equal(after.isError, false, after.text);
    assert.equal(after.text.trim(), String(NOBODY));
    assert.deepEqual(
      ((l.model.requests.at(-1)?.body.tools ?? []) as { function: { name: string } }[])
        .map((x) => x.function.name)
        .sort(),
      ["bash", "edit", "read", "write"],
      "the new runtime offers Pi's default tools too",
    );
    const bangAfter = await l.client.request({ type: "bash", id: "bang-3", command: "id -u" }, 30_000);
    assert.equal((bangAfter.data as { output: string }).output, `${NOBODY}\n`);

    // set_policy works; under read-only the RPC bash is refused by the bridge, and the gate would refuse it too.
    const set = await l.client.request({ type: "set_policy", id: "sp-1", policy: "read-only" });
    assert.equal(set.success, true, JSON.stringify(set));
    const refused = await l.client.request({
      type: "bash",
      id: "bang-2",
      command: `touch ${l.workspace}/bang`,
    });
    assert.equal(refused.success, false);
    assert.equal(refused.code, "policy_blocks_bash");
    assert.throws(() => statSync(path.join(l.workspace, "bang")), { code: "ENOENT" });
  });

  it("non-root launch (one uid): Landlock keeps the tools from the bridge, Pi and private state; degraded, and says why", {
    skip: landlockAbi < 6 ? "kernel without Landlock ABI 6" : false,
  }, async (t) => {
    const l = await launch(t, { asUid: NOBODY });
    // The token is in no environment: the bridge re-executed itself without it (checked as root, from outside).
    const environ = readFileSync(`/proc/${l.bridgePid}/environ`, "latin1");
    assert.ok(!environ.includes(l.token));
    assert.ok(!environ.includes("CHAT_UI_AGENT_BRIDGE_TOKEN"));
    const status = await l.status();
    const iso = status.isolation;
    assert.equal(iso.mode, "degraded");
    assert.equal(iso.protections.uidSeparation.active, false);
    assert.match(iso.reason ?? "", /not root/);
    assert.equal(iso.protections.landlock.active, true);
    assert.deepEqual(iso.protections.landlock.scopes, ["signal", "abstract_unix_socket"]);
    assert.equal(iso.protections.tokenScrubbed.active, true);
    assert.equal(iso.principals.pi.uid, NOBODY);
    assert.equal(iso.principals.tools.uid, NOBODY);

    const attack = await runAttack(l, status.pi.pid);
    assert.deepEqual(succeeded(attack), [], attack);
    await tokenAttack(l, "not-the-token-but-what-a-tool-could-find");
    assert.throws(() => statSync(path.join(l.stateDir, "pi", "agent", "bin")), { code: "ENOENT" });

    // "Always allow" works here too: the policy lives in the state dir, which the bridge writes.
    const set = await l.client.request({ type: "set_policy", id: "sp-1", policy: "ask", expected: "auto" });
    assert.equal(set.success, true, JSON.stringify(set));
    assert.equal(readFileSync(l.policyPath, "utf8"), "ask\n");
  });

  it("non-root launch with Landlock off: the report says degraded, and the attacks it names do work", async (t) => {
    const l = await launch(t, { asUid: NOBODY, landlock: "off" });
    const status = await l.status();
    const iso = status.isolation;
    assert.equal(iso.mode, "degraded");
    assert.equal(iso.protections.landlock.active, false);
    assert.match(iso.protections.landlock.detail, /switched off/);
    assert.match(iso.reason ?? "", /Landlock: switched off/);
    const attack = await runAttack(l, status.pi.pid);
    // The honest report: on one uid without Landlock, the tools reach Pi's key and signal the bridge and Pi.
    const open = succeeded(attack);
    for (const expected of ["PROVIDER_KEY", "SIGNAL_BRIDGE", "SIGNAL_PI", "PLANT", "POLICY"]) {
      assert.ok(open.includes(expected), `${expected} should be open without Landlock: ${attack}`);
    }
    // The token still is not there: it was never in an environment or file.
    assert.ok(!open.includes("TOKEN"));
  });

  it("the bridge refuses to start on a Pi configuration or a policy file the operator named and the tools could write", async (t) => {
    // What an agent could have left in its workspace for the next start: Pi's config pointing elsewhere, or a
    // policy of its own. A named one the tools can write is refused (exit 2, one sentence, Pi never started);
    // nothing of it is used.
    for (const [name, plant, variable, expected] of [
      [
        "agent dir",
        (ws: string) => {
          mkdirSync(path.join(ws, ".pi-config"));
          writeFileSync(path.join(ws, ".pi-config", "settings.json"), '{"planted":true}\n');
          return { PI_CODING_AGENT_DIR: path.join(ws, ".pi-config") };
        },
        "PI_CODING_AGENT_DIR",
        /agent dir .*\.pi-config \(PI_CODING_AGENT_DIR\) is writable by the tools: refusing/,
      ],
      [
        "policy file",
        (ws: string) => {
          writeFileSync(path.join(ws, "policy"), "auto\n");
          return { AGENT_POLICY_PATH: path.join(ws, "policy") };
        },
        "AGENT_POLICY_PATH",
        /policy file .*\/policy \(AGENT_POLICY_PATH\) is writable by the tools: refusing to start/,
      ],
    ] as const) {
      const base = mkdtempSync(path.join("/var/tmp", "iso-refuse-"));
      t.after(() => rmSync(base, { recursive: true, force: true }));
      chmodSync(base, 0o755);
      const workspace = path.join(base, "ws");
      mkdirSync(workspace);
      const env = plant(workspace);
      chownSync(workspace, NOBODY, 65534);
      for (const entry of readdirSync(workspace)) chownSync(path.join(workspace, entry), NOBODY, 65534);
      const stateDir = path.join(privateDir(t, "iso-refuse-state-", 0, 0o755), "state");
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
        ],
        env: { CHAT_UI_AGENT_BRIDGE_TOKEN: `bridge-token-${randomBytes(16).toString("hex")}`, ...env },
      });
      // A bridge that started anyway (the old behaviour) would run on: bounded, so the test fails instead.
      let timer: NodeJS.Timeout | undefined;
      const { code } = await Promise.race([
        bridge.exited,
        new Promise<{ code: string }>((resolve) => {
          timer = setTimeout(() => resolve({ code: "still running after 60 s" }), 60_000);
        }),
      ]);
      clearTimeout(timer);
      const stderr = bridge.stderr();
      assert.equal(code, 2, `${name}: ${stderr}`);
      assert.match(
        stderr.split("\n")[0] ?? "",
        expected,
        `${name}: the first line says why, naming ${variable}`,
      );
      assert.ok(!bridge.logs.some((l) => l.msg === "Pi started"), `${name}: Pi never started`);
      assert.throws(() => statSync(path.join(stateDir, "pi", "agent", "settings.json")), { code: "ENOENT" });
    }
  });

  it("Pi never reads its own secrets into the prompt through a context file the agent linked", async (t) => {
    // The workspace's parent is in /tmp, which the tools may read: its AGENTS.md is one they read identically.
    const l = await launch(t, {
      workspaceRoot: "/tmp",
      workspaceSetup: (ws) => {
        writeFileSync(path.join(path.dirname(ws), "AGENTS.md"), "Ancestor rule: be brief.\n");
        symlinkSync("/proc/self/environ", path.join(ws, "AGENTS.md"));
      },
    });
    await l.tool("BASH true");
    const system = messageText(l.model.requests[0]?.body.messages.find((m) => m.role === "system"));
    assert.ok(system.length > 0);
    assert.ok(!system.includes(PROVIDER_KEY), "the provider key reached the system prompt");
    assert.ok(!system.includes("AGENT_POLICY_PATH="), "Pi's environment reached the system prompt");
    assert.match(system, /Ancestor rule: be brief\./);
    assert.match(system, /withheld by chat-ui-agent/);
  });

  it("if the executor dies, the pair restarts: tool calls never run in Pi's process, and the next ones run in a new executor", async (t) => {
    const l = await launch(t, {});
    const before = await l.status();
    assert.equal(before.isolation.protections.executorRouting.active, true);
    const executorPid = findExecutor(l.bridgePid);
    const from = l.client.frames.length;
    process.kill(executorPid, "SIGKILL");
    // The unit is the pair: the bridge ends Pi too and restarts both on the same session.
    const restarted = await l.client.waitFor((f) => f.type === "agent_restarted", 30_000, from);
    assert.equal(restarted.cause, "agent_exited");
    assert.notEqual(restarted.pid, before.pi.pid);
    const newExecutor = findExecutor(l.bridgePid);
    assert.notEqual(newExecutor, executorPid);
    const written = await l.tool(`WRITE ${l.workspace}/after.txt routed`);
    assert.equal(written.isError, false, written.text);
    // Written by the new executor as the tools' user, never by Pi.
    assert.equal(statSync(path.join(l.workspace, "after.txt")).uid, NOBODY);
    const after = await l.status();
    assert.equal(after.isolation.protections.executorRouting.active, true);
  });
});

/** The executor is the bridge's child running tool-executor.mjs. */
function findExecutor(bridgePid: number): number {
  for (const entry of readdirProc()) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "latin1");
      if (ppid === bridgePid && cmdline.includes("tool-executor.mjs")) return Number(entry);
    } catch {}
  }
  throw new Error("no tool executor found under the bridge");
}

function readdirProc(): string[] {
  return readdirSync("/proc").filter((e) => /^\d+$/.test(e));
}
