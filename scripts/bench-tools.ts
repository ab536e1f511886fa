// npm run bench:tools — what routing a tool call through the tool executor costs, per call, against Pi's own
// built-in tool run in-process, measured in the same run (interleaved, so a busy machine hits both alike):
// a `read` of a 10 KB file and `bash -c true`. The executor runs as the bridge starts it: the built bundle,
// inside the tools' Landlock domain (when the kernel has one), each tool shell one call under the helper.
// The egress guard (issue 18): the same executor under the tool supervisor with the seccomp filter, against
// the executor without it (`bash -c true` per call), and a loopback connect from a tool process with and without
// the guard. Prints one JSON object on stdout. Targets: read +2 ms p50, bash +5 ms p50 (issue 11); the guard
// adds at most 2 ms p50 to `bash -c true`, and a guarded loopback connect costs at most 200 µs p50. The egress
// proxy carries at least 100 MB/s through a CONNECT tunnel (scripts/egress-throughput.ts, ratio to direct).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { loadPiToolFactories } from "../agent-runtime/executor/pi-modules.ts";
import { TOOL_SHELL_HELPER_ENV, TOOL_SHELL_NEST_ENV } from "../agent-runtime/executor/protocol.ts";
import { createLogger } from "../agent-runtime/log.ts";
import { egressTier } from "../agent-runtime/sandbox/egress.ts";
import {
  findLandlockHelper,
  landlockArgs,
  probeLandlock,
  toolsDomain,
} from "../agent-runtime/sandbox/landlock.ts";
import { commandLine, supervisorArgs } from "../agent-runtime/sandbox/supervisor.ts";
import { ExecutorClient } from "../agent-runtime/tools/executor-client.ts";
import { egressProxyThroughput } from "./egress-throughput.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 200);
const TARGETS_MS = {
  read_added_p50: 2,
  bash_added_p50: 5,
  guard_bash_added_p50: 2,
  guarded_connect_p50: 0.2,
};
// Many samples: a connect is ~100 µs, and a short run is dominated by where the scheduler puts the two tasks.
const CONNECTS = Number(process.env.BENCH_CONNECTS ?? 4000);
const root = path.resolve(import.meta.dirname, "..");
const bundleDir = path.join(root, "build", "opt", "chat-ui-agent");

function stats(samplesNs: bigint[]) {
  const ms = samplesNs.map((ns) => Number(ns) / 1e6).sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? Number.NaN;
  return {
    samples: ms.length,
    p50_ms: round(at(0.5)),
    p99_ms: round(at(0.99)),
    mean_ms: round(ms.reduce((a, b) => a + b, 0) / ms.length),
  };
}
const round = (n: number) => Math.round(n * 1000) / 1000;

async function time(run: () => Promise<unknown>): Promise<bigint> {
  const start = process.hrtime.bigint();
  await run();
  return process.hrtime.bigint() - start;
}

/** A tool process's loopback connects (Node, to a server in the same process): each one's time, in µs. */
const CONNECT_PROBE = `
const net = require("net");
const server = net.createServer((s) => s.destroy()).listen(0, "127.0.0.1", async () => {
  const port = server.address().port, out = [];
  for (let i = 0; i < Number(process.argv[1]); i++) {
    const start = process.hrtime.bigint();
    await new Promise((resolve, reject) => {
      const socket = net.connect(port, "127.0.0.1", () => { socket.destroy(); resolve(); });
      socket.on("error", reject);
    });
    out.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  process.stdout.write(JSON.stringify(out));
  server.close();
});`;

/** Runs the connect probe under `prefix…` (the helper and its options, or nothing) and returns its samples (µs). */
function connectSamples(prefix: string[], env: NodeJS.ProcessEnv, count: number): Promise<number[]> {
  const [file, ...args] = [...prefix, process.execPath, "-e", CONNECT_PROBE, String(count)];
  return new Promise((resolve, reject) => {
    const child = spawn(file ?? process.execPath, args, {
      env,
      stdio: ["ignore", "pipe", "pipe", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk;
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      err += chunk;
    });
    child.on("close", () => {
      try {
        resolve(JSON.parse(out) as number[]);
      } catch {
        reject(new Error(`the connect probe failed: ${err.slice(-500)}`));
      }
    });
  });
}

const dir = await mkdtemp(path.join(tmpdir(), "bench-tools-"));
const home = await mkdtemp(path.join(tmpdir(), "bench-tools-home-"));
let executor: ReturnType<typeof spawn> | undefined;
let guardedExecutor: ReturnType<typeof spawn> | undefined;
let proxyStandIn: Server | undefined;
try {
  const file = path.join(dir, "ten-kb.txt");
  await writeFile(file, `${"0123456789abcdef ".repeat(60)}\n`.repeat(10).slice(0, 10 * 1024));

  const helper = findLandlockHelper(bundleDir);
  const probe = probeLandlock(helper);
  const domain = toolsDomain({
    workspace: dir,
    toolHome: home,
    runtime: [bundleDir, process.execPath, path.join(root, "node_modules")],
  });
  const executorArgs = [path.join(bundleDir, "tool-executor.mjs")];
  const sandboxed = helper !== undefined && probe.abi > 0;
  executor = spawn(
    sandboxed && helper ? helper : process.execPath,
    sandboxed ? [...landlockArgs(domain, probe.abi), "--", process.execPath, ...executorArgs] : executorArgs,
    {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: home,
        LANG: "C.UTF-8",
        ...(helper ? { [TOOL_SHELL_HELPER_ENV]: helper } : {}),
        ...(sandboxed ? { [TOOL_SHELL_NEST_ENV]: "1" } : {}),
      },
      stdio: ["ignore", "ignore", "ignore", "pipe"],
      detached: true,
    },
  );
  const client = new ExecutorClient(executor.stdio[3] as Socket, createLogger("bench", "silent"));
  client.warm();
  const hello = await client.hello;

  // The same executor under the supervisor, with the egress guard this kernel allows (as the bridge starts it,
  // told its egress proxy's port: a stand-in listens there, so no probe server can take that port).
  const tier = egressTier(probe.features);
  proxyStandIn = createServer().listen(0, "127.0.0.1");
  await once(proxyStandIn, "listening");
  const proxyPort = (proxyStandIn.address() as AddressInfo).port;
  const guardedArgs = helper
    ? [
        ...supervisorArgs({
          hold: false,
          nproc: probe.budget.toolsNproc,
          oomScoreAdj: 1000,
          filter: tier.filter,
          mode: "registries",
          setenv: {},
          graceMs: 2_000,
          proxyPort,
        }),
        ...(sandboxed ? landlockArgs(domain, probe.abi, { tcpConnect: tier.landlockTcp }) : []),
        "--",
      ]
    : [];
  const toolEnv = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    LANG: "C.UTF-8",
    ...(helper ? { [TOOL_SHELL_HELPER_ENV]: helper } : {}),
    ...(sandboxed ? { [TOOL_SHELL_NEST_ENV]: "1" } : {}),
  };
  guardedExecutor = helper
    ? spawn(helper, [...guardedArgs, process.execPath, ...executorArgs], {
        cwd: dir,
        env: toolEnv,
        stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"],
        detached: true,
      })
    : undefined;
  const guardedClient = guardedExecutor
    ? new ExecutorClient(guardedExecutor.stdio[3] as Socket, createLogger("bench", "silent"))
    : undefined;
  guardedClient?.warm();
  await guardedClient?.hello;

  const factories = await loadPiToolFactories(root);
  const read = factories.createReadToolDefinition(dir);
  const bash = factories.createBashToolDefinition(dir, { exposeSessionEnvironment: false });
  const options = { autoResizeImages: true, modelInput: ["text"] };
  const routed = (tool: "read" | "bash", params: Record<string, unknown>) => () =>
    client.call({ tool, params, cwd: dir, vetted: [], options, sessionEnv: {} }, undefined, () => {});
  const runners = {
    builtin_read: () => read.execute("b", { path: file }, undefined, undefined, undefined as never),
    routed_read: routed("read", { path: file }),
    builtin_bash_true: () => bash.execute("b", { command: "true" }, undefined, undefined, undefined as never),
    routed_bash_true: routed("bash", { command: "true" }),
    guarded_bash_true: () =>
      (guardedClient ?? client).call(
        { tool: "bash", params: { command: "true" }, cwd: dir, vetted: [], options, sessionEnv: {} },
        undefined,
        () => {},
      ),
    channel_round_trip: () => client.contextCheck([]),
  };
  type Name = keyof typeof runners;
  const names = Object.keys(runners) as Name[];
  const samples = Object.fromEntries(names.map((n) => [n, [] as bigint[]])) as Record<Name, bigint[]>;
  for (let round = 0; round < ROUNDS + 20; round++) {
    for (const name of names) {
      const ns = await time(runners[name]);
      if (round >= 20) samples[name].push(ns); // the first rounds warm up JIT, caches and the executor
    }
  }
  const s = Object.fromEntries(names.map((n) => [n, stats(samples[n])])) as Record<
    Name,
    ReturnType<typeof stats>
  >;
  const added = {
    read_p50_ms: round(s.routed_read.p50_ms - s.builtin_read.p50_ms),
    bash_p50_ms: round(s.routed_bash_true.p50_ms - s.builtin_bash_true.p50_ms),
    guard_bash_p50_ms: round(s.guarded_bash_true.p50_ms - s.routed_bash_true.p50_ms),
  };

  // A loopback connect from a tool process: under the supervisor with the guard, and in the same domain without.
  const unguardedPrefix = sandboxed && helper ? [helper, ...landlockArgs(domain, probe.abi), "--"] : [];
  const connects = { guarded: [] as number[], unguarded: [] as number[] };
  // Each chunk is a new supervisor and probe: their spread shows how much the scheduler's placement of the two
  // tasks (the same CPU or not) moves the figure on this machine.
  const guardedChunkP50s: number[] = [];
  const us = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const at = (q: number) =>
      sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
    return { samples: sorted.length, p50_us: round(at(0.5)), p99_us: round(at(0.99)) };
  };
  const chunk = Math.max(50, Math.floor(CONNECTS / 5));
  for (let done = 0; done < CONNECTS; done += chunk) {
    connects.unguarded.push(...(await connectSamples(unguardedPrefix, toolEnv, chunk)));
    if (helper) {
      const got = await connectSamples([helper, ...guardedArgs], toolEnv, chunk);
      guardedChunkP50s.push(us(got).p50_us);
      connects.guarded.push(...got);
    }
  }
  const connect = {
    guarded: { ...us(connects.guarded), chunk_p50s_us: guardedChunkP50s },
    unguarded: us(connects.unguarded),
  };
  // The bridge's egress proxy: a CONNECT tunnel from a loopback origin, against the direct transfer (≥ 100 MB/s).
  const proxyThroughput = await egressProxyThroughput({ node: process.execPath });
  const report = {
    bench: "tool-executor",
    node: process.version,
    rounds: ROUNDS,
    executor: {
      landlock_abi: probe.abi,
      sandboxed,
      shell_through_helper: hello.shell.closesInheritedFds,
      nested_domain_per_shell: hello.shell.nested,
    },
    ...s,
    added_cost: added,
    ratio_routed_over_builtin: {
      read_p50: round(s.routed_read.p50_ms / s.builtin_read.p50_ms),
      bash_p50: round(s.routed_bash_true.p50_ms / s.builtin_bash_true.p50_ms),
    },
    egress_guard: {
      filter: guardedClient ? tier.filter : "none (no helper)",
      landlock_tcp: tier.landlockTcp,
      ratio_guarded_over_unguarded_bash_p50: round(s.guarded_bash_true.p50_ms / s.routed_bash_true.p50_ms),
      loopback_connect: connect,
      ratio_guarded_over_unguarded_connect_p50: round(connect.guarded.p50_us / connect.unguarded.p50_us),
      proxy_throughput: proxyThroughput,
    },
    load_average_1m: loadavg()[0],
    targets: {
      read_added_p50_ms: TARGETS_MS.read_added_p50,
      bash_added_p50_ms: TARGETS_MS.bash_added_p50,
      read_met: added.read_p50_ms <= TARGETS_MS.read_added_p50,
      bash_met: added.bash_p50_ms <= TARGETS_MS.bash_added_p50,
      guard_bash_added_p50_ms: TARGETS_MS.guard_bash_added_p50,
      guard_bash_met: added.guard_bash_p50_ms <= TARGETS_MS.guard_bash_added_p50,
      guarded_connect_p50_us: TARGETS_MS.guarded_connect_p50 * 1000,
      guarded_connect_met: connect.guarded.p50_us <= TARGETS_MS.guarded_connect_p50 * 1000,
    },
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} finally {
  if (executor?.pid) {
    try {
      process.kill(-executor.pid, "SIGKILL");
    } catch {}
  }
  // The supervisor ends everything below it when told to (a group kill would leave detached tools).
  if (guardedExecutor?.pid) {
    (guardedExecutor.stdio[4] as Socket | null)?.end(commandLine({ type: "end" }));
  }
  proxyStandIn?.close();
  await rm(dir, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
}
