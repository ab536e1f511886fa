// The tools' supervisor (landlock-exec --supervise, the built helper) on this host, benign behaviour only:
// loopback traffic of every kind works through the egress guard and is reported; what a tool leaves behind
// (double fork, own session, empty environment) ends with the program and with the bridge's control channel;
// the task cap and the OOM score are applied; a held program starts only when released; connects are
// attributed to their call. Nothing here connects anywhere but loopback (denials are tested in the image:
// tests/image/sandbox.test.ts).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { constants as osConstants, tmpdir } from "node:os";
import path from "node:path";
import { describe, it, type TestContext } from "node:test";
import { snapshotProcesses, sweepOrphanTools } from "../../agent-runtime/process-tree.ts";
import { egressTier } from "../../agent-runtime/sandbox/egress.ts";
import { landlockArgs, toolsDomain } from "../../agent-runtime/sandbox/landlock.ts";
import type { ConnectEvent } from "../../agent-runtime/sandbox/supervisor.ts";
import { root, waitUntil } from "../support/bridge.ts";
import { bundleDir, landlockAbi, landlockHelper } from "../support/executor.ts";
import { supervise } from "../support/supervisor.ts";

const isRoot = process.geteuid?.() === 0;
const NOBODY = 65534;
const RUN = `${process.pid}x${Date.now().toString(36)}`;
const probe = landlockHelper
  ? (JSON.parse(spawnSync(landlockHelper, ["--probe"], { encoding: "utf8" }).stdout) as {
      abi: number;
      landlockNet: boolean;
      seccompFilter: boolean;
      seccompNotify: boolean;
      notifyAddfd: boolean;
    })
  : undefined;
const guarded = probe?.seccompNotify === true && probe.notifyAddfd;

function scratch(t: TestContext, owner = NOBODY) {
  const base = mkdtempSync(path.join(tmpdir(), "supervisor-test-"));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  chmodSync(base, 0o755);
  const workspace = path.join(base, "ws");
  const home = path.join(base, "home");
  for (const dir of [workspace, home]) {
    mkdirSync(dir);
    chownSync(dir, owner, owner);
  }
  return { base, workspace, home };
}

/** The tools' domain as the bridge gives it (Landlock handling TCP connect when the kernel can). */
function rules(workspace: string, home: string): string[] {
  if (landlockAbi === 0) return [];
  const domain = toolsDomain({
    workspace,
    toolHome: home,
    runtime: [bundleDir, process.execPath, path.join(root, "node_modules"), path.join(root, "tests")],
  });
  return landlockArgs(domain, landlockAbi, { tcpConnect: probe?.landlockNet === true });
}

/**
 * A shell snippet that leaves a process named `sleep-<tag>` behind: its own session, an empty environment, a
 * double fork. The name is assembled at run time, so no parent's command line contains it.
 */
function detached(tag: string): string {
  return `setsid env -i /bin/bash -c 'n=sleep; (exec -a "$n-${tag}" /bin/sleep 1000 &)'`;
}

/**
 * Writes a line to a FIFO a program is reading; false while no reader has it open (a non-blocking open for
 * writing fails with ENXIO then), so a waitUntil retries it.
 */
function releaseFifo(fifo: string): boolean {
  let fd: number;
  try {
    fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENXIO") return false;
    throw error;
  }
  try {
    writeSync(fd, "go\n");
  } finally {
    closeSync(fd);
  }
  return true;
}

/** The sweep a pair of this test's tools would run (its uid, its OOM score). */
function sweepOf(wholeUid: boolean) {
  return { toolsUid: NOBODY, oomScoreAdj: 1000, wholeUid, helper: landlockHelper ?? "" };
}

/** Live processes whose command line contains `needle`. */
function withCmdline(needle: string): number[] {
  return snapshotProcesses()
    .filter((p) => p.state !== "Z")
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p.pid}/cmdline`, "latin1").includes(needle);
      } catch {
        return false;
      }
    })
    .map((p) => p.pid);
}

describe("the tools' supervisor", {
  skip: !isRoot || !landlockHelper ? "needs root and the built helper" : false,
}, () => {
  it("the kernel probe says what the guard can enforce, and the supervisor installs exactly that", async (t) => {
    assert.ok(probe);
    assert.equal(probe.abi, landlockAbi);
    assert.equal(probe.landlockNet, probe.abi >= 4);
    const tier = egressTier({
      landlockAbi: probe.abi,
      landlockNet: probe.landlockNet,
      seccompFilter: probe.seccompFilter,
      seccompNotify: probe.seccompNotify,
      notifyAddfd: probe.notifyAddfd,
      waitKillable: false,
    });
    const { workspace } = scratch(t);
    const s = supervise(t, {
      program: ["/bin/bash", "-c", "grep -E '^Seccomp(_filters)?:' /proc/self/status"],
      cwd: workspace,
      uid: NOBODY,
      filter: tier.filter,
    });
    const ready = await s.reports.waitFor((r) => r.type === "ready");
    assert.equal(ready.type === "ready" && ready.filter, tier.filter);
    const exit = await s.reports.waitFor((r) => r.type === "exit");
    assert.deepEqual(exit, { type: "exit", code: 0, signal: 0, killed: 0 });
    await s.exited;
    // The program carries one filter more than this process: the supervisor's, applied in the child only.
    const own = Number(/Seccomp_filters:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0);
    const theirs = Number(/Seccomp_filters:\s+(\d+)/.exec(s.output())?.[1] ?? -1);
    assert.equal(theirs, tier.filter === "none" ? own : own + 1, s.output());
  });

  it("loopback keeps working through the guard, as client and server (fetch, http, sockets, curl, /dev/tcp, Python, git), and each connect is reported", {
    skip: !guarded ? "no seccomp user notification with ADDFD on this kernel" : false,
  }, async (t) => {
    const { base, workspace, home } = scratch(t);
    const s = supervise(t, {
      program: [
        process.execPath,
        path.join(root, "tests", "support", "fixtures", "loopback-clients.mjs"),
        workspace,
      ],
      cwd: workspace,
      uid: NOBODY,
      rules: rules(workspace, home),
      filter: "notify",
      env: { HOME: home, TMPDIR: path.join(base, "ws") },
    });
    const exit = await s.reports.waitFor((r) => r.type === "exit", 60_000);
    await s.exited;
    assert.equal(exit.type === "exit" && exit.code, 0, s.output());
    const line = s
      .output()
      .split("\n")
      .find((l) => l.startsWith("{") && l.includes('"fetch"'));
    assert.ok(line, s.output());
    const results = JSON.parse(line) as Record<string, string>;
    assert.equal(results.fetch, "pong");
    assert.equal(results.httpLocalhost, "pong");
    if (results.fetchIpv6 !== undefined) assert.equal(results.fetchIpv6, "pong6");
    assert.equal(results.socket, "pong");
    assert.equal(results.closedPort, "ECONNREFUSED");
    assert.equal(results.curl, "pong");
    assert.equal(results.devTcp, "pong");
    if (existsSync("/usr/bin/python3")) assert.equal(results.python, "pong");
    assert.equal(results.gitSetup, "", JSON.stringify(results));
    assert.equal(results.gitClone, "");
    assert.equal(results.gitLog, "first", JSON.stringify(results));
    // Every one of those connects went through the supervisor (the guard cannot be silently absent).
    const connects = s.reports.items.filter((r): r is ConnectEvent => r.type === "connect");
    assert.ok(connects.length >= 8, JSON.stringify(connects));
    for (const c of connects) {
      assert.equal(c.verdict, "performed");
      assert.match(c.address, /^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)$/);
      // The port the tool connected from (the egress proxy pairs its connections by it); none when refused.
      if (c.errno === 0 || c.errno === osConstants.errno.EINPROGRESS)
        assert.ok(c.localPort > 0, JSON.stringify(c));
      else assert.equal(c.localPort, 0, JSON.stringify(c));
    }
    assert.ok(
      connects.some((c) => c.port === 1),
      "the connect to a closed loopback port is reported",
    );
  });

  it("a connect on an fd that is not a socket fails as the kernel's would (ENOTSOCK, EBADF) and leaves the fd as it was; a socket's connect works", {
    skip: !guarded ? "no seccomp user notification with ADDFD on this kernel" : false,
  }, async (t) => {
    const { workspace, home } = scratch(t);
    const server = createServer((_q, r) => r.end("ok"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    t.after(() => server.close());
    const port = (server.address() as AddressInfo).port;
    // A program that calls connect() itself on a file, a closed fd number, a pipe and a socket (no library between).
    const source = path.join(workspace, "fds.c");
    const program = path.join(workspace, "fds");
    writeFileSync(
      source,
      `#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1])), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int file = open(argv[2], O_RDONLY), pipes[2];
  if (file < 0 || pipe(pipes) != 0) return 2;
  int r1 = connect(file, (void *)&a, sizeof(a)), e1 = errno;
  int r2 = connect(999, (void *)&a, sizeof(a)), e2 = errno;
  int r3 = connect(pipes[0], (void *)&a, sizeof(a)), e3 = errno;
  char c = 0;
  int readable = read(file, &c, 1) == 1 && c == 'x';
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  int r4 = connect(sock, (void *)&a, sizeof(a));
  printf("{\\"file\\":%d,\\"closed\\":%d,\\"pipe\\":%d,\\"fileReadable\\":%d,\\"socket\\":%d}\\n",
         r1 ? e1 : 0, r2 ? e2 : 0, r3 ? e3 : 0, readable, r4);
  return 0;
}
`,
    );
    const data = path.join(workspace, "data.txt");
    writeFileSync(data, "x");
    const built = spawnSync("gcc", ["-O1", "-o", program, source], { encoding: "utf8" });
    assert.equal(built.status, 0, built.stderr);
    chownSync(program, NOBODY, NOBODY);
    const s = supervise(t, {
      program: [program, String(port), data],
      cwd: workspace,
      uid: NOBODY,
      rules: rules(workspace, home),
      filter: "notify",
    });
    const exit = await s.reports.waitFor((r) => r.type === "exit", 30_000);
    await s.exited;
    assert.equal(exit.type === "exit" && exit.code, 0, s.output());
    const line = s
      .output()
      .split("\n")
      .find((l) => l.startsWith('{"file"'));
    assert.ok(line, s.output());
    assert.deepEqual(JSON.parse(line), {
      file: osConstants.errno.ENOTSOCK,
      closed: osConstants.errno.EBADF,
      pipe: osConstants.errno.ENOTSOCK,
      fileReadable: 1,
      socket: 0,
    });
    // Only the socket's connect was performed (the others were refused before anything was connected).
    const performed = s.reports.items.filter((r) => r.type === "connect" && r.verdict === "performed");
    assert.equal(performed.length, 1, JSON.stringify(s.reports.items));
  });

  it("without Landlock's TCP rule (kernels before 6.7) nothing continues in the kernel: the supervisor performs unix connects too, and they work", {
    skip: !guarded ? "no seccomp user notification with ADDFD on this kernel" : false,
  }, async (t) => {
    const { workspace, home } = scratch(t);
    // A unix stream server and datagram socket (a relative path, from the tool's cwd), and loopback TCP.
    const program = [
      "/usr/bin/python3",
      "-c",
      [
        "import os, socket, threading",
        "srv = socket.socket(socket.AF_UNIX); srv.bind('s.sock'); srv.listen(1)",
        "threading.Thread(target=lambda: srv.accept()[0].sendall(b'unix-ok'), daemon=True).start()",
        "c = socket.socket(socket.AF_UNIX); before = os.fstat(c.fileno()).st_ino; c.connect('s.sock'); print(c.recv(16).decode())",
        // The supervisor's own socket now sits at the tool's fd: not the kernel continuing the tool's connect.
        "print('replaced' if os.fstat(c.fileno()).st_ino != before else 'continued')",
        "d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind(os.path.abspath('d.sock'))",
        "e = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); e.connect(os.path.abspath('d.sock')); e.send(b'dgram-ok'); print(d.recv(16).decode())",
        "t = socket.socket(); t.bind(('127.0.0.1', 0)); t.listen(1)",
        "u = socket.create_connection(t.getsockname(), 5); print('tcp-ok' if t.accept() else 'no')",
      ].join("\n"),
    ];
    const s = supervise(t, {
      program,
      cwd: workspace,
      uid: NOBODY,
      rules: rules(workspace, home).filter((arg) => arg !== "--net-tcp"),
      filter: "notify",
    });
    await s.reports.waitFor((r) => r.type === "exit", 30_000);
    await s.died;
    const ready = s.reports.items.find((r) => r.type === "ready");
    assert.equal(ready?.type === "ready" && ready.landlockTcp, false);
    for (const word of ["unix-ok", "replaced", "dgram-ok", "tcp-ok"])
      assert.match(s.output(), new RegExp(`^${word}$`, "m"), s.output());
  });

  it("what a program leaves behind (own session, empty environment, double fork) ends with it, and with the bridge's control channel", async (t) => {
    const { workspace } = scratch(t);
    // The program ends only when the test releases it, once its detached process is seen running.
    const release = path.join(workspace, "release");
    assert.equal(spawnSync("mkfifo", ["-m", "0600", release]).status, 0, "mkfifo");
    chownSync(release, NOBODY, NOBODY);
    const first = supervise(t, {
      program: [
        "/bin/bash",
        "-c",
        `${detached(`a${RUN}`)}; (nohup sleep 1000 >/dev/null 2>&1 &); read -r _ < release; echo done`,
      ],
      cwd: workspace,
      uid: NOBODY,
    });
    await waitUntil(() => withCmdline(`sleep-a${RUN}`).length === 1, 5_000, "the detached process");
    await waitUntil(() => releaseFifo(release), 5_000, "the program to wait for its release");
    await first.reports.waitFor((r) => r.type === "exit", 10_000);
    assert.match(first.output(), /^done$/m, "the program ran to its end");
    assert.deepEqual(withCmdline(`sleep-a${RUN}`), [], "the detached process ended with the program");

    // The bridge dies (its control channel closes): everything goes, the program too.
    const second = supervise(t, {
      program: ["/bin/bash", "-c", `${detached(`b${RUN}`)}; exec sleep 1000`],
      cwd: workspace,
      uid: NOBODY,
    });
    await waitUntil(() => withCmdline(`sleep-b${RUN}`).length === 1, 5_000, "the detached process");
    second.control.destroy();
    assert.equal((await second.exited).signal, "SIGKILL");
    assert.deepEqual(withCmdline(`sleep-b${RUN}`), []);
  });

  it("a tool process whose supervisor was killed is found and ended by the next pair's sweep", async (t) => {
    const { workspace } = scratch(t);
    const s = supervise(t, {
      program: ["/bin/bash", "-c", `${detached(`c${RUN}`)}; exec sleep 1000`],
      cwd: workspace,
      uid: NOBODY,
      oomScoreAdj: 1000,
      filter: probe?.seccompFilter ? "no-inet" : "none",
    });
    await waitUntil(() => withCmdline(`sleep-c${RUN}`).length === 1, 5_000, "the detached process");
    const [orphan] = withCmdline(`sleep-c${RUN}`);
    t.after(() => {
      try {
        if (orphan !== undefined) process.kill(orphan, "SIGKILL");
      } catch {}
    });
    // Held by a live supervisor: the sweep leaves it alone, even a sweep by a bridge installed elsewhere.
    sweepOrphanTools(sweepOf(false));
    sweepOrphanTools({ ...sweepOf(true), helper: "/another/install/landlock-exec" });
    assert.deepEqual(withCmdline(`sleep-c${RUN}`), [orphan], "a live supervisor's tool was swept");
    process.kill(s.pid, "SIGKILL");
    await s.died;
    assert.equal(withCmdline(`sleep-c${RUN}`).length, 1, "the supervisor's death alone left it running");
    if (probe?.seccompFilter) {
      assert.ok(sweepOrphanTools(sweepOf(false)) >= 1);
      await waitUntil(() => withCmdline(`sleep-c${RUN}`).length === 0, 2_000, "the orphan to be swept");
    } else {
      // No filter to tell tools apart on one uid: only a uid of their own does.
      assert.ok(sweepOrphanTools(sweepOf(true)) >= 1);
    }
  });

  it("applies the task cap and the OOM score; in the domain a tool cannot lower its score", async (t) => {
    const { workspace, home } = scratch(t);
    // An unusual uid: RLIMIT_NPROC counts every process of the uid on this machine.
    const uid = 64123;
    chownSync(workspace, uid, uid);
    chownSync(home, uid, uid);
    // Start 60 sleepers (Python: no retry on EAGAIN, unlike bash): only as many as the cap leaves start.
    const spawner = [
      "import subprocess",
      "ok = refused = 0",
      "for _ in range(60):",
      "    try:",
      "        subprocess.Popen(['/bin/sleep', '30']); ok += 1",
      "    except BlockingIOError:",
      "        refused += 1",
      "print(f'started {ok} refused {refused}')",
    ].join("\n");
    const program = [
      "/bin/bash",
      "-c",
      [
        "ulimit -u",
        "cat /proc/self/oom_score_adj",
        "(echo 0 > /proc/self/oom_score_adj) 2>/dev/null && echo LOWERED || echo KEPT",
        `exec /usr/bin/python3 -c "${spawner}"`,
      ].join("; "),
    ];
    const capped = supervise(t, {
      program,
      cwd: workspace,
      uid,
      nproc: 24,
      oomScoreAdj: 1000,
      rules: rules(workspace, home),
    });
    await capped.reports.waitFor((r) => r.type === "exit", 60_000);
    await capped.exited;
    const lines = capped
      .output()
      .split("\n")
      .filter((l) => /^(\d+|KEPT|LOWERED)$/.test(l));
    assert.deepEqual(lines, ["24", "1000", landlockAbi > 0 ? "KEPT" : "LOWERED"], capped.output());
    const [, started, refused] = /started (\d+) refused (\d+)/.exec(capped.output()) ?? [];
    // The uid's tasks: the supervisor, Python, the sleepers.
    assert.ok(Number(started) <= 22 && Number(started) >= 10, capped.output());
    assert.equal(Number(started) + Number(refused), 60);
    // Without the domain the same tool can lower it again (why the domain's read-only /proc matters).
    const open = supervise(t, {
      program: ["/bin/bash", "-c", "echo 0 > /proc/$$/oom_score_adj; cat /proc/self/oom_score_adj"],
      cwd: workspace,
      uid,
      oomScoreAdj: 1000,
    });
    await open.reports.waitFor((r) => r.type === "exit");
    await open.exited;
    assert.match(open.output(), /^0$/m);
  });

  it("a held program starts only when the bridge says go, or when Pi first writes on its channel", async (t) => {
    const { workspace } = scratch(t);
    const marker = path.join(workspace, "started");
    for (const release of ["go", "channel"] as const) {
      const s = supervise(t, {
        program: ["/bin/bash", "-c", `echo ${release} >> ${marker}`],
        cwd: workspace,
        uid: NOBODY,
        hold: true,
      });
      s.channel.on("error", () => {}); // the program exits at once: its end of the channel goes with it
      const ready = await s.reports.waitFor((r) => r.type === "ready");
      assert.equal(ready.type === "ready" && ready.held, true);
      // The child is set up (limits, domain, filter) and waits before exec: nothing ran.
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(existsSync(marker) && readFileSync(marker, "utf8").includes(release), false);
      if (release === "go") s.send({ type: "go" });
      else s.channel.write('{"type":"hello","protocol":1}\n');
      const released = await s.reports.waitFor((r) => r.type === "released");
      assert.deepEqual(released, { type: "released", by: release === "go" ? "bridge" : "channel" });
      await s.reports.waitFor((r) => r.type === "exit");
      assert.match(readFileSync(marker, "utf8"), new RegExp(release));
    }
  });

  it("a connect to the egress proxy is attributed to its call: the executor's direct child that is a call helper; a tool cannot claim another label; other loopback connects name no call", {
    skip: !guarded ? "no seccomp user notification with ADDFD on this kernel" : false,
  }, async (t) => {
    const { workspace, home } = scratch(t);
    const helper = landlockHelper ?? "";
    // Two loopback servers outside the tools: one stands for the egress proxy (the supervisor is told its port).
    const listen = async () => {
      const server = createServer((_q, r) => r.end("ok"));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      t.after(() => server.close());
      return (server.address() as AddressInfo).port;
    };
    const proxyPort = await listen();
    const otherPort = await listen();
    const client = (port: number) =>
      `exec 3<>/dev/tcp/127.0.0.1/${port}; printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3 >/dev/null`;
    // The "executor" (the supervised program) starts a call helper; inside the call, a tool runs the helper
    // itself with another label, and connects from there.
    const inner = `${client(proxyPort)}; ${helper} --call forged-label -- /bin/bash -c "${client(proxyPort).replaceAll('"', '\\"')}"; ${client(otherPort)}`;
    const program = [
      process.execPath,
      "-e",
      `require("child_process").spawn(${JSON.stringify(helper)}, ["--call", "call-one", "--nest", "--", "/bin/bash", "-c", ${JSON.stringify(inner)}], { stdio: "inherit" });`,
    ];
    const s = supervise(t, {
      program,
      cwd: workspace,
      uid: NOBODY,
      rules: rules(workspace, home),
      filter: "notify",
      proxyPort,
    });
    await s.reports.waitFor((r) => r.type === "exit", 30_000);
    const connects = s.reports.items.filter((r): r is ConnectEvent => r.type === "connect");
    assert.equal(connects.length, 3, JSON.stringify(s.reports.items) + s.output());
    assert.deepEqual(
      connects.map((c) => [c.port, c.call, c.verdict]),
      [
        [proxyPort, "call-one", "performed"],
        [proxyPort, "call-one", "performed"],
        [otherPort, null, "performed"],
      ],
    );
  });
});
