// Dialogs the bridge asks itself (the egress proxy's destinations), through the composed core in memory: the
// same frame clients render, ids Pi cannot take, answered in the bridge and never sent to Pi, and the same rules
// as every dialog: a malformed answer, a cancel, no client within the grace, shutdown and Pi's exit all refuse;
// time alone never answers; the number waiting is bounded; the gate cannot turn such an answer into a grant.
import assert from "node:assert/strict";
import { test } from "node:test";
import { APPROVAL_CHOICES, GRANT_REQUEST_STATUS_KEY } from "../../agent-runtime/policy/grants.ts";
import { BRIDGE_DIALOG_PREFIX, MAX_BRIDGE_DIALOGS } from "../../bridge/core/dialog-relay.ts";
import type { BridgeAnswer, BridgeQuestion } from "../../bridge/core.ts";
import { DialogClosedFrame, PendingDialog, Snapshot } from "../../bridge/protocol.ts";
import { coreHarness, type Harness, settle } from "../support/core-harness.ts";

const CHOICES = [APPROVAL_CHOICES.once, APPROVAL_CHOICES.session, APPROVAL_CHOICES.deny];
const QUESTION: BridgeQuestion = {
  topic: "egress",
  title: "Allow network access to example.test:443?",
  message: "host: example.test\nport: 443",
  options: CHOICES,
  details: { kind: "egress", host: "example.test", port: 443 },
};

async function started(options: Parameters<typeof coreHarness>[0] = {}): Promise<Harness> {
  const h = coreHarness(options);
  await h.deliver();
  h.core.attach("person");
  return h;
}

/** Asks, and returns the answer's promise with the request frame clients got. */
async function ask(h: Harness) {
  let settled: BridgeAnswer | undefined;
  const answer = h.core.askPerson(QUESTION).then((a) => {
    settled = a;
    return a;
  });
  await settle();
  const request = h.sink.of("extension_ui_request").at(-1);
  assert.ok(request, "clients got the dialog");
  return { answer, request, settled: () => settled, id: String(request.id) };
}

function toPi(h: Harness, dialogId: string) {
  return h.pis.flatMap((pi) => pi.received).filter((f) => f.id === dialogId);
}

test("own dialogs: a select clients render, the client's choice answers it, nothing reaches Pi", async () => {
  const h = await started();
  const { answer, request, id } = await ask(h);
  assert.ok(id.startsWith(`${BRIDGE_DIALOG_PREFIX}egress:`), id);
  const pending = PendingDialog.parse(request);
  assert.equal(pending.method, "select");
  assert.deepEqual(pending.options, CHOICES);
  assert.equal(pending.title, QUESTION.title);
  assert.equal(request.message, QUESTION.message);
  assert.equal(request.origin, "bridge");
  assert.deepEqual(
    Snapshot.parse(h.core.snapshot()).pendingDialogs.map((d) => d.id),
    [id],
    "a reconnecting client sees it",
  );
  h.send({ type: "extension_ui_response", id, commandId: "a1", value: APPROVAL_CHOICES.session });
  await settle();
  assert.deepEqual(await answer, { dialogId: id, choice: APPROVAL_CHOICES.session, by: "person" });
  assert.equal(h.sink.responses("a1")[0]?.success, true);
  assert.equal(h.sink.of("dialog_closed").length, 0);
  assert.deepEqual(toPi(h, id), [], "never sent to Pi");
  assert.deepEqual(h.core.pendingDialogs(), []);
  // A second answer finds nothing pending.
  h.send({ type: "extension_ui_response", id, commandId: "a2", value: APPROVAL_CHOICES.once });
  assert.equal(h.sink.responses("a2")[0]?.code, "ui_request_not_pending");
});

test("own dialogs: a malformed answer and a cancel refuse (announced), never approve", async () => {
  const h = await started();
  const first = await ask(h);
  h.send({ type: "extension_ui_response", id: first.id, commandId: "m1", value: "Allow forever" });
  assert.deepEqual(await first.answer, { dialogId: first.id, choice: null, refused: "malformed_answer" });
  const second = await ask(h);
  h.send({ type: "extension_ui_response", id: second.id, commandId: "m2", confirmed: true });
  assert.equal((await second.answer).choice, null);
  const third = await ask(h);
  h.send({ type: "extension_ui_response", id: third.id, commandId: "c1", cancelled: true });
  assert.deepEqual(await third.answer, { dialogId: third.id, choice: null, refused: "cancelled" });
  assert.deepEqual(
    h.sink.of("dialog_closed").map((f) => {
      const closed = DialogClosedFrame.parse(f);
      return [closed.id, closed.reason];
    }),
    [
      [first.id, "malformed_answer"],
      [second.id, "malformed_answer"],
      [third.id, "cancelled"],
    ],
  );
  assert.deepEqual(
    h.pis.flatMap((pi) => pi.received).filter((f) => String(f.id).startsWith(BRIDGE_DIALOG_PREFIX)),
    [],
  );
});

test("own dialogs: time alone never answers; with no client the detached grace refuses", async () => {
  const h = await started({ detachedGraceMs: 60_000 });
  const waiting = await ask(h);
  await h.clock.advance(24 * 3_600_000);
  assert.equal(waiting.settled(), undefined, "attached: a day later it still waits for the person");
  h.core.detach("person");
  await h.clock.advance(59_000);
  assert.equal(waiting.settled(), undefined);
  await h.clock.advance(1_000);
  assert.deepEqual(await waiting.answer, {
    dialogId: waiting.id,
    choice: null,
    refused: "detached_grace",
  });
  // Asked while nobody is attached: the grace runs from the question.
  const unattended = await ask(h);
  await h.clock.advance(60_000);
  assert.equal((await unattended.answer).choice, null);
});

test("own dialogs: shutdown and Pi's exit refuse them; one asked during shutdown is refused at once", async () => {
  const h = await started();
  const exiting = await ask(h);
  h.pi.crash();
  await settle();
  assert.deepEqual(await exiting.answer, { dialogId: exiting.id, choice: null, refused: "agent_exited" });
  const h2 = await started();
  const open = await ask(h2);
  h2.core.beginShutdown();
  assert.deepEqual(await open.answer, { dialogId: open.id, choice: null, refused: "shutdown" });
  const late = await ask(h2);
  assert.deepEqual(await late.answer, { dialogId: late.id, choice: null, refused: "shutdown" });
});

test("own dialogs: an abort of the turn refuses them like Pi's", async () => {
  const h = await started();
  const open = await ask(h);
  h.send({ type: "abort", id: "ab1" });
  assert.deepEqual(await open.answer, { dialogId: open.id, choice: null, refused: "cancelled" });
});

test("own dialogs: bounded; more than the bound are refused before anyone sees them", async () => {
  const h = await started();
  const open = [];
  for (let i = 0; i < MAX_BRIDGE_DIALOGS; i++) open.push(await ask(h));
  const shown = h.sink.of("extension_ui_request").length;
  const extra = await h.core.askPerson(QUESTION);
  assert.equal(extra.choice, null);
  assert.equal("refused" in extra && extra.refused, "too_many");
  assert.equal(h.sink.of("extension_ui_request").length, shown, "not shown");
  h.send({ type: "extension_ui_response", id: open[0]?.id, commandId: "x", value: APPROVAL_CHOICES.deny });
  assert.equal((await open[0]?.answer)?.choice, APPROVAL_CHOICES.deny);
  const again = await ask(h);
  assert.equal(again.settled(), undefined, "room again once one was answered");
});

test("own dialogs: Pi cannot use the bridge's namespace, nor make a grant from such an answer", async () => {
  const h = await started();
  const forged = `${BRIDGE_DIALOG_PREFIX}egress:${"0".repeat(24)}`;
  h.pi.ask(forged, "select", CHOICES);
  await h.deliver();
  assert.equal(
    h.sink.of("extension_ui_request").filter((f) => f.id === forged).length,
    0,
    "never shown to clients",
  );
  assert.deepEqual(
    toPi(h, forged).map((f) => f.cancelled),
    [true],
    "Pi's own dialog is cancelled",
  );
  // The person allows a destination for the session; the gate then names that dialog in a grant request.
  const own = await ask(h);
  h.send({ type: "extension_ui_response", id: own.id, commandId: "s1", value: APPROVAL_CHOICES.session });
  await own.answer;
  h.pi.emit({
    type: "extension_ui_request",
    id: "status-1",
    method: "setStatus",
    statusKey: GRANT_REQUEST_STATUS_KEY,
    statusText: JSON.stringify({ kind: "command", key: "curl", label: "curl", dialogId: own.id }),
  });
  await h.deliver();
  assert.deepEqual(h.core.snapshot().grants, [], "the answer was the bridge's own, not Pi's");
});
