// The tool executor as a process, as the bridge starts it (as root here: it runs as `nobody`, in the tools'
// Landlock domain): its channel protocol, Pi's exact result shapes, the path and vetted-content checks it
// makes before running, tree kills on abort/timeout/channel close, fd hygiene and the domain itself.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it, type TestContext } from "node:test";
import { loadPiToolFactories } from "../../agent-runtime/executor/pi-modules.ts";
import { MAX_EXECUTOR_FRAME_BYTES } from "../../agent-runtime/executor/protocol.ts";
import { snapshotProcesses } from "../../agent-runtime/process-tree.ts";
import { readForVetting } from "../../agent-runtime/vetted-content.ts";
import { alive, root, waitUntil } from "../support/bridge.ts";
import { call, landlockAbi, startExecutor } from "../support/executor.ts";

const isRoot = process.geteuid?.() === 0;
/** Markers unique to this run, so leftovers of another run can never be mistaken for this one's. */
const RUN = `${process.pid}x${Date.now().toString(36)}`;
const NOBODY = 65534;
const NOGROUP = 65534;

/** A workspace and HOME the tools' user owns, outside /tmp's other test files. */
function toolDirs(t: TestContext) {
  const base = mkdtempSync(path.join(tmpdir(), "executor-test-"));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  chmodSync(base, 0o755);
  const workspace = path.join(base, "ws");
  const home = path.join(base, "home");
  for (const dir of [workspace, home]) {
    mkdirSync(dir);
    if (isRoot) chownSync(dir, NOBODY, NOGROUP);
  }
  return { base, workspace, home };
}

/** Writes a file the tools' user owns. */
function writeAsNobody(file: string, content: string) {
  writeFileSync(file, content);
  if (isRoot) chownSync(file, NOBODY, NOGROUP);
  return file;
}

function asNobody(file: string) {
  if (isRoot) chownSync(file, NOBODY, NOGROUP);
  return file;
}

/** Pids whose environment carries this marker (root can read every environment). */
function marked(marker: string): number[] {
  const found: number[] = [];
  for (const p of snapshotProcesses()) {
    try {
      if (readFileSync(`/proc/${p.pid}/environ`, "latin1").includes(marker)) found.push(p.pid);
    } catch {}
  }
  return found;
}

describe("tool executor", { skip: !isRoot ? "needs root to switch uids (CI runs as root)" : false }, () => {
  it("speaks the protocol: hello, bad lines answered and survived, ids never run twice", async (t) => {
    const { workspace, home } = toolDirs(t);
    const ex = startExecutor(t, { workspace, home, uid: NOBODY, gid: NOGROUP, landlock: true });
    const hello = await ex.client.hello;
    assert.equal(hello.uid, NOBODY);
    assert.equal(hello.home, home);
    assert.equal(hello.shell.closesInheritedFds, true);
    const socket = ex.child.stdio[3] as NodeJS.WritableStream;
    socket.write("not json\n");
    socket.write(`${JSON.stringify({ type: "call", id: "x-1", tool: "nope" })}\n`);
    socket.write(`${"x".repeat(MAX_EXECUTOR_FRAME_BYTES + 10)}\n`);
    // Still serving, with the right answers after the garbage.
    writeAsNobody(path.join(workspace, "a.txt"), "alpha\n");
    const result = await ex.client.call(
      call("read", { path: path.join(workspace, "a.txt") }, workspace),
      undefined,
      () => {},
    );
    assert.deepEqual(result.content, [{ type: "text", text: "alpha\n" }]);
    assert.match(ex.stderr(), /invalid executor request/);
    // Two calls at once under one id: the second is refused, the first completes.
    const first = ex.client.call(
      call("bash", { command: "sleep 0.3; echo one" }, workspace),
      undefined,
      () => {},
    );
    assert.deepEqual((await first).content, [{ type: "text", text: "one\n" }]);
    // A result larger than the channel carries (an unresized image) is an error for that call, never a hang.
    const png = Buffer.concat([
      Buffer.from("89504e470d0a1a0a0000000d49484452000000100000001008060000001ff3ff61", "hex"),
      Buffer.alloc(MAX_EXECUTOR_FRAME_BYTES * 0.8),
    ]);
    writeFileSync(path.join(workspace, "huge.png"), png);
    asNobody(path.join(workspace, "huge.png"));
    await assert.rejects(
      ex.client.call(
        call("read", { path: path.join(workspace, "huge.png") }, workspace, {
          options: { autoResizeImages: false, modelInput: ["text", "image"] },
        }),
        undefined,
        () => {},
      ),
      /larger than the executor channel carries/,
    );
    rmSync(path.join(workspace, "huge.png"));
    assert.equal(alive(ex.pid), true);
  });

  it("returns exactly what Pi's own tools return, for every built-in tool", async (t) => {
    const { workspace, home } = toolDirs(t);
    const local = path.join(path.dirname(workspace), "local");
    const ex = startExecutor(t, { workspace, home, uid: NOBODY, gid: NOGROUP, landlock: true });
    const factories = await loadPiToolFactories(root);
    const seed = (dir: string) => {
      writeFileSync(path.join(dir, "notes.md"), "one\ntwo needle\nthree\n");
      mkdirSync(path.join(dir, "src"));
      writeFileSync(path.join(dir, "src", "x.ts"), "export const needle = 1;\n");
      writeFileSync(path.join(dir, "big.txt"), `${"line\n".repeat(3000)}`);
    };
    mkdirSync(local);
    seed(local);
    seed(workspace);
    for (const p of ["notes.md", "src", "src/x.ts", "big.txt"]) asNobody(path.join(workspace, p));
    const cases: [string, (dir: string) => Record<string, unknown>][] = [
      ["read", (d) => ({ path: path.join(d, "notes.md") })],
      ["read", (d) => ({ path: path.join(d, "big.txt"), offset: 10, limit: 5 })],
      ["read", (d) => ({ path: path.join(d, "big.txt") })],
      ["read", (d) => ({ path: path.join(d, "missing.md") })],
      ["ls", (d) => ({ path: d })],
      ["ls", () => ({})],
      ["grep", (d) => ({ pattern: "needle", path: d })],
      ["grep", (d) => ({ pattern: "needle", path: d, glob: "*.ts", context: 1 })],
      ["find", (d) => ({ pattern: "*.ts", path: d })],
      ["write", (d) => ({ path: path.join(d, "new", "w.txt"), content: "written\n" })],
      ["edit", (d) => ({ path: path.join(d, "notes.md"), edits: [{ oldText: "two", newText: "TWO" }] })],
      ["edit", (d) => ({ path: path.join(d, "notes.md"), edits: [{ oldText: "absent", newText: "x" }] })],
      ["bash", () => ({ command: "printf 'a\\nb\\n'; echo err >&2" })],
      ["bash", () => ({ command: "echo out; exit 4" })],
      ["bash", () => ({ command: "seq 1 5000" })],
    ];
    const run = async (tool: string, params: Record<string, unknown>, dir: string, routed: boolean) => {
      try {
        if (routed) return { ok: await ex.client.call(call(tool, params, dir), undefined, () => {}) };
        const create = (
          factories as unknown as Record<
            string,
            (cwd: string) => {
              execute: (...args: unknown[]) => Promise<{ content: unknown; details?: unknown }>;
            }
          >
        )[`create${tool[0]?.toUpperCase()}${tool.slice(1)}ToolDefinition`];
        const definition = create!(dir);
        const ctx = {
          model: { input: ["text", "image"], provider: "p", id: "m" },
          sessionManager: { getSessionId: () => "s", getSessionFile: () => undefined },
        };
        const result = await definition!.execute("local", params, undefined, undefined, ctx);
        return {
          ok: {
            content: result.content,
            ...(result.details !== undefined ? { details: result.details } : {}),
          },
        };
      } catch (error) {
        return { error: (error as Error).message };
      }
    };
    // rg searches files in parallel: the order of grep's lines is not Pi's to fix, so compare them sorted.
    const sortGrep = (tool: string, value: { ok?: { content: { text?: string }[] } }) => {
      if (tool !== "grep" || !value.ok) return value;
      for (const c of value.ok.content) if (c.text) c.text = c.text.split("\n").sort().join("\n");
      return value;
    };
    const normalise = (value: unknown, dir: string) =>
      JSON.parse(
        JSON.stringify(value)
          .replaceAll(dir, "<dir>")
          .replace(/pi-bash-[0-9a-f]+\.log/g, "pi-bash-<id>.log"),
      );
    for (const [tool, params] of cases) {
      const routed = sortGrep(
        tool,
        normalise(await run(tool, params(workspace), workspace, true), workspace),
      );
      const own = sortGrep(tool, normalise(await run(tool, params(local), local, false), local));
      assert.deepEqual(routed, own, `${tool} ${JSON.stringify(params("<dir>"))}`);
    }
    assert.equal(readFileSync(path.join(workspace, "new", "w.txt"), "utf8"), "written\n");
  });

  it("refuses a path that resolves elsewhere for the tools than the absolute path the gate decided on", async (t) => {
    const { workspace, home } = toolDirs(t);
    const ex = startExecutor(t, { workspace, home, uid: NOBODY, gid: NOGROUP, landlock: true });
    writeAsNobody(path.join(workspace, "a b.txt"), "spaced\n");
    writeAsNobody(path.join(workspace, "shot 1\u202FAM.png"), "not really a png\n");
    writeAsNobody(path.join(home, "h.txt"), "home\n");
    const refused = [
      { tool: "read", params: { path: "a b.txt" } },
      { tool: "read", params: { path: "~/h.txt" } },
      { tool: "read", params: { path: `@${path.join(workspace, "a b.txt")}` } },
      { tool: "read", params: { path: path.join(workspace, "a\u00A0b.txt") } },
      { tool: "read", params: { path: `${workspace}/x/../a b.txt` } },
      { tool: "read", params: { path: `file://${workspace}/a%20b.txt` } },
      // Pi's read would open the macOS screenshot variant of a missing name: not the path decided on.
      { tool: "read", params: { path: path.join(workspace, "shot 1 AM.png") } },
      { tool: "write", params: { path: "w.txt", content: "x" } },
      { tool: "edit", params: { path: "~/h.txt", edits: [{ oldText: "home", newText: "x" }] } },
      { tool: "ls", params: { path: "." } },
      { tool: "grep", params: { pattern: "x", path: "~" } },
      { tool: "find", params: { pattern: "*", path: "src/.." } },
      { tool: "read", params: { path: 42 } },
    ];
    for (const c of refused) {
      await assert.rejects(
        ex.client.call(call(c.tool, c.params, workspace), undefined, () => {}),
        (err: Error & { code?: string }) => err.code === "refused" && /Nothing ran/.test(err.message),
        JSON.stringify(c),
      );
    }
    // Nothing was written or edited by the refused calls.
    assert.equal(readFileSync(path.join(home, "h.txt"), "utf8"), "home\n");
    const ok = await ex.client.call(
      call("read", { path: path.join(workspace, "a b.txt") }, workspace),
      undefined,
      () => {},
    );
    assert.deepEqual(ok.content, [{ type: "text", text: "spaced\n" }]);
  });

  it("runs a vetted script only with the bytes that were shown", async (t) => {
    const { workspace, home } = toolDirs(t);
    const ex = startExecutor(t, { workspace, home, uid: NOBODY, gid: NOGROUP, landlock: true });
    const script = writeAsNobody(path.join(workspace, "run.sh"), "touch ran-1\n");
    const shown = readForVetting(script);
    assert.ok(shown.ok);
    const first = await ex.client.call(
      call("bash", { command: "sh run.sh" }, workspace, { vetted: [shown.file] }),
      undefined,
      () => {},
    );
    assert.ok(first.content.length > 0);
    assert.equal(readFileSync(path.join(workspace, "ran-1"), "utf8"), "");
    // Changed after approval (by a background tool, say): refused, nothing ran.
    writeFileSync(script, "touch ran-2\n");
    await assert.rejects(
      ex.client.call(
        call("bash", { command: "sh run.sh; touch ran-2b" }, workspace, { vetted: [shown.file] }),
        undefined,
        () => {},
      ),
      (err: Error & { code?: string }) => err.code === "refused" && /content changed/.test(err.message),
    );
    rmSync(script);
    await assert.rejects(
      ex.client.call(
        call("bash", { command: "touch ran-3" }, workspace, { vetted: [shown.file] }),
        undefined,
        () => {},
      ),
      /now missing/,
    );
    for (const name of ["ran-2", "ran-2b", "ran-3"]) {
      assert.throws(() => readFileSync(path.join(workspace, name)), { code: "ENOENT" }, name);
    }
  });

  it("abort, timeout and a closed channel end the tool's whole tree (groups, sessions, double forks)", async (t) => {
    const { workspace, home } = toolDirs(t);
    const ex = startExecutor(t, { workspace, home, uid: NOBODY, gid: NOGROUP, landlock: true });
    // Background children in the group, a setsid'd child, a double-forked child, and the shell waiting.
    const tree = (marker: string) =>
      `export M=${marker}; sleep 1000 & setsid sleep 1000 & (sleep 1000 &) ; (setsid sh -c 'sleep 1000' &); echo started; sleep 1000`;
    const abort = new AbortController();
    const updates: string[] = [];
    const running = ex.client.call(
      call("bash", { command: tree(`TREE_ABORT_1_${RUN}`) }, workspace),
      abort.signal,
      (p) => {
        updates.push(JSON.stringify(p));
      },
    );
    await waitUntil(() => marked(`M=TREE_ABORT_1_${RUN}`).length >= 5, 10_000, "the tree to start");
    abort.abort();
    await assert.rejects(
      running,
      (err: Error & { code?: string }) => err.code === "aborted" && /Command aborted/.test(err.message),
    );
    await waitUntil(
      () => marked(`M=TREE_ABORT_1_${RUN}`).length === 0,
      2_000,
      "every process of the aborted tree to end",
    );
    assert.ok(updates.some((u) => u.includes("started")));

    const timed = ex.client.call(
      call("bash", { command: tree(`TREE_TIMEOUT_1_${RUN}`), timeout: 1 }, workspace),
      undefined,
      () => {},
    );
    await assert.rejects(timed, /timed out after 1 seconds/);
    await waitUntil(
      () => marked(`M=TREE_TIMEOUT_1_${RUN}`).length === 0,
      2_000,
      "every process of the timed-out tree to end",
    );

    // Background processes a finished call left running end with the call (its helper is their subreaper),
    // whatever they did to leave: their own session, a double fork, an empty environment.
    const left = await ex.client.call(
      call(
        "bash",
        {
          command: `export M=TREE_LEFT_1_${RUN}; (setsid sleep 1000 &); nohup sleep 1000 >/dev/null 2>&1 & (setsid env -i /bin/sh -c 'sleep 1001 & echo $! > ${workspace}/detached.pid' &); sleep 0.3; echo started`,
        },
        workspace,
      ),
      undefined,
      () => {},
    );
    assert.match((left.content[0] as { text: string }).text, /started/);
    const detached = Number(readFileSync(path.join(workspace, "detached.pid"), "utf8"));
    assert.ok(detached > 1);
    await waitUntil(
      () => marked(`M=TREE_LEFT_1_${RUN}`).length === 0 && !existsSync(`/proc/${detached}`),
      2_000,
      "the call's background processes (the detached one too) to end with the call",
    );

    // A call still running when the channel closes (Pi is gone) ends with the executor.
    const still = ex.client.call(
      call("bash", { command: `export M=TREE_LEFT_2_${RUN}; (setsid sleep 1000 &); sleep 1000` }, workspace),
      undefined,
      () => {},
    );
    still.catch(() => {});
    await waitUntil(() => marked(`M=TREE_LEFT_2_${RUN}`).length >= 2, 5_000, "the running call");
    (ex.child.stdio[3] as unknown as { destroy(): void }).destroy();
    assert.deepEqual(await ex.exited, { code: 0, signal: null });
    await waitUntil(
      () => marked(`M=TREE_LEFT_2_${RUN}`).length === 0,
      2_000,
      "the running call's processes to end with the executor",
    );
  });

  it("tool shells inherit no fd above 2, even one a parent leaked past Node's own close-on-exec sweep", async (t) => {
    const { workspace, home } = toolDirs(t);
    // Node marks fds 0-15 close-on-exec at start, then stops at the first gap: fd 40 here stays inheritable.
    const fds = async (shellHelper: boolean) => {
      const ex = startExecutor(t, {
        workspace,
        home,
        uid: NOBODY,
        gid: NOGROUP,
        landlock: false,
        shellHelper,
        strayFd: 40,
      });
      // Tested without opening anything in the shell itself (a glob or ls would open a directory fd).
      const probe =
        "fd=3; while [ $fd -le 64 ]; do [ -e /proc/$$/fd/$fd ] && echo open:$fd; fd=$((fd+1)); done; echo end";
      const result = await ex.client.call(call("bash", { command: probe }, workspace), undefined, () => {});
      return (result.content[0] as { text: string }).text.trim();
    };
    assert.equal(await fds(true), "end");
    assert.match(
      await fds(false),
      /open:40/,
      "the test can fail: without the helper the stray fd reaches tools",
    );
  });

  it("each tool call nests a scoped domain: no ptrace-mode access to, nor signals to, the executor or another call", {
    skip: landlockAbi < 6 ? "kernel without Landlock ABI 6" : false,
  }, async (t) => {
    const { workspace, home } = toolDirs(t);
    const probe = async (nest: boolean) => {
      const ex = startExecutor(t, { workspace, home, uid: NOBODY, gid: NOGROUP, landlock: true, nest });
      assert.equal((await ex.client.hello).shell.nested, nest);
      const pidFile = path.join(workspace, `other-call-${nest}.pid`);
      // Another call, still running while the probe runs (aborted at the end: its helper ends it).
      const stopOther = new AbortController();
      const other = ex.client.call(
        call("bash", { command: `echo $$ > ${pidFile}; sleep 1000` }, workspace),
        stopOther.signal,
        () => {},
      );
      other.catch(() => {});
      await waitUntil(
        () => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "",
        5_000,
        "the other call",
      );
      const otherPid = Number(readFileSync(pidFile, "utf8"));
      const result = await ex.client.call(
        call(
          "bash",
          {
            command: [
              `ls -l /proc/${ex.pid}/fd >/dev/null 2>&1 && echo EXECUTOR_FDS:OPEN`,
              `head -c1 /proc/${ex.pid}/environ >/dev/null 2>&1 && echo EXECUTOR_ENVIRON:OPEN`,
              `kill -0 ${ex.pid} 2>/dev/null && echo SIGNAL_EXECUTOR:OPEN`,
              `kill -0 ${otherPid} 2>/dev/null && echo SIGNAL_OTHER_CALL:OPEN`,
              "sleep 1000 & kill $! && echo SIGNALS_WITHIN_THE_CALL",
            ].join("; "),
          },
          workspace,
        ),
        undefined,
        () => {},
      );
      stopOther.abort();
      await assert.rejects(other, /aborted/);
      return (result.content[0] as { text: string }).text;
    };
    const nested = await probe(true);
    assert.doesNotMatch(nested, /:OPEN/);
    assert.match(nested, /SIGNALS_WITHIN_THE_CALL/);
    // Without nesting, the tools share the executor's domain and uid: they can trace and signal it (the test
    // can fail).
    const flat = await probe(false);
    assert.match(flat, /EXECUTOR_FDS:OPEN/);
    assert.match(flat, /SIGNAL_EXECUTOR:OPEN/);
    assert.match(flat, /SIGNAL_OTHER_CALL:OPEN/);
  });

  it("a call's nested domain still lets a tool link and rename across directories (git push to a local repository)", {
    skip: landlockAbi < 2 ? "kernel without Landlock ABI 2" : false,
  }, async (t) => {
    const { workspace, home } = toolDirs(t);
    const ex = startExecutor(t, { workspace, home, uid: NOBODY, gid: NOGROUP, landlock: true });
    assert.equal((await ex.client.hello).shell.nested, true);
    // Landlock denies cross-directory links and renames (REFER) in any domain that does not grant them.
    const result = await ex.client.call(
      call(
        "bash",
        {
          command:
            "git init -q --bare -b main r.git && git init -q -b main w && git -C w -c user.email=a@b -c user.name=a commit -q --allow-empty -m x && git -C w push -q ../r.git HEAD:refs/heads/main && echo PUSHED",
        },
        workspace,
      ),
      undefined,
      () => {},
    );
    assert.match((result.content[0] as { text: string }).text, /PUSHED/);
  });

  it("user_bash streams raw bytes and the exit code; abort ends it", async (t) => {
    const { workspace, home } = toolDirs(t);
    const ex = startExecutor(t, { workspace, home, uid: NOBODY, gid: NOGROUP, landlock: true });
    const chunks: Buffer[] = [];
    const done = await ex.client.userBash(
      "printf 'caf\\303'; sleep 0.1; printf '\\251\\n'; id -u; exit 7",
      workspace,
      undefined,
      (d) => chunks.push(d),
    );
    assert.equal(done.exitCode, 7);
    assert.equal(Buffer.concat(chunks).toString("utf8"), `café\n${NOBODY}\n`);
    const abort = new AbortController();
    const running = ex.client.userBash(
      `export M=UB_ABORT_1_${RUN}; sleep 1000 & sleep 1000`,
      workspace,
      abort.signal,
      () => {},
    );
    await waitUntil(() => marked(`M=UB_ABORT_1_${RUN}`).length >= 2, 5_000, "the user command");
    abort.abort();
    await assert.rejects(running, /aborted/);
    await waitUntil(
      () => marked(`M=UB_ABORT_1_${RUN}`).length === 0,
      2_000,
      "the user command's tree to end",
    );
  });

  it("context_check: the tools read the same bytes at the path, or it is reported", async (t) => {
    const { base, workspace, home } = toolDirs(t);
    const ex = startExecutor(t, { workspace, home, uid: NOBODY, gid: NOGROUP, landlock: true });
    const sha = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");
    writeAsNobody(path.join(workspace, "AGENTS.md"), "be nice\n");
    const secret = path.join(base, "private");
    mkdirSync(secret, { mode: 0o700 });
    writeFileSync(path.join(secret, "auth.json"), "{}\n");
    symlinkSync(path.join(secret, "auth.json"), path.join(workspace, "CLAUDE.md"));
    symlinkSync("/proc/self/environ", path.join(workspace, "ENV.md"));
    const verdicts = await ex.client.contextCheck([
      { path: path.join(workspace, "AGENTS.md"), sha256: sha("be nice\n") },
      { path: path.join(workspace, "AGENTS.md"), sha256: sha("something else") },
      { path: path.join(workspace, "CLAUDE.md"), sha256: sha("{}\n") },
      { path: path.join(workspace, "ENV.md"), sha256: sha("PI_ENV=1\0") },
      { path: path.join(workspace, "none.md"), sha256: sha("") },
    ]);
    assert.deepEqual(
      verdicts.map((v) => v.same),
      [true, false, false, false, false],
    );
  });

  it("inside its Landlock domain the executor's tools reach only the workspace, /tmp and their HOME", {
    skip: landlockAbi < 6 ? "kernel without Landlock ABI 6" : false,
  }, async (t) => {
    const { workspace, home } = toolDirs(t);
    // Readable and writable for nobody by mode bits, but outside the domain: only Landlock keeps it closed.
    const outside = mkdtempSync(path.join("/var/tmp", "executor-outside-"));
    t.after(() => rmSync(outside, { recursive: true, force: true }));
    chmodSync(outside, 0o777);
    writeFileSync(path.join(outside, "secret"), "outside secret\n", { mode: 0o666 });
    chmodSync(path.join(outside, "secret"), 0o666);
    const target = spawn("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "1000"], {
      env: { PATH: process.env.PATH, HIDDEN_IN_ENV: "environ-secret-value" },
      stdio: "ignore",
    });
    t.after(() => target.kill("SIGKILL"));
    await waitUntil(
      () => {
        try {
          return readFileSync(`/proc/${target.pid}/environ`, "latin1").includes("HIDDEN_IN_ENV");
        } catch {
          return false;
        }
      },
      5_000,
      "the target process",
    );
    const probe = [
      `cat ${outside}/secret && echo READ_OUTSIDE`,
      `echo x > ${outside}/planted && echo WROTE_OUTSIDE`,
      `cat /proc/${target.pid}/environ && echo READ_ENVIRON`,
      `kill -STOP ${target.pid} && echo SIGNALLED`,
      `echo ok > ${workspace}/in-ws && echo WROTE_WS`,
      `echo ok > /tmp/executor-landlock-probe-$$ && rm /tmp/executor-landlock-probe-$$ && echo WROTE_TMP`,
      `echo ok > ${home}/in-home && echo WROTE_HOME`,
    ].join("; ");
    const check = async (landlock: boolean) => {
      const ex = startExecutor(t, { workspace, home, uid: NOBODY, gid: NOGROUP, landlock });
      const result = await ex.client.call(
        call("bash", { command: `${probe}; true` }, workspace),
        undefined,
        () => {},
      );
      return (result.content[0] as { text: string }).text;
    };
    const inside = await check(true);
    for (const denied of [
      "READ_OUTSIDE",
      "WROTE_OUTSIDE",
      "READ_ENVIRON",
      "SIGNALLED",
      "environ-secret-value",
      "outside secret",
    ]) {
      assert.ok(!inside.includes(denied), `${denied} in: ${inside}`);
    }
    for (const allowed of ["WROTE_WS", "WROTE_TMP", "WROTE_HOME"])
      assert.ok(inside.includes(allowed), `${allowed} in: ${inside}`);
    // The same probe without the domain: every attack succeeds (the test can fail).
    const unconfined = await check(false);
    for (const succeeded of [
      "READ_OUTSIDE",
      "WROTE_OUTSIDE",
      "READ_ENVIRON",
      "SIGNALLED",
      "environ-secret-value",
    ]) {
      assert.ok(unconfined.includes(succeeded), `${succeeded} in: ${unconfined}`);
    }
    process.kill(target.pid ?? 0, "SIGCONT");
  });
});
