// The pure parts of issue 11's isolation, without processes: the executor protocol's validation, the tools'
// allow-listed environment, the Landlock arguments, the isolation report, the token re-exec, the state-dir tree,
// the context-file guard, the active tool set and the executor's path check (process trees: process-tree.test.ts).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  chmodSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { loadPiToolPaths } from "../../agent-runtime/executor/pi-modules.ts";
import {
  ExecutorRequest,
  ExecutorResponse,
  MAX_CONCURRENT_CALLS,
} from "../../agent-runtime/executor/protocol.ts";
import { isPassableName, toolEnvironment } from "../../agent-runtime/executor/tool-env.ts";
import { pathRefusal } from "../../agent-runtime/executor/tool-runner.ts";
import { createLogger } from "../../agent-runtime/log.ts";
import { choosePolicyPath } from "../../agent-runtime/policy/policy-store.ts";
import {
  grantedTreeHolding,
  type KernelFeatures,
  type LandlockProbe,
  landlockArgs,
  toolsDomain,
} from "../../agent-runtime/sandbox/landlock.ts";
import { dropRoot, isolationCapability, lookupUser } from "../../agent-runtime/sandbox/privileges.ts";
import { activeToolsWithoutOverrides } from "../../agent-runtime/tools/active-tools.ts";
import type { ExecutorClient } from "../../agent-runtime/tools/executor-client.ts";
import { executorFd, guardContextFiles } from "../../agent-runtime/tools/router.ts";
import { decidePrincipals, isolationReport, type ProtectionState } from "../../bridge/isolation.ts";
import {
  operatorAgentDir,
  preparePrivateTree,
  seedAgentDir,
  toolsMayWrite,
} from "../../bridge/launch-plan.ts";
import { Isolation } from "../../bridge/protocol.ts";
import { HANDOVER_PREFIX, reexecWithoutSecrets } from "../../bridge/token-handover.ts";
import { root } from "../support/bridge.ts";
import { tempDir } from "../support/workspace.ts";

const silent = createLogger("test", "silent");
const sha = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");
const call = {
  type: "call",
  id: "c1",
  tool: "read",
  params: { path: "/ws/a" },
  cwd: "/ws",
  vetted: [],
  options: { autoResizeImages: true, modelInput: null },
  sessionEnv: {},
};

describe("executor protocol", () => {
  it("accepts the requests both ends send and refuses everything else", () => {
    assert.equal(ExecutorRequest.safeParse(call).success, true);
    assert.equal(ExecutorRequest.safeParse({ type: "hello", protocol: 1 }).success, true);
    assert.equal(
      ExecutorRequest.safeParse({ type: "user_bash", id: "u", command: "ls", cwd: "/ws" }).success,
      true,
    );
    const bad: Record<string, unknown>[] = [
      { ...call, cwd: "relative" },
      { ...call, cwd: "/ws\0x" },
      { ...call, tool: "shell" },
      { ...call, extra: true },
      { ...call, id: "" },
      { ...call, id: "x".repeat(513) },
      {
        ...call,
        vetted: Array.from({ length: 65 }, () => ({ path: "/a", sha256: "0".repeat(64), bytes: 1 })),
      },
      { ...call, vetted: [{ path: "/a", sha256: "nothex", bytes: 1 }] },
      { ...call, sessionEnv: { OPENAI_API_KEY: "x" } },
      { ...call, options: { autoResizeImages: true, modelInput: null, shellPath: "/bin/evil" } },
      { type: "hello", protocol: 2 },
      { type: "abort" },
      { type: "context_check", id: "c", files: [{ path: "rel", sha256: "0".repeat(64) }] },
    ];
    for (const frame of bad)
      assert.equal(ExecutorRequest.safeParse(frame).success, false, JSON.stringify(frame).slice(0, 120));
    assert.ok(MAX_CONCURRENT_CALLS >= 16);
  });

  it("accepts Pi's result shapes and refuses malformed answers", () => {
    const result = {
      type: "result",
      id: "c1",
      result: { content: [{ type: "text", text: "x" }], details: { a: 1 } },
    };
    assert.equal(ExecutorResponse.safeParse(result).success, true);
    const image = {
      type: "result",
      id: "c1",
      result: { content: [{ type: "image", data: "AA==", mimeType: "image/png" }] },
    };
    assert.equal(ExecutorResponse.safeParse(image).success, true);
    assert.equal(
      ExecutorResponse.safeParse({ type: "result", id: "c1", result: { content: [{ type: "video" }] } })
        .success,
      false,
    );
    assert.equal(
      ExecutorResponse.safeParse({ type: "error", id: "c1", code: "nope", message: "" }).success,
      false,
    );
    assert.equal(ExecutorResponse.safeParse({ type: "exit", id: "c1", exitCode: 1.5 }).success, false);
  });
});

describe("the tools' environment", () => {
  it("is an allow-list: no provider key, no token, unless an operator names a variable", () => {
    const source = {
      PATH: "/usr/bin",
      LANG: "C.UTF-8",
      LC_ALL: "C",
      TERM: "xterm",
      HOME: "/root",
      OPENAI_API_KEY: "sk-x",
      HF_TOKEN: "hf_x",
      CHAT_UI_AGENT_BRIDGE_TOKEN: "t",
      SBX_TOKEN: "s",
      NPM_CONFIG_REGISTRY: "https://r",
    };
    const env = toolEnvironment(source, {
      home: "/home/agent",
      user: "agent",
      runMarker: { name: "CHAT_UI_AGENT_RUN_ID", value: "r1" },
      passThrough: ["NPM_CONFIG_REGISTRY", "CHAT_UI_AGENT_BRIDGE_TOKEN"],
    });
    assert.deepEqual(env, {
      PATH: "/usr/bin",
      LANG: "C.UTF-8",
      LC_ALL: "C",
      TERM: "xterm",
      NPM_CONFIG_REGISTRY: "https://r",
      HOME: "/home/agent",
      USER: "agent",
      LOGNAME: "agent",
      CHAT_UI_AGENT_RUN_ID: "r1",
    });
    assert.equal(isPassableName("CHAT_UI_AGENT_BRIDGE_X"), false);
    assert.equal(isPassableName("A B"), false);
    assert.equal(isPassableName("GOOD_NAME"), true);
    assert.equal(
      toolEnvironment(
        {},
        { home: "/h", user: undefined, runMarker: { name: "M", value: "v" }, passThrough: [] },
      ).PATH,
      "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    );
  });
});

describe("Landlock domain", () => {
  it("grants the workspace, /tmp and HOME for writing, system trees for reading; scopes from ABI 6", () => {
    const domain = toolsDomain({
      workspace: "/workspace",
      toolHome: "/home/agent",
      runtime: ["/opt/chat-ui-agent"],
    });
    assert.ok(
      domain.write.includes("/workspace") &&
        domain.write.includes("/tmp") &&
        domain.write.includes("/home/agent"),
    );
    assert.ok(domain.read.includes("/usr") && domain.read.includes("/proc"));
    assert.ok(!domain.read.includes("/var") && !domain.write.includes("/var"));
    assert.equal(grantedTreeHolding("/var/lib/chat-ui-agent", domain), undefined);
    assert.equal(grantedTreeHolding("/tmp/state", domain), "/tmp");
    const v7 = landlockArgs(domain, 7);
    assert.ok(v7.includes("--scope-signal") && v7.includes("--scope-abstract-unix"));
    assert.deepEqual(v7.slice(-2), ["--require-abi", "6"]);
    const v4 = landlockArgs(domain, 4);
    assert.ok(!v4.includes("--scope-signal"));
    assert.deepEqual(v4.slice(-2), ["--require-abi", "4"]);
  });
});

/** What a kernel like this machine's offers (ABI `abi`, seccomp notifications with ADDFD), in a 512-task container. */
function kernel(abi: number, features: Partial<KernelFeatures> = {}): LandlockProbe & { helper: string } {
  return {
    abi,
    helper: "/x",
    features: {
      landlockAbi: abi,
      landlockNet: abi >= 4,
      seccompFilter: true,
      seccompNotify: true,
      notifyAddfd: true,
      waitKillable: true,
      ...features,
    },
    budget: { containerMax: 512, source: "/sys/fs/cgroup/pids.max", toolsNproc: 384, reserve: 128 },
  };
}

function protections(over: Partial<ProtectionState> = {}): ProtectionState {
  const passwd =
    "root:x:0:0::/root:/bin/sh\nagent:x:1000:1000::/home/agent:/bin/sh\npi:x:999:999::/nonexistent:/bin/false\n";
  return {
    principals: decidePrincipals({
      euid: 0,
      egid: 0,
      agentUser: "agent",
      piUser: undefined,
      passwd: () => passwd,
      env: {},
    }),
    landlock: { requested: true, probe: kernel(7), failure: undefined },
    toolEnv: { passThrough: [] },
    token: { scrubbed: true, detail: "re-executed" },
    executor: { running: true, detail: "routed" },
    placement: [],
    notes: [],
    ...over,
  };
}

describe("isolation report", () => {
  it("is isolated only when every protection holds, and names each one that does not", () => {
    const full = isolationReport(protections());
    Isolation.parse(full);
    assert.equal(full.mode, "isolated");
    assert.equal(full.reason, null);
    assert.deepEqual(full.protections.landlock.scopes, ["signal", "abstract_unix_socket"]);
    const cases: [Partial<ProtectionState>, RegExp][] = [
      [{ landlock: { requested: false, probe: kernel(7), failure: undefined } }, /Landlock: switched off/],
      [
        {
          landlock: {
            requested: true,
            probe: { ...kernel(0), abi: 0, helper: undefined, reason: "no helper" },
            failure: undefined,
          },
        },
        /Landlock: no helper/,
      ],
      [{ landlock: { requested: true, probe: kernel(4), failure: undefined } }, /ABI 4 cannot scope/],
      [{ landlock: { requested: true, probe: kernel(7), failure: "boom" } }, /Landlock: boom/],
      [{ token: { scrubbed: false, detail: "no execve" } }, /token: no execve/],
      [{ executor: { running: false, detail: "exited" } }, /tool routing: exited/],
      [{ placement: ["state in /tmp"] }, /state: state in \/tmp/],
      [
        { landlock: { requested: true, probe: kernel(7, { notifyAddfd: false }), failure: undefined } },
        /egress: no seccomp user notification with ADDFD on this kernel: the tools get no inet socket/,
      ],
      [
        {
          landlock: {
            requested: true,
            probe: kernel(7, { seccompFilter: false, seccompNotify: false, notifyAddfd: false }),
            failure: undefined,
          },
        },
        /egress: no seccomp filter on this kernel: Landlock refuses every TCP connect/,
      ],
      [{ network: { mode: "open" } }, /egress: network mode open/],
      [
        {
          egressProxy: {
            running: false,
            detail: "the egress proxy could not listen on 127.0.0.1 (EADDRINUSE)",
          },
        },
        /egress: .*the egress proxy could not listen on 127\.0\.0\.1 \(EADDRINUSE\): the tools reach nothing beyond loopback/,
      ],
      [
        {
          landlock: {
            requested: true,
            probe: { ...kernel(0), abi: 0, helper: undefined, reason: "no helper" },
            failure: undefined,
          },
        },
        /tool processes: no supervisor/,
      ],
    ];
    for (const [over, reason] of cases) {
      const report = isolationReport(protections(over));
      Isolation.parse(report);
      assert.equal(report.mode, "degraded", reason.source);
      assert.match(report.reason ?? "", reason);
    }
    const nonRoot = isolationReport(
      protections({
        principals: decidePrincipals({
          euid: 1000,
          egid: 1000,
          agentUser: "agent",
          piUser: undefined,
          passwd: () => "",
          env: { HOME: "/home/agent" },
        }),
      }),
    );
    assert.equal(nonRoot.mode, "degraded");
    assert.equal(nonRoot.protections.landlock.active, true);
    assert.match(nonRoot.reason ?? "", /not root/);
  });

  it("says what a bridge started in this container would get (health)", () => {
    const passwd =
      "root:x:0:0::/root:/bin/sh\nagent:x:1000:1000::/home/agent:/bin/sh\npi:x:999:999::/x:/bin/false\n";
    assert.equal(isolationCapability({ startUid: 0, landlock: kernel(7), passwd }).expected, "isolated");
    const noNotify = isolationCapability({
      startUid: 0,
      landlock: kernel(7, { seccompNotify: false, notifyAddfd: false }),
      passwd,
    });
    assert.equal(noNotify.expected, "degraded");
    assert.match(noNotify.reasons.join(), /egress: .*no inet socket/);
    const asUser = isolationCapability({ startUid: 1000, landlock: kernel(7), passwd });
    assert.equal(asUser.expected, "degraded");
    assert.match(asUser.reasons.join(), /uid 1000/);
    assert.match(
      isolationCapability({ startUid: 0, landlock: kernel(7), passwd: "" }).reasons.join(),
      /no unprivileged tools user agent/,
    );
    assert.deepEqual(lookupUser("pi", passwd), { name: "pi", uid: 999, gid: 999 });
    if (process.geteuid?.() !== 0) assert.equal(dropRoot("nobody"), undefined);
  });
});

describe("token re-exec", () => {
  it("re-executes without every bridge secret, handing the token over in a private file", async (t) => {
    const state = await tempDir(t, "handover-");
    let captured: { file: string; args: string[]; env: NodeJS.ProcessEnv } | undefined;
    const execve = ((file: string, args: string[], env: NodeJS.ProcessEnv) => {
      captured = { file, args, env };
      throw new Error("stop here");
    }) as never;
    const env = {
      CHAT_UI_AGENT_BRIDGE_TOKEN: "the-token-0123456789",
      CHAT_UI_AGENT_BRIDGE_OTHER: "x",
      PATH: "/bin",
    };
    const problem = reexecWithoutSecrets({
      argv: ["bridge.mjs", "--listen", "127.0.0.1:1"],
      env,
      bridgeStateDir: path.join(state, "bridge"),
      handOverToken: true,
      execve,
    });
    // The fake execve failed: the bridge says so, and removed the handover file.
    assert.match(problem ?? "", /stop here/);
    assert.ok(captured);
    assert.deepEqual(captured.env, { PATH: "/bin" });
    const flag = captured.args.indexOf("--token-file");
    const handover = captured.args[flag + 1] ?? "";
    assert.ok(path.basename(handover).startsWith(HANDOVER_PREFIX));
    assert.throws(() => statSync(handover), { code: "ENOENT" });
    assert.equal((statSync(path.join(state, "bridge")).mode & 0o777).toString(8), "700");

    // A real handover: the file holds the token, mode 0600.
    let file = "";
    reexecWithoutSecrets({
      argv: ["bridge.mjs"],
      env,
      bridgeStateDir: path.join(state, "bridge"),
      handOverToken: true,
      execve: ((_f: string, args: string[]) => {
        file = args[args.indexOf("--token-file") + 1] ?? "";
        assert.equal(readFileSync(file, "utf8"), "the-token-0123456789");
        assert.equal((statSync(file).mode & 0o777).toString(8), "600");
        return undefined as never;
      }) as never,
    });
    assert.ok(file.length > 0);
    assert.equal(
      reexecWithoutSecrets({
        argv: [],
        env: { PATH: "/bin" },
        bridgeStateDir: state,
        handOverToken: true,
        execve,
      }),
      undefined,
    );
    assert.match(
      reexecWithoutSecrets({
        argv: [],
        env,
        bridgeStateDir: state,
        handOverToken: true,
        execve: undefined,
      }) ?? "",
      /no process.execve/,
    );
  });
});

describe("launch plan", () => {
  it("uses the configured policy file when the bridge can write its directory, else <state>/policy", async (t) => {
    const dir = await tempDir(t, "policy-");
    assert.equal(
      choosePolicyPath({ AGENT_POLICY_PATH: path.join(dir, "policy") }, "/state"),
      path.join(dir, "policy"),
    );
    assert.equal(
      choosePolicyPath({ AGENT_POLICY_PATH: "/nonexistent-dir/policy" }, "/state"),
      "/state/policy",
    );
  });

  it("makes Pi's private tree (0700) and lets Pi through the state dir only when Pi has its own uid", async (t) => {
    const state = path.join(await tempDir(t, "state-"), "s");
    const principals = decidePrincipals({
      euid: 1000,
      egid: 1000,
      agentUser: undefined,
      piUser: undefined,
      passwd: () => "",
      env: {},
    });
    const tree = preparePrivateTree(state, { ...principals, bridgeUid: process.geteuid?.() ?? 0 });
    const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);
    assert.equal(mode(state), "700");
    for (const dir of [
      tree.root,
      tree.home,
      tree.agentDir,
      tree.sessions,
      tree.tmp,
      path.join(state, "bridge"),
    ]) {
      assert.equal(mode(dir), "700", dir);
    }
  });

  it("judges what the tools could write: their domain's trees, and mode bits when they have another uid", async (t) => {
    const base = await tempDir(t, "writable-");
    const rootOwned = path.join(base, "root-owned");
    mkdirSync(rootOwned, { mode: 0o755 });
    const open = path.join(base, "open");
    mkdirSync(open, { mode: 0o777 });
    chmodSync(open, 0o777);
    const passwd =
      "root:x:0:0::/root:/bin/sh\nagent:x:4242:4242::/home/agent:/bin/sh\npi:x:999:999::/x:/bin/false\n";
    const separated = decidePrincipals({
      euid: 0,
      egid: 0,
      agentUser: "agent",
      piUser: undefined,
      passwd: () => passwd,
      env: {},
    });
    const shared = decidePrincipals({
      euid: 4242,
      egid: 4242,
      agentUser: undefined,
      piUser: undefined,
      passwd: () => passwd,
      env: {},
    });
    const domain = toolsDomain({ workspace: "/workspace", toolHome: "/home/agent", runtime: [] });
    const inTmp = toolsDomain({ workspace: "/workspace", toolHome: "/home/agent", runtime: [] });
    // Another uid: mode bits decide (a root-owned 0755 dir is safe even inside a granted tree).
    if (process.geteuid?.() === 0) {
      assert.equal(toolsMayWrite(path.join(rootOwned, "policy"), separated, undefined), false);
      assert.equal(toolsMayWrite(path.join(open, "policy"), separated, undefined), true);
    }
    // One uid: only the domain decides; outside its trees nothing is writable, inside everything is.
    assert.equal(toolsMayWrite("/var/lib/chat-ui-agent/policy", shared, domain), false);
    assert.equal(toolsMayWrite(path.join(base, "policy"), shared, inTmp), base.startsWith("/tmp"));
    const wsDomain = toolsDomain({ workspace: base, toolHome: "/home/agent", runtime: [] });
    assert.equal(toolsMayWrite(path.join(base, ".pi", "agent", "models.json"), shared, wsDomain), true);
    // No protection at all: everything the bridge can write.
    assert.equal(toolsMayWrite("/var/lib/chat-ui-agent/policy", shared, undefined), true);
  });

  it("seeds Pi's agent dir from an operator's: regular files only, newer ones only", async (t) => {
    const from = await tempDir(t, "seed-");
    const to = await tempDir(t, "agent-");
    writeFileSync(path.join(from, "models.json"), "{}");
    writeFileSync(path.join(from, "settings.json"), '{"a":1}');
    writeFileSync(path.join(to, "settings.json"), '{"mine":true}');
    // Pi's own copy is newer than the operator's: kept.
    utimesSync(path.join(from, "settings.json"), new Date(1_000_000), new Date(1_000_000));
    symlinkSync("/etc/passwd", path.join(from, "auth.json"));
    mkdirSync(path.join(from, "bin"));
    const pi = { user: null, uid: 0, gid: 0, home: "/", switchTo: false };
    assert.deepEqual(seedAgentDir(from, to, pi), ["models.json"]);
    assert.equal(readFileSync(path.join(to, "settings.json"), "utf8"), '{"mine":true}');
    assert.equal((statSync(path.join(to, "models.json")).mode & 0o777).toString(8), "600");
    assert.throws(() => statSync(path.join(to, "auth.json")), { code: "ENOENT" });
    // The operator edits models.json later: the next start takes it; an unchanged one is not copied again.
    writeFileSync(path.join(from, "models.json"), '{"v":2}');
    utimesSync(path.join(from, "models.json"), new Date(), new Date(Date.now() + 60_000));
    assert.deepEqual(seedAgentDir(from, to, pi), ["models.json"]);
    assert.equal(readFileSync(path.join(to, "models.json"), "utf8"), '{"v":2}');
    assert.deepEqual(seedAgentDir(from, to, pi), []);
    assert.equal(operatorAgentDir({ HOME: "/h" }), "/h/.pi/agent");
    assert.equal(operatorAgentDir({ HOME: "/h", PI_CODING_AGENT_DIR: "~/x" }), "/h/x");
  });
});

describe("router", () => {
  it("reads the executor fd strictly", () => {
    assert.equal(executorFd({}), undefined);
    assert.equal(executorFd({ CHAT_UI_AGENT_EXECUTOR_FD: "3" }), 3);
    assert.throws(() => executorFd({ CHAT_UI_AGENT_EXECUTOR_FD: "3; rm" }));
  });

  it("keeps the active tool set Pi would have chosen", () => {
    const all = ["read", "bash", "edit", "write", "grep", "find", "ls"];
    assert.deepEqual(activeToolsWithoutOverrides(["pi"], all), ["read", "bash", "edit", "write"]);
    assert.deepEqual(activeToolsWithoutOverrides(["pi", "--tools", "read,grep"], ["read", "grep"]), [
      "read",
      "grep",
    ]);
    assert.deepEqual(activeToolsWithoutOverrides(["pi", "--no-builtin-tools"], [...all, "custom"]), [
      "custom",
    ]);
    assert.deepEqual(activeToolsWithoutOverrides(["pi"], all, ["read", "grep"]), ["read", "grep"]);
  });

  it("withholds a context file the tools read differently; fails closed when it cannot ask", async () => {
    const fake = (verdict: (p: string) => boolean) =>
      ({
        contextCheck: async (files: { path: string }[]) =>
          files.map((f) => ({ path: f.path, same: verdict(f.path), reason: null })),
      }) as unknown as ExecutorClient;
    const files = [
      { path: "/ws/AGENTS.md", content: "SECRET=sk-123456789" },
      { path: "/AGENTS.md", content: "be brief" },
    ];
    const prompt = (f: typeof files) =>
      `intro\n${f.map((x) => `<project_instructions path="${x.path}">\n${x.content}\n</project_instructions>`).join("\n\n")}\nend`;
    const guarded = await guardContextFiles(
      "/pi-agent",
      prompt(files),
      files,
      fake((p) => p !== "/ws/AGENTS.md"),
      silent,
    );
    assert.ok(!guarded.includes("sk-123456789"));
    assert.ok(guarded.includes("be brief"));
    assert.match(guarded, /withheld by chat-ui-agent/);
    const closed = await guardContextFiles("/pi-agent", prompt(files), files, undefined, silent);
    assert.ok(!closed.includes("sk-123456789") && !closed.includes("be brief"));
    // Pi's own agent dir (private to Pi) is not checked.
    const own = [{ path: "/pi-agent/AGENTS.md", content: "operator rules" }];
    assert.equal(await guardContextFiles("/pi-agent", prompt(own), own, undefined, silent), prompt(own));
    const same = await guardContextFiles(
      "/pi-agent",
      prompt(files),
      files,
      fake(() => true),
      silent,
    );
    assert.equal(same, prompt(files));
    assert.ok(sha("x").length === 64);
  });
});

describe("executor path check (Pi's own path functions)", () => {
  it("passes only an absolute path Pi's tool would open unchanged", async () => {
    const paths = await loadPiToolPaths(root);
    const req = (tool: string, p: unknown) =>
      ({ ...call, tool, params: p === undefined ? {} : { path: p } }) as Parameters<typeof pathRefusal>[0];
    assert.equal(pathRefusal(req("read", "/ws/a.txt"), paths), undefined);
    assert.equal(pathRefusal(req("ls", undefined), paths), undefined);
    assert.equal(pathRefusal(req("bash", undefined), paths), undefined);
    for (const p of ["a.txt", "~/a", "@/ws/a", "/ws/./a", "/ws/a/../b", "/ws/a\u2003b", "file:///ws/a"]) {
      assert.ok(pathRefusal(req("write", p), paths), p);
    }
    assert.ok(pathRefusal(req("read", 7), paths));
  });
});
