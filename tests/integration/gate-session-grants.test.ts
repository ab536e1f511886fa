// The gate's side of session grants inside real Pi (scripted model), without a bridge: the test plays the bridge
// by writing the grants file the gate reads. The dialog a grantable call gets (a select of exactly the three
// choices), the grant request a session answer sends (naming the dialog Pi opened), a grant of this Pi session
// letting the same shape run unasked and no other, a boundary action never offering or honouring one, and the
// operator's approval timeout.
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { type TestContext, test } from "node:test";
import type { PiLine, PiRpcProcess } from "../../agent-runtime/dev/pi-rpc.ts";
import { callTool, lastToolResult, type ScriptTurn, say } from "../../agent-runtime/dev/scripted-model.ts";
import { commandShape } from "../../agent-runtime/gate/command-shape.ts";
import { pathContextFromEnv } from "../../agent-runtime/gate/path-context.ts";
import {
  APPROVAL_CHOICES,
  GRANT_REQUEST_STATUS_KEY,
  GRANTS_PATH_ENV,
  type GrantsFile,
} from "../../agent-runtime/policy/grants.ts";
import { gateParser } from "../support/gate-parser.ts";
import { ALL_TOOLS, decisionLogs, installGate } from "../support/gated-pi.ts";
import { startPiSession } from "../support/pi.ts";
import { tempDir } from "../support/workspace.ts";

type Answer = (dialog: PiLine) => Record<string, unknown> | undefined;
const choose =
  (choice: string): Answer =>
  () => ({ value: choice });
const confirm =
  (yes: boolean): Answer =>
  () => ({ confirmed: yes });
/** Leaves the dialog unanswered. */
const silent: Answer = () => undefined;

async function startSession(
  t: TestContext,
  options: { policy: string; env?: NodeJS.ProcessEnv; answers?: Answer[] },
) {
  const gate = await installGate(t);
  const dir = await tempDir(t, "gate-grants-");
  const policyFile = path.join(dir, "policy");
  const grantsFile = path.join(dir, "grants.json");
  await writeFile(policyFile, options.policy);
  const turns: ScriptTurn[] = [];
  const { pi, model, cwd } = await startPiSession(
    t,
    { script: () => turns.shift() },
    {
      extensions: [gate],
      env: { AGENT_POLICY_PATH: policyFile, [GRANTS_PATH_ENV]: grantsFile, ...options.env },
      extraArgs: ALL_TOOLS,
    },
  );
  const dialogs: PiLine[] = [];
  const answers = [...(options.answers ?? [])];
  pi.onLine((line) => {
    if (line.type !== "extension_ui_request" || !["confirm", "select"].includes(String(line.method))) return;
    dialogs.push(line);
    const reply = (answers.shift() ?? (() => ({ cancelled: true })))(line);
    if (reply) pi.send({ type: "extension_ui_response", id: line.id, ...reply });
  });
  const state = await pi.request({ type: "get_state" });
  const sessionId = (state.data as { sessionId: string }).sessionId;
  assert.ok(sessionId);
  return { pi, model, cwd, dialogs, grantsFile, sessionId, turns, policyFile };
}

/** The model runs `command` once, then says done. */
async function run(session: Awaited<ReturnType<typeof startSession>>, command: string) {
  session.turns.push(callTool("bash", { command }), say("done"));
  const from = session.pi.lines.length;
  const response = await session.pi.request({ type: "prompt", message: `run ${command}` });
  assert.equal(response.success, true);
  await session.pi.waitFor((l) => l.type === "agent_settled", 60_000, from);
  const lines = session.pi.lines.slice(from);
  const end = lines.find((l) => l.type === "tool_execution_end");
  return { lines, end, text: JSON.stringify(end?.result ?? "") };
}

const grantRequests = (lines: readonly PiLine[]) =>
  lines.filter(
    (l) =>
      l.type === "extension_ui_request" &&
      l.method === "setStatus" &&
      l.statusKey === GRANT_REQUEST_STATUS_KEY,
  );

function grantsFile(sessionId: string, grants: Array<{ id: string; key: string }>): string {
  const file: GrantsFile = {
    version: 1,
    sessionId,
    grants: grants.map((g) => ({
      id: g.id,
      kind: "command",
      key: g.key,
      label: "test grant",
      sessionId,
      createdAt: new Date().toISOString(),
      dialogId: "d",
      by: "test",
    })),
  };
  return JSON.stringify(file);
}

const lastDecision = (pi: PiRpcProcess) => decisionLogs(pi).at(-1) ?? {};

test("ask: a grantable command offers the three choices; a session answer requests its shape; the grant then runs it unasked until it goes", async (t) => {
  const session = await startSession(t, {
    policy: "ask",
    answers: [choose(APPROVAL_CHOICES.session), choose(APPROVAL_CHOICES.deny)],
  });
  const command = "echo granted >> out.txt";
  const first = await run(session, command);
  const dialog = session.dialogs[0];
  assert.equal(dialog?.method, "select");
  assert.deepEqual(dialog?.options, ["Allow once", "Allow for this session", "Deny"]);
  assert.match(String(dialog?.title), /echo granted >> out\.txt/);
  assert.equal(first.end?.isError, false, first.text);
  const requests = grantRequests(first.lines);
  assert.equal(requests.length, 1);
  const request = JSON.parse(String(requests[0]?.statusText)) as Record<string, string>;
  assert.equal(request.kind, "command");
  assert.equal(request.dialogId, dialog?.id, "the request names the dialog Pi opened");
  assert.match(request.label ?? "", /echo granted >> out\.txt/);
  assert.equal(lastDecision(session.pi).answer, "session");

  // No grant in the file yet (no bridge kept one): the same command asks again, and Deny blocks it.
  const second = await run(session, command);
  assert.equal(session.dialogs.length, 2);
  assert.equal(second.end?.isError, true);
  assert.match(second.text, /declined/);
  assert.equal(grantRequests(second.lines).length, 0, "a deny requests nothing");

  // The bridge kept it: the same shape runs without a dialog, twice, and the audit line names the grant.
  await writeFile(
    session.grantsFile,
    grantsFile(session.sessionId, [{ id: "g-00000000000000aa", key: request.key as string }]),
  );
  for (const spelled of [command, "echo 'granted' >>out.txt"]) {
    const granted = await run(session, spelled);
    assert.equal(granted.end?.isError, false, granted.text);
    assert.equal(session.dialogs.length, 2, `${spelled}: no dialog`);
    assert.equal(lastDecision(session.pi).answer, "granted");
    assert.equal(lastDecision(session.pi).grant, "g-00000000000000aa");
  }
  assert.equal(await readFile(path.join(session.cwd, "out.txt"), "utf8"), "granted\ngranted\ngranted\n");

  // Another shape is not covered; nor is the grant of another session; a revoked grant asks again.
  await run(session, "echo other >> out.txt");
  assert.equal(session.dialogs.length, 3);
  await writeFile(
    session.grantsFile,
    grantsFile("another-session", [{ id: "g-00000000000000aa", key: request.key as string }]),
  );
  await run(session, command);
  assert.equal(session.dialogs.length, 4);
  await rm(session.grantsFile);
  await run(session, command);
  assert.equal(session.dialogs.length, 5);
  await writeFile(session.grantsFile, "not json");
  await run(session, command);
  assert.equal(session.dialogs.length, 6, "an invalid file is no grant");
});

test("Allow once runs the call and requests no grant", async (t) => {
  const session = await startSession(t, { policy: "ask", answers: [choose(APPROVAL_CHOICES.once)] });
  const result = await run(session, "echo once > once.txt");
  assert.equal(session.dialogs[0]?.method, "select");
  assert.equal(result.end?.isError, false);
  assert.equal(grantRequests(result.lines).length, 0);
  assert.equal(lastDecision(session.pi).answer, "yes");
});

test("a boundary action (git push, a secret read) keeps a yes/no confirm and ignores a grant of its very shape", async (t) => {
  for (const policy of ["auto", "ask"]) {
    const session = await startSession(t, {
      policy,
      answers: [confirm(false), confirm(false), confirm(false), confirm(false)],
    });
    const parser = await gateParser();
    const context = pathContextFromEnv(session.cwd, { HOME: session.cwd });
    const push = "git push origin main";
    const secret = "cat .env";
    await writeFile(path.join(session.cwd, ".env"), "TOKEN=x\n");
    const keys = [push, secret].map((c) => commandShape(c, parser, context.cwd)?.key as string);
    assert.ok(keys.every(Boolean));
    await writeFile(
      session.grantsFile,
      grantsFile(
        session.sessionId,
        keys.map((key, i) => ({ id: `g-00000000000000b${i}`, key })),
      ),
    );
    for (const command of [push, secret]) {
      const result = await run(session, command);
      assert.equal(result.end?.isError, true, `${policy}: ${command}`);
      assert.equal(grantRequests(result.lines).length, 0);
    }
    assert.deepEqual(
      session.dialogs.map((d) => d.method),
      ["confirm", "confirm"],
      `${policy}: boundary actions are asked as yes/no`,
    );
    assert.ok(decisionLogs(session.pi).every((d) => d.grant === undefined));
  }
});

test("read-only never honours a grant", async (t) => {
  const session = await startSession(t, { policy: "read-only" });
  const parser = await gateParser();
  const context = pathContextFromEnv(session.cwd, { HOME: session.cwd });
  const command = "echo x > x.txt";
  const key = commandShape(command, parser, context.cwd)?.key as string;
  await writeFile(session.grantsFile, grantsFile(session.sessionId, [{ id: "g-00000000000000cc", key }]));
  const result = await run(session, command);
  assert.equal(result.end?.isError, true);
  assert.equal(session.dialogs.length, 0);
  assert.equal(lastDecision(session.pi).grant, undefined);
});

test("the operator's approval timeout denies an unanswered dialog and tells the model nobody answered", async (t) => {
  const session = await startSession(t, {
    policy: "ask",
    env: { CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES: "0.02" },
    answers: [silent, silent],
  });
  for (const command of ["echo late > late.txt", "git push"]) {
    const result = await run(session, command);
    assert.equal(result.end?.isError, true);
    assert.match(result.text, /did not answer the approval dialog within 1\.2 seconds/);
    assert.match(result.text, /not a refusal/);
    assert.equal(lastDecision(session.pi).answer, "timed-out");
  }
  assert.deepEqual(
    session.dialogs.map((d) => [d.method, d.timeout]),
    [
      ["select", 1200],
      ["confirm", 1200],
    ],
  );
  await assert.rejects(readFile(path.join(session.cwd, "late.txt")));
  // The model was told (its next request carries the tool result).
  const told = session.model.requests
    .map((r) => lastToolResult(r.body) ?? "")
    .filter((r) => /did not answer/.test(r));
  assert.equal(told.length, 2);
});
