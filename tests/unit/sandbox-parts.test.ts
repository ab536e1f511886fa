// The tools' boundary, as data and pure decisions: the egress tier a kernel allows, the proxy settings, the
// task cap from the container's budget, the supervisor's control protocol, and what planLaunch makes of them
// (with a stand-in helper that reports chosen kernel features).
import assert from "node:assert/strict";
import { chmodSync, chownSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  COMPILE_CACHE_ENV,
  decideCompileCache,
  enableBundleCompileCache,
} from "../../agent-runtime/compile-cache.ts";
import {
  checkProxyUrl,
  EGRESS_GUARD_ENV,
  EGRESS_TIERS,
  egressTier,
  planEgress,
  proxyEnvironment,
} from "../../agent-runtime/sandbox/egress.ts";
import {
  type KernelFeatures,
  probeLandlock,
  probeLandlockAsync,
} from "../../agent-runtime/sandbox/landlock.ts";
import { processBudget, UNBUDGETED_TOOLS_NPROC } from "../../agent-runtime/sandbox/process-budget.ts";
import { commandLine, SupervisorMessage, supervisorArgs } from "../../agent-runtime/sandbox/supervisor.ts";
import { decidePrincipals } from "../../bridge/isolation.ts";
import { planLaunch } from "../../bridge/launch-plan.ts";
import { privateTempDir, tempDir } from "../support/workspace.ts";

const FULL: KernelFeatures = {
  landlockAbi: 7,
  landlockNet: true,
  seccompFilter: true,
  seccompNotify: true,
  notifyAddfd: true,
  waitKillable: true,
};

describe("egress tiers", () => {
  it("takes the strictest guard the kernel supports, and never leaves the network silently open", () => {
    const cases: [Partial<KernelFeatures>, string, boolean, string][] = [
      [{}, "notify", true, "enforcing"],
      [{ landlockAbi: 3, landlockNet: false }, "notify", false, "enforcing"],
      [{ notifyAddfd: false }, "no-inet", false, "degraded"],
      [{ seccompNotify: false, notifyAddfd: false }, "no-inet", false, "degraded"],
      [{ seccompFilter: false, seccompNotify: false, notifyAddfd: false }, "none", true, "degraded"],
      [
        {
          seccompFilter: false,
          seccompNotify: false,
          notifyAddfd: false,
          landlockAbi: 2,
          landlockNet: false,
        },
        "none",
        false,
        "degraded",
      ],
    ];
    for (const [over, filter, landlockTcp, guard] of cases) {
      const tier = egressTier({ ...FULL, ...over });
      assert.deepEqual(
        [tier.filter, tier.landlockTcp, tier.guard],
        [filter, landlockTcp, guard],
        JSON.stringify(over),
      );
    }
    // Every degraded tier says what is open or closed; only the last one is open, and says so.
    const last = EGRESS_TIERS.at(-1)?.tier;
    assert.match(last?.detail ?? "", /open/);
    assert.equal(planEgress({ requested: false, helper: "/x", features: FULL }).guard, "off");
    assert.equal(planEgress({ requested: true, helper: undefined, features: FULL }).guard, "degraded");
    assert.equal(planEgress({ requested: true, helper: "/x", features: FULL }).guard, "enforcing");
  });

  it("points the tools' standard settings at a loopback proxy, and refuses any other proxy URL", () => {
    const env = proxyEnvironment("http://127.0.0.1:8123");
    for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"])
      assert.equal(env[name], "http://127.0.0.1:8123", name);
    assert.equal(env.NO_PROXY, "localhost,127.0.0.1,::1");
    assert.equal(env.no_proxy, env.NO_PROXY);
    assert.equal(env.npm_config_https_proxy, "http://127.0.0.1:8123");
    assert.equal(env.PIP_PROXY, "http://127.0.0.1:8123");
    assert.deepEqual([env.GIT_CONFIG_KEY_0, env.GIT_CONFIG_VALUE_0], ["http.proxy", "http://127.0.0.1:8123"]);
    assert.equal(env.NODE_USE_ENV_PROXY, "1");
    assert.equal(checkProxyUrl("http://[::1]:9/"), "http://[::1]:9");
    for (const bad of [
      "https://127.0.0.1:1",
      "http://10.0.0.1:3128",
      "http://proxy.example:3128",
      "http://127.0.0.1",
      "http://u:p@127.0.0.1:1",
      "http://127.0.0.1:1/path",
      "not a url",
    ])
      assert.throws(() => checkProxyUrl(bad), /egress proxy/, bad);
  });
});

describe("the tools' task cap", () => {
  const from = (files: Record<string, string>) => (file: string) => {
    const text = files[file];
    if (text === undefined) throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
    return text;
  };
  it("stays below the container's pids budget with a reserve for the bridge, Pi and sbx-server", () => {
    assert.deepEqual(processBudget(from({ "/sys/fs/cgroup/pids.max": "512\n" })), {
      containerMax: 512,
      source: "/sys/fs/cgroup/pids.max",
      toolsNproc: 384,
      reserve: 128,
    });
    // cgroup v1 (Docker's default on this host), a small budget, a large one.
    assert.equal(processBudget(from({ "/sys/fs/cgroup/pids/pids.max": "200" })).toolsNproc, 150);
    assert.equal(processBudget(from({ "/sys/fs/cgroup/pids.max": "64" })).toolsNproc, 32);
    assert.equal(processBudget(from({ "/sys/fs/cgroup/pids.max": "20" })).toolsNproc, 16);
    assert.equal(processBudget(from({ "/sys/fs/cgroup/pids.max": "100000" })).reserve, 512);
    const unbudgeted: Record<string, string>[] = [
      { "/sys/fs/cgroup/pids.max": "max" },
      {},
      { "/sys/fs/cgroup/pids.max": "junk" },
    ];
    for (const files of unbudgeted) {
      const budget = processBudget(from(files));
      assert.equal(budget.toolsNproc, UNBUDGETED_TOOLS_NPROC);
      assert.equal(budget.containerMax, null);
    }
  });
});

describe("the supervisor's control channel", () => {
  it("writes commands one a line, refuses labels it could not carry, and reads its reports with one schema", () => {
    assert.equal(commandLine({ type: "go" }), "go\n");
    assert.equal(commandLine({ type: "mode", mode: "open" }), "mode open\n");
    assert.equal(commandLine({ type: "grant", call: "a1b2-3" }), "grant a1b2-3\n");
    for (const bad of ["", "a b", "a\nend", "x".repeat(129), "é"])
      assert.throws(() => commandLine({ type: "grant", call: bad }), bad);
    const connect = SupervisorMessage.parse({
      type: "connect",
      pid: 7,
      call: "c-1",
      family: "inet",
      address: "203.0.113.7",
      port: 443,
      localPort: 0,
      verdict: "refused",
      errno: 13,
    });
    assert.equal(connect.type, "connect");
    assert.throws(() => SupervisorMessage.parse({ type: "connect", pid: 7 }));
    const options = {
      hold: true,
      nproc: 100,
      oomScoreAdj: 1000,
      filter: "notify",
      mode: "lockdown",
      setenv: { CHAT_UI_AGENT_RUN_ID: "r.1" },
      graceMs: 2_000,
    } as const;
    const args = supervisorArgs(options);
    assert.deepEqual(args.slice(0, 5), ["--supervise", "--control-fd", "4", "--channel-fd", "3"]);
    assert.ok(args.includes("--hold"));
    assert.deepEqual(args.slice(-2), ["--setenv", "CHAT_UI_AGENT_RUN_ID=r.1"]);
    assert.ok(!args.includes("--proxy-port"));
    const withPort = supervisorArgs({ ...options, proxyPort: 3128 });
    assert.deepEqual(withPort.slice(withPort.indexOf("--proxy-port"), withPort.indexOf("--proxy-port") + 2), [
      "--proxy-port",
      "3128",
    ]);
  });
});

/** A stand-in helper that answers the probe with these features (planLaunch only probes it). */
/** A stand-in helper: a shell script named `name` in `dir` whose body answers the probe. */
function script(dir: string, name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

function fakeHelper(t: TestContext, dir: string, features: KernelFeatures): string {
  const { landlockAbi, ...rest } = features;
  t.diagnostic(`fake helper: ${JSON.stringify(features)}`);
  return script(dir, "landlock-exec", `echo '${JSON.stringify({ abi: landlockAbi, ...rest })}'`);
}

async function plan(
  t: TestContext,
  features: KernelFeatures,
  extra: {
    landlock?: "on" | "off";
    egressProxy?: string;
    /** Outside /tmp (which the tools' domain grants), and with a compile cache in the bundle dir. */
    privateBase?: boolean;
    compileCache?: boolean;
    env?: Record<string, string>;
  } = {},
) {
  const base = extra.privateBase ? await privateTempDir(t, "plan-") : await tempDir(t, "plan-");
  const bundleDir = path.join(base, "bundle");
  const cwd = path.join(base, "ws");
  for (const dir of [bundleDir, cwd]) mkdirSync(dir);
  if (extra.compileCache) mkdirSync(path.join(bundleDir, "compile-cache", "v22-x64-0"), { recursive: true });
  fakeHelper(t, bundleDir, features);
  const principals = decidePrincipals({
    euid: 1000,
    egid: 1000,
    agentUser: undefined,
    piUser: undefined,
    passwd: () => "",
    env: { HOME: path.join(base, "home") },
  });
  return planLaunch({
    cwd,
    stateDir: path.join(base, "state"),
    principals,
    landlock: extra.landlock ?? "on",
    toolEnvNames: [],
    bundleDir,
    piPackageDir: path.join(base, "node_modules", "pi"),
    pi: { entry: "/pi", gate: "/gate", forwarded: [] },
    runId: "state.",
    env: { PATH: "/bin", HOME: path.join(base, "home"), ...extra.env },
    node: process.execPath,
    ...(extra.egressProxy ? { egressProxy: extra.egressProxy } : {}),
  });
}

describe("launch plan: the tools' supervisor and egress guard", () => {
  it("starts the executor under the supervisor with the kernel's tier, and tells Pi the guard's state", async (t) => {
    const full = await plan(t, FULL);
    const supervised = full.spec.executor.supervised;
    assert.ok(supervised);
    assert.equal(supervised.options.filter, "notify");
    assert.equal(supervised.options.hold, true);
    assert.equal(supervised.options.oomScoreAdj, 1000);
    assert.equal(supervised.options.nproc, full.landlock.probe.budget.toolsNproc);
    assert.ok(full.spec.executor.args.includes("--net-tcp"));
    assert.equal(full.spec.pi.env[EGRESS_GUARD_ENV], "enforcing");

    const noNotify = await plan(t, { ...FULL, seccompNotify: false, notifyAddfd: false });
    assert.equal(noNotify.spec.executor.supervised?.options.filter, "no-inet");
    assert.equal(noNotify.spec.executor.args.includes("--net-tcp"), false);
    assert.equal(noNotify.spec.pi.env[EGRESS_GUARD_ENV], "degraded");

    const off = await plan(t, FULL, { landlock: "off" });
    assert.equal(off.spec.executor.supervised?.options.filter, "none");
    assert.equal(off.spec.executor.args.includes("--ro"), false);
    assert.equal(off.spec.pi.env[EGRESS_GUARD_ENV], "off");
  });

  it("gives the tools the proxy settings only when the bridge runs a proxy", async (t) => {
    const without = await plan(t, FULL);
    assert.equal(without.spec.executor.env.HTTPS_PROXY, undefined);
    const withProxy = await plan(t, FULL, { egressProxy: "http://127.0.0.1:3128" });
    assert.equal(withProxy.spec.executor.env.HTTPS_PROXY, "http://127.0.0.1:3128");
    assert.equal(withProxy.spec.executor.env.NO_PROXY, "localhost,127.0.0.1,::1");
    // The supervisor is told the port the tools were given: connects to it name their call at once.
    assert.equal(withProxy.spec.executor.supervised?.options.proxyPort, 3128);
    assert.equal(without.spec.executor.supervised?.options.proxyPort, undefined);
    // Pi itself is not the tools: it keeps its own environment.
    assert.equal(withProxy.spec.pi.env.HTTPS_PROXY, undefined);
    await assert.rejects(async () => plan(t, FULL, { egressProxy: "http://10.1.2.3:3128" }), /egress proxy/);
  });

  it("reads the helper's probe strictly", async (t) => {
    const dir = await tempDir(t, "probe-");
    const probe = probeLandlock(script(dir, "landlock-exec", `echo '{"abi":7}'`));
    assert.equal(probe.abi, 0);
    assert.equal(probe.features.seccompNotify, false);
  });

  it("reads the probe the same way whether it ran blocking or while the bridge went on", async (t) => {
    const dir = await tempDir(t, "probe-async-");
    const budget = { toolsNproc: 100 } as Parameters<typeof probeLandlock>[1];
    for (const sub of ["full", "none"]) mkdirSync(path.join(dir, sub));
    const helpers = [
      fakeHelper(t, path.join(dir, "full"), FULL),
      fakeHelper(t, path.join(dir, "none"), { ...FULL, landlockAbi: 0 }),
      script(dir, "partial", `echo '{"abi":7}'`),
      script(dir, "garbage", "echo not json"),
      script(dir, "fails", "echo broken >&2; exit 3"),
      path.join(dir, "missing"),
      undefined,
    ];
    for (const file of helpers) {
      const blocking = probeLandlock(file, budget);
      assert.deepEqual(await probeLandlockAsync(file, budget), blocking, String(file));
    }
    assert.equal(probeLandlock(helpers[0], budget).abi, 7);
    assert.match(String((probeLandlock(helpers[4], budget) as { reason?: string }).reason), /failed: broken/);
  });
});

describe("Pi's compile cache", () => {
  it("is the bundle dir's, given to Pi only where the tools cannot write it, and never one Pi inherits", async (t) => {
    const used = await plan(t, FULL, { privateBase: true, compileCache: true });
    assert.equal(used.compileCache.use, true);
    assert.equal(used.spec.pi.env[COMPILE_CACHE_ENV], used.compileCache.dir);
    assert.match(used.compileCache.dir, /[\\/]bundle[\\/]compile-cache$/);
    // The tools are not given it (their environment is their own).
    assert.equal(used.spec.executor.env[COMPILE_CACHE_ENV], undefined);

    const inherited = await plan(t, FULL, {
      privateBase: true,
      compileCache: true,
      env: { [COMPILE_CACHE_ENV]: "/tmp/planted" },
    });
    assert.equal(inherited.spec.pi.env[COMPILE_CACHE_ENV], inherited.compileCache.dir);
    assert.ok(inherited.notes.some((n) => n.includes("/tmp/planted") && n.includes("not passed to Pi")));

    // In /tmp, which the tools' domain grants: refused, said so, and an inherited one is dropped too.
    const reachable = await plan(t, FULL, {
      compileCache: true,
      env: { [COMPILE_CACHE_ENV]: "/tmp/planted" },
    });
    assert.deepEqual(
      { use: reachable.compileCache.use, why: !reachable.compileCache.use && reachable.compileCache.why },
      { use: false, why: "writable by the tools" },
    );
    assert.equal(reachable.spec.pi.env[COMPILE_CACHE_ENV], undefined);
    assert.ok(
      reachable.notes.some((n) => n.includes("compile cache") && n.includes("writable by the tools")),
    );

    // No domain and the tools on the bridge's own uid: everything is theirs to write.
    const unprotected = await plan(t, FULL, { privateBase: true, compileCache: true, landlock: "off" });
    assert.equal(unprotected.compileCache.use, false);
    assert.equal(unprotected.spec.pi.env[COMPILE_CACHE_ENV], undefined);

    // None built (a dev checkout before npm run build): no cache, nothing to report.
    const missing = await plan(t, FULL, { privateBase: true, env: { [COMPILE_CACHE_ENV]: "/tmp/planted" } });
    assert.equal(missing.spec.pi.env[COMPILE_CACHE_ENV], undefined);
    assert.equal(missing.notes.filter((n) => n.includes("compile cache")).length, 0);
    assert.equal(missing.notes.filter((n) => n.includes("not passed to Pi")).length, 1);
  });

  it("is the bridge's own only when it is its bundle's owner's and no one else may write it", async (t) => {
    const base = await privateTempDir(t, "own-cache-");
    const entry = path.join(base, "bridge.mjs");
    writeFileSync(entry, "");
    const cache = path.join(base, "compile-cache");
    // Each refusal is decided before Node's cache is touched (this process keeps compiling as it did).
    assert.equal(enableBundleCompileCache(base, entry), false, "no cache");
    mkdirSync(path.join(cache, "v22-x64-0"), { recursive: true, mode: 0o755 });
    chmodSync(cache, 0o755);
    assert.equal(enableBundleCompileCache(base, path.join(base, "missing.mjs")), false, "no entry");
    chmodSync(cache, 0o775);
    assert.equal(enableBundleCompileCache(base, entry), false, "group-writable");
    chmodSync(cache, 0o755);
    chmodSync(path.join(cache, "v22-x64-0"), 0o757);
    assert.equal(enableBundleCompileCache(base, entry), false, "a per-version directory others may write");
    chmodSync(path.join(cache, "v22-x64-0"), 0o755);
    if (process.geteuid?.() === 0) {
      chownSync(cache, 1000, 1000);
      assert.equal(enableBundleCompileCache(base, entry), false, "another owner's");
    }
  });

  it("checks the directory and each of Node's directories in it, and takes nothing unexpected", async (t) => {
    const base = await tempDir(t, "cache-");
    const dir = path.join(base, "compile-cache");
    const never = () => false;
    assert.deepEqual(decideCompileCache(dir, never), { use: false, dir, why: "missing" });
    writeFileSync(dir, "");
    assert.deepEqual(decideCompileCache(dir, never), { use: false, dir, why: "not a directory" });

    const real = path.join(base, "real");
    mkdirSync(path.join(real, "v22-x64-0"), { recursive: true });
    const link = path.join(base, "link");
    symlinkSync(real, link);
    assert.deepEqual(decideCompileCache(link, never), { use: false, dir: link, why: "not a directory" });
    assert.deepEqual(decideCompileCache(real, never), { use: true, dir: real });

    // One of Node's per-version directories the tools could write is enough to refuse the whole cache.
    const inner = path.join(real, "v22-x64-0");
    assert.deepEqual(
      decideCompileCache(real, (target) => target === inner),
      {
        use: false,
        dir: real,
        why: "writable by the tools",
      },
    );
    // A file or a link where Node keeps directories, or more directories than Node makes: not ours.
    writeFileSync(path.join(real, "stray"), "");
    assert.deepEqual(decideCompileCache(real, never), { use: false, dir: real, why: "unexpected" });
    const crowded = path.join(base, "crowded");
    for (let i = 0; i < 17; i++) mkdirSync(path.join(crowded, `v${i}`), { recursive: true });
    assert.deepEqual(decideCompileCache(crowded, never), { use: false, dir: crowded, why: "unexpected" });
  });
});
