// The shipped approval gate (build/opt/chat-ui-agent/approval-gate.mjs) inside real Pi 0.84.2, per policy mode.
// The bundle and its two .wasm files are copied to a temp dir first: that proves the bundle loads its parser
// from beside itself (no node_modules there) and shields the test from concurrent rebuilds.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFile, rm as rmFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { type TestContext, test } from "node:test";
import type { PiLine, PiRpcProcess } from "../../agent-runtime/dev/pi-rpc.ts";
import { callTool, type ScriptTurn, say } from "../../agent-runtime/dev/scripted-model.ts";
import { installGate } from "../support/gated-pi.ts";
import { startPiSession } from "../support/pi.ts";
import { tempDir } from "../support/workspace.ts";

interface GatedSession {
  pi: PiRpcProcess;
  /** The model's remaining turns: push more before a later prompt. */
  turns: ScriptTurn[];
  cwd: string;
  policyFile: string;
  dialogs: PiLine[];
}

type DialogAnswer = (dialog: PiLine) => Promise<Record<string, unknown>> | Record<string, unknown>;

/** Starts Pi with the gate; every confirm dialog is answered by the next answer in `answers` (none left → no). */
async function startGated(
  t: TestContext,
  script: ScriptTurn[],
  options: {
    policy?: string;
    env?: NodeJS.ProcessEnv;
    answers?: DialogAnswer[];
    mode?: string;
    messages?: string[];
  } = {},
): Promise<GatedSession> {
  const gate = await installGate(t);
  const policyDir = await tempDir(t, "gate-policy-");
  const policyFile = path.join(policyDir, "policy");
  if (options.policy !== undefined) await writeFile(policyFile, options.policy);
  const turns = [...script];
  const { pi, cwd } = await startPiSession(
    t,
    { script: () => turns.shift() },
    {
      extensions: [gate],
      env: { AGENT_POLICY_PATH: policyFile, ...options.env },
      ...(options.mode ? { mode: options.mode } : {}),
      ...(options.messages ? { messages: options.messages } : {}),
    },
  );
  const dialogs: PiLine[] = [];
  const answers = [...(options.answers ?? [])];
  pi.onLine((line) => {
    if (line.type !== "extension_ui_request" || !["confirm", "select"].includes(String(line.method))) return;
    dialogs.push(line);
    const answer = answers.shift() ?? (() => ({ confirmed: false }));
    void Promise.resolve(answer(line)).then((reply) =>
      pi.send({ type: "extension_ui_response", id: line.id, ...reply }),
    );
  });
  return { pi, turns, cwd, policyFile, dialogs };
}

async function runPrompt(pi: PiRpcProcess, message: string): Promise<PiLine[]> {
  const from = pi.lines.length;
  const response = await pi.request({ type: "prompt", message });
  assert.equal(response.success, true, JSON.stringify(response));
  await pi.waitFor((l) => l.type === "agent_settled", 60_000, from);
  return pi.lines.slice(from).filter((l) => l.type === "tool_execution_end");
}

const resultText = (end: PiLine | undefined) => JSON.stringify(end?.result ?? "");
const exists = (file: string) =>
  stat(file).then(
    () => true,
    () => false,
  );
// A grantable call is a select (Allow once / Allow for this session / Deny), a boundary action a confirm.
const yes: DialogAnswer = (d) => (d.method === "select" ? { value: "Allow once" } : { confirmed: true });
const no: DialogAnswer = (d) => (d.method === "select" ? { value: "Deny" } : { confirmed: false });
/** What the person reads: a select carries the whole prompt in its title. */
const shown = (d: PiLine | undefined) => `${String(d?.title)}\n${String(d?.message ?? "")}`;

function decisionLogs(pi: PiRpcProcess): Array<Record<string, unknown>> {
  return pi.stderr
    .split("\n")
    .filter((line) => line.includes('"tool call decision"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

test("read-only: bash and write are blocked (nothing happens), read is allowed, no dialog", async (t) => {
  const { pi, cwd, dialogs } = await startGated(
    t,
    [
      callTool("bash", { command: "echo ran > ro-bash.txt" }),
      callTool("write", { path: "ro-write.txt", content: "SECRET-CONTENT-MARKER" }),
      callTool("read", { path: "hello.txt" }),
      say("done"),
    ],
    { policy: "read-only\n" },
  );
  await writeFile(path.join(cwd, "hello.txt"), "hello from the workspace\n");
  const ends = await runPrompt(pi, "try things");
  assert.equal(ends.length, 3);
  assert.equal(ends[0]!.isError, true);
  assert.match(resultText(ends[0]), /read-only policy blocks shell commands/);
  assert.match(resultText(ends[0]), /policy read-only from file/);
  assert.equal(ends[1]!.isError, true);
  assert.match(resultText(ends[1]), /read-only policy blocks writes/);
  assert.equal(ends[2]!.isError, false);
  assert.match(resultText(ends[2]), /hello from the workspace/);
  assert.equal(await exists(path.join(cwd, "ro-bash.txt")), false);
  assert.equal(await exists(path.join(cwd, "ro-write.txt")), false);
  assert.equal(dialogs.length, 0);
  // One JSON log line per decision, with policy and source, never the file content.
  const logs = decisionLogs(pi);
  assert.deepEqual(
    logs.map((l) => [l.tool, l.decision, l.policy, l.policySource, l.answer]),
    [
      ["bash", "block", "read-only", "file", "not-asked"],
      ["write", "block", "read-only", "file", "not-asked"],
      ["read", "allow", "read-only", "file", "not-asked"],
    ],
  );
  assert.equal(pi.stderr.includes("SECRET-CONTENT-MARKER"), false);
});

test("ask: bash is confirmed (no → nothing runs, yes → runs), ordinary read is not, .env read is", async (t) => {
  const { pi, cwd, dialogs } = await startGated(
    t,
    [
      callTool("bash", { command: "echo no > ask-no.txt" }),
      callTool("bash", { command: "echo yes > ask-yes.txt" }),
      callTool("read", { path: "notes.txt" }),
      callTool("read", { path: ".env" }),
      callTool("edit", { path: "notes.txt", edits: [{ oldText: "plain", newText: "edited" }] }),
      say("done"),
    ],
    { policy: "ask", answers: [no, yes, () => ({ cancelled: true }), yes] },
  );
  await writeFile(path.join(cwd, "notes.txt"), "plain notes\n");
  await writeFile(path.join(cwd, ".env"), "API_TOKEN=do-not-leak\n");
  const ends = await runPrompt(pi, "go");
  assert.equal(ends.length, 5);
  assert.equal(ends[0]!.isError, true);
  assert.match(resultText(ends[0]), /declined/);
  assert.equal(await exists(path.join(cwd, "ask-no.txt")), false);
  assert.equal(ends[1]!.isError, false);
  assert.equal(await readFile(path.join(cwd, "ask-yes.txt"), "utf8"), "yes\n");
  assert.equal(ends[2]!.isError, false, "ordinary read needs no dialog");
  assert.equal(ends[3]!.isError, true, "cancelled sensitive read is blocked");
  assert.equal(resultText(ends[3]).includes("do-not-leak"), false);
  assert.equal(ends[4]!.isError, false);
  assert.equal(await readFile(path.join(cwd, "notes.txt"), "utf8"), "edited notes\n");
  // Dialogs: the two bash calls, the .env read, the edit. They show exactly what runs and why.
  assert.equal(dialogs.length, 4);
  assert.equal(dialogs[0]!.method, "select");
  assert.match(String(dialogs[0]!.title), /^Allow this shell command\?\n/);
  assert.match(shown(dialogs[0]), /echo no > ask-no\.txt/);
  assert.match(shown(dialogs[0]), /Why: WRITE/);
  assert.equal(dialogs[2]!.method, "confirm", "a secret read is a boundary: yes/no");
  assert.equal(dialogs[0]!.timeout, undefined, "no dialog timeout that could resolve");
  assert.match(String(dialogs[2]!.message), /SECRET/);
  assert.match(String(dialogs[3]!.title), /Allow editing notes\.txt/);
  assert.match(String(dialogs[3]!.message), /1 edit\(s\)/);
  assert.deepEqual(
    decisionLogs(pi).map((l) => l.answer),
    ["no", "yes", "not-asked", "no", "yes"],
  );
});

test("auto: plain work runs without a dialog, git push is confirmed, tampering is blocked, and a policy change between two calls of one turn applies to the second", async (t) => {
  const { pi, turns, cwd, policyFile, dialogs } = await startGated(
    t,
    [
      callTool("bash", { command: "echo hi > f" }),
      callTool("bash", { command: "git push origin main" }),
      {
        chunks: [
          { toolCall: { name: "bash", arguments: { command: "git -C . push" } } },
          { toolCall: { name: "bash", arguments: { command: "echo two > two.txt" } } },
        ],
      },
      say("done"),
    ],
    {
      policy: "auto",
      answers: [
        no,
        async () => {
          // While the first call of this turn waits for its answer, the operator switches the policy.
          await writeFile(policyFile, "read-only\n");
          return { confirmed: false };
        },
      ],
    },
  );
  const ends = await runPrompt(pi, "go");
  assert.equal(ends.length, 4);
  assert.equal(ends[0]!.isError, false);
  assert.equal(await readFile(path.join(cwd, "f"), "utf8"), "hi\n");
  assert.equal(ends[1]!.isError, true);
  assert.match(String(dialogs[0]!.message), /git push origin main/);
  assert.match(String(dialogs[0]!.message), /EXIT/);
  assert.equal(ends[2]!.isError, true);
  assert.equal(ends[3]!.isError, true, "second call of the turn sees read-only");
  assert.match(resultText(ends[3]), /policy read-only from file/);
  assert.equal(await exists(path.join(cwd, "two.txt")), false);
  assert.equal(dialogs.length, 2, "the read-only block needs no dialog");

  // Back to auto: the gate's own files and Pi's settings cannot be changed, even with auto (no dialog either).
  await writeFile(policyFile, "auto");
  turns.push(
    callTool("bash", { command: `echo auto > '${policyFile}'` }),
    callTool("write", { path: path.join(pi.agentDir, "settings.json"), content: "{}" }),
    callTool("bash", { command: "cat <<EOF | sh\ngit push\nEOF" }),
    say("ok"),
  );
  const later = await runPrompt(pi, "tamper");
  assert.equal(later.length, 3);
  assert.match(resultText(later[0]), /TAMPER/);
  assert.equal(await readFile(policyFile, "utf8"), "auto");
  assert.match(resultText(later[1]), /TAMPER/);
  assert.equal(await exists(path.join(pi.agentDir, "settings.json")), false);
  assert.equal(
    later[2]!.isError,
    true,
    "a heredoc piped to sh is opaque: confirmed, and the default answer is no",
  );
  assert.equal(dialogs.length, 3);
  assert.match(String(dialogs[2]!.message), /UNKNOWN/);
});

test("policy fallback: missing file → AGENT_POLICY, a valid file wins, oversized file and a FIFO fall back without hanging", async (t) => {
  const { pi, turns, cwd, policyFile, dialogs } = await startGated(t, [], {
    env: { AGENT_POLICY: "read-only" },
  });
  const attempt = async (file: string) => {
    turns.push(callTool("bash", { command: `echo x > ${file}` }), say("ok"));
    const [end] = await runPrompt(pi, file);
    return end!;
  };
  const missing = await attempt("missing.txt");
  assert.match(resultText(missing), /policy read-only from env/);
  assert.equal(await exists(path.join(cwd, "missing.txt")), false);

  await writeFile(policyFile, "  auto \n");
  assert.equal((await attempt("from-file.txt")).isError, false);
  assert.equal(await exists(path.join(cwd, "from-file.txt")), true);

  await writeFile(policyFile, `auto${" ".repeat(300)}`);
  assert.match(resultText(await attempt("oversized.txt")), /policy read-only from env/);
  assert.equal(await exists(path.join(cwd, "oversized.txt")), false);

  await rmFile(policyFile);
  execFileSync("mkfifo", [policyFile]);
  const started = Date.now();
  assert.match(resultText(await attempt("fifo.txt")), /policy read-only from env/);
  assert.ok(Date.now() - started < 20_000, "a FIFO at the policy path must not hang the gate");
  assert.equal(await exists(path.join(cwd, "fifo.txt")), false);

  assert.equal(dialogs.length, 0);
  assert.deepEqual(
    decisionLogs(pi).map((l) => [l.policy, l.policySource, l.policyFileProblem ?? null]),
    [
      ["read-only", "env", "missing"],
      ["auto", "file", null],
      ["read-only", "env", "oversized"],
      ["read-only", "env", "invalid: not a regular file"],
    ],
  );
});

test("an invalid policy value (file and env) means ask: the call is confirmed; an abort mid-dialog blocks", async (t) => {
  const { pi, turns, cwd, dialogs } = await startGated(
    t,
    [callTool("bash", { command: "echo asked > asked.txt" }), say("ok")],
    {
      policy: "yolo\n",
      env: { AGENT_POLICY: "always" },
      answers: [yes, () => new Promise(() => {})], // the second dialog is never answered: the run is aborted
    },
  );
  const [end] = await runPrompt(pi, "go");
  assert.equal(end!.isError, false);
  assert.equal(dialogs.length, 1);
  assert.equal(await readFile(path.join(cwd, "asked.txt"), "utf8"), "asked\n");
  const [log] = decisionLogs(pi);
  assert.equal(log!.policy, "ask");
  assert.equal(log!.policySource, "default");
  assert.match(String(log!.policyFileProblem), /^invalid: unknown value/);

  // Aborting the run while the dialog is open blocks the call; nothing runs.
  turns.push(callTool("bash", { command: "echo aborted > aborted.txt" }), say("never reached"));
  const from = pi.lines.length;
  await pi.request({ type: "prompt", message: "again" });
  await pi.waitFor((l) => l.type === "extension_ui_request" && l.method === "select", 30_000, from);
  assert.equal((await pi.request({ type: "abort" })).success, true);
  await pi.waitFor((l) => l.type === "agent_settled", 30_000, from);
  const abortedEnd = pi.lines.slice(from).find((l) => l.type === "tool_execution_end");
  assert.equal(abortedEnd?.isError, true);
  assert.equal(await exists(path.join(cwd, "aborted.txt")), false);
  assert.equal(decisionLogs(pi).at(-1)?.answer, "aborted");
});

test("no UI (Pi in json mode): gated calls are blocked, allowed ones still run", async (t) => {
  const { pi, cwd } = await startGated(
    t,
    [
      callTool("bash", { command: "echo blocked > no-ui.txt" }),
      callTool("read", { path: "visible.txt" }),
      say("done"),
    ],
    { policy: "ask", mode: "json", messages: ["try it"] },
  );
  await writeFile(path.join(cwd, "visible.txt"), "visible\n");
  pi.child.stdin.end(); // print/json mode reads piped stdin before starting
  const killer = setTimeout(() => pi.child.kill("SIGKILL"), 60_000); // a hang fails below, not forever
  const exit = await pi.exited;
  clearTimeout(killer);
  assert.equal(exit.code, 0, pi.stderr.slice(-2000));
  const ends = pi.lines.filter((l) => l.type === "tool_execution_end");
  assert.equal(ends.length, 2);
  assert.equal(ends[0]!.isError, true);
  assert.match(resultText(ends[0]), /no UI is available/);
  assert.equal(await exists(path.join(cwd, "no-ui.txt")), false);
  assert.equal(ends[1]!.isError, false);
  assert.equal(
    pi.lines.some((l) => l.type === "extension_ui_request"),
    false,
  );
  assert.deepEqual(
    decisionLogs(pi).map((l) => [l.tool, l.decision, l.answer]),
    [
      ["bash", "confirm", "no-ui"],
      ["read", "allow", "not-asked"],
    ],
  );
});
