// chat-ui-agent-policy get / set / explain, in-process from source (the shipped bundle is exercised in
// tests/unit/policy-cli-bundle.test.ts, after the build).
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import { tempDir } from "../tests/support/workspace.ts";
import { EXIT, runPolicyCli } from "./policy-cli.ts";

async function cli(argv, env, stdinText = "") {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const stdin = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (c) => (out += c));
  stderr.on("data", (c) => (err += c));
  stdin.end(stdinText);
  const code = await runPolicyCli(argv, { stdout, stderr, stdin, env, cwd: "/work/project" });
  return {
    code,
    out,
    err,
    json: out.trim()
      ? out
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l))
      : [],
  };
}

test("get reports the effective policy and its source", async (t) => {
  const dir = await tempDir(t);
  const env = { AGENT_POLICY_PATH: path.join(dir, "policy"), AGENT_POLICY: "read-only" };
  const missing = await cli(["get"], env);
  assert.equal(missing.code, EXIT.ok);
  assert.deepEqual(missing.json, [
    { policy: "read-only", source: "env", path: env.AGENT_POLICY_PATH, fileProblem: "missing" },
  ]);
  await writeFile(env.AGENT_POLICY_PATH, "auto\n");
  assert.deepEqual((await cli(["get"], env)).json[0], {
    policy: "auto",
    source: "file",
    path: env.AGENT_POLICY_PATH,
  });
  assert.equal((await cli(["get", "extra"], env)).code, EXIT.usage);
});

test("set writes atomically, honours --expected, validates, and uses distinct exit codes", async (t) => {
  const dir = await tempDir(t);
  const env = { AGENT_POLICY_PATH: path.join(dir, "policy") };
  const first = await cli(["set", "auto"], env);
  assert.equal(first.code, EXIT.ok);
  assert.equal(first.json[0].current.policy, "auto");
  assert.equal(await readFile(env.AGENT_POLICY_PATH, "utf8"), "auto\n");

  const conflict = await cli(["set", "read-only", "--expected", "ask"], env);
  assert.equal(conflict.code, EXIT.conflict);
  assert.equal(conflict.json[0].error, "policy_conflict");
  assert.match(conflict.err, /conflict: expected ask but the effective policy is auto/);
  assert.equal(await readFile(env.AGENT_POLICY_PATH, "utf8"), "auto\n");

  assert.equal((await cli(["set", "read-only", "--expected", "auto"], env)).code, EXIT.ok);
  assert.equal(await readFile(env.AGENT_POLICY_PATH, "utf8"), "read-only\n");

  for (const argv of [
    ["set"],
    ["set", "yolo"],
    ["set", "auto", "ask"],
    ["set", "auto", "--expected", "nope"],
    ["set", "auto", "--force"],
    ["frob"],
    [],
  ]) {
    const bad = await cli(argv, env);
    assert.equal(bad.code, EXIT.usage, argv.join(" "));
    assert.match(bad.err, /usage:/);
  }
  assert.equal(await readFile(env.AGENT_POLICY_PATH, "utf8"), "read-only\n");

  const link = path.join(dir, "link");
  await symlink(env.AGENT_POLICY_PATH, link);
  const refused = await cli(["set", "auto"], { AGENT_POLICY_PATH: link });
  assert.equal(refused.code, EXIT.failure);
  assert.match(refused.err, /symlink_target/);
});

test("explain: NDJSON in, one decision line out per call, same decide() as the gate", async () => {
  const input = [
    { policy: "auto", toolName: "bash", input: { command: "git push" } },
    { policy: "auto", toolName: "bash", input: { command: "echo hi > f" } },
    { policy: "read-only", toolName: "write", input: { path: "x", content: "y" } },
    { policy: "ask", toolName: "read", input: { path: "~/.netrc" } },
    { toolName: "bash", input: { command: "ls" } },
  ]
    .map((l) => JSON.stringify(l))
    .join("\n");
  const result = await cli(
    ["explain"],
    { AGENT_POLICY: "read-only", AGENT_POLICY_PATH: "/nonexistent/policy", HOME: "/home/agent" },
    `${input}\n\nnot json\n{"toolName":"bash"}\n`,
  );
  assert.equal(result.code, EXIT.usage, "bad lines make the exit code non-zero");
  assert.deepEqual(
    result.json.map((l) => l.decision ?? l.error),
    ["confirm", "allow", "block", "confirm", "block", "invalid_json", "invalid_call"],
  );
  assert.deepEqual(result.json[0].classes, ["EXIT"]);
  assert.deepEqual(result.json[2].classes, ["WRITE"]);
  assert.deepEqual(result.json[3].classes, ["SECRET"]);

  const flags = await cli(
    ["explain", "--policy", "auto", "--tool", "bash", "--input", '{"command":"npm publish"}'],
    {},
  );
  assert.equal(flags.code, EXIT.ok);
  assert.equal(flags.json[0].decision, "confirm");
  assert.equal((await cli(["explain", "--tool", "bash", "--input", "{nope"], {})).code, EXIT.usage);
  assert.equal((await cli(["explain", "--input", "{}"], {})).code, EXIT.usage);
});

test("explain prints the effects and the policy table's rows, and the egress guard it assumed", async () => {
  const unmodeled = [
    "--policy",
    "auto",
    "--tool",
    "bash",
    "--input",
    '{"command":"some-unlisted-tool --go"}',
  ];
  const strict = await cli(["explain", ...unmodeled], { HOME: "/home/agent" });
  assert.equal(strict.code, EXIT.ok);
  const [decision] = strict.json;
  assert.equal(decision.decision, "confirm");
  assert.deepEqual(decision.kinds, ["runs-shell", "runs-unmodeled"]);
  assert.equal(decision.effects[0].kind, "runs-unmodeled");
  assert.equal(decision.effects[0].cause, "program");
  assert.deepEqual(decision.table, [
    "auto × runs-shell → allow",
    "auto × runs-unmodeled → confirm (guarded: egress guard absent)",
  ]);
  assert.deepEqual(decision.deciding, { effect: "runs-unmodeled", cell: "guarded", decision: "confirm" });
  assert.equal(decision.unmodeled, "confirmed");
  assert.equal(decision.assumed.egressGuard, "absent");
  assert.match(decision.assumed.source, /outside the runtime/);
  const guarded = await cli(["explain", ...unmodeled, "--egress-guard", "enforcing"], {
    HOME: "/home/agent",
  });
  assert.equal(guarded.json[0].decision, "allow");
  assert.equal(guarded.json[0].unmodeled, "guard");
  assert.equal(guarded.json[0].assumed.source, "given");
  assert.equal((await cli(["explain", ...unmodeled, "--egress-guard", "maybe"], {})).code, EXIT.usage);
});

test("get and set use the file the bridge uses: AGENT_POLICY_PATH when its directory is writable, else <state dir>/policy", async (t) => {
  const { spawnSync } = await import("node:child_process");
  const { chmod, chown, mkdir, stat } = await import("node:fs/promises");
  const root = await tempDir(t, "policy-cli-bridge-path-");
  await chmod(root, 0o755);
  // A configured directory this CLI cannot write: root's, seen by `nobody` (CI runs as root), else "/".
  const asRoot = process.getuid?.() === 0;
  const configured = asRoot ? path.join(root, "run", "policy") : "/not-writable-by-you/policy";
  const stateDir = path.join(root, "state");
  await mkdir(stateDir, { mode: 0o700 });
  if (asRoot) {
    await mkdir(path.dirname(configured), { mode: 0o755 });
    await chown(stateDir, 65534, 65534);
  }
  if (asRoot) assertNobodyCanRun(path.join(import.meta.dirname, "policy-cli.ts"));
  const run = (...args) =>
    spawnSync(process.execPath, [path.join(import.meta.dirname, "policy-cli.ts"), ...args], {
      env: { PATH: process.env.PATH, AGENT_POLICY_PATH: configured },
      encoding: "utf8",
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    });
  const set = run("set", "read-only", "--state-dir", stateDir);
  assert.equal(set.status, EXIT.ok, set.stderr);
  assert.equal((await readFile(path.join(stateDir, "policy"), "utf8")).trim(), "read-only");
  assert.equal(await stat(configured).catch(() => "missing"), "missing");
  const get = run("get", "--state-dir", stateDir);
  assert.equal(get.status, EXIT.ok, get.stderr);
  assert.deepEqual((({ policy, source, path: file }) => ({ policy, source, file }))(JSON.parse(get.stdout)), {
    policy: "read-only",
    source: "file",
    file: path.join(stateDir, "policy"),
  });
  // Where the configured directory is writable (root in the image), that file it is, as before.
  const writable = path.join(root, "writable");
  await mkdir(writable, { mode: 0o777 });
  await chmod(writable, 0o777);
  const direct = spawnSync(
    process.execPath,
    [path.join(import.meta.dirname, "policy-cli.ts"), "set", "ask", "--state-dir", stateDir],
    {
      env: { PATH: process.env.PATH, AGENT_POLICY_PATH: path.join(writable, "policy") },
      encoding: "utf8",
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    },
  );
  assert.equal(direct.status, EXIT.ok, direct.stderr);
  assert.equal((await readFile(path.join(writable, "policy"), "utf8")).trim(), "ask");
});

/**
 * This test runs the CLI as `nobody` (as root, it needs a user that cannot write root's directories). Under a
 * parent folder `nobody` cannot enter (a checkout in /root, mode 0700), that cannot work: say so, and how to fix
 * it, instead of failing on an EACCES from deep inside Node.
 */
function assertNobodyCanRun(file) {
  const NOBODY = 65534;
  const may = (st, bit) =>
    st.uid === NOBODY
      ? (st.mode & (bit << 6)) !== 0
      : st.gid === NOBODY
        ? (st.mode & (bit << 3)) !== 0
        : (st.mode & bit) !== 0;
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    const st = statSync(dir);
    if (!may(st, 0o1))
      assert.fail(
        `this test runs the policy CLI as nobody (uid ${NOBODY}), and nobody cannot enter ${dir} (mode ${(st.mode & 0o777).toString(8)}, owner uid ${st.uid}): put the checkout under folders others may enter (chmod o+x on each), or run the tests as a non-root user`,
      );
    if (path.dirname(dir) === dir) break;
  }
  if (!may(statSync(file), 0o4))
    assert.fail(`this test runs the policy CLI as nobody, and nobody cannot read ${file}: chmod o+r it`);
}
