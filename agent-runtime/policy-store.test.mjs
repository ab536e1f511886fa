// The policy file reader (bounded, non-blocking, regular files only) and the atomic compare-and-swap writer.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { lstat, mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import { test } from "node:test";
import { tempDir } from "../tests/support/workspace.ts";
import {
  DEFAULT_POLICY_PATH,
  MAX_POLICY_BYTES,
  POLICY_MODES,
  policyPath,
  readEffectivePolicy,
  setPolicy,
} from "./policy/policy-store.ts";

test("policyPath: AGENT_POLICY_PATH or the image default", () => {
  assert.equal(policyPath({}), DEFAULT_POLICY_PATH);
  assert.equal(policyPath({ AGENT_POLICY_PATH: "" }), DEFAULT_POLICY_PATH);
  assert.equal(policyPath({ AGENT_POLICY_PATH: "/tmp/x/policy" }), "/tmp/x/policy");
  assert.deepEqual([...POLICY_MODES], ["auto", "ask", "read-only"]);
});

test("readEffectivePolicy: file, then AGENT_POLICY, then ask; every problem is named", async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, "policy");
  const env = (extra = {}) => ({ AGENT_POLICY_PATH: file, ...extra });
  const read = (extra) => readEffectivePolicy(env(extra));

  assert.deepEqual(read(), { policy: "ask", source: "default", path: file, fileProblem: "missing" });
  assert.deepEqual(read({ AGENT_POLICY: "read-only" }), {
    policy: "read-only",
    source: "env",
    path: file,
    fileProblem: "missing",
  });
  assert.equal(read({ AGENT_POLICY: " auto\n" }).policy, "auto");
  assert.deepEqual(read({ AGENT_POLICY: "AUTO" }), {
    policy: "ask",
    source: "default",
    path: file,
    fileProblem: "missing",
  });

  for (const [content, policy] of [
    ["auto", "auto"],
    ["ask\n", "ask"],
    ["  read-only \r\n\t", "read-only"],
  ]) {
    await writeFile(file, content);
    assert.deepEqual(
      read({ AGENT_POLICY: "read-only" }),
      { policy, source: "file", path: file },
      JSON.stringify(content),
    );
  }

  const invalid = [
    ["", /^invalid: empty$/],
    ["   \n", /^invalid: empty$/],
    ["yolo", /^invalid: unknown value "yolo"$/],
    ["auto\nask", /^invalid: unknown value/],
    ["Auto", /^invalid: unknown value/],
    ["auto # comment", /^invalid: unknown value/],
    [Buffer.from([0xff, 0xfe, 0x00, 0x61]), /^invalid: not UTF-8 text$/],
    [Buffer.from("auto\u0000"), /^invalid: unknown value/],
  ];
  for (const [content, problem] of invalid) {
    await writeFile(file, content);
    const effective = read({ AGENT_POLICY: "read-only" });
    assert.equal(effective.policy, "read-only", String(content));
    assert.equal(effective.source, "env");
    assert.match(effective.fileProblem ?? "", problem);
  }

  await writeFile(file, `auto${" ".repeat(MAX_POLICY_BYTES)}`);
  assert.deepEqual(read(), { policy: "ask", source: "default", path: file, fileProblem: "oversized" });
  await writeFile(file, `${" ".repeat(MAX_POLICY_BYTES - 4)}auto`);
  assert.equal(read().policy, "auto", "exactly the limit is fine");
});

test("readEffectivePolicy never blocks: FIFO, directory, device and socket paths are invalid", async (t) => {
  const dir = await tempDir(t);
  const fifo = path.join(dir, "fifo");
  execFileSync("mkfifo", [fifo]);
  const subdir = path.join(dir, "sub");
  await mkdir(subdir);
  const socketPath = path.join(dir, "sock");
  const server = createServer();
  await new Promise((resolve) => server.listen(socketPath, resolve));
  t.after(() => server.close());
  for (const target of [fifo, subdir, socketPath, "/dev/zero", "/dev/null"]) {
    const effective = readEffectivePolicy({ AGENT_POLICY_PATH: target, AGENT_POLICY: "auto" });
    assert.equal(effective.policy, "auto", target);
    assert.equal(effective.source, "env");
    assert.match(effective.fileProblem ?? "", /^invalid: /, target);
  }
  // A path under a regular file (ENOTDIR) counts as missing.
  const file = path.join(dir, "plain");
  await writeFile(file, "auto");
  assert.equal(readEffectivePolicy({ AGENT_POLICY_PATH: path.join(file, "policy") }).fileProblem, "missing");
  // An open that fails (here a symlink loop; EACCES when not root) is invalid, not a crash.
  const loop = path.join(dir, "loop");
  await symlink(loop, loop);
  assert.match(
    readEffectivePolicy({ AGENT_POLICY_PATH: loop }).fileProblem ?? "",
    /^invalid: cannot open \(ELOOP\)$/,
  );
  // A symlink to a valid file is followed for reading.
  const link = path.join(dir, "link");
  await symlink(file, link);
  assert.equal(readEffectivePolicy({ AGENT_POLICY_PATH: link }).policy, "auto");
});

test("setPolicy writes atomically, reports previous/current, and leaves no temp files", async (t) => {
  const dir = await tempDir(t);
  const env = { AGENT_POLICY_PATH: path.join(dir, "policy"), AGENT_POLICY: "read-only" };
  const first = await setPolicy({ policy: "auto", env });
  assert.equal(first.ok, true);
  assert.ok(first.ok);
  assert.deepEqual(first.previous, {
    policy: "read-only",
    source: "env",
    path: env.AGENT_POLICY_PATH,
    fileProblem: "missing",
  });
  assert.deepEqual(first.current, { policy: "auto", source: "file", path: env.AGENT_POLICY_PATH });
  assert.equal(await readFile(env.AGENT_POLICY_PATH, "utf8"), "auto\n");
  assert.equal(((await lstat(env.AGENT_POLICY_PATH)).mode & 0o777).toString(8), "644");
  assert.deepEqual(await readdir(dir), ["policy"]);

  const second = await setPolicy({ policy: "ask", expected: "auto", env });
  assert.ok(second.ok);
  assert.equal(second.previous.policy, "auto");
  assert.equal(second.current.policy, "ask");
});

test("setPolicy: conflict on a stale expectation (compared with the effective policy), nothing written", async (t) => {
  const dir = await tempDir(t);
  const env = { AGENT_POLICY_PATH: path.join(dir, "policy"), AGENT_POLICY: "auto" };
  const conflict = await setPolicy({ policy: "read-only", expected: "ask", env });
  assert.deepEqual(conflict, {
    ok: false,
    error: "policy_conflict",
    current: { policy: "auto", source: "env", path: env.AGENT_POLICY_PATH, fileProblem: "missing" },
  });
  assert.deepEqual(await readdir(dir), []);
  const matching = await setPolicy({ policy: "read-only", expected: "auto", env });
  assert.equal(matching.ok, true);
});

test("setPolicy refuses symlinks, invalid values and unwritable places", async (t) => {
  const dir = await tempDir(t);
  const real = path.join(dir, "real");
  await writeFile(real, "ask\n");
  const link = path.join(dir, "policy");
  await symlink(real, link);
  const refused = await setPolicy({ policy: "auto", env: { AGENT_POLICY_PATH: link } });
  assert.equal(refused.ok, false);
  assert.equal(!refused.ok && refused.error, "symlink_target");
  assert.equal(await readFile(real, "utf8"), "ask\n");

  const invalid = await setPolicy({
    policy: "yolo",
    env: { AGENT_POLICY_PATH: path.join(dir, "p2") },
  });
  assert.equal(!invalid.ok && invalid.error, "invalid_policy");
  const invalidExpected = await setPolicy({
    policy: "ask",
    expected: "nope",
    env: { AGENT_POLICY_PATH: path.join(dir, "p2") },
  });
  assert.equal(!invalidExpected.ok && invalidExpected.error, "invalid_policy");

  const noDir = await setPolicy({
    policy: "ask",
    env: { AGENT_POLICY_PATH: path.join(dir, "missing-dir", "policy") },
  });
  assert.equal(!noDir.ok && noDir.error, "io_error");
  const onDir = await setPolicy({ policy: "ask", env: { AGENT_POLICY_PATH: dir } });
  assert.equal(!onDir.ok && onDir.error, "io_error");
});
