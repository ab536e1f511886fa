// The bridge's egress proxy with real Pi and the scripted model, on the host: the tools' environment points at the
// proxy the bridge bound before Pi; a bash call that asks a destination through it raises the bridge's own select
// dialog naming the host, the port and (when the tools' supervisor reports it) the tool call; the answer is taken
// by the bridge, never by Pi; "Allow once" lets that request through and the next asks again; "for this session"
// makes a destination grant (no more dialogs), revoking it asks again; every decision is in the audit log with
// the rule or grant that made it. The destination is `localhost` (loopback, so no test traffic leaves the
// machine): a name is resolved only once allowed, and the proxy never connects to an internal address, so an
// allowed request ends in the proxy's own "internal addresses" refusal, and a denied one in the person's denial:
// the two bodies tell them apart. An internal IP literal (127.0.0.2) is refused before any dialog.
import assert from "node:assert/strict";
import path from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  callTool,
  lastToolResult,
  lastUserText,
  type RecordedRequest,
  say,
} from "../../agent-runtime/dev/scripted-model.ts";
import { APPROVAL_CHOICES } from "../../agent-runtime/policy/grants.ts";
import { bridgeBundle, type Frame, startNetworkBridge, TEST_TOKEN, TestClient } from "../support/bridge.ts";

function script(request: RecordedRequest) {
  if (lastToolResult(request.body) !== undefined) return say("done");
  const bash = /^BASH (.+)$/s.exec(lastUserText(request.body));
  return bash ? callTool("bash", { command: bash[1] }) : say("nothing to do");
}

const DESTINATION = "localhost:8";
const INTERNAL_LITERAL = "127.0.0.2:8";
/**
 * Prints the proxy's answer to a plain HTTP request for a destination (curl takes HTTP_PROXY from the env;
 * `--noproxy ''` overrides the tools' NO_PROXY, which names localhost).
 */
const fetchCommand = (destination: string) =>
  `BASH echo "proxy=$HTTP_PROXY"; curl -s --noproxy '' --max-time 20 http://${destination}/ ; echo; echo FETCHED`;

async function launch(t: TestContext) {
  const bridge = await startNetworkBridge(t, {
    model: { script },
    // The real gate: it routes the tools to the executor, whose environment names the proxy.
    gate: path.join(path.dirname(bridgeBundle), "approval-gate.mjs"),
    env: { AGENT_POLICY: "auto" },
  });
  const { client } = await TestClient.connect(bridge.url, { token: TEST_TOKEN });
  t.after(() => client.close());
  let n = 0;
  // The person says yes to the gate's own confirmations (these tests are about the proxy's dialog).
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
  /** Fetches `destination`; `choice` answers the proxy's dialog if one comes (undefined: none must come). */
  const fetchAnswering = async (choice: string | undefined, destination = DESTINATION) => {
    const from = client.frames.length;
    const message = fetchCommand(destination);
    const response = await client.request({ type: "prompt", id: `p${++n}`, message }, 30_000);
    assert.equal(response.success, true, JSON.stringify(response));
    let dialog: Frame | undefined;
    if (choice !== undefined) {
      dialog = await client.waitFor(
        (f) => f.type === "extension_ui_request" && f.method === "select",
        60_000,
        from,
      );
      const answered = await client.answer({
        type: "extension_ui_response",
        id: String(dialog.id),
        commandId: `a${++n}`,
        value: choice,
      });
      assert.equal(answered.success, true, JSON.stringify(answered));
    }
    const end = await client.waitFor((f) => f.type === "tool_execution_end", 60_000, from);
    await client.waitFor((f) => f.type === "agent_settled", 30_000, from);
    const result = end.result as { content: { text?: string }[] };
    const text = result.content.map((c) => c.text ?? "").join("");
    const selects = client.frames
      .slice(from)
      .filter((f) => f.type === "extension_ui_request" && f.method === "select");
    return { text, dialog, selects };
  };
  return { bridge, client, fetchAnswering, next: () => ++n };
}

describe("egress proxy in the bridge (real Pi)", () => {
  it("asks per destination: once passes once, session grants, revoke asks again; all audited", async (t) => {
    const { bridge, client, fetchAnswering, next } = await launch(t);
    const started = await bridge.waitForLog((l) => l.msg === "egress proxy listening");
    const proxyPort = Number(started.port);

    const once = await fetchAnswering(APPROVAL_CHOICES.once);
    assert.match(once.text, new RegExp(`proxy=http://127\\.0\\.0\\.1:${proxyPort}`));
    assert.match(
      once.text,
      /resolves only to internal addresses/,
      "allowed, then refused by the proxy itself",
    );
    const dialog = once.dialog as Frame;
    assert.match(String(dialog.id), /^bridge:egress:/);
    assert.deepEqual(dialog.options, [
      APPROVAL_CHOICES.once,
      APPROVAL_CHOICES.session,
      APPROVAL_CHOICES.deny,
    ]);
    assert.match(String(dialog.title), /localhost:8/);
    assert.match(String(dialog.message), /host: localhost\nport: 8/);
    const details = dialog.details as { call: string | null; pid: number | null };
    if (started.supervised !== false) {
      assert.equal(typeof details.pid, "number", "the supervisor's report names the process");
      assert.match(String(dialog.message), /asked by: tool call /);
    }

    const denied = await fetchAnswering(APPROVAL_CHOICES.deny);
    assert.match(denied.text, /the person denied it \(person-deny\)/, "once did not carry over");

    const session = await fetchAnswering(APPROVAL_CHOICES.session);
    assert.match(session.text, /resolves only to internal addresses/);
    const granted = await fetchAnswering(undefined);
    assert.equal(granted.selects.length, 0, "the session grant: no dialog");
    assert.match(granted.text, /resolves only to internal addresses/);

    const listed = await client.request({ type: "list_grants", id: `l${next()}` });
    const grants = (listed.data as { grants: { id: string; kind: string; key: string }[] }).grants;
    assert.deepEqual(
      grants.map((g) => [g.kind, g.key]),
      [["destination", DESTINATION]],
    );
    const grantId = grants[0]?.id as string;
    const revoked = await client.request({ type: "revoke_grant", id: `r${next()}`, grant: grantId });
    assert.equal(revoked.success, true);
    const again = await fetchAnswering(APPROVAL_CHOICES.deny);
    assert.equal(again.selects.length, 1, "revoked: it asks again");

    // An internal IP literal can never be allowed: refused with no dialog, the rule named.
    const literal = await fetchAnswering(undefined, INTERNAL_LITERAL);
    assert.equal(literal.selects.length, 0, "an internal literal: no dialog");
    assert.match(
      literal.text,
      /127\.0\.0\.2 is an internal address, never reached through the proxy \(internal-address\)/,
    );

    // The audit log: every decision, with the rule or grant that made it; Pi never saw the bridge's dialogs.
    const audit = bridge.logs
      .filter((l) => l.msg === "egress allowed" || l.msg === "egress refused")
      .map((l) => [l.destination, l.allow, l.rule]);
    assert.deepEqual(audit, [
      [DESTINATION, true, "person-once"],
      [DESTINATION, false, "person-deny"],
      [DESTINATION, true, `grant:${grantId}`],
      [DESTINATION, true, `grant:${grantId}`],
      [DESTINATION, false, "person-deny"],
      [INTERNAL_LITERAL, false, "internal-address"],
    ]);
    assert.ok(!bridge.stderr().includes("Pi used a bridge dialog id"));
  });
});
