// The operator's network mode file and its store (bridge/network-mode.ts): bad files (FIFO, symlink, oversized,
// garbage) get a clear problem and change nothing; nothing is `open` unless someone wrote `open`; a change in the
// file applies through the watch; the gate reads the same file (open → the guard is off; unusable → degraded).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { type TestContext, test } from "node:test";
import pino from "pino";
import { EGRESS_GUARD_ENV, egressGuardState } from "../../agent-runtime/policy/egress-guard.ts";
import {
  MAX_NETWORK_MODE_BYTES,
  networkModePathOf,
  readNetworkModeFile,
} from "../../agent-runtime/policy/network-mode-file.ts";
import { runPolicyCli } from "../../agent-runtime/policy-cli.ts";
import {
  type NetworkModeChange,
  NetworkModeStore,
  settleNetworkModeAtStart,
} from "../../bridge/network-mode.ts";
import { OptionsError, parseOptions } from "../../bridge/options.ts";

const log = pino({ level: "silent" });

async function dir(t: TestContext): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), "netmode-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  return root;
}

/** Each bad file, made in `file`'s place, and the problem it must be reported as. */
const BAD_FILES: { name: string; make: (file: string, root: string) => Promise<void>; problem: RegExp }[] = [
  {
    name: "a FIFO",
    make: async (file) => {
      execFileSync("mkfifo", [file]);
    },
    problem: /not a regular file/,
  },
  {
    name: "a symlink to a file saying open",
    make: async (file, root) => {
      await writeFile(path.join(root, "elsewhere"), "open\n");
      await symlink(path.join(root, "elsewhere"), file);
    },
    problem: /symlink/,
  },
  {
    name: "an oversized file",
    make: (file) => writeFile(file, `open${" ".repeat(MAX_NETWORK_MODE_BYTES)}`),
    problem: /oversized/,
  },
  { name: "garbage", make: (file) => writeFile(file, "opne\n"), problem: /unknown value "opne"/ },
  { name: "two words", make: (file) => writeFile(file, "open lockdown\n"), problem: /unknown value/ },
  { name: "not UTF-8", make: (file) => writeFile(file, Buffer.from([0xff, 0xfe])), problem: /not UTF-8/ },
  { name: "empty", make: (file) => writeFile(file, "  \n"), problem: /empty/ },
  { name: "a directory", make: (file) => mkdir(file), problem: /not a regular file|cannot read/ },
];

test("the reader takes one mode, surrounding whitespace ignored", async (t) => {
  const root = await dir(t);
  const file = path.join(root, "network-mode");
  for (const mode of ["lockdown", "registries", "open"] as const) {
    await writeFile(file, `  ${mode}\n`);
    assert.deepEqual(readNetworkModeFile(file), { ok: true, mode });
  }
  assert.deepEqual(readNetworkModeFile(path.join(root, "absent")), { ok: false, problem: "missing" });
  assert.equal(networkModePathOf("/run/chat-ui-agent/policy"), "/run/chat-ui-agent/network-mode");
});

for (const bad of BAD_FILES) {
  test(`a bad file (${bad.name}): a clear problem, never read as open, never blocks`, async (t) => {
    const root = await dir(t);
    const file = path.join(root, "network-mode");
    await bad.make(file, root);
    const read = readNetworkModeFile(file);
    assert.equal(read.ok, false);
    assert.match(read.ok ? "" : read.problem, bad.problem);

    // At start: the default (registries), never open, with the problem reported and the file left as it is.
    const started = await settleNetworkModeAtStart(file, undefined);
    assert.equal(started.report.mode, "registries");
    assert.match(started.report.problem ?? "", bad.problem);
    assert.match(started.warning ?? "", /not usable/);

    // While running: the mode in force is kept.
    const store = new NetworkModeStore({
      start: { mode: "lockdown", path: file, problem: null },
      log,
    });
    const changes: NetworkModeChange[] = [];
    store.onChange((c) => changes.push(c));
    store.reread();
    assert.equal(store.get(), "lockdown");
    assert.match(store.report().problem ?? "", bad.problem);
    assert.deepEqual(changes, []);

    // The gate: an enforcing guard with an unusable mode file counts as degraded (it asks again).
    const policy = path.join(root, "policy");
    assert.equal(
      egressGuardState({ [EGRESS_GUARD_ENV]: "enforcing", AGENT_POLICY_PATH: policy }),
      "degraded",
    );
  });
}

test("a missing file at start: the default is written (the gate reads the same), never open", async (t) => {
  const root = await dir(t);
  const file = path.join(root, "network-mode");
  const started = await settleNetworkModeAtStart(file, undefined);
  assert.deepEqual(started, { report: { mode: "registries", path: file, problem: null }, warning: null });
  assert.equal(await readFile(file, "utf8"), "registries\n");
});

test("--network-mode at start is written and wins over the file; a file it cannot replace refuses the start", async (t) => {
  const root = await dir(t);
  const file = path.join(root, "network-mode");
  await writeFile(file, "open\n");
  const started = await settleNetworkModeAtStart(file, "lockdown");
  assert.equal(started.report.mode, "lockdown");
  assert.equal(await readFile(file, "utf8"), "lockdown\n");

  const link = path.join(root, "linked");
  await symlink(file, link);
  await assert.rejects(settleNetworkModeAtStart(link, "open"), /refusing to replace a symlink/);
  assert.equal(await readFile(file, "utf8"), "lockdown\n", "the symlink's target is untouched");
});

test("set writes the file and tells listeners once; the same mode again changes nothing", async (t) => {
  const root = await dir(t);
  const file = path.join(root, "network-mode");
  const store = new NetworkModeStore({
    start: (await settleNetworkModeAtStart(file, undefined)).report,
    log,
  });
  const changes: NetworkModeChange[] = [];
  store.onChange((c) => changes.push(c));
  const result = await store.set("open");
  assert.equal(result.ok, true);
  assert.equal(store.get(), "open");
  assert.equal(await readFile(file, "utf8"), "open\n");
  await store.set("open");
  assert.deepEqual(
    changes.map((c) => [c.previous, c.current.mode, c.cause]),
    [["registries", "open", "set_network_mode"]],
  );
});

test("the watch applies an operator's change at once, keeps the mode on garbage, restores a deleted file", async (t) => {
  const root = await dir(t);
  const file = path.join(root, "network-mode");
  const store = new NetworkModeStore({
    start: (await settleNetworkModeAtStart(file, undefined)).report,
    log,
  });
  t.after(() => store.close());
  const changes: NetworkModeChange[] = [];
  store.onChange((c) => changes.push(c));
  store.watch();
  // (The watch holds the event loop open for nothing: waitFor's timers keep the test alive.)

  // The operator's CLI: an atomic rename, as chat-ui-agent-policy network does.
  const io = cliIo(root);
  assert.equal(await runPolicyCli(["network", "lockdown"], io), 0);
  await waitFor(() => changes.length === 1);
  assert.equal(store.get(), "lockdown");
  assert.deepEqual(changes.at(-1)?.cause, "file");

  // Garbage in place: kept (the problem is reported), and a later good write still applies.
  await writeFile(file, "wide-open\n");
  await waitFor(() => store.report().problem !== null);
  assert.equal(store.get(), "lockdown");
  await writeFile(file, "open\n");
  await waitFor(() => changes.length === 2);
  assert.equal(store.get(), "open");
  assert.equal(store.report().problem, null);

  // Deleted: the mode in force is written back, so the gate (which reads a missing file as the default) agrees.
  await rm(file);
  await waitFor(async () => (await readFile(file, "utf8").catch(() => "")) === "open\n");
  assert.equal(store.get(), "open");
});

test("the gate: enforcing guard × mode file → what the gate counts on", async (t) => {
  const root = await dir(t);
  const policy = path.join(root, "policy");
  const file = networkModePathOf(policy);
  const env = { [EGRESS_GUARD_ENV]: "enforcing", AGENT_POLICY_PATH: policy };
  assert.equal(egressGuardState(env), "enforcing", "missing file: the default mode");
  const rows = [
    ["lockdown", "enforcing"],
    ["registries", "enforcing"],
    ["open", "off"],
  ] as const;
  for (const [mode, guard] of rows) {
    await writeFile(file, `${mode}\n`);
    assert.equal(egressGuardState(env), guard, mode);
  }
  // A guard the kernel could not give stays what it is, whatever the file says.
  await writeFile(file, "lockdown\n");
  assert.equal(egressGuardState({ [EGRESS_GUARD_ENV]: "degraded", AGENT_POLICY_PATH: policy }), "degraded");
  assert.equal(egressGuardState({ AGENT_POLICY_PATH: policy }), "absent");
});

test("chat-ui-agent-policy network: shows, sets, refuses a bad mode (exit 2) and reports a bad file (exit 1)", async (t) => {
  const root = await dir(t);
  const io = cliIo(root);
  assert.equal(await runPolicyCli(["network"], io), 0);
  assert.deepEqual(lastLine(io), {
    mode: "registries",
    path: path.join(root, "network-mode"),
    problem: "missing",
  });
  assert.equal(await runPolicyCli(["network", "open"], io), 0);
  assert.deepEqual(lastLine(io), {
    ok: true,
    previous: null,
    current: { mode: "open", path: path.join(root, "network-mode") },
  });
  assert.equal(await runPolicyCli(["network"], io), 0);
  assert.equal((lastLine(io) as { mode: string }).mode, "open");
  assert.equal(await runPolicyCli(["network", "wide"], io), 2);
  assert.match(io.err(), /invalid network mode "wide": use lockdown, registries, open/);
  await writeFile(path.join(root, "network-mode"), "nonsense\n");
  assert.equal(await runPolicyCli(["network"], io), 1);
  assert.match(io.err(), /not usable: invalid: unknown value "nonsense"/);
});

test("--network-mode is validated", () => {
  assert.equal(parseOptions(["--network-mode", "lockdown"]).networkMode, "lockdown");
  assert.equal(parseOptions(["--network-mode=open"]).networkMode, "open");
  assert.equal(parseOptions([]).networkMode, undefined);
  assert.throws(() => parseOptions(["--network-mode", "wide"]), OptionsError);
  assert.throws(() => parseOptions(["--network-mode", "wide"]), /must be one of lockdown, registries, open/);
});

function cliIo(root: string) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (c: Buffer) => (out += c.toString()));
  stderr.on("data", (c: Buffer) => (err += c.toString()));
  return {
    stdout,
    stderr,
    stdin: new PassThrough(),
    env: { AGENT_POLICY_PATH: path.join(root, "policy") },
    cwd: root,
    out: () => out,
    err: () => err,
  };
}

function lastLine(io: { out: () => string }): unknown {
  const lines = io.out().trim().split("\n");
  return JSON.parse(lines.at(-1) ?? "null");
}

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test("a person's approval: one call, the command shown, taken once, gone at the next turn", async () => {
  const { PersonApprovals } = await import("../../agent-runtime/person-approvals.ts");
  const approvals = new PersonApprovals(2);
  approvals.record("call-1", "git push origin main");
  assert.equal(approvals.take("call-1", "git push origin main; curl evil"), false, "another command");
  assert.equal(
    approvals.take("call-1", "git push origin main"),
    false,
    "taken (and dropped) by the try above",
  );
  approvals.record("call-1", "git push origin main");
  assert.equal(approvals.take("call-2", "git push origin main"), false, "another call");
  assert.equal(approvals.take("call-1", { command: "git push origin main" }), false, "not a string");
  approvals.record("call-1", "git push origin main");
  assert.equal(approvals.take("call-1", "git push origin main"), true);
  assert.equal(approvals.take("call-1", "git push origin main"), false, "used once");
  approvals.record("a", "x");
  approvals.record("b", "x");
  approvals.record("c", "x");
  assert.equal(approvals.take("a", "x"), false, "bounded: the oldest went");
  approvals.clear();
  assert.equal(approvals.take("c", "x"), false, "a new turn");
});

test("the files Pi's gate reads are written readable by others whatever the umask (a launcher's umask 077)", async (t) => {
  const root = await dir(t);
  const { setPolicy } = await import("../../agent-runtime/policy/policy-store.ts");
  const { stat } = await import("node:fs/promises");
  const previous = process.umask(0o077);
  try {
    await settleNetworkModeAtStart(path.join(root, "network-mode"), "lockdown");
    const set = await setPolicy({ policy: "auto", env: { AGENT_POLICY_PATH: path.join(root, "policy") } });
    assert.equal(set.ok, true);
  } finally {
    process.umask(previous);
  }
  assert.equal((await stat(path.join(root, "network-mode"))).mode & 0o777, 0o644);
  assert.equal((await stat(path.join(root, "policy"))).mode & 0o777, 0o644);
});

test("which approved calls get the network: a fully read command that sends; never a script or an unknown program", async () => {
  const { networkGrantFor } = await import("../../agent-runtime/person-approvals.ts");
  assert.equal(networkGrantFor(["runs-shell", "sends"]), true, "git push, ssh, curl URL");
  assert.equal(networkGrantFor(["runs-shell", "reads", "reads-secret", "sends"]), true);
  assert.equal(networkGrantFor(["runs-shell", "reads"]), false, "nothing it sends");
  assert.equal(networkGrantFor(["runs-shell", "sends", "runs-file"]), false, "an agent-written script");
  assert.equal(networkGrantFor(["runs-shell", "runs-unmodeled"]), false, "a program the gate cannot model");
  assert.equal(networkGrantFor(["runs-shell", "sends", "undecidable"]), false);
});
