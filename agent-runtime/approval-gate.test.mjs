// The approval gate's contract, through the extension's own entry point `approvalGate(pi)` with a stand-in
// `pi` and `ctx`: the policy file is reread on every call; allow / confirm / block follow the policy; only an
// explicit yes allows a confirmed call; no UI, a failing dialog, an abort or any error inside the gate block it.
// Classifier internals are tested elsewhere (tests/unit/gate-*.test.ts); behaviour inside real Pi in
// tests/integration/approval-gate.test.ts.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { tempDir } from "../tests/support/workspace.ts";
import approvalGate from "./approval-gate.ts";

/**
 * Loads the extension into a stand-in `pi` that accepts whatever else it registers (tools, other events) and
 * returns its tool_call handler.
 */
function loadToolCallHandler() {
  const handlers = [];
  const pi = new Proxy(
    {
      on: (name, handler) => {
        if (name === "tool_call") handlers.push(handler);
      },
    },
    { get: (target, key) => (key in target ? target[key] : () => undefined) },
  );
  approvalGate(pi);
  assert.equal(handlers.length, 1, "the extension registers one tool_call handler");
  return handlers[0];
}

let nextCallId = 0;
const call = (toolName, input) => ({
  type: "tool_call",
  toolCallId: `call-${++nextCallId}`,
  toolName,
  input,
});

/** A context whose dialog answers with `answer` (a value, or a function that may throw) and counts the asks. */
function context(cwd, answer, extra = {}) {
  const asked = [];
  const confirm = async (title, message) => {
    asked.push({ title, message });
    return typeof answer === "function" ? answer() : answer;
  };
  return { ctx: { hasUI: true, cwd, signal: undefined, ui: { confirm }, ...extra }, asked };
}

const isBlocked = (result) => result?.block === true;

/** Per-test environment: a private policy file and HOME; the gate reads process.env on every call. */
async function gateEnv(t) {
  const dir = await tempDir(t, "gate-contract-");
  const saved = { ...process.env };
  t.after(() => {
    process.env = saved;
  });
  const policyFile = path.join(dir, "policy");
  for (const name of ["AGENT_POLICY", "PI_CODING_AGENT_DIR", "CHAT_UI_AGENT_TOOL_HOME"])
    delete process.env[name];
  Object.assign(process.env, { AGENT_POLICY_PATH: policyFile, LOG_LEVEL: "silent", HOME: dir });
  const setPolicy = (policy) => writeFile(policyFile, `${policy}\n`);
  return { dir, policyFile, setPolicy, handler: loadToolCallHandler() };
}

/** What the gate did with one call under the current policy: allow, confirm (then allowed on yes) or block. */
async function outcome(handler, cwd, event) {
  const { ctx, asked } = context(cwd, true);
  const result = await handler(event, ctx);
  if (asked.length > 0) return isBlocked(result) ? "confirm-then-blocked" : "confirm";
  return isBlocked(result) ? "block" : "allow";
}

test("allow / confirm / block follow the policy for each kind of call", async (t) => {
  const { dir, policyFile, setPolicy, handler } = await gateEnv(t);
  const cases = [
    [
      "read an ordinary file",
      call("read", { path: path.join(dir, "notes.txt") }),
      ["allow", "allow", "allow"],
    ],
    ["ls the workspace", call("ls", { path: dir }), ["allow", "allow", "allow"]],
    ["read a credential file", call("read", { path: "~/.netrc" }), ["confirm", "confirm", "confirm"]],
    [
      "write a file",
      call("write", { path: path.join(dir, "a.txt"), content: "x" }),
      ["allow", "confirm", "block"],
    ],
    ["plain local shell work", call("bash", { command: "ls -la" }), ["allow", "confirm", "block"]],
    [
      "a possible exit (git push)",
      call("bash", { command: "git push origin main" }),
      ["confirm", "confirm", "block"],
    ],
    [
      "a custom or MCP tool",
      call("mcp_github_create_issue", { title: "x" }),
      ["confirm", "confirm", "block"],
    ],
    [
      "a write to the policy file",
      call("write", { path: policyFile, content: "auto" }),
      ["block", "block", "block"],
    ],
  ];
  for (const [index, policy] of ["auto", "ask", "read-only"].entries()) {
    await setPolicy(policy);
    for (const [label, event, expected] of cases) {
      assert.equal(await outcome(handler, dir, event), expected[index], `${label} under ${policy}`);
    }
  }
});

test("the policy file is reread on every call: a switch applies to the very next call", async (t) => {
  const { dir, setPolicy, handler } = await gateEnv(t);
  const write = () => call("write", { path: path.join(dir, "b.txt"), content: "x" });
  await setPolicy("auto");
  assert.equal(await outcome(handler, dir, write()), "allow");
  await setPolicy("read-only");
  assert.equal(await outcome(handler, dir, write()), "block");
  await setPolicy("ask");
  assert.equal(await outcome(handler, dir, write()), "confirm");
  await setPolicy("auto");
  assert.equal(await outcome(handler, dir, write()), "allow");
});

test("a missing or invalid policy file never means auto: it falls back to AGENT_POLICY, then ask", async (t) => {
  const { dir, policyFile, handler } = await gateEnv(t);
  const write = () => call("write", { path: path.join(dir, "c.txt"), content: "x" });
  assert.equal(await outcome(handler, dir, write()), "confirm", "no file, no env: ask");
  await writeFile(policyFile, "yolo\n");
  assert.equal(await outcome(handler, dir, write()), "confirm", "an unknown value: ask");
  process.env.AGENT_POLICY = "read-only";
  assert.equal(await outcome(handler, dir, write()), "block", "an invalid file falls back to AGENT_POLICY");
});

test("only an explicit true allows a confirmed call; every other answer blocks with a reason", async (t) => {
  const { dir, setPolicy, handler } = await gateEnv(t);
  await setPolicy("ask");
  const gated = () => call("bash", { command: "echo hi > f" });

  const yes = context(dir, true);
  assert.equal(isBlocked(await handler(gated(), yes.ctx)), false);
  assert.equal(yes.asked.length, 1);
  assert.match(yes.asked[0].message, /echo hi > f/, "the dialog shows the command");

  for (const [label, answer, extra] of [
    ["no", false],
    ["undefined (dismissed)", undefined],
    ["a truthy string", "yes"],
    ["the number 1", 1],
    ["an object", { confirmed: true }],
    ["a throwing dialog", () => Promise.reject(new Error("ui gone"))],
    ["a run aborted before the answer", true, { signal: AbortSignal.abort() }],
    ["no UI", true, { hasUI: false }],
  ]) {
    const { ctx, asked } = context(dir, answer, extra);
    const result = await handler(gated(), ctx);
    assert.equal(isBlocked(result), true, label);
    assert.ok(typeof result.reason === "string" && result.reason.length > 0, `${label}: a reason`);
    if (extra?.hasUI === false) assert.equal(asked.length, 0, "no UI: nobody is asked");
  }
});

test("errors inside the gate block: a broken context, malformed input, an unknown event shape", async (t) => {
  const { dir, setPolicy, handler } = await gateEnv(t);
  await setPolicy("auto");
  const brokenContext = {
    hasUI: true,
    get cwd() {
      throw new Error("boom");
    },
    ui: { confirm: async () => true },
  };
  const broken = await handler(call("bash", { command: "ls" }), brokenContext);
  assert.equal(isBlocked(broken), true, "a context that throws");
  assert.match(broken.reason, /boom/);

  for (const [label, event] of [
    ["a write without a path", call("write", { content: "x" })],
    ["a write whose input is null", call("write", null)],
    ["a bash call without a command", call("bash", {})],
    ["a bash command that is not a string", call("bash", { command: ["rm", "-rf", "/"] })],
  ]) {
    const { ctx } = context(dir, true);
    const result = await handler(event, ctx).catch((error) => ({ threw: error }));
    assert.equal(result?.threw, undefined, `${label}: the handler must not throw (Pi would run the call)`);
    assert.equal(isBlocked(result), true, label);
  }
});
