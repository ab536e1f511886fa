// The operator's network mode end to end, with real Pi, the shipped gate and the scripted model: --network-mode at
// start, set_network_mode over RPC and `chat-ui-agent-policy network` (the real CLI bundle) reach the client as
// network_mode_changed and change bridge_status' isolation (open: egress degraded, with the reason); the gate
// follows the mode (open: a program it cannot model asks again). And the policy file: an operator's
// `chat-ui-agent-policy set` reaches the connected client as policy_changed at once, with no tool call.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { callTool, lastToolResult, lastUserText, say } from "../../agent-runtime/dev/scripted-model.ts";
import type { BridgeStatus, Isolation } from "../../bridge/protocol.ts";
import { type Frame, startNetworkBridge, TestClient } from "../support/bridge.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "..", "..");
const bundleDir = path.join(root, "build", "opt", "chat-ui-agent");
const gate = path.join(bundleDir, "approval-gate.mjs");
const policyCli = path.join(bundleDir, "policy-cli.mjs");
const node = path.join(root, "node_modules", ".bin", "node");

type Egress = Isolation["protections"]["egress"];

test("network mode: --network-mode at start, set_network_mode and the operator's CLI reach the client and the isolation report; the gate follows", async (t) => {
  const bridge = await startNetworkBridge(t, {
    gate,
    args: ["--network-mode", "lockdown"],
    env: { AGENT_POLICY: "auto" },
    model: {
      // "RUN" → a program outside the gate's table (it cannot model what it sends out); a result ends the turn.
      script: (request) =>
        lastToolResult(request.body) !== undefined
          ? say("done")
          : callTool("bash", { command: "frobnicate-netmode --all || true" }),
    },
  });
  const modeFile = path.join(path.dirname(bridge.policyPath), "network-mode");
  assert.equal(
    await readFile(modeFile, "utf8"),
    "lockdown\n",
    "the option is written for the gate and the CLI",
  );
  const { client, welcome } = await TestClient.connect(bridge.url);
  t.after(() => client.close());
  const snapshotEgress = (welcome.snapshot as { isolation: Isolation }).isolation.protections.egress;
  assert.equal(snapshotEgress.mode, "lockdown");

  let n = 0;
  const status = async () =>
    (await client.request({ type: "bridge_status", id: `st${++n}` })).data as BridgeStatus;
  const egress = async (): Promise<Egress> => (await status()).isolation.protections.egress;
  const guard = (await egress()).guard;
  t.diagnostic(`the kernel's guard on this host: ${guard}`);

  const got = await client.request({ type: "get_network_mode", id: "g1" });
  assert.deepEqual(got.data, { mode: "lockdown", path: modeFile, problem: null });

  // RPC: open. The client hears it; the report says egress is degraded, and why.
  let from = client.frames.length;
  const set = await client.request({ type: "set_network_mode", id: "s1", mode: "open" });
  assert.equal(set.success, true, JSON.stringify(set));
  const changed = await client.waitFor((f) => f.type === "network_mode_changed", 10_000, from);
  assert.equal(changed.previous, "lockdown");
  assert.equal(changed.cause, "set_network_mode");
  assert.equal((changed.current as { mode: string }).mode, "open");
  const open = await status();
  assert.equal(open.isolation.protections.egress.mode, "open");
  assert.equal(open.isolation.protections.egress.active, false);
  assert.equal(open.isolation.mode, "degraded");
  assert.ok(
    open.isolation.reasons.some((r) => r.startsWith("egress:")),
    JSON.stringify(open.isolation.reasons),
  );
  assert.equal(await readFile(modeFile, "utf8"), "open\n");
  await bridge.waitForLog(
    (l) => l.msg === "network mode open: the tools may connect anywhere (egress protection degraded)",
  );

  // The gate: with the network open, a program it cannot model asks again (whatever the kernel's guard).
  const dialogsOpen = await runAndCountDialogs(client, "RUN", `p${++n}`);
  assert.equal(dialogsOpen, 1, "open: the gate confirms unmodeled code");

  // The operator's CLI (the shipped bundle): registries. The watch applies it at once.
  from = client.frames.length;
  const cli = await run(node, [policyCli, "network", "registries"], {
    env: { ...process.env, AGENT_POLICY_PATH: bridge.policyPath },
  });
  assert.equal(JSON.parse(cli.stdout).current.mode, "registries");
  const byFile = await client.waitFor((f) => f.type === "network_mode_changed", 10_000, from);
  assert.equal(byFile.previous, "open");
  assert.equal(byFile.cause, "file");
  const registries = await egress();
  assert.equal(registries.mode, "registries");
  assert.equal(registries.active, guard === "enforcing");

  // With the guard enforcing, registries lets the gate stand the OS boundary in for a dialog; without it, it asks.
  const dialogsRegistries = await runAndCountDialogs(client, "RUN", `p${++n}`);
  assert.equal(dialogsRegistries, guard === "enforcing" ? 0 : 1);

  // Garbage in the file: nothing changes (no frame), the problem is reported, the mode is kept.
  await writeFile(modeFile, "wide-open\n");
  await waitForStatus(async () => {
    const report = (await client.request({ type: "get_network_mode", id: `g${++n}` })).data as {
      problem: string | null;
    };
    return report.problem !== null;
  });
  assert.equal((await egress()).mode, "registries");
  const cliShow = await run(node, [policyCli, "network"], {
    env: { ...process.env, AGENT_POLICY_PATH: bridge.policyPath },
  }).catch((err: { code: number; stderr: string }) => err);
  assert.equal((cliShow as { code?: number }).code, 1);
  assert.match((cliShow as { stderr: string }).stderr, /not usable/);
  assert.equal(
    client.frames.filter((f) => f.type === "network_mode_changed").length,
    2,
    "garbage announces no change",
  );

  // A bad mode over RPC is refused by the schema and changes nothing.
  const bad = await client.request({ type: "set_network_mode", id: "s2", mode: "wide-open" });
  assert.equal(bad.success, false);
  assert.equal(bad.code, "invalid_frame");
});

test("policy_changed reaches a connected client when the operator's CLI writes the policy (no tool call)", async (t) => {
  const bridge = await startNetworkBridge(t, { gate, model: { script: [] } });
  const { client } = await TestClient.connect(bridge.url);
  t.after(() => client.close());
  for (const [policy, previous] of [
    ["auto", "ask"],
    ["read-only", "auto"],
  ] as const) {
    const from = client.frames.length;
    await run(node, [policyCli, "set", policy], {
      env: { ...process.env, AGENT_POLICY_PATH: bridge.policyPath },
    });
    const changed = await client.waitFor((f) => f.type === "policy_changed", 10_000, from);
    assert.equal(changed.cause, "observed");
    assert.equal(changed.previous, previous);
    assert.equal((changed.current as { policy: string }).policy, policy);
    assert.ok(
      !client.frames.slice(from).some((f) => f.type === "tool_execution_start"),
      "announced without a tool call",
    );
  }
});

/** Runs one prompt that makes one tool call; answers every dialog "no"; returns how many dialogs it raised. */
async function runAndCountDialogs(client: TestClient, message: string, id: string): Promise<number> {
  const from = client.frames.length;
  let dialogs = 0;
  let done = false;
  const answering = (async () => {
    let at = from;
    while (!done) {
      const dialog = await client
        .waitFor((f) => f.type === "extension_ui_request" && f.method === "confirm", 60_000, at)
        .catch(() => undefined);
      if (!dialog || done) return;
      at = client.frames.indexOf(dialog) + 1;
      dialogs++;
      client.send({
        type: "extension_ui_response",
        id: dialog.id,
        commandId: `no-${id}-${dialogs}`,
        confirmed: false,
      });
    }
  })();
  const response = await client.request({ type: "prompt", id, message }, 30_000);
  assert.equal(response.success, true, JSON.stringify(response));
  await client.waitFor((f: Frame) => f.type === "tool_execution_end", 60_000, from);
  await client.waitFor((f: Frame) => f.type === "agent_settled", 60_000, from);
  done = true;
  void answering;
  return dialogs;
}

async function waitForStatus(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test("an approved bash call that sends (and only it) runs under a helper marked --network-approved for the supervisor", async (t) => {
  // Each call prints its own helper's command line (the shell's parent): what the supervisor reads for each
  // connect. "PUSH" adds a `git push` to a remote that does not exist (no traffic: it fails before any connect),
  // which the gate shows as sending; "SHOW" alone sends nothing.
  const show = "tr '\\0' ' ' < /proc/$PPID/cmdline; echo";
  const push = `${show}; git push nowhere main 2>/dev/null; true`;
  const bridge = await startNetworkBridge(t, {
    gate,
    env: { AGENT_POLICY: "ask" },
    model: {
      script: (request) =>
        lastToolResult(request.body) !== undefined
          ? say("done")
          : callTool("bash", { command: lastUserText(request.body) === "PUSH" ? push : show }),
    },
  });
  const { client } = await TestClient.connect(bridge.url);
  t.after(() => client.close());
  const call = async (id: string, message: string, reply: boolean) => {
    const from = client.frames.length;
    let dialogs = 0;
    const answering = (async () => {
      const dialog = await client
        .waitFor((f) => f.type === "extension_ui_request" && f.method === "confirm", 60_000, from)
        .catch(() => undefined);
      if (!dialog) return;
      dialogs++;
      client.send({ type: "extension_ui_response", id: dialog.id, commandId: `a-${id}`, confirmed: reply });
    })();
    const response = await client.request({ type: "prompt", id, message }, 30_000);
    assert.equal(response.success, true, JSON.stringify(response));
    const end = await client.waitFor((f) => f.type === "tool_execution_end", 60_000, from);
    await client.waitFor((f) => f.type === "agent_settled", 60_000, from);
    void answering;
    const text = (end.result as { content: { text?: string }[] }).content.map((c) => c.text ?? "").join("");
    return { text, dialogs };
  };
  const approved = await call("p1", "PUSH", true);
  assert.equal(approved.dialogs, 1);
  assert.match(approved.text, /landlock-exec --call \S+ --network-approved /, approved.text);
  // The executor's audit line (its stderr, in the bridge's log) names the call and the tool call id.
  await bridge.waitForLog((l) =>
    String(l.executor ?? "").includes(
      "the person approved this call: it runs with the network until it ends",
    ),
  );

  const approvedLocal = await call("p2", "SHOW", true);
  assert.equal(approvedLocal.dialogs, 1);
  assert.match(approvedLocal.text, /landlock-exec --call \S+ --close-fds/, approvedLocal.text);
  assert.doesNotMatch(approvedLocal.text, /--network-approved/, "approved, but it sends nothing: no network");

  const declined = await call("p3", "PUSH", false);
  assert.equal(declined.dialogs, 1);
  assert.doesNotMatch(declined.text, /landlock-exec/, "declined: nothing ran");
});
