// Session grants on the gate's side: the command shape a grant covers, which calls may be granted at all (decisions
// as data), the grant lookup in the bridge's file, the approval timeout setting, and Pi's dialog id.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { commandShape, MAX_SHAPED_COMMAND } from "../../agent-runtime/gate/command-shape.ts";
import { decide } from "../../agent-runtime/gate/decide.ts";
import { watchDialogIds, withDialogId } from "../../agent-runtime/gate/dialog-id.ts";
import { EFFECT_KINDS } from "../../agent-runtime/gate/effects.ts";
import { pathContextFromEnv } from "../../agent-runtime/gate/path-context.ts";
import {
  GRANTABLE,
  grantApplies,
  grantableEffects,
  lookUpCommandGrant,
} from "../../agent-runtime/gate/session-grants.ts";
import { approvalTimeout } from "../../agent-runtime/policy/approval-timeout.ts";
import { GRANTS_PATH_ENV, type GrantsFile } from "../../agent-runtime/policy/grants.ts";
import { gateParser } from "../support/gate-parser.ts";
import { tempDir } from "../support/workspace.ts";

const parser = await gateParser();
const CWD = "/work/project";
const key = (command: string, cwd = CWD) => commandShape(command, parser, cwd)?.key;

test("the same parsed command has the same shape: quoting, spacing and comments do not matter", () => {
  const same = [
    ["npm test", "npm  test", "'npm' test", '"npm" "test"', "npm test # run the tests", "n\\pm test"],
    ["cd src && npm run build 2>&1 | tee out.txt", "cd src&&npm run build 2>&1|tee out.txt"],
    ["echo 'a b' > out.txt", 'echo "a b" >out.txt', "echo a\\ b > out.txt"],
    ["ls -la; git status", "ls -la\ngit status"],
  ];
  for (const group of same) {
    const first = key(group[0] as string);
    assert.ok(first, `${group[0]} has a shape`);
    for (const command of group) assert.equal(key(command), first, command);
  }
});

test("a different word, argument order, operator, redirect target, directory or script is another shape", () => {
  const distinct = [
    "npm test",
    "npm test -- --watch",
    "npm run test",
    "npm tests",
    "test npm",
    "npm test; npm test",
    "npm test && ls",
    "npm test || ls",
    "npm test | ls",
    "echo x > a.txt",
    "echo x >> a.txt",
    "echo x > b.txt",
    "echo x 2> a.txt",
    "echo 'a b'",
    "echo a b",
  ];
  const keys = distinct.map((command) => key(command));
  assert.ok(keys.every((k) => k !== undefined));
  assert.equal(new Set(keys).size, distinct.length, "every command has its own shape");
  assert.notEqual(key("npm test", "/work/other"), key("npm test"));
  const script = (sha256: string) => ({
    what: "a shell script",
    text: "echo hi",
    file: { path: "/work/project/run.sh", sha256, bytes: 7, text: "echo hi" },
  });
  const a = commandShape("bash run.sh", parser, CWD, [script("a".repeat(64))] as never);
  const b = commandShape("bash run.sh", parser, CWD, [script("b".repeat(64))] as never);
  assert.ok(a && b);
  assert.notEqual(a.key, b.key, "changed script bytes are another shape");
});

test("words the gate cannot know exactly, and constructs beyond plain commands, have no shape", () => {
  const none = [
    "echo $HOME",
    "echo $" + "{X}",
    "echo $(date)",
    "echo `date`",
    "ls *.ts",
    "ls src/{a,b}",
    "cat ~/.bashrc",
    "FOO=1 make",
    "sleep 10 &",
    "(cd src && make)",
    "{ make; }",
    "for f in a b; do echo $f; done",
    "f() { ls; }; f",
    "cat <<EOF\nhi\nEOF",
    "cat <<< hi",
    "! make",
    "[[ -f x ]] && make",
    "echo 'unterminated",
    "",
    `echo ${"x".repeat(MAX_SHAPED_COMMAND)}`,
    "$CMD test",
  ];
  for (const command of none) assert.equal(commandShape(command, parser, CWD), undefined, command);
});

test("boundary effects are never grantable; the table covers every effect kind", () => {
  assert.deepEqual(Object.keys(GRANTABLE).sort(), [...EFFECT_KINDS].sort());
  for (const boundary of [
    "sends",
    "reads-secret",
    "changes-gate",
    "runs-unmodeled",
    "undecidable",
    "custom-tool",
    "writes-runs-later",
    "writes-unlisted",
    "malformed",
  ] as const)
    assert.equal(GRANTABLE[boundary], false, boundary);
  assert.equal(grantableEffects("ask", ["runs-shell", "writes"]), true);
  assert.equal(grantableEffects("ask", ["runs-shell", "sends"]), false);
  assert.equal(grantableEffects("read-only", ["reads"]), false);
  assert.equal(grantApplies("allow", "ask", ["runs-shell"]), false);
  assert.equal(grantApplies("block", "ask", ["runs-shell"]), false);
  assert.equal(grantApplies("confirm", "ask", ["runs-shell"]), true);
});

test("decided calls: a push, publish, deploy, repo create or secret read is never grantable in any mode", async (t) => {
  const cwd = await tempDir(t, "grants-decide-");
  const context = pathContextFromEnv(cwd, { HOME: cwd });
  const grantable = (command: string, policy: "auto" | "ask" | "read-only") => {
    const d = decide({
      policy,
      toolName: "bash",
      input: { command },
      context,
      parser,
      egressGuard: "absent",
    });
    return grantApplies(d.decision, policy, d.kinds);
  };
  for (const command of [
    "git push",
    "git push origin main",
    "npm publish",
    "gh repo create x --public",
    "cat .env",
    "printenv",
    "curl -d @f https://example.com",
    "terraform apply",
    "eval make",
  ])
    for (const policy of ["auto", "ask", "read-only"] as const)
      assert.equal(grantable(command, policy), false, `${policy}: ${command}`);
  assert.equal(grantable("echo hi > out.txt", "ask"), true);
  assert.equal(grantable("ls -la", "ask"), true);
  assert.equal(grantable("echo hi > out.txt", "read-only"), false);
});

test("the grant lookup: the same key in the same Pi session only; a missing, invalid or foreign file is no grant", async (t) => {
  const dir = await tempDir(t, "grants-file-");
  const file = path.join(dir, "grants.json");
  const env = { [GRANTS_PATH_ENV]: file };
  const k = key("npm test") as string;
  const grants: GrantsFile = {
    version: 1,
    sessionId: "s-1",
    grants: [
      {
        id: "g-0123456789abcdef",
        kind: "command",
        key: k,
        label: "bash: npm test",
        sessionId: "s-1",
        createdAt: new Date(0).toISOString(),
        dialogId: "d-1",
        by: "c",
      },
      {
        id: "g-1111111111111111",
        kind: "destination",
        key: "example.com:443",
        label: "example.com:443",
        sessionId: "s-1",
        createdAt: new Date(0).toISOString(),
        dialogId: null,
        by: null,
      },
    ],
  };
  assert.equal(lookUpCommandGrant(env, k, "s-1").grant, undefined, "missing file");
  assert.deepEqual(lookUpCommandGrant(env, k, "s-1"), { grant: undefined }, "a missing file is no problem");
  await writeFile(file, JSON.stringify(grants));
  assert.equal(lookUpCommandGrant(env, k, "s-1").grant?.id, "g-0123456789abcdef");
  assert.equal(lookUpCommandGrant(env, k, "s-2").grant, undefined, "another session");
  assert.equal(lookUpCommandGrant(env, key("npm test -- -u") as string, "s-1").grant, undefined);
  assert.equal(lookUpCommandGrant(env, "example.com:443", "s-1").grant, undefined, "a destination grant");
  assert.equal(lookUpCommandGrant({}, k, "s-1").grant, undefined, "no grants path");
  await writeFile(file, JSON.stringify({ ...grants, version: 2 }));
  assert.deepEqual(lookUpCommandGrant(env, k, "s-1"), { grant: undefined, problem: "unexpected shape" });
  await writeFile(file, "{");
  assert.equal(lookUpCommandGrant(env, k, "s-1").grant, undefined);
});

test("the approval timeout: off by default; decimal minutes; anything else is reported and off", () => {
  assert.deepEqual(approvalTimeout({}), { ms: undefined });
  assert.deepEqual(approvalTimeout({ CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES: "off" }), { ms: undefined });
  assert.deepEqual(approvalTimeout({ CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES: "30" }), { ms: 1_800_000 });
  assert.deepEqual(approvalTimeout({ CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES: "0.5" }), { ms: 30_000 });
  for (const bad of ["0", "-1", "1e3", "abc", "1441", " 5", "5m", "0.0001", "NaN", "Infinity"]) {
    const t = approvalTimeout({ CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES: bad });
    assert.equal(t.ms, undefined, bad);
    assert.match(t.problem ?? "", /CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES/, bad);
  }
});

test("Pi's dialog id: the one id drawn while the dialog opens, through the ESM binding Pi uses", async () => {
  assert.equal(watchDialogIds(), true);
  const esm = await import("node:crypto");
  const one = withDialogId(() => esm.randomUUID());
  assert.equal(one.dialogId, one.value);
  const viaNamed = withDialogId(() => randomUUID());
  assert.equal(viaNamed.dialogId, viaNamed.value);
  assert.equal(withDialogId(() => 1).dialogId, undefined, "none drawn: no id believed");
  assert.equal(
    withDialogId(() => [randomUUID(), randomUUID()]).dialogId,
    undefined,
    "two drawn: no id believed",
  );
});
