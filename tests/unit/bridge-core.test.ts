// The composed bridge core in memory (tests/support/core-harness.ts: a fake clock, sink and agent units):
// each path of its life walked through, then a property test over random interleavings of the same events.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { Frame } from "../../bridge/core.ts";
import { BridgeStatus } from "../../bridge/protocol.ts";
import { coreHarness, EPOCH, type Harness, settle } from "../support/core-harness.ts";

const status = (h: Harness) => BridgeStatus.parse(h.core.status());

async function started(options: Parameters<typeof coreHarness>[0] = {}): Promise<Harness> {
  const h = coreHarness(options);
  await h.deliver();
  assert.equal(h.core.piStatus().state, "running");
  return h;
}

test("core: commands wait while Pi is probed and go to it, in order, once it passes", async () => {
  const h = coreHarness();
  h.core.attach("person");
  h.send({ type: "prompt", id: "p1", message: "one" });
  h.send({ type: "get_state", id: "g1" });
  assert.deepEqual(h.sink.responses("p1"), [], "held, not answered");
  assert.ok(!h.pi.received.some((c) => c.type === "prompt"), "nothing reaches Pi before the probes pass");
  assert.equal(status(h).pi.state, "starting");
  assert.deepEqual(status(h).health, { ok: true, reason: null, detail: null });
  await h.deliver(); // the probe answers: Pi passes, the held commands go out
  assert.deepEqual(
    h.pi.received
      .filter((c) => c.type === "prompt" || c.id !== undefined)
      .map((c) => c.type)
      .slice(-2),
    ["prompt", "get_state"],
  );
  await h.deliver(); // Pi's answers
  assert.equal(h.sink.responses("p1")[0]?.success, true);
  assert.equal(h.sink.responses("g1")[0]?.success, true);
  assert.equal(h.sink.of("agent_restarted").length, 0, "the first Pi is no restart");
});

test("core: a read-only command while Pi is probed goes to it at once; its answer waits for the verdict", async () => {
  const h = coreHarness();
  h.core.attach("person");
  h.send({ type: "get_state", id: "g1" });
  const sent = h.pi.received.filter((c) => c.type === "get_state").length;
  assert.equal(sent, 2, "the probe's sentinel and the client's get_state");
  assert.deepEqual(h.sink.responses("g1"), [], "nothing answered before the verdict");
  // Order holds: once a command is held, read-only ones behind it wait too.
  h.send({ type: "prompt", id: "p1", message: "one" });
  h.send({ type: "get_messages", id: "m1" });
  assert.ok(!h.pi.received.some((c) => c.type === "get_messages"), "held behind the prompt");
  await h.deliver(); // probes, sentinel and the early answer: delivered once Pi passed
  assert.equal(h.sink.responses("g1")[0]?.success, true);
  const order = h.pi.received
    .filter((c) => c.type === "prompt" || c.type === "get_messages")
    .map((c) => c.type);
  assert.deepEqual(order, ["prompt", "get_messages"]);
});

test("core: early answers of a Pi that fails its probe or exits first reach no client", async () => {
  const refused = coreHarness({ firstMode: "unpatched", lingerMs: 5_000 });
  refused.send({ type: "get_state", id: "g1" });
  assert.ok(refused.pi.received.some((c) => c.type === "get_state"));
  await refused.deliver();
  assert.equal(status(refused).pi.state, "refused");
  assert.deepEqual(
    refused.sink.responses("g1").map((r) => [r.success, r.code]),
    [[false, "agent_unverified"]],
  );
  const crashed = coreHarness();
  crashed.send({ type: "get_state", id: "g2" });
  crashed.pi.crash({ code: 1, signal: null });
  await crashed.clock.advance(0);
  assert.deepEqual(
    crashed.sink.responses("g2").map((r) => [r.success, r.code]),
    [[false, "agent_exited"]],
  );
});

test("core: Pi crashes mid-command: the command fails agent_exited, a new Pi follows on the same epoch", async () => {
  const h = await started();
  h.core.attach("person");
  h.pi.withhold = true;
  h.send({ type: "prompt", id: "p1", message: "long" });
  h.pi.ask("d1");
  await h.deliver();
  const first = h.pi;
  first.crash({ code: null, signal: "SIGKILL" });
  await h.clock.advance(0);
  assert.equal(h.sink.responses("p1")[0]?.code, "agent_exited");
  assert.deepEqual(
    h.sink.of("dialog_closed").map((f) => [f.id, f.reason]),
    [["d1", "agent_exited"]],
  );
  assert.equal(first.killedTree, true, "its tool tree is ended");
  assert.equal(status(h).pi.state, "restarting");
  await h.clock.advance(250);
  assert.equal(h.pis.length, 2);
  await h.deliver();
  const restarted = h.sink.of("agent_restarted")[0];
  assert.equal(restarted?.cause, "agent_exited");
  assert.deepEqual(restarted?.previous, { code: null, signal: "SIGKILL" });
  assert.equal(restarted?.sessionId, "session-1");
  assert.equal(status(h).epoch, EPOCH);
  assert.equal(status(h).pi.restarts, 1);
});

test("core: a crash loop is reported and retried with a long backoff; the bridge never exits for it", async () => {
  const h = await started();
  h.core.attach("person");
  for (const delay of [250, 1_000, 4_000]) {
    h.pi.crash();
    await h.clock.advance(delay);
    await h.deliver();
  }
  assert.equal(h.sink.of("agent_restarted").length, 3);
  h.pi.crash(); // the 4th exit within 10 minutes
  await h.clock.advance(0);
  assert.deepEqual(
    h.sink.of("agent_exited").map((f) => f.reason),
    ["crash_loop"],
  );
  const looping = status(h);
  assert.equal(looping.health.reason, "crash_loop");
  assert.match(looping.health.detail ?? "", /next start in 10 s/);
  h.send({ type: "get_state", id: "g-loop" });
  assert.equal(h.sink.responses("g-loop")[0]?.code, "agent_exited", "nothing waits minutes for a Pi");
  // The next one crashes too, then the one after serves.
  await h.clock.advance(10_000);
  h.pi.crash();
  await h.clock.advance(19_999);
  assert.equal(h.pis.length, 5, "the second loop delay is 20 s");
  await h.clock.advance(1);
  await h.deliver();
  assert.equal(status(h).pi.state, "running");
  assert.deepEqual(status(h).health, { ok: true, reason: null, detail: null });
  assert.equal(h.sink.of("agent_exited").length, 1, "one crash_loop report per loop");
  await h.clock.advance(3_600_000);
  assert.deepEqual(h.shutdowns, [], "no linger, no exit");
});

test("core: a spawn failure (EAGAIN) is transient: retried, reported once it loops, and a Pi comes back", async () => {
  const h = await started();
  h.next.spawnFailures = 6;
  h.pi.crash();
  for (const delay of [250, 1_000, 4_000, 10_000, 20_000, 40_000]) await h.clock.advance(delay);
  assert.equal(h.pis.length, 1, "every spawn so far failed");
  assert.equal(status(h).health.reason, "crash_loop");
  assert.match(status(h).health.detail ?? "", /spawn EAGAIN/);
  await h.clock.advance(80_000);
  assert.equal(h.pis.length, 2);
  await h.deliver();
  assert.equal(status(h).pi.state, "running");
  assert.deepEqual(h.shutdowns, []);
});

test("core: idempotent retries across a restart: a finished command is answered again, never run again", async () => {
  const h = await started();
  h.core.attach("person");
  h.send({ type: "prompt", id: "done-1", message: "x" });
  await h.deliver();
  h.pi.withhold = true;
  h.send({ type: "prompt", id: "inflight-1", message: "y" });
  h.pi.crash();
  await h.clock.advance(250);
  await h.deliver();
  assert.equal(h.sink.of("agent_restarted").length, 1);
  h.send({ type: "prompt", id: "done-1", message: "x" });
  h.send({ type: "prompt", id: "inflight-1", message: "y" });
  h.send({ type: "prompt", id: "done-1", message: "other" });
  assert.deepEqual(
    h.pi.received.filter((c) => c.type === "prompt"),
    [],
    "the new Pi ran neither again",
  );
  const again = h.sink.responses("done-1");
  assert.equal(again.length, 3);
  assert.deepEqual({ ...again[0], seq: 0 }, { ...again[1], seq: 0 }, "the same response, recorded");
  assert.equal(again[2]?.code, "idempotency_conflict");
  assert.deepEqual(
    h.sink.responses("inflight-1").map((r) => r.code),
    ["agent_exited", "agent_exited"],
  );
});

test("core: shutdown refuses pending dialogs (Pi gets cancelled), and every later one; nothing is approved", async () => {
  const h = await started();
  h.core.attach("person");
  h.pi.ask("d1");
  await h.deliver();
  assert.deepEqual(
    h.core.pendingDialogs().map((d) => d.id),
    ["d1"],
  );
  h.core.beginShutdown();
  assert.deepEqual(
    h.sink.of("dialog_closed").map((f) => [f.id, f.reason]),
    [["d1", "shutdown"]],
  );
  assert.ok(
    h.pi.received.some((c) => c.type === "extension_ui_response" && c.id === "d1" && c.cancelled === true),
  );
  h.pi.ask("d2");
  await h.deliver();
  assert.deepEqual(
    h.sink.of("dialog_closed").map((f) => [f.id, f.reason]),
    [
      ["d1", "shutdown"],
      ["d2", "shutdown"],
    ],
  );
  h.send({ type: "extension_ui_response", id: "d1", commandId: "a1", confirmed: true });
  h.send({ type: "extension_ui_response", id: "d2", commandId: "a2", confirmed: true });
  await h.deliver();
  assert.deepEqual(
    [...h.sink.responses("a1"), ...h.sink.responses("a2")].map((r) => r.code),
    ["ui_request_not_pending", "ui_request_not_pending"],
  );
  h.send({ type: "prompt", id: "late", message: "x" });
  assert.equal(h.sink.responses("late")[0]?.code, "shutting_down");
  assert.deepEqual(h.pi.approvals, []);
  assert.deepEqual(status(h).health, {
    ok: false,
    reason: "shutting_down",
    detail: "the bridge is shutting down",
  });
});

test("core: the idle exit comes only with no client and nothing running, after --idle-exit", async () => {
  const h = await started({ idleExitMs: 60_000 });
  h.core.attach("person");
  await h.clock.advance(120_000);
  assert.deepEqual(h.shutdowns, [], "a client is attached");
  h.core.detach("person");
  h.pi.withhold = true;
  h.send({ type: "prompt", id: "p1", message: "x" });
  await h.clock.advance(120_000);
  assert.deepEqual(h.shutdowns, [], "a command is in flight");
  h.pi.release();
  h.pi.emit({ type: "agent_start" });
  await h.deliver();
  await h.clock.advance(120_000);
  assert.deepEqual(h.shutdowns, [], "a turn runs");
  h.pi.emit({ type: "agent_settled" });
  await h.deliver();
  await h.clock.advance(59_999);
  assert.deepEqual(h.shutdowns, []);
  await h.clock.advance(1);
  assert.deepEqual(h.shutdowns, [{ reason: "idle: no client and no agent activity", exitCode: undefined }]);
});

test("core: the watchdog: a Pi hung at start is reported, killed and started again; so is one silent while idle", async () => {
  const h = coreHarness({ firstMode: "silent" });
  h.send({ type: "prompt", id: "p1", message: "x" });
  await h.clock.advance(19_999);
  assert.equal(status(h).health.ok, true, "a start may take a while");
  let settled = false;
  void h.core.agentSettled(90_000).then(() => {
    settled = true;
  });
  await h.clock.advance(1);
  assert.equal(status(h).health.reason, "starting_too_long");
  assert.equal(settled, true, "a waiting welcome goes out with the report");
  assert.equal(h.pi.alive, true, "reported, not yet killed");
  await h.clock.advance(40_000);
  assert.equal(h.pis[0]?.killedTree, true, "killed at 60 s");
  assert.equal(status(h).health.reason, "starting_too_long");
  assert.match(status(h).pi.problem ?? "", /killed and started again/);
  await h.clock.advance(250);
  await h.deliver();
  assert.equal(status(h).pi.state, "running");
  assert.equal(h.sink.responses("p1")[0]?.success, undefined, "the held command went to the new Pi");
  await h.deliver();
  assert.equal(h.sink.responses("p1")[0]?.success, true);
  assert.deepEqual(status(h).health, { ok: true, reason: null, detail: null });

  // Liveness: asked only while idle; a silent Pi is hung.
  h.pi.emit({ type: "agent_start" });
  await h.deliver();
  h.pi.mode = "silent";
  await h.clock.advance(120_000);
  assert.equal(h.pi.alive, true, "a running turn is never mistaken for a hang");
  h.pi.mode = "patched";
  h.pi.emit({ type: "agent_settled" });
  await h.deliver();
  h.pi.mode = "silent";
  await h.clock.advance(30_000 + 9_999);
  assert.equal(h.pi.alive, true);
  await h.clock.advance(1);
  assert.equal(h.pi.alive, false);
  assert.equal(status(h).health.reason, "pi_hung");
  await h.clock.advance(1_000);
  await h.deliver();
  assert.equal(h.pis.length, 3);
  assert.equal(status(h).health.ok, true);
});

test("core: a hung Pi that does not even die of SIGKILL is left behind: the next one starts anyway", async () => {
  const h = coreHarness({ firstMode: "silent" });
  h.pi.unkillable = true;
  await h.clock.advance(60_000);
  assert.equal(h.pis[0]?.killedTree, true);
  await h.clock.advance(250);
  assert.equal(h.pis.length, 2);
  await h.deliver();
  assert.equal(status(h).pi.state, "running");
  h.pis[0]?.crash(); // its late exit changes nothing
  await h.clock.advance(1_000);
  assert.equal(status(h).pi.state, "running");
  assert.equal(h.pis.length, 2);
});

test("core: a Pi that fails the patch probe is refused for good: nothing forwarded, the bridge exits after its linger", async () => {
  const h = coreHarness({ firstMode: "unpatched", lingerMs: 5_000 });
  h.send({ type: "prompt", id: "p1", message: "x" });
  await h.deliver();
  assert.equal(status(h).pi.state, "refused");
  assert.equal(h.sink.responses("p1")[0]?.code, "agent_unverified");
  assert.equal(status(h).health.reason, "refused");
  assert.match(String(h.sink.of("agent_exited")[0]?.reason), /^unverified: /);
  assert.ok(!h.pi.received.some((c) => c.type === "prompt"));
  await h.clock.advance(4_999);
  assert.deepEqual(h.shutdowns, []);
  await h.clock.advance(1);
  assert.deepEqual(h.shutdowns, [{ reason: "Pi failed the patch probe; linger over", exitCode: 1 }]);
});

test("core: intake: one decision per frame; bad input answered without an echo of what was too large", async () => {
  const h = await started();
  h.send({ type: "prompt", message: "no id" });
  h.core.handleClientText("{not json");
  h.core.handleClientText(`{"type":"prompt","id":"${"x".repeat(300)}"}`);
  h.core.handleClientText(`{"type":"prompt","id":"deep","m":${"[".repeat(70)}${"]".repeat(70)}}`);
  h.core.handleClientText(JSON.stringify({ type: "prompt", id: "big", message: "y".repeat(1024 * 1024) }));
  h.send({ type: "nope", id: "u1" });
  h.send({ type: "ack", seq: 3 });
  h.send({ type: "extension_ui_response", id: "d9", confirmed: true });
  assert.deepEqual(
    h.sink.frames.map((f) => f.code ?? f.type),
    [
      "missing_id",
      "invalid_json",
      "invalid_frame",
      "invalid_frame",
      "frame_too_large",
      "unknown_type",
      "invalid_frame",
    ],
  );
  assert.equal(h.sink.frames[3]?.id, "deep");
  assert.equal(status(h).client.ackedSeq, 3);
});

test("core: delivery that stops is health's delivery_frozen", async () => {
  const h = await started();
  h.sink.stalled = 4_000;
  assert.equal(status(h).health.ok, true);
  h.sink.stalled = 6_000;
  assert.equal(status(h).health.reason, "delivery_frozen");
});

// ---------------------------------------------------------------------------------------------- property

type CoreEvent =
  | { kind: "command"; n: number }
  | { kind: "answer"; pick: number; confirmed: boolean }
  | { kind: "retryAnswer"; pick: number }
  | { kind: "ask" }
  | { kind: "deliver" }
  | { kind: "withhold" }
  | { kind: "crash" }
  | { kind: "hang" }
  | { kind: "heal" }
  | { kind: "advance"; ms: number }
  | { kind: "attach" }
  | { kind: "detach" }
  | { kind: "spawnFail"; n: number }
  | { kind: "nextSilent" }
  | { kind: "status" };

const coreEvent: fc.Arbitrary<CoreEvent> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant("command" as const), n: fc.integer({ min: 0, max: 7 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("answer" as const), pick: fc.nat(), confirmed: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("retryAnswer" as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.constant({ kind: "ask" as const }) },
  { weight: 6, arbitrary: fc.constant({ kind: "deliver" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "withhold" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "crash" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "hang" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "heal" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 70_000 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "attach" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "detach" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("spawnFail" as const), n: fc.integer({ min: 1, max: 4 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "nextSilent" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "status" as const }) },
);

const PROPERTY_RUNS = Number(process.env.CORE_PROPERTY_RUNS ?? 150);

test("core property: any interleaving of commands, retries, dialogs, crashes, hangs, spawn failures, time and shutdown keeps the invariants", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(coreEvent, { maxLength: 60 }),
      fc.option(fc.nat(60), { nil: undefined }),
      async (events, shutdownAt) => {
        const h = coreHarness({ idleExitMs: 45 * 60_000, detachedGraceMs: 120_000 });
        h.core.attach("person");
        const sends = new Map<string, number>();
        const answers: Frame[] = [];
        const asked: string[] = [];
        const send = (frame: Frame) => {
          const id = String(frame.type === "extension_ui_response" ? frame.commandId : frame.id);
          sends.set(id, (sends.get(id) ?? 0) + 1);
          h.send(frame);
        };
        for (const [index, event] of events.entries()) {
          if (index === shutdownAt) h.core.beginShutdown();
          switch (event.kind) {
            case "command":
              // A fixed payload per id: a repeat is a retry (never a conflict).
              send(
                event.n % 2 === 0
                  ? { type: "prompt", id: `c${event.n}`, message: `m${event.n}` }
                  : { type: "get_state", id: `c${event.n}` },
              );
              break;
            case "answer": {
              const dialogId =
                asked.length > 0 ? (asked[event.pick % (asked.length + 1)] ?? "bogus") : "bogus";
              const answer = {
                type: "extension_ui_response",
                id: dialogId,
                commandId: `a${answers.length}`,
                confirmed: event.confirmed,
              };
              answers.push(answer);
              send(answer);
              break;
            }
            case "retryAnswer":
              if (answers.length > 0) send(answers[event.pick % answers.length] as Frame);
              break;
            case "ask": {
              const id = `d${asked.length}`;
              asked.push(id);
              h.pi.ask(id);
              break;
            }
            case "deliver":
              await h.deliver();
              break;
            case "withhold":
              h.pi.withhold = true;
              break;
            case "crash":
              h.pi.crash();
              break;
            case "hang":
              h.pi.mode = "silent";
              break;
            case "heal":
              h.pi.release();
              break;
            case "advance":
              await h.clock.advance(event.ms);
              break;
            case "attach":
              h.core.attach("person");
              break;
            case "detach":
              h.core.detach("person");
              break;
            case "spawnFail":
              h.next.spawnFailures = event.n;
              break;
            case "nextSilent":
              h.next.mode = "silent";
              break;
            case "status":
              send({ type: "bridge_status", id: `s${index}` });
              break;
          }
          await settle();
        }
        // Everything comes back: Pis answer, spawns work, time passes.
        h.next.mode = "patched";
        h.next.spawnFailures = 0;
        for (let i = 0; i < 30; i++) {
          h.pi.release();
          await h.deliver();
          await h.clock.advance(60_000);
        }

        // No command answered twice: at most one response per send, and every one the same.
        for (const [id, count] of sends) {
          const responses = h.sink.responses(id).map(({ seq: _seq, ...rest }) => rest);
          assert.ok(responses.length >= 1, `${id} was never answered`);
          assert.ok(responses.length <= count, `${id}: ${responses.length} responses to ${count} sends`);
          for (const r of responses) assert.deepEqual(r, responses[0], `${id} answered two ways`);
        }
        // No dialog approved without a matching answer from the client.
        for (const pi of h.pis) {
          for (const { dialogId, answer } of pi.approvals) {
            assert.ok(
              answers.some((a) => a.id === dialogId && a.confirmed === answer.confirmed),
              `Pi took ${JSON.stringify(answer)} for ${dialogId}, which no client sent`,
            );
          }
        }
        // Every dialog ends at most once: one accepted answer or one dialog_closed.
        for (const id of asked) {
          const closed = h.sink.of("dialog_closed").filter((f) => f.id === id).length;
          const accepted = new Set(
            answers
              .filter(
                (a) => a.id === id && h.sink.responses(String(a.commandId)).some((r) => r.success === true),
              )
              .map((a) => a.commandId),
          ).size;
          assert.ok(closed + accepted <= 1, `${id}: closed ${closed}, accepted ${accepted}`);
        }
        // The epoch never changes across restarts.
        for (const f of h.sink.frames) {
          if (f.command === "bridge_status" && f.success === true)
            assert.equal((f.data as { epoch: string }).epoch, EPOCH);
        }
        assert.equal(status(h).epoch, EPOCH);
        assert.ok(
          h.shutdowns.every((s) => s.reason.startsWith("idle")),
          JSON.stringify(h.shutdowns),
        );
      },
    ),
    { numRuns: PROPERTY_RUNS },
  );
});
