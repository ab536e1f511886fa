// Ending real process trees (agent-runtime/process-tree.ts), as the bridge and the tool executor do: SIGTERM
// then SIGKILL after a grace, freezing a tree that forks as fast as it can, the pid-reuse guard, and never
// ourselves. Pi's trees are ended in the bridge-* suites, a tool shell's in tool-executor.test.ts.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { describe, it, type TestContext } from "node:test";
import { endTree, killTree, signalProcess, snapshotProcesses } from "../../agent-runtime/process-tree.ts";
import { waitUntil } from "../support/bridge.ts";

const MARKER = "PROCESS_TREE_TEST_RUN";
let runs = 0;
/** A marker value unique to one test, so no other run's processes are ever counted (or ended). */
const uniqueRun = () => `${process.pid}-${Date.now().toString(36)}-${runs++}`;

/** Live processes carrying this run's marker. */
function marked(run: string): number[] {
  return snapshotProcesses({ markerName: MARKER })
    .filter((info) => info.state !== "Z" && info.state !== "X" && info.markers.includes(run))
    .map((info) => info.pid);
}

/** A detached `sh -c script` carrying the run's marker; whatever is left is ended after the test. */
function startTree(t: TestContext, run: string, script: string): ChildProcess & { pid: number } {
  const child = spawn("/bin/sh", ["-c", script], {
    detached: true,
    stdio: "ignore",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", [MARKER]: run },
  });
  t.after(() => killTree({ marker: { name: MARKER, values: [run] } }));
  assert.ok(child.pid !== undefined);
  return child as ChildProcess & { pid: number };
}

const exitOf = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null)
      resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once("exit", (code, signal) => resolve({ code, signal }));
  });

describe("ending real process trees", () => {
  it("graceful: SIGTERM first, and a process that exits on it is not killed", async (t) => {
    const run = uniqueRun();
    const child = startTree(t, run, "exec sleep 1000");
    await waitUntil(() => marked(run).length === 1, 5_000, "the process to start");
    const exited = exitOf(child);
    const result = await endTree({ pids: [child.pid], groups: [child.pid] }, { termGraceMs: 10_000 });
    assert.deepEqual(result, { found: 1, left: 0 });
    assert.deepEqual(await exited, { code: null, signal: "SIGTERM" });
  });

  it("graceful: what ignores SIGTERM is killed after the grace, detached descendants included", async (t) => {
    const run = uniqueRun();
    // The root, a child in its group, a setsid'd child, and a double-forked one in a session of its own.
    const child = startTree(
      t,
      run,
      `trap '' TERM; sleep 1000 & setsid sleep 1000 & (setsid sh -c 'sleep 1000; :' &); wait`,
    );
    await waitUntil(() => marked(run).length >= 5, 5_000, "the tree to start");
    const exited = exitOf(child);
    const result = await endTree(
      { pids: [child.pid], groups: [child.pid], marker: { name: MARKER, values: [run] } },
      { termGraceMs: 200 },
    );
    assert.ok(result.found >= 5, `found ${result.found}`);
    assert.equal(result.left, 0);
    assert.deepEqual(await exited, { code: null, signal: "SIGKILL" });
    assert.deepEqual(marked(run), []);
  });

  it("freezes a tree that forks as fast as it can, and ends it in one synchronous call", async (t) => {
    const run = uniqueRun();
    // Every child double-forks into a session of its own: only the marker still names it.
    const child = startTree(t, run, "while :; do (setsid sleep 1000 &); done");
    await waitUntil(() => marked(run).length >= 50, 10_000, "the forks to pile up");
    const ended = killTree({
      pids: [child.pid],
      groups: [child.pid],
      marker: { name: MARKER, values: [run] },
    });
    assert.ok(ended >= 50, `ended ${ended}`);
    // SIGKILL is delivered when each (frozen) process next runs; nothing may fork meanwhile.
    await waitUntil(() => marked(run).length === 0, 2_000, "every process of the tree to die");
  });

  it("a prefix ends every run of one state dir, and no other", async (t) => {
    const [mine, other] = [`state-a.${uniqueRun()}`, `state-b.${uniqueRun()}`];
    const kept = startTree(t, other, "exec sleep 1000");
    const runs = [`${mine}-0`, `${mine}-1`];
    for (const run of runs) startTree(t, run, "(setsid sleep 1000 &); exec sleep 1000");
    await waitUntil(
      () => runs.every((run) => marked(run).length === 2) && marked(other).length === 1,
      5_000,
      "the runs to start",
    );
    const result = await endTree({ marker: { name: MARKER, prefixes: [`${mine}-`] } });
    assert.deepEqual(result, { found: 4, left: 0 });
    assert.deepEqual(runs.flatMap(marked), []);
    assert.deepEqual(marked(other), [kept.pid], "another state dir's run is not ours");
  });

  it("never signals a pid that now names another process (start time checked first)", async (t) => {
    const run = uniqueRun();
    const child = startTree(t, run, "exec sleep 1000");
    await waitUntil(() => marked(run).length === 1, 5_000, "the process to start");
    const stat = snapshotProcesses().find((info) => info.pid === child.pid);
    assert.ok(stat);
    assert.equal(signalProcess({ pid: child.pid, startTime: stat.startTime + 1 }, "SIGKILL"), false);
    assert.deepEqual(marked(run), [child.pid], "the other process lives");
    assert.equal(signalProcess(stat, "SIGKILL"), true);
    assert.deepEqual(await exitOf(child), { code: null, signal: "SIGKILL" });
  });

  it("never ends ourselves or our parent, whatever the selector names", async () => {
    assert.deepEqual(await endTree({ pids: [process.pid, process.ppid] }), { found: 0, left: 0 });
    assert.equal(killTree({ pids: [process.pid, process.ppid] }), 0);
  });
});
