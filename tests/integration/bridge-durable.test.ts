// A bridge that survives its own crash: kill -9 the built bridge.mjs (real patched Pi, scripted model)
// mid-stream and mid-tool, start it again on the same --state-dir, and check what the client sees.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { lastUserText } from "../../agent-runtime/dev/scripted-model.ts";
import { BridgeClient } from "../../bridge/client.ts";
import { BridgeStatus, WelcomeFrame } from "../../bridge/protocol.ts";
import { type Frame, startNetworkBridge, TEST_TOKEN, TestClient, waitUntil } from "../support/bridge.ts";
import { bridgeScript } from "../support/bridge-script.ts";
import { processesWithCmdline } from "../support/processes.ts";

const responseTo = (id: string) => (f: Frame) => f.type === "response" && f.id === id;

function assertContiguous(seqs: number[], what: string): void {
  for (let i = 1; i < seqs.length; i++) {
    assert.equal(seqs[i], (seqs[i - 1] as number) + 1, `${what}: gap or duplicate at ${seqs[i]}`);
  }
}

test("kill -9 the bridge mid-stream and mid-tool: same epoch, no gap or duplicate, nothing re-run, the conversation kept", async (t) => {
  const first = await startNetworkBridge(t, { model: { script: bridgeScript } });
  const model = first.model!;
  await import("node:fs/promises").then((fs) => fs.writeFile(first.policyPath, "auto\n"));
  const a = await TestClient.connect(first.url, { clientId: "durable" });
  const epoch = String(a.welcome.epoch);

  // A finished turn: the conversation to keep.
  let from = a.client.frames.length;
  a.client.send({ type: "prompt", id: "p-remember", message: "remember the word teapot" });
  await a.client.waitFor((f) => f.type === "agent_settled", 30_000, from);

  // Mid-stream: kill -9 while Pi streams.
  from = a.client.frames.length;
  a.client.send({ type: "prompt", id: "p-stream", message: "STREAM 400" });
  await a.client.waitFor(
    () => a.client.frames.slice(from).filter((f) => f.type === "message_update").length >= 30,
    30_000,
  );
  first.child.kill("SIGKILL");
  await first.exited;
  const seenBefore = a.client.frames.filter((f) => (f.seq ?? 0) > 0).map((f) => f.seq as number);
  const cursor = a.client.lastSeq;

  const second = await startNetworkBridge(t, { reuse: first.reuse });
  const b = await TestClient.connect(second.url, { clientId: "durable", resume: { epoch, lastSeq: cursor } });
  assert.equal(b.welcome.epoch, epoch, "the same epoch after a restart on the same state dir");
  assert.equal(b.welcome.resumed, true);
  const restarted = await b.client.waitFor((f) => f.type === "agent_restarted");
  assert.equal(restarted.cause, "bridge_restarted");
  const seenAfter = b.client.frames.filter((f) => (f.seq ?? 0) > 0).map((f) => f.seq as number);
  assert.equal(seenAfter[0], cursor + 1, "resumed right after the last frame seen");
  assertContiguous([...seenBefore, ...seenAfter], "across the crash");

  // The conversation is still there: Pi was started on the same session.
  const messages = await b.client.request({ type: "get_messages", id: "m-after-crash" });
  const texts = JSON.stringify(messages.data);
  assert.match(texts, /remember the word teapot/);
  assert.match(texts, /echo: remember the word teapot/);
  const status = BridgeStatus.parse((await b.client.request({ type: "bridge_status", id: "st-1" })).data);
  assert.equal(status.pi.state, "running");
  assert.equal(status.agentBusy, false);
  assert.equal(status.durability.journal, "ok");

  // Mid-tool: an RPC bash command in flight (its response comes when it finishes) when the bridge dies.
  const marker = `durable-tool-${process.pid}`;
  from = b.client.frames.length;
  // Long enough never to finish within the test: only a surviving or re-run copy (its command line carries the
  // marker) could ever write ran.txt.
  const bash = { type: "bash", id: "bash-once", command: `sleep 60; echo ${marker} >> ran.txt` };
  b.client.send(bash);
  await waitUntil(() => processesWithCmdline(marker).length > 0, 10_000, "the tool process to start");
  second.child.kill("SIGKILL");
  await second.exited;
  const cursor2 = b.client.lastSeq;

  const third = await startNetworkBridge(t, { reuse: first.reuse });
  await waitUntil(() => processesWithCmdline(marker).length === 0, 3_000, "the orphaned tool to be ended");
  const c = await TestClient.connect(third.url, { clientId: "durable", resume: { epoch, lastSeq: cursor2 } });
  assert.equal(c.welcome.resumed, true);
  // The in-flight command was answered outcome_unknown at the restart (in the journal, so in the replay)…
  const unknown = await c.client.waitFor(responseTo("bash-once"));
  assert.equal(unknown.success, false);
  assert.equal(unknown.code, "outcome_unknown");
  // …and a retry with the same id gets the same answer: it is never run again.
  c.client.send(bash);
  await c.client.waitFor((f) => responseTo("bash-once")(f) && f !== unknown, 10_000);
  const answers = c.client.frames.filter(responseTo("bash-once"));
  assert.equal(answers.length, 2);
  assert.deepEqual(
    answers.map(({ seq: _s, ...rest }) => rest),
    [0, 1].map(() => {
      const { seq: _s, ...rest } = unknown;
      return rest;
    }),
  );
  // Nothing re-ran it: a later command, written to Pi after any re-run could have been, is answered while no copy
  // of the tool runs (a re-run would still be in its sleep, or would hold this command up past its deadline).
  const later = await c.client.request({ type: "bash", id: "bash-later", command: "echo later" }, 10_000);
  assert.equal(later.success, true, JSON.stringify(later));
  assert.deepEqual(processesWithCmdline(marker), [], "nothing re-ran the killed tool");
  assert.equal(
    existsSync(path.join(first.cwd, "ran.txt")),
    false,
    "the killed tool never wrote, and nothing re-ran it",
  );
  const seqsOf = (client: TestClient) =>
    client.frames.filter((f) => (f.seq ?? 0) > 0).map((f) => f.seq as number);
  assertContiguous([...seqsOf(a.client), ...seqsOf(b.client), ...seqsOf(c.client)], "across both crashes");
  assert.equal(model.requests.filter((r) => lastUserText(r.body) === "remember the word teapot").length, 1);
  await c.client.close();
});

test("the typed client: outcome_unknown surfaced after a crash; after a genuine epoch change nothing non-idempotent is resent", async (t) => {
  const first = await startNetworkBridge(t, { model: { script: bridgeScript } });
  await import("node:fs/promises").then((fs) => fs.writeFile(first.policyPath, "auto\n"));
  const client = new BridgeClient({
    url: first.url,
    token: TEST_TOKEN,
    backoff: { initialMs: 50, maxMs: 200 },
  });
  t.after(() => client.close());
  const welcomes: { epoch: string; reset: string | null }[] = [];
  client.on("welcome", (w) => welcomes.push({ epoch: w.epoch, reset: w.reset }));
  await client.connect();
  const marker = `client-tool-${process.pid}`;
  const inFlight = client.command({
    type: "bash",
    id: "c-bash",
    command: `sleep 60; echo ${marker} >> c.txt`,
  });
  await waitUntil(() => processesWithCmdline(marker).length > 0, 10_000, "the tool process to start");
  first.child.kill("SIGKILL");
  await first.exited;
  // The bridge comes back on the same address; the client reconnects and resumes by itself.
  const second = await startNetworkBridge(t, { reuse: first.reuse, port: first.port });
  // The one writer of the first c.txt (its command line carries the marker) is ended by the next bridge.
  await waitUntil(() => processesWithCmdline(marker).length === 0, 5_000, "the orphaned tool to be ended");
  const response = await inFlight;
  assert.equal(response.code, "outcome_unknown");
  assert.equal(welcomes.at(-1)?.epoch, welcomes[0]?.epoch);

  // A genuine epoch change: the state dir is lost (a new one), while a command is pending.
  second.child.kill("SIGKILL");
  await second.exited;
  const pendingBash = client.command({ type: "bash", id: "c-bash-2", command: `echo ${marker}-2 >> c.txt` });
  const pendingRead = client.command({ type: "get_state", id: "c-read" });
  const third = await startNetworkBridge(t, { model: { script: bridgeScript }, port: first.port });
  const [bashAnswer, readAnswer] = await Promise.all([pendingBash, pendingRead]);
  assert.equal(welcomes.at(-1)?.reset, "epoch_changed");
  assert.equal(bashAnswer.code, "outcome_unknown", "a non-idempotent command is not resent blindly");
  assert.equal(readAnswer.success, true, "a read is resent");
  // The new bridge never received c-bash-2: the same id with another command is new to it (a bridge that had
  // seen the id would answer idempotency_conflict), so nothing ran it there.
  client.close();
  const probe = await TestClient.connect(third.url);
  const fresh = await probe.client.request({ type: "bash", id: "c-bash-2", command: "echo probe" });
  assert.equal(fresh.success, true, JSON.stringify(fresh));
  assert.equal(existsSync(path.join(third.cwd, "c.txt")), false);
  assert.equal(existsSync(path.join(first.cwd, "c.txt")), false);
  await probe.client.close();
});

test("hostile input: deep nesting, 5 MB ids, 30 commands of 5 MB, empty dialog ids: the bridge stays up and small", async (t) => {
  const bridge = await startNetworkBridge(t, {
    model: { script: bridgeScript },
    args: ["--max-frame-bytes", "8MiB"],
  });
  const { client } = await TestClient.connect(bridge.url);
  const rss = () =>
    Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${bridge.child.pid}/status`, "utf8"))?.[1]) / 1024;

  // 100,000 levels of nesting (about 200 KB): refused with the id, nothing walks it.
  const deep = `{"type":"get_state","id":"deep","x":${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
  client.send(deep);
  const refused = await client.waitFor(responseTo("deep"));
  assert.equal(refused.code, "invalid_frame");
  assert.match(String(refused.error), /deeper than 64/);
  client.send(`{"type":"prompt","x":${'{"a":'.repeat(50_000)}1${"}".repeat(50_000)}}`);
  assert.equal(
    (await client.waitFor((f) => f.type === "error" && f.code === "invalid_frame")).code,
    "invalid_frame",
  );

  // An id of 5 MB is never echoed back.
  const at = client.frames.length;
  client.send({ type: "launch", id: "i".repeat(5 * 1024 * 1024) });
  client.send({ type: "get_state", id: "i".repeat(5 * 1024 * 1024) });
  client.send({ type: "extension_ui_response", id: "d".repeat(5 * 1024 * 1024), commandId: "c".repeat(300) });
  const errors = [
    await client.waitFor((f) => f.type === "error", 10_000, at),
    await client.waitFor((f) => f.type === "error" && client.frames.indexOf(f) > at + 0, 10_000, at + 1),
  ];
  for (const e of errors)
    assert.ok(JSON.stringify(e).length < 2_000, `error frame of ${JSON.stringify(e).length} chars`);
  // A later command's answer comes after every frame the hostile ones caused.
  await client.request({ type: "get_state", id: "after-hostile-ids" });
  for (const f of client.frames.slice(at)) assert.ok(JSON.stringify(f).length < 2_000);

  // An empty dialog id is unknown, never a pending dialog's.
  const empty = await client.answer({ id: "", commandId: "empty-dialog", confirmed: true });
  assert.equal(empty.success, false);
  assert.equal((empty.data as { reason: string }).reason, "unknown");

  // 30 distinct commands of 5 MB: digests are kept, never payloads.
  await client.request({ type: "get_state", id: "warm" });
  const before = rss();
  const pad = "p".repeat(5 * 1024 * 1024);
  for (let i = 0; i < 30; i++) {
    const response = await client.request({ type: "get_state", id: `big-${i}`, pad: `${i}${pad}` }, 30_000);
    assert.equal(response.success, true);
  }
  // Bounded once the garbage is collected: wait for that, not for a fixed time (a leak never gets there).
  await waitUntil(() => rss() - before < 100, 10_000, "the bridge's RSS to come back within 100 MiB").catch(
    () => {},
  );
  const growth = rss() - before;
  assert.ok(growth < 100, `the bridge's RSS grew ${growth.toFixed(1)} MiB over 30 commands of 5 MB`);
  const health = await fetch(`http://127.0.0.1:${bridge.port}/v1/health`);
  assert.equal(health.status, 200);
  await client.close();
});

test("the state dir: created private; refused inside the workspace, when shared with a live bridge, or writable by others", async (t) => {
  const bridge = await startNetworkBridge(t, { model: { script: bridgeScript } });
  const { client, welcome } = await TestClient.connect(bridge.url);
  WelcomeFrame.parse(welcome);
  const status = BridgeStatus.parse((await client.request({ type: "bridge_status", id: "st" })).data);
  assert.equal(status.durability.stateDir, bridge.stateDir);
  assert.equal(status.durability.logFile, path.join(bridge.stateDir, "logs", "current.log"));
  await client.close();
  const { spawnBridge, fixture } = await import("../support/bridge.ts");
  const { chmodSync, chownSync, mkdirSync } = await import("node:fs");
  const someoneElse = (process.geteuid?.() ?? 0) === 0 ? 65534 : undefined;
  const cases: { stateDir: string; message: RegExp; prepare?: () => void }[] = [
    { stateDir: bridge.stateDir, message: /another bridge is using this state dir/ },
    { stateDir: path.join(bridge.cwd, ".state"), message: /inside the workspace/ },
    {
      stateDir: path.join(bridge.reuse.home, "open-state"),
      message: /writable by group or others/,
      prepare: () => {
        mkdirSync(path.join(bridge.reuse.home, "open-state"));
        chmodSync(path.join(bridge.reuse.home, "open-state"), 0o777);
      },
    },
  ];
  if (someoneElse !== undefined) {
    // As root the test can make a directory that belongs to another uid (nobody).
    const theirs = path.join(bridge.reuse.home, "their-state");
    cases.push({
      stateDir: theirs,
      message: /belongs to uid 65534/,
      prepare: () => {
        mkdirSync(theirs, { mode: 0o700 });
        chownSync(theirs, someoneElse, someoneElse);
      },
    });
  }
  for (const c of cases) {
    c.prepare?.();
    const refused = spawnBridge(t, {
      args: [
        "--listen",
        "127.0.0.1:0",
        "--cwd",
        bridge.cwd,
        "--gate",
        fixture("fake-pi-gate.mjs"),
        "--state-dir",
        c.stateDir,
      ],
      env: { CHAT_UI_AGENT_BRIDGE_TOKEN: TEST_TOKEN },
    });
    const exit = await refused.exited;
    assert.equal(exit.code, 1, refused.stderr());
    assert.match(refused.stderr(), c.message);
    assert.ok(!refused.logs.some((l) => l.msg === "Pi started"));
  }
});

test("the log file: status says where it is (health does not); sbx-server's Authorization header and the token never reach it", async (t) => {
  const bridge = await startNetworkBridge(t, { model: { script: bridgeScript } });
  const hfToken = `hf_${"Q".repeat(8)}${process.pid}${"z".repeat(20)}`;
  const headers = { Authorization: `Bearer ${hfToken}`, "X-Sandbox-Token": `sbx-${hfToken}` };
  for (const token of ["wrong-token-wrong-token", TEST_TOKEN]) {
    const proxied = await TestClient.open(bridge.url, headers);
    await proxied.hello({ token, clientId: "proxied" });
    const first = await proxied.waitFor(() => true, 20_000, 1).catch(() => undefined);
    if (token === TEST_TOKEN) {
      assert.equal(first?.type, "welcome");
      proxied.send({ type: "prompt", id: "p-log", message: `say ${hfToken.slice(0, 3)}` });
      await proxied.waitFor((f) => f.type === "agent_settled", 20_000);
    }
    await proxied.close();
  }
  const health = await fetch(`http://127.0.0.1:${bridge.port}/v1/health`, { headers });
  assert.deepEqual(await health.json(), { status: "ok" }, "health says where nothing is");
  const logFile = path.join(bridge.stateDir, "logs", "current.log");
  const { client } = await TestClient.connect(bridge.url);
  const status = BridgeStatus.parse((await client.request({ type: "bridge_status", id: "st-log" })).data);
  assert.equal(status.durability.logFile, logFile);
  const detached = bridge.logs.filter((l) => l.msg === "client detached").length;
  await client.close();
  // The file gets every line stderr gets (synchronous writes): once the detach is logged, so is everything before.
  await waitUntil(
    () => bridge.logs.filter((l) => l.msg === "client detached").length > detached,
    10_000,
    "the detach to be logged",
  );
  const { readdirSync } = await import("node:fs");
  const logsDir = path.join(bridge.stateDir, "logs");
  const text = readdirSync(logsDir)
    .map((f) => readFileSync(path.join(logsDir, f), "utf8"))
    .join("");
  assert.match(text, /"msg":"listening"/);
  assert.match(text, /"msg":"connection refused"/);
  for (const secret of [hfToken, TEST_TOKEN]) {
    assert.ok(!text.includes(secret), "the log file holds no secret");
    assert.ok(!bridge.stderr().includes(secret), "stderr holds no secret");
  }
});
