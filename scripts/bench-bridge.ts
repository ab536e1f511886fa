// npm run bench:bridge — the bridge's figures, each with its baseline measured in the same run.
// Uses the BUILT build/opt/chat-ui-agent/bridge.mjs (run `npm run build` first). Prints one JSON object.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import WebSocket from "ws";
import { COMPILE_CACHE_DIR, COMPILE_CACHE_ENV } from "../agent-runtime/compile-cache.ts";
import { writeScriptedAgentDir } from "../agent-runtime/dev/agent-dir.ts";
import { say, startScriptedModel } from "../agent-runtime/dev/scripted-model.ts";
import { JsonlDecoder } from "../agent-runtime/jsonl.ts";
import { findPiInstall } from "../agent-runtime/pi-install.ts";
import { BridgeClient } from "../bridge/client.ts";
import { bridgeProof, clientProof, deriveKey, newNonce, proofMatches } from "../bridge/handshake.ts";
import { Journal } from "../bridge/journal.ts";
import { piArgv } from "../bridge/pi-child.ts";
import { PROTOCOL_VERSION } from "../bridge/protocol.ts";
import { ReplayRing } from "../bridge/replay-ring.ts";
import { RingSink } from "../bridge/ring-sink.ts";

const root = path.resolve(import.meta.dirname, "..");
const bundle = path.join(root, "build", "opt", "chat-ui-agent", "bridge.mjs");
const fakePi = path.join(root, "tests", "support", "fixtures", "fake-pi.mjs");
const builtGate = path.join(root, "build", "opt", "chat-ui-agent", "approval-gate.mjs");
const gate = existsSync(builtGate)
  ? builtGate
  : path.join(root, "tests", "support", "fixtures", "fake-pi-gate.mjs");
const TOKEN = "bench-token-0123456789abcdef";
const scratch = mkdtempSync(path.join(tmpdir(), "bench-bridge-"));
const children: ChildProcessWithoutNullStreams[] = [];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};
const p99 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length * 0.99)] ?? Number.NaN;
};
const round = (x: number, digits = 2) => Number(x.toFixed(digits));

// Bridges' state dirs: beside the scratch dir (the bridges' cwd), never inside it.
// Not in /tmp (the tools may write there): the bridge refuses a Pi configuration or policy from there.
const stateRoot = mkdtempSync(path.join("/var/tmp", "bench-bridge-state-"));
let stateDirs = 0;
// Pi's configuration dir for every process: the bridge refuses one the tools could write (HOME is in /tmp).
const defaultAgentDir = mkdtempSync(path.join(stateRoot, "agent-"));

function startProcess(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcessWithoutNullStreams {
  // A bridge gets its own state dir (the default one is shared by every bridge run as this user).
  const withState =
    args[0] === bundle
      ? [args[0], "--state-dir", path.join(stateRoot, `state-${++stateDirs}`), ...args.slice(1)]
      : args;
  const child = spawn(process.execPath, withState, {
    cwd: scratch,
    env: {
      PATH: process.env.PATH,
      HOME: scratch,
      PI_OFFLINE: "1",
      AGENT_POLICY_PATH: path.join(stateRoot, "policy"),
      PI_CODING_AGENT_DIR: defaultAgentDir,
      ...env,
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  children.push(child);
  return child;
}

/** Feeds each stdout line to `onLine` until it returns true; rejects if the process ends first (never hangs). */
function untilLine(child: ChildProcessWithoutNullStreams, onLine: (line: string) => boolean): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const decoder = new JsonlDecoder();
    let stderr = "";
    const onErr = (chunk: Buffer) => {
      stderr = (stderr + chunk).slice(-2000);
    };
    const onData = (chunk: Buffer) => {
      for (const line of decoder.push(chunk)) {
        if (onLine(line)) {
          finish();
          resolve();
          return;
        }
      }
    };
    const onClose = (code: number | null) => {
      finish();
      reject(
        new Error(
          `${child.spawnargs.slice(1, 2).join(" ")} ended (exit ${code}) before the bench was done: ${stderr}`,
        ),
      );
    };
    const finish = () => {
      child.stdout.off("data", onData);
      child.stderr.off("data", onErr);
      child.off("close", onClose);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onErr);
    child.once("close", onClose);
  });
}

async function stop(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise((r) => child.once("close", r));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 8_000);
  await done;
  clearTimeout(timer);
}

async function startNetworkBridge(
  extra: string[] = [],
): Promise<{ child: ChildProcessWithoutNullStreams; port: number }> {
  const child = startProcess(
    [bundle, "--listen", "127.0.0.1:0", "--gate", gate, "--pi-command", fakePi, ...extra],
    { CHAT_UI_AGENT_BRIDGE_TOKEN: TOKEN },
  );
  const port = await new Promise<number>((resolve, reject) => {
    const decoder = new JsonlDecoder();
    child.stderr.on("data", (chunk: Buffer) => {
      for (const line of decoder.push(chunk)) {
        const log = JSON.parse(line);
        if (log.msg === "listening") resolve(Number(log.port));
      }
    });
    child.once("close", () => reject(new Error("bridge exited during start")));
  });
  return { child, port };
}

type Frame = { type: string; seq?: number; t?: string; [k: string]: unknown };

const benchKey = deriveKey(TOKEN);

/** A protocol-2 connection: the challenge, the hello with its proof, then the welcome (timed from the hello). */
function connect(port: number, onFrame: (text: string) => void, resume?: { epoch: string; lastSeq: number }) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/rpc`);
  const sentAt = { hello: 0 };
  const welcome = new Promise<Frame>((resolve, reject) => {
    let phase: "challenge" | "welcome" | "live" = "challenge";
    ws.on("message", async (data) => {
      const text = String(data);
      if (phase === "live") {
        onFrame(text);
        return;
      }
      const frame = JSON.parse(text) as Frame;
      if (phase === "welcome") {
        phase = "live";
        resolve(frame);
        return;
      }
      phase = "welcome";
      const clientNonce = newNonce();
      const proof = clientProof(await benchKey, {
        bridgeNonce: String(frame.nonce),
        clientNonce,
        clientId: "bench",
      });
      sentAt.hello = performance.now();
      ws.send(
        JSON.stringify({
          type: "hello",
          protocol: PROTOCOL_VERSION,
          clientId: "bench",
          ...(resume ? { resume } : {}),
          nonce: clientNonce,
          proof,
        }),
      );
    });
    ws.once("error", reject);
  });
  return { ws, welcome, sentAt };
}

/** One paced run: `prompt` asks fake Pi for `n` stamped frames; `frames` reports each as it arrives. */
type PacedRun = (n: number) => Promise<number[]>;

/** Each stamped frame's age on arrival (µs) when `child` (fake Pi, or a stdio bridge over it) paces `n` frames. */
function pacedOverStdio(child: ChildProcessWithoutNullStreams): PacedRun {
  let runs = 0;
  return async (n) => {
    const ages: number[] = [];
    const done = untilLine(child, (line) => {
      const f = JSON.parse(line) as Frame;
      if (f.t) ages.push(Number(process.hrtime.bigint() - BigInt(f.t)) / 1000);
      return f.type === "agent_settled";
    });
    child.stdin.write(
      `${JSON.stringify({ type: "prompt", id: `x${runs++}`, message: `PACED ${n} 1 200` })}\n`,
    );
    await done;
    return ages;
  };
}

/** The same over the network bridge's WebSocket. */
async function pacedOverWebSocket(port: number): Promise<{ run: PacedRun; close: () => void }> {
  let ages: number[] = [];
  let settled: () => void = () => {};
  const c = connect(port, (text) => {
    const f = JSON.parse(text) as Frame;
    if (f.t) ages.push(Number(process.hrtime.bigint() - BigInt(f.t)) / 1000);
    if (f.type === "agent_settled") settled();
  });
  await c.welcome;
  let runs = 0;
  const run: PacedRun = async (n) => {
    ages = [];
    const done = new Promise<void>((r) => {
      settled = r;
    });
    c.ws.send(JSON.stringify({ type: "prompt", id: `lat${runs++}`, message: `PACED ${n} 1 200` }));
    await done;
    return ages;
  };
  return { run, close: () => c.ws.close() };
}

/**
 * The first `n` frames after the processes start, then (after a warm-up of WARMUP frames) `n` more: at first
 * every process (fake Pi, the bridge, this client) still compiles its hot paths and grows its heap, and on a VM
 * whose page faults are dear that costs more than the bridge's own work per frame.
 */
async function pacedPhases(run: PacedRun, n: number): Promise<{ first: number[]; warm: number[] }> {
  const first = await run(n);
  await run(WARMUP);
  return { first, warm: await run(n) };
}
const WARMUP = 3000;

// 1. Added latency per frame: fake Pi stamps each line with the monotonic clock; read directly vs via the bridge.
// The targets are for a bridge that has been running (the warm phase); the first frames are reported beside.
async function latency(): Promise<Record<string, number | Record<string, number>>> {
  const n = 2000;
  const fake = startProcess([fakePi]);
  const direct = await pacedPhases(pacedOverStdio(fake), n);
  await stop(fake);
  // The bridge's own cost without the WebSocket hop: stdio mode, read exactly like the direct run.
  const stdioBridge = startProcess([bundle, "--mode", "rpc", "--gate", gate, "--pi-command", fakePi]);
  const viaStdio = await pacedPhases(pacedOverStdio(stdioBridge), n);
  await stop(stdioBridge);
  const bridge = await startNetworkBridge();
  const ws = await pacedOverWebSocket(bridge.port);
  const through = await pacedPhases(ws.run, n);
  ws.close();
  await stop(bridge.child);
  const figures = (phase: "first" | "warm") => ({
    directMedianUs: round(median(direct[phase])),
    bridgeMedianUs: round(median(through[phase])),
    addedMedianUs: round(median(through[phase]) - median(direct[phase])),
    stdioBridgeMedianUs: round(median(viaStdio[phase])),
    stdioAddedMedianUs: round(median(viaStdio[phase]) - median(direct[phase])),
    directP99Us: round(p99(direct[phase])),
    bridgeP99Us: round(p99(through[phase])),
  });
  return { ...figures("warm"), frames: n, warmupFrames: WARMUP, firstFramesAfterStart: figures("first") };
}

// 2. Throughput for 200-byte frames: direct pipe vs through the bridge's WebSocket. Also 3–5 on the same bridge.
async function throughputReplayRss(): Promise<Record<string, Record<string, number>>> {
  const n = 100_000;
  const fake = startProcess([fakePi]);
  let t0 = 0;
  let count = 0;
  const flooded = untilLine(fake, (line) => {
    if (line.startsWith('{"type":"message_update"') && count++ === 0) t0 = performance.now();
    return line.includes('"agent_settled"');
  });
  fake.stdin.write(`${JSON.stringify({ type: "prompt", id: "x", message: `FLOOD ${n} 200` })}\n`);
  await flooded;
  const directMs = performance.now() - t0;
  await stop(fake);

  const bridge = await startNetworkBridge(["--replay-frames", "10000"]);
  count = 0;
  let lastSeq = 0;
  let settled: () => void = () => {};
  const done = new Promise<void>((r) => {
    settled = r;
  });
  const c = connect(bridge.port, (text) => {
    if (text.includes('"type":"message_update"') && count++ === 0) t0 = performance.now();
    if (text.includes('"agent_settled"')) settled();
    lastSeq++;
  });
  const welcome = await c.welcome;
  c.ws.send(JSON.stringify({ type: "prompt", id: "flood", message: `FLOOD ${n} 200` }));
  await done;
  const bridgeMs = performance.now() - t0;
  c.ws.close();
  await new Promise((r) => setTimeout(r, 100));

  // Reattach with a cursor 10,000 frames back: time to the first replayed frame and to the last.
  const replayed: number[] = [];
  const head = lastSeq;
  let replayDone: () => void = () => {};
  const allReplayed = new Promise<void>((r) => {
    replayDone = r;
  });
  const again = connect(
    bridge.port,
    () => {
      replayed.push(performance.now());
      if (replayed.length === 10_000) replayDone();
    },
    { epoch: String(welcome.epoch), lastSeq: head - 10_000 },
  );
  const w2 = await again.welcome;
  await allReplayed;
  const firstMs = (replayed[0] ?? Number.NaN) - again.sentAt.hello;
  const allMs = (replayed[9_999] ?? Number.NaN) - again.sentAt.hello;
  again.ws.close();

  await stop(bridge.child);

  // RSS on a fresh bridge: idle, then with the ring full by bytes (32 MiB of 3.3 KB frames, 10,000 of them).
  const fresh = await startNetworkBridge();
  const freshRss = () =>
    Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${fresh.child.pid}/status`, "utf8"))?.[1]) / 1024;
  await new Promise((r) => setTimeout(r, 300));
  const rssIdleMiB = freshRss();
  const c3 = connect(fresh.port, () => {});
  await c3.welcome;
  let fullDone: () => void = () => {};
  const full = new Promise<void>((r) => {
    fullDone = r;
  });
  c3.ws.on("message", (d) => {
    if (String(d).includes('"agent_settled"')) fullDone();
  });
  c3.ws.send(JSON.stringify({ type: "prompt", id: "full", message: "FLOOD 10000 3350" }));
  await full;
  // Peak RSS right after the burst includes garbage V8 has not returned yet; the steady state (the ring
  // held, the burst's garbage reclaimed by V8's idle memory reducer) is what a parked sandbox pays.
  const rssPeakMiB = freshRss();
  await new Promise((r) => setTimeout(r, 10_000));
  const rssFullMiB = freshRss();
  c3.ws.close();
  await stop(fresh.child);
  return {
    throughput: {
      frameBytes: 200,
      frames: n,
      directFramesPerSec: Math.round(n / (directMs / 1000)),
      bridgeFramesPerSec: Math.round(n / (bridgeMs / 1000)),
      ratioBridgeToDirect: round(directMs / bridgeMs, 3),
    },
    reattach: {
      resumed: w2.resumed === true ? 1 : 0,
      firstReplayedFrameMs: round(firstMs),
      replay10kFramesMs: round(allMs),
    },
    rss: {
      bridgeIdleMiB: round(rssIdleMiB),
      bridgeWithFullRingMiB: round(rssFullMiB),
      bridgePeakDuringFillMiB: round(rssPeakMiB),
      fullRingGrowthMiB: round(rssFullMiB - rssIdleMiB),
    },
  };
}

// 6. Cold start to the first get_state response: raw `pi --mode rpc` vs the bridge (stdio), real Pi both ways,
// interleaved. The bridge hands Pi the bundle dir's compile cache (npm run build makes it, as the image build
// does); raw Pi with that same cache is measured too, which leaves the bridge's own cost.
async function coldStart(): Promise<Record<string, number | boolean>> {
  const model = await startScriptedModel({ script: () => say("unused") });
  const agentDir = await writeScriptedAgentDir(model.baseUrl, mkdtempSync(path.join(stateRoot, "agent-")));
  const pi = findPiInstall(root);
  const cache = path.join(path.dirname(bundle), COMPILE_CACHE_DIR);
  const common = ["--provider", "scripted", "--model", "scripted-model", "--no-session", "--offline"];
  const timeToState = async (args: string[], env: NodeJS.ProcessEnv = {}) => {
    const start = performance.now();
    const child = startProcess(args, { PI_CODING_AGENT_DIR: agentDir, ...env });
    const answered = untilLine(child, (line) => line.includes('"id":"cold"'));
    child.stdin.write(`${JSON.stringify({ id: "cold", type: "get_state" })}\n`);
    await answered;
    const ms = performance.now() - start;
    await stop(child);
    return ms;
  };
  const raw: number[] = [];
  const rawCached: number[] = [];
  const bridged: number[] = [];
  const runs = 7;
  for (let i = 0; i < runs; i++) {
    raw.push(await timeToState(piArgv(pi.cliPath, gate, common)));
    bridged.push(await timeToState([bundle, "--mode", "rpc", "--gate", gate, ...common]));
    rawCached.push(await timeToState(piArgv(pi.cliPath, gate, common), { [COMPILE_CACHE_ENV]: cache }));
  }
  await model.close();
  return {
    piCompileCache: existsSync(cache),
    rawPiMedianMs: round(median(raw)),
    bridgeMedianMs: round(median(bridged)),
    ratioBridgeToRaw: round(median(bridged) / median(raw), 3),
    rawPiWithCompileCacheMedianMs: round(median(rawCached)),
    ratioBridgeToRawWithCompileCache: round(median(bridged) / median(rawCached), 3),
    runs,
  };
}

// 7. The journal's cost per frame: the same frames published through the ring with and without the journal,
// flushed one frame at a time (the worst case: one write per frame), interleaved in one run.
async function journalCost(): Promise<Record<string, number>> {
  const dir = mkdtempSync(path.join(scratch, "journal-"));
  const frames = 20_000;
  const text = JSON.stringify({ type: "message_update", pad: "x".repeat(180) });
  const withJournal = new RingSink(new ReplayRing(10_000, 32 * 1024 * 1024), {
    journal: new Journal(dir, { maxFrames: 10_000, maxBytes: 32 * 1024 * 1024 }, 0),
  });
  const without = new RingSink(new ReplayRing(10_000, 32 * 1024 * 1024));
  const timed = (sink: RingSink) => {
    const start = process.hrtime.bigint();
    sink.publish({ type: "message_update" }, text);
    sink.flush();
    return Number(process.hrtime.bigint() - start) / 1000;
  };
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < frames; i++) {
    a.push(timed(withJournal));
    b.push(timed(without));
  }
  withJournal.journal?.close();
  return {
    frames,
    frameBytes: text.length + 20,
    withJournalMedianUs: round(median(a), 3),
    withoutJournalMedianUs: round(median(b), 3),
    journalCostMedianUs: round(median(a) - median(b), 3),
    withJournalP99Us: round(p99(a), 3),
  };
}

// 8. Restart to the first resumed frame: kill -9 a network bridge (real Pi) and start it again on the same
// state dir and port; a typed client resumes by itself. Baseline: a fresh bridge to its first welcome.
async function restartToResume(): Promise<Record<string, number>> {
  const model = await startScriptedModel({ script: () => say("hello") });
  // Pi's configuration and the state outside /tmp, which the tools may write (the bridge refuses it from there).
  const agentDir = await writeScriptedAgentDir(model.baseUrl, mkdtempSync(path.join(stateRoot, "agent-")));
  const stateDir = mkdtempSync(path.join(stateRoot, "state-"));
  const ws = mkdtempSync(path.join(scratch, "ws-"));
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const args = [
    bundle,
    ...["--listen", `127.0.0.1:${port}`, "--cwd", ws, "--state-dir", stateDir, "--gate", gate],
    ...["--provider", "scripted", "--model", "scripted-model", "--offline"],
  ];
  const start = async () => {
    const child = startProcess(args, { CHAT_UI_AGENT_BRIDGE_TOKEN: TOKEN, PI_CODING_AGENT_DIR: agentDir });
    return child;
  };
  const t0 = performance.now();
  let child = await start();
  const client = new BridgeClient({
    url: `ws://127.0.0.1:${port}/v1/rpc`,
    token: TOKEN,
    backoff: { initialMs: 10, maxMs: 50 },
  });
  await client.connect();
  const freshMs = performance.now() - t0;
  await client.prompt("warm up");
  const restarts: number[] = [];
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 300));
    const gone = new Promise((r) => child.once("close", r));
    child.kill("SIGKILL");
    await gone;
    const killedAt = performance.now();
    const firstFrame = new Promise<number>((resolve) =>
      client.once("frame", () => resolve(performance.now())),
    );
    child = await start();
    restarts.push((await firstFrame) - killedAt);
  }
  client.close();
  await stop(child);
  await model.close();
  return {
    freshStartToWelcomeMs: round(freshMs),
    restartToFirstResumedFrameMedianMs: round(median(restarts)),
    restartToFirstResumedFrameMaxMs: round(Math.max(...restarts)),
    ratioRestartToFreshStart: round(median(restarts) / freshMs, 3),
    runs: restarts.length,
  };
}

// 8. The handshake (protocol 2): the key derivation each side does once, the proofs each connection costs, and
// connect → welcome through the bridge against a bare WebSocket open on the same bridge (its baseline).
async function handshakeCost(): Promise<Record<string, number>> {
  const derive: number[] = [];
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    await deriveKey(`${TOKEN}-${i}`);
    derive.push(performance.now() - start);
  }
  const key = await benchKey;
  const proofs: number[] = [];
  for (let i = 0; i < 2_000; i++) {
    const bridgeNonce = newNonce();
    const clientNonce = newNonce();
    const start = process.hrtime.bigint();
    const proof = clientProof(key, { bridgeNonce, clientNonce, clientId: "bench" });
    proofMatches(clientProof(key, { bridgeNonce, clientNonce, clientId: "bench" }), proof);
    bridgeProof(key, { bridgeNonce, clientNonce, clientId: "bench", epoch: "e".repeat(32) });
    proofs.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  const bridge = await startNetworkBridge();
  const opened: number[] = [];
  const welcomed: number[] = [];
  for (let i = 0; i < 30; i++) {
    const start = performance.now();
    const bare = new WebSocket(`ws://127.0.0.1:${bridge.port}/v1/rpc`);
    await new Promise((resolve) => bare.once("message", resolve));
    opened.push(performance.now() - start);
    bare.terminate();
    const started = performance.now();
    const c = connect(bridge.port, () => {});
    await c.welcome;
    welcomed.push(performance.now() - started);
    c.ws.close();
  }
  await stop(bridge.child);
  return {
    deriveKeyMedianMs: round(median(derive)),
    proofsPerConnectionMedianUs: round(median(proofs)),
    openToChallengeMedianMs: round(median(opened), 3),
    openToWelcomeMedianMs: round(median(welcomed), 3),
    connections: 30,
  };
}

async function main(): Promise<void> {
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run npm run build first`);
  // `--only=latency` (or throughput, cold, journal, restart, handshake) runs one part, for quick iterations.
  const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length);
  const latencyFigures = !only || only === "latency" ? await latency() : undefined;
  const rest = !only || only === "throughput" ? await throughputReplayRss() : {};
  const cold = !only || only === "cold" ? await coldStart() : undefined;
  const journal = !only || only === "journal" ? await journalCost() : undefined;
  const restart = !only || only === "restart" ? await restartToResume() : undefined;
  const handshake = !only || only === "handshake" ? await handshakeCost() : undefined;
  const result = {
    gate: path.relative(root, gate),
    latency: latencyFigures,
    ...rest,
    coldStart: cold,
    journal,
    restart,
    handshake,
    targets: {
      journalCostMedianUs: "<= 20",
      restartToFirstResumedFrameMedianMs: "<= 3000 (includes Pi's start and the patch probe)",
      addedMedianUs: "<= 100 (latency: the warm phase)",
      bridgeP99Us: "<= 1000 (latency: the warm phase)",
      bridgeFramesPerSec: ">= 50000",
      firstReplayedFrameMs: "<= 20",
      replay10kFramesMs: "<= 100",
      fullRingGrowthMiB: "<= 60 (Pi is a separate process; these are the bridge's own RSS figures)",
      ratioBridgeToRaw: "<= 1.05",
    },
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

try {
  await main();
} finally {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(scratch, { recursive: true, force: true });
  rmSync(stateRoot, { recursive: true, force: true });
}
