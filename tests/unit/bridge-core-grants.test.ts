// Session grants through the composed core (in memory): the gate's request (an extension setStatus with the
// reserved key) makes a grant only after the person's own "Allow for this session" answer to that dialog, and is
// never relayed; clients list and revoke; every change is announced; a new Pi session ends them; a malformed or
// unanswered request makes nothing.
import assert from "node:assert/strict";
import { test } from "node:test";
import { APPROVAL_CHOICES, GRANT_REQUEST_STATUS_KEY } from "../../agent-runtime/policy/grants.ts";
import { GrantsChangedFrame, Snapshot } from "../../bridge/protocol.ts";
import { coreHarness, type Harness } from "../support/core-harness.ts";

async function started(): Promise<Harness> {
  const h = coreHarness();
  await h.deliver();
  h.core.attach("person");
  return h;
}

const CHOICES = [APPROVAL_CHOICES.once, APPROVAL_CHOICES.session, APPROVAL_CHOICES.deny];

/** The gate's dialog `dialogId`, answered by the person with `choice` and taken by Pi. */
async function answered(h: Harness, dialogId: string, choice: string): Promise<void> {
  h.pi.ask(dialogId, "select", CHOICES);
  await h.deliver();
  h.send({ type: "extension_ui_response", id: dialogId, commandId: `answer-${dialogId}`, value: choice });
  await h.deliver();
}

function requestGrant(h: Harness, text: string, id = "status-1"): void {
  h.pi.emit({
    type: "extension_ui_request",
    id,
    method: "setStatus",
    statusKey: GRANT_REQUEST_STATUS_KEY,
    statusText: text,
  });
}

test("core grants: the gate's request makes a grant, announced and listed, never relayed as a Pi line", async () => {
  const h = await started();
  await answered(h, "d1", APPROVAL_CHOICES.session);
  requestGrant(h, JSON.stringify({ kind: "command", key: "npm test", label: "npm test", dialogId: "d1" }));
  await h.deliver();
  const changed = h.sink.of("grants_changed");
  assert.equal(changed.length, 1);
  const frame = GrantsChangedFrame.parse(changed[0]);
  assert.equal(frame.cause, "granted");
  assert.deepEqual(
    frame.grants.map((g) => [g.kind, g.key, g.dialogId, g.by]),
    [["command", "npm test", "d1", "person"]],
  );
  assert.equal(
    h.sink.of("extension_ui_request").filter((f) => f.method === "setStatus").length,
    0,
    "the request is the bridge's, not a client's",
  );
  h.send({ type: "list_grants", id: "l1" });
  const listed = h.sink.responses("l1")[0]?.data as { grants: { key: string }[] };
  assert.deepEqual(
    listed.grants.map((g) => g.key),
    ["npm test"],
  );
  assert.deepEqual(
    Snapshot.parse(h.core.snapshot()).grants.map((g) => g.key),
    ["npm test"],
  );
});

test("core grants: revoke one, refuse an unknown id, revoke all", async () => {
  const h = await started();
  await answered(h, "d1", APPROVAL_CHOICES.session);
  await answered(h, "d2", APPROVAL_CHOICES.session);
  requestGrant(h, JSON.stringify({ kind: "command", key: "make", label: "make", dialogId: "d1" }), "s1");
  requestGrant(
    h,
    JSON.stringify({
      kind: "destination",
      key: "registry.test:443",
      label: "registry.test:443",
      dialogId: "d2",
    }),
    "s2",
  );
  await h.deliver();
  const [first] = (h.core.snapshot().grants ?? []) as { id: string }[];
  h.send({ type: "revoke_grant", id: "r1", grant: first?.id });
  assert.equal(h.sink.responses("r1")[0]?.success, true);
  h.send({ type: "revoke_grant", id: "r2", grant: "g-0000000000000000" });
  assert.equal(h.sink.responses("r2")[0]?.code, "grant_not_found");
  h.send({ type: "revoke_grant", id: "r3", grant: "all" });
  const revokedAll = h.sink.responses("r3")[0]?.data as { revoked: unknown[] } | undefined;
  assert.equal(revokedAll?.revoked.length, 1);
  assert.deepEqual(
    h.sink.of("grants_changed").map((f) => [f.cause, (f.grants as unknown[]).length]),
    [
      ["granted", 1],
      ["granted", 2],
      ["revoked", 1],
      ["revoked", 0],
    ],
  );
  h.send({ type: "revoke_grant", id: "r4", grant: "not-an-id" });
  assert.equal(h.sink.responses("r4")[0]?.code, "invalid_frame");
});

test("core grants: a malformed request makes nothing; a new Pi session ends every grant", async () => {
  const h = await started();
  requestGrant(h, "{not json", "s1");
  requestGrant(h, JSON.stringify({ kind: "everything", key: "*", label: "", dialogId: "d0" }), "s2");
  await h.deliver();
  assert.equal(h.sink.of("grants_changed").length, 0);
  assert.equal(h.sink.of("extension_ui_request").length, 0, "not relayed either");
  await answered(h, "d3", APPROVAL_CHOICES.session);
  requestGrant(h, JSON.stringify({ kind: "command", key: "pytest", label: "pytest", dialogId: "d3" }), "s3");
  await h.deliver();
  assert.equal(h.sink.of("grants_changed").at(-1)?.cause, "granted");
  // Pi moves to a new session: the bridge asks for its state, learns the new id, and the grants end.
  h.pi.sessionId = "session-2";
  h.send({ type: "new_session", id: "n1" });
  await h.deliver();
  await h.deliver();
  const last = h.sink.of("grants_changed").at(-1);
  assert.equal(last?.cause, "session_changed");
  assert.deepEqual(last?.grants, []);
});

test("core grants: no grant without the person's session answer to that very dialog", async () => {
  const h = await started();
  // Never asked; asked but answered "Allow once"; asked and still pending; answered but Pi refused the answer.
  requestGrant(h, JSON.stringify({ kind: "command", key: "a", label: "a", dialogId: "never" }), "s1");
  await answered(h, "once", APPROVAL_CHOICES.once);
  requestGrant(h, JSON.stringify({ kind: "command", key: "b", label: "b", dialogId: "once" }), "s2");
  h.pi.ask("pending", "select", CHOICES);
  await h.deliver();
  requestGrant(h, JSON.stringify({ kind: "command", key: "c", label: "c", dialogId: "pending" }), "s3");
  await h.deliver();
  assert.equal(h.sink.of("grants_changed").length, 0);
  assert.deepEqual(h.core.snapshot().grants, []);
  // A grant request naming the session answer of one dialog makes exactly the grant it names.
  await answered(h, "session", APPROVAL_CHOICES.session);
  requestGrant(h, JSON.stringify({ kind: "command", key: "d", label: "d", dialogId: "session" }), "s4");
  await h.deliver();
  assert.deepEqual(
    (h.core.snapshot().grants ?? []).map((g) => (g as { key: string }).key),
    ["d"],
  );
});
