// The built bridge.mjs in network mode over REAL patched Pi and the scripted model: one bridge,
// one Pi, many checks in order (resume, reset, idempotency, dialogs, policy, bad input, supersede).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { lastUserText } from "../../agent-runtime/dev/scripted-model.ts";
import { BridgeStatus, WelcomeFrame } from "../../bridge/protocol.ts";
import { type Frame, startNetworkBridge, TEST_TOKEN, TestClient, waitUntil } from "../support/bridge.ts";
import { bridgeScript } from "../support/bridge-script.ts";

const responseTo = (id: string) => (f: Frame) => f.type === "response" && f.id === id;
const detachOf = (clientId: string) => (l: Record<string, unknown>) =>
  l.msg === "client detached" && l.clientId === clientId;
const graceRefusal = (l: Record<string, unknown>) =>
  l.msg === "no client within the detached grace: dialog refused";

test("network mode over real Pi: resume, reset, idempotency, dialogs, policy, bad input", async (t) => {
  const bridge = await startNetworkBridge(t, {
    model: { script: bridgeScript },
    args: [
      "--detached-grace",
      "1500ms",
      "--replay-frames",
      "300",
      "--max-frame-bytes",
      "64KiB",
      "--hello-timeout",
      "1s",
    ],
  });
  const model = bridge.model!;

  await t.test("health needs no auth and says only ok or not ok", async () => {
    const res = await fetch(`http://127.0.0.1:${bridge.port}/v1/health`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: "ok" });
    const head = await fetch(`http://127.0.0.1:${bridge.port}/v1/health`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal((await fetch(`http://127.0.0.1:${bridge.port}/v1/nope`)).status, 404);
  });

  await t.test(
    "a wrong proof, a malformed hello, a protocol-1 hello and no hello all close 4001",
    async () => {
      const wrong = await TestClient.open(bridge.url);
      await wrong.hello({ token: "wrong-token-wrong-token" });
      assert.equal((await wrong.closed).code, 4001);
      assert.deepEqual(
        wrong.frames.map((f) => f.type),
        ["challenge"],
        "nothing but the challenge is sent before authentication",
      );
      const malformed = await TestClient.open(bridge.url);
      await malformed.challenge();
      malformed.send({ type: "hello", protocol: 2, clientId: "x", nonce: "00", proof: "00" });
      assert.equal((await malformed.closed).code, 4001);
      // A protocol-1 hello carries the token in clear: refused loudly, naming protocol 2, and logged.
      const old = await TestClient.open(bridge.url);
      await old.challenge();
      old.send({ type: "hello", protocol: 1, token: TEST_TOKEN, clientId: "x" });
      const refused = await old.closed;
      assert.equal(refused.code, 4001);
      assert.match(refused.reason, /protocol 1 is refused: this bridge speaks protocol 2/);
      await bridge.waitForLog((l) => /protocol-1 hello refused/.test(String(l.msg)));
      const silent = await TestClient.open(bridge.url);
      assert.equal((await silent.closed).code, 4001);
    },
  );

  let epoch = "";
  await t.test(
    "a first hello gets a reset welcome with a snapshot; bridge_status reports degraded isolation",
    async () => {
      const { client, welcome } = await TestClient.connect(bridge.url);
      const parsed = WelcomeFrame.parse(welcome);
      epoch = parsed.epoch;
      assert.equal(parsed.resumed, false);
      assert.equal(parsed.reset, "new");
      assert.equal(typeof parsed.snapshot.state?.sessionId, "string");
      assert.deepEqual(parsed.snapshot.queue, { steering: [], followUp: [] });
      assert.equal(parsed.snapshot.policy?.policy, "ask");
      const status = await client.request({ type: "bridge_status", id: "st-1" });
      const data = BridgeStatus.parse(status.data);
      assert.equal(data.isolation.mode, "degraded");
      assert.match(data.isolation.reason ?? "", /no --agent-user/);
      assert.equal(data.pi.state, "running");
      assert.equal(data.pi.patched, true, "the patched Pi answers correlated dialog responses");
      assert.equal(data.client.clientId, "test-client");
      assert.ok(typeof status.seq === "number" && status.seq > 0);
      client.send({ type: "ack", seq: status.seq });
      const again = await client.request({ type: "bridge_status", id: "st-2" });
      assert.equal((again.data as { client: { ackedSeq: number } }).client.ackedSeq, status.seq);
      await client.close();
    },
  );

  await t.test("bad input gets an error frame naming the problem and the connection carries on", async () => {
    const { client } = await TestClient.connect(bridge.url);
    const from = client.frames.length;
    client.send("{not json");
    assert.equal((await client.waitFor((f) => f.type === "error", 5_000, from)).code, "invalid_json");
    let at = client.frames.length;
    client.send({ type: "launch_rockets", id: "u1" });
    const unknown = await client.waitFor((f) => f.type === "error", 5_000, at);
    assert.equal(unknown.code, "unknown_type");
    assert.match(String(unknown.message), /launch_rockets/);
    at = client.frames.length;
    client.send({ type: "get_state" });
    assert.equal((await client.waitFor((f) => f.type === "error", 5_000, at)).code, "missing_id");
    const wrongType = await client.request({ type: "set_policy", id: "bad-policy", policy: "yolo" });
    assert.equal(wrongType.success, false);
    assert.equal(wrongType.code, "invalid_frame");
    at = client.frames.length;
    client.send({ type: "prompt", id: "huge", message: "x".repeat(70 * 1024) });
    assert.equal((await client.waitFor((f) => f.type === "error", 5_000, at)).code, "frame_too_large");
    at = client.frames.length;
    client.send([1, 2]);
    assert.equal((await client.waitFor((f) => f.type === "error", 5_000, at)).code, "invalid_frame");
    const state = await client.request({ type: "get_state", id: "still-alive" });
    assert.equal(state.success, true);
    await client.close();
  });

  await t.test("a retried prompt with the same id runs once; a different payload is a conflict", async () => {
    const { client } = await TestClient.connect(bridge.url);
    const prompt = { type: "prompt", id: "p-once", message: "say once please" };
    const from = client.frames.length;
    client.send(prompt);
    // The duplicate may reach the bridge while the prompt runs (no second response: it completes once) or
    // after its response was recorded (the recorded response again). Either way the model is asked once.
    client.send(prompt);
    await client.waitFor((f) => f.type === "agent_settled", 20_000, from);
    const retried = await client.request(prompt); // after completion: the recorded response again
    assert.equal(retried.success, true);
    const responses = client.frames.slice(from).filter(responseTo("p-once"));
    assert.ok(responses.length === 2 || responses.length === 3, `${responses.length} responses to p-once`);
    const withoutSeq = responses.map(({ seq: _seq, ...rest }) => rest);
    for (const r of withoutSeq) assert.deepEqual(r, withoutSeq[0], "every response to one id is the same");
    assert.equal(responses[0]!.success, true);
    assert.ok(retried.seq! > responses[0]!.seq!);
    assert.equal(
      client.frames.slice(from).filter((f) => f.type === "agent_start").length,
      1,
      "one run: no second execution",
    );
    const conflict = await client.request({ ...prompt, message: "something else" });
    assert.equal(conflict.success, false);
    assert.equal(conflict.code, "idempotency_conflict");
    assert.match(String(conflict.error), /^idempotency_conflict: /);
    // A later prompt, settled: had the conflicting one gone to Pi, its turn would have run (and asked the
    // model) before this one could start, or this one would have been refused as busy.
    const later = await client.request({
      type: "prompt",
      id: "p-after-conflict",
      message: "say after the conflict",
    });
    assert.equal(later.success, true, JSON.stringify(later));
    await client.waitFor((f) => f.type === "agent_settled", 20_000, client.frames.indexOf(later));
    assert.equal(model.requests.filter((r) => lastUserText(r.body) === "say after the conflict").length, 1);
    assert.equal(model.requests.filter((r) => lastUserText(r.body) === "say once please").length, 1);
    assert.equal(model.requests.filter((r) => lastUserText(r.body) === "something else").length, 0);
    await client.close();
  });

  await t.test("resume after a drop mid-stream: no gap, no duplicate", async () => {
    const first = await TestClient.connect(bridge.url, { clientId: "resumer" });
    const start = first.client.frames.length;
    first.client.send({ type: "prompt", id: "stream-1", message: "STREAM 120" });
    await first.client.waitFor(
      (f) =>
        f.type === "message_update" &&
        first.client.frames.filter((g) => g.type === "message_update").length >= 20,
    );
    await first.client.drop();
    const seenBefore = first.client.frames.slice(start).filter((f) => (f.seq ?? 0) > 0);
    const cursor = first.client.lastSeq;
    // Once the bridge has seen the drop, the frames that keep flowing go into the ring with nobody attached.
    await waitUntil(() => bridge.logs.filter(detachOf("resumer")).length > 0, 10_000, "the drop to be seen");
    const second = await TestClient.connect(bridge.url, {
      clientId: "resumer",
      resume: { epoch, lastSeq: cursor },
    });
    assert.equal(second.welcome.resumed, true);
    assert.equal(second.welcome.reset, null);
    await second.client.waitFor((f) => f.type === "agent_settled");
    const seenAfter = second.client.frames.filter((f) => (f.seq ?? 0) > 0);
    const seqs = [...seenBefore, ...seenAfter].map((f) => f.seq!);
    for (let i = 1; i < seqs.length; i++)
      assert.equal(seqs[i], seqs[i - 1]! + 1, `gap or duplicate at ${seqs[i]}`);
    assert.equal(seenAfter[0]!.seq, cursor + 1);
    const text = [...seenBefore, ...seenAfter]
      .filter((f) => f.type === "message_end")
      .map((f) => JSON.stringify(f))
      .join("");
    assert.match(text, /w0 w1 w2 .* w119 /);
    await second.client.close();
  });

  await t.test("a cursor too old or from another epoch gets an explicit reset with a snapshot", async () => {
    const { client } = await TestClient.connect(bridge.url);
    const from = client.frames.length;
    client.send({ type: "prompt", id: "stream-2", message: "STREAM 320" });
    await client.waitFor((f) => f.type === "agent_settled", 30_000, from);
    await client.close();
    const old = await TestClient.connect(bridge.url, { resume: { epoch, lastSeq: 1 } });
    assert.equal(old.welcome.resumed, false);
    assert.equal(old.welcome.reset, "cursor_too_old");
    const snapshot = WelcomeFrame.parse(old.welcome).snapshot;
    assert.equal(snapshot.agentBusy, false);
    assert.ok(Number(snapshot.state?.messageCount) >= 4);
    await old.client.close();
    const other = await TestClient.connect(bridge.url, { resume: { epoch: "0".repeat(32), lastSeq: 5 } });
    assert.equal(other.welcome.reset, "epoch_changed");
    // After a reset the client's cursor is headSeq: it resumes from there.
    const headSeq = Number(other.welcome.headSeq);
    await other.client.close();
    const back = await TestClient.connect(bridge.url, { resume: { epoch, lastSeq: headSeq } });
    assert.equal(back.welcome.resumed, true);
    await back.client.close();
  });

  await t.test(
    "a dialog survives a reconnect and is answered after it; a second answer gets success false",
    async () => {
      const first = await TestClient.connect(bridge.url);
      const from = first.client.frames.length;
      first.client.send({ type: "prompt", id: "run-1", message: "RUN echo approved > approved.txt" });
      const dialog = await first.client.waitFor(
        (f) => f.type === "extension_ui_request" && f.method === "confirm",
        20_000,
        from,
      );
      await first.client.drop();
      const second = await TestClient.connect(bridge.url, {
        resume: { epoch, lastSeq: first.client.lastSeq },
      });
      const pending = second.welcome.pendingDialogs as { id: string; method: string }[];
      assert.deepEqual(
        pending.map((d) => [d.id, d.method]),
        [[dialog.id, "confirm"]],
      );
      const answer = { type: "extension_ui_response", id: dialog.id, commandId: "ans-1", confirmed: true };
      second.client.send(answer);
      const ok = await second.client.waitFor(responseTo("ans-1"));
      assert.equal(ok.success, true);
      assert.equal(ok.command, "extension_ui_response");
      await second.client.waitFor((f) => f.type === "agent_settled");
      assert.equal(readFileSync(path.join(bridge.cwd, "approved.txt"), "utf8"), "approved\n");
      const at = second.client.frames.length;
      second.client.send({ ...answer, commandId: "ans-2" });
      const dup = await second.client.waitFor(responseTo("ans-2"), 5_000, at);
      assert.equal(dup.success, false);
      assert.equal(dup.code, "ui_request_not_pending");
      assert.equal((dup.data as { reason: string }).reason, "answered");
      second.client.send(answer); // the same commandId again: its recorded verdict, not a second answer
      const replayed = await second.client.waitFor(responseTo("ans-1"), 5_000, at);
      assert.equal(replayed.success, true);
      await second.client.close();
    },
  );

  await t.test("wrong kind, an option not offered and an unknown id never approve", async () => {
    const { client } = await TestClient.connect(bridge.url);
    let from = client.frames.length;
    client.send({ type: "prompt", id: "run-select-1", message: "RUN echo SELECT > one.txt" });
    const select = await client.waitFor(
      (f) => f.type === "extension_ui_request" && f.method === "select",
      20_000,
      from,
    );
    assert.deepEqual(select.options, ["a", "b"]);
    const unknown = await client.answer({
      id: "no-such-dialog",
      commandId: "ans-unknown",
      value: "a",
    });
    assert.equal(unknown.success, false);
    assert.equal((unknown.data as { reason: string }).reason, "unknown");
    const status = await client.request({ type: "bridge_status", id: "st-after-unknown" });
    assert.deepEqual(
      (status.data as { pendingDialogs: { id: string }[] }).pendingDialogs.map((d) => d.id),
      [select.id],
      "an unknown id affects no other dialog",
    );
    const wrongKind = await client.answer({
      id: String(select.id),
      commandId: "ans-kind",
      confirmed: true,
    });
    assert.equal(wrongKind.success, false);
    assert.equal(wrongKind.code, "invalid_ui_response");
    const closed = await client.waitFor((f) => f.type === "dialog_closed" && f.id === select.id);
    assert.equal(closed.outcome, "refused");
    assert.equal(closed.reason, "malformed_answer");
    const end = await client.waitFor((f) => f.type === "tool_execution_end", 20_000, from);
    assert.equal(end.isError, true);
    await client.waitFor((f) => f.type === "agent_settled", 20_000, from);

    from = client.frames.length;
    client.send({ type: "prompt", id: "run-select-2", message: "RUN echo SELECT > two.txt" });
    const select2 = await client.waitFor(
      (f) => f.type === "extension_ui_request" && f.method === "select",
      20_000,
      from,
    );
    const notOffered = await client.answer({
      id: String(select2.id),
      commandId: "ans-option",
      value: "c",
    });
    assert.equal(notOffered.success, false);
    assert.match(String(notOffered.error), /not one of the offered options/);
    assert.equal((await client.waitFor((f) => f.type === "tool_execution_end", 20_000, from)).isError, true);
    await client.waitFor((f) => f.type === "agent_settled", 20_000, from);
    assert.equal(existsSync(path.join(bridge.cwd, "one.txt")), false);
    assert.equal(existsSync(path.join(bridge.cwd, "two.txt")), false);

    from = client.frames.length;
    client.send({ type: "prompt", id: "run-input", message: "RUN echo INPUT > three.txt" });
    const input = await client.waitFor(
      (f) => f.type === "extension_ui_request" && f.method === "input",
      20_000,
      from,
    );
    const answered = await client.answer({
      id: String(input.id),
      commandId: "ans-input",
      value: "because",
    });
    assert.equal(answered.success, true);
    assert.equal((await client.waitFor((f) => f.type === "tool_execution_end", 20_000, from)).isError, false);
    await client.waitFor((f) => f.type === "agent_settled", 20_000, from);
    await client.close();
  });

  await t.test("abort refuses the pending dialog", async () => {
    const { client } = await TestClient.connect(bridge.url);
    const from = client.frames.length;
    client.send({ type: "prompt", id: "run-abort", message: "RUN echo never > aborted.txt" });
    const dialog = await client.waitFor((f) => f.type === "extension_ui_request", 20_000, from);
    client.send({ type: "abort", id: "abort-1" });
    const closed = await client.waitFor((f) => f.type === "dialog_closed" && f.id === dialog.id, 5_000, from);
    assert.equal(closed.reason, "cancelled");
    assert.equal((await client.waitFor(responseTo("abort-1"), 5_000, from)).success, true);
    await client.waitFor((f) => f.type === "agent_settled", 20_000, from);
    assert.equal(existsSync(path.join(bridge.cwd, "aborted.txt")), false);
    await client.close();
  });

  await t.test("with no client, the detached grace refuses a pending dialog", async () => {
    const first = await TestClient.connect(bridge.url);
    const from = first.client.frames.length;
    first.client.send({ type: "prompt", id: "run-grace", message: "RUN echo late > grace.txt" });
    const dialog = await first.client.waitFor((f) => f.type === "extension_ui_request", 20_000, from);
    const refusedBefore = bridge.logs.filter(graceRefusal).length;
    await first.client.drop();
    await waitUntil(
      () => bridge.logs.filter(graceRefusal).length > refusedBefore,
      10_000,
      "the grace to refuse",
    );
    const second = await TestClient.connect(bridge.url, { resume: { epoch, lastSeq: first.client.lastSeq } });
    assert.deepEqual(second.welcome.pendingDialogs, []);
    const closed = await second.client.waitFor((f) => f.type === "dialog_closed" && f.id === dialog.id);
    assert.equal(closed.reason, "detached_grace");
    const late = await second.client.answer({
      id: String(dialog.id),
      commandId: "ans-late",
      confirmed: true,
    });
    assert.equal(late.success, false);
    assert.equal((await second.client.waitFor((f) => f.type === "tool_execution_end")).isError, true);
    await second.client.waitFor((f) => f.type === "agent_settled");
    assert.equal(existsSync(path.join(bridge.cwd, "grace.txt")), false);
    await second.client.close();
  });

  await t.test("get_policy and set_policy (compare-and-swap on the policy file)", async () => {
    const { client } = await TestClient.connect(bridge.url);
    const before = await client.request({ type: "get_policy", id: "gp-1" });
    assert.deepEqual((before.data as { policy: string; source: string }).policy, "ask");
    const set = await client.request({ type: "set_policy", id: "sp-1", policy: "auto", expected: "ask" });
    assert.equal(set.success, true);
    assert.equal(readFileSync(bridge.policyPath, "utf8"), "auto\n");
    const conflict = await client.request({
      type: "set_policy",
      id: "sp-2",
      policy: "read-only",
      expected: "ask",
    });
    assert.equal(conflict.success, false);
    assert.equal(conflict.code, "policy_conflict");
    assert.equal(readFileSync(bridge.policyPath, "utf8"), "auto\n");
    const after = await client.request({ type: "get_policy", id: "gp-2" });
    assert.deepEqual(after.data, { policy: "auto", source: "file", path: bridge.policyPath });
    await client.close();
  });

  await t.test("a new hello supersedes the old connection (4002)", async () => {
    const a = await TestClient.connect(bridge.url, { clientId: "tab-1" });
    const b = await TestClient.connect(bridge.url, { clientId: "tab-2" });
    assert.equal((await a.client.closed).code, 4002);
    const status = await b.client.request({ type: "bridge_status", id: "st-sup" });
    assert.equal((status.data as { client: { clientId: string } }).client.clientId, "tab-2");
    await b.client.close();
  });
});
