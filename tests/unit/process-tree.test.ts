// Process trees without processes: /proc/<pid>/stat and environ parsing, the bounded snapshot (over a fake /proc),
// and which processes a selector takes. Real trees are ended in tests/integration/process-tree.test.ts, the
// tool executor's in tool-executor.test.ts and Pi's in the bridge-* suites.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import {
  envValues,
  type ProcInfo,
  parseProcStat,
  selectMembers,
  snapshotProcesses,
} from "../../agent-runtime/process-tree.ts";
import { tempDir } from "../support/workspace.ts";

/** A stat line as the kernel writes it: starttime is field 22. */
const statLine = (pid: number, comm: string, state: string, ppid: number, pgrp: number, session: number) =>
  `${pid} (${comm}) ${state} ${ppid} ${pgrp} ${session} 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 ${pid * 100} 1000 100`;

const proc = (
  pid: number,
  ppid: number,
  pgrp: number,
  session: number,
  more: Partial<ProcInfo> = {},
): ProcInfo => ({ pid, ppid, pgrp, session, startTime: pid * 100, state: "S", markers: [], ...more });

const pids = (infos: readonly ProcInfo[]) => infos.map((info) => info.pid).sort((a, b) => a - b);

describe("parsing /proc", () => {
  it("parses /proc/<pid>/stat whatever the command name holds", () => {
    assert.deepEqual(parseProcStat(statLine(42, "a) (b c)", "S", 7, 42, 40)), {
      pid: 42,
      ppid: 7,
      pgrp: 42,
      session: 40,
      startTime: 4200,
      state: "S",
    });
    assert.equal(parseProcStat("garbage"), undefined);
    assert.equal(parseProcStat("1 (x) S a b c"), undefined);
  });

  it("refuses a stat line without a start time (pid reuse could not be told apart)", () => {
    assert.equal(parseProcStat("42 (a) S 7 42 40 0 -1"), undefined);
    assert.equal(parseProcStat(statLine(42, "a", "S", 7, 42, 40).replace(" 4200 ", " x ")), undefined);
    assert.equal(parseProcStat(statLine(42, "a", "", 7, 42, 40)), undefined);
    assert.equal(parseProcStat(statLine(42, "a", "Z", 7, 42, 40))?.state, "Z");
  });

  it("reads every value of a marker variable, and only of that exact name", () => {
    const name = "CHAT_UI_AGENT_RUN_ID";
    assert.deepEqual(envValues(`${name}=a\0PATH=/bin\0`, name), ["a"]);
    assert.deepEqual(envValues(`PATH=/bin\0${name}=b`, name), ["b"], "last entry without a trailing NUL");
    assert.deepEqual(envValues(`${name}=a\0X=1\0${name}=c\0`, name), ["a", "c"], "a repeated name");
    assert.deepEqual(envValues(`X${name}=d\0${name}X=e\0Y=${name}=f\0`, name), [], "other names");
    assert.deepEqual(envValues(`${name}=\0`, name), [""]);
    assert.deepEqual(envValues("", name), []);
  });
});

describe("the snapshot", () => {
  async function fakeProc(t: Parameters<typeof tempDir>[0]) {
    const dir = await tempDir(t, "fake-proc-");
    const add = (pid: number, environ?: string) => {
      mkdirSync(path.join(dir, String(pid)));
      writeFileSync(path.join(dir, String(pid), "stat"), statLine(pid, "sh", "S", 1, pid, pid));
      if (environ !== undefined) writeFileSync(path.join(dir, String(pid), "environ"), environ);
    };
    add(10, "M=one\0");
    add(11); // environ unreadable: no markers, still a process
    add(12, "N=two\0M=three\0");
    mkdirSync(path.join(dir, "self"));
    mkdirSync(path.join(dir, "0013")); // not a pid as the kernel names them
    mkdirSync(path.join(dir, "14")); // gone between the listing and the read
    writeFileSync(path.join(dir, "version"), "Linux");
    return dir;
  }

  it("lists processes, reading the marker variable only when asked", async (t) => {
    const procDir = await fakeProc(t);
    const without = snapshotProcesses({ procDir });
    assert.deepEqual(pids(without), [10, 11, 12]);
    assert.ok(without.every((info) => info.markers.length === 0));
    const withMarkers = snapshotProcesses({ procDir, markerName: "M" });
    assert.deepEqual(
      withMarkers.sort((a, b) => a.pid - b.pid).map((info) => info.markers),
      [["one"], [], ["three"]],
    );
  });

  it("is bounded: at most maxProcesses entries", async (t) => {
    const procDir = await fakeProc(t);
    assert.equal(snapshotProcesses({ procDir, maxProcesses: 2 }).length, 2);
    assert.deepEqual(snapshotProcesses({ procDir: path.join(procDir, "missing") }), []);
  });
});

describe("selecting a tree's members", () => {
  it("takes a root's session, group and descendants, never the caller", () => {
    const stats = [
      proc(10, 1, 10, 10), // the shell (root)
      proc(11, 10, 10, 10), // child in the group
      proc(12, 10, 12, 12), // setsid child: a descendant
      proc(13, 12, 12, 12), // its child
      proc(14, 1, 14, 10), // double-forked, same session
      proc(20, 1, 20, 20), // unrelated
      proc(99, 1, 99, 10), // the caller (excluded)
    ];
    const roots = [10];
    assert.deepEqual(
      pids(selectMembers(stats, { pids: roots, groups: roots, sessions: roots }, new Set([99]))),
      [10, 11, 12, 13, 14],
    );
  });

  it("takes the sessions and groups members lead, to a fixpoint, within one snapshot", () => {
    const stats = [
      proc(10, 1, 10, 10), // Pi (root)
      proc(12, 10, 12, 12), // a tool that called setsid: a descendant, and a session leader
      proc(15, 1, 15, 12), // double-forked out of 12's session: only the session names it
      proc(16, 1, 16, 16), // setsid + double fork from 15: only its parent at the time knew it
      proc(17, 1, 15, 12), // in 15's group (and 12's session)
    ];
    assert.deepEqual(pids(selectMembers(stats, { pids: [10] }, new Set())), [10, 12, 15, 17]);
  });

  it("follows a dead leader's group and session (a zombie still names them)", () => {
    const stats = [proc(10, 1, 10, 10), proc(30, 10, 30, 30, { state: "Z" }), proc(31, 1, 30, 30)];
    assert.deepEqual(pids(selectMembers(stats, { pids: [10] }, new Set())), [10, 30, 31]);
  });

  it("finds marker carriers by exact value or by prefix, with their descendants", () => {
    const run = "state1.boot-0";
    const stats = [
      proc(10, 1, 10, 10, { markers: [run] }), // Pi
      proc(11, 1, 11, 11, { markers: [run] }), // a detached tool of the same run
      proc(12, 11, 12, 12), // its child that cleared its environment (env -i)
      proc(13, 1, 13, 13, { markers: ["state1.boot-1"] }), // another run of the same state dir
      proc(14, 1, 14, 14, { markers: ["state2.boot-0"] }), // another state dir
      proc(15, 1, 15, 15, { markers: [`${run}x`] }), // a longer value is not the same run
      proc(16, 1, 16, 16, { markers: ["junk", run] }), // a repeated name still carries the marker
    ];
    const marker = (m: { values?: string[]; prefixes?: string[] }) => ({ marker: { name: "M", ...m } });
    assert.deepEqual(pids(selectMembers(stats, marker({ values: [run] }), new Set())), [10, 11, 12, 16]);
    assert.deepEqual(
      pids(selectMembers(stats, marker({ prefixes: ["state1."] }), new Set())),
      [10, 11, 12, 13, 15, 16],
    );
    // An empty value or prefix would take every carrier of the variable: it takes nothing.
    assert.deepEqual(pids(selectMembers(stats, marker({ values: [""], prefixes: [""] }), new Set())), []);
  });

  it("never takes a protected process, nor what only it leads", () => {
    const stats = [
      proc(10, 1, 10, 10, { markers: ["m"] }), // a member
      proc(50, 1, 50, 50, { markers: ["m"] }), // the bridge, carrying the marker somehow
      proc(51, 50, 50, 50), // the bridge's own child
      proc(52, 10, 52, 52), // the member's child
    ];
    const taken = selectMembers(stats, { pids: [50], marker: { name: "M", values: ["m"] } }, new Set([50]));
    assert.deepEqual(pids(taken), [10, 52]);
  });

  it("childrenOf takes a process's descendants, not the process, even when it is protected", () => {
    const stats = [proc(40, 1, 40, 40), proc(41, 40, 41, 41), proc(42, 41, 42, 42), proc(43, 1, 43, 43)];
    assert.deepEqual(pids(selectMembers(stats, { childrenOf: [40] }, new Set([40]))), [41, 42]);
  });

  it("takes nothing for ids 0 and 1 (the kernel's threads, everything orphaned)", () => {
    const stats = [proc(2, 0, 0, 0), proc(10, 1, 10, 10), proc(11, 1, 1, 1)];
    const none = [0, 1];
    assert.deepEqual(
      selectMembers(stats, { pids: none, childrenOf: none, groups: none, sessions: none }, new Set([1])),
      [],
    );
  });
});
