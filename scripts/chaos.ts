// npm run chaos — forced connection drops and kill -9 restarts of the BUILT bridge (real patched Pi, the
// scripted model, the real approval gate under `auto`) while a typed client keeps prompting. Prints one JSON
// object: frames, gaps, duplicates, executions and resume times. `runChaos` is also what the integration
// test runs, with fewer drops and restarts (tests/integration/bridge-chaos.test.ts).
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { writeScriptedAgentDir } from "../agent-runtime/dev/agent-dir.ts";
import {
  lastToolResult,
  lastUserText,
  type RecordedRequest,
  type ScriptTurn,
  say,
  startScriptedModel,
} from "../agent-runtime/dev/scripted-model.ts";
import { JsonlDecoder } from "../agent-runtime/jsonl.ts";
import { BridgeClient, type BridgeFrame } from "../bridge/client.ts";

const root = path.resolve(import.meta.dirname, "..");
const bundle = path.join(root, "build", "opt", "chat-ui-agent", "bridge.mjs");
const gate = path.join(root, "build", "opt", "chat-ui-agent", "approval-gate.mjs");
const TOKEN = "chaos-token-0123456789abcdef";

export interface ChaosOptions {
  drops: number;
  restarts: number;
  /** Pause between drops (ms), drawn uniformly from [min, max]. */
  dropEveryMs?: [number, number];
  log?: (line: string) => void;
}

export interface ChaosReport {
  drops: number;
  restarts: number;
  epochs: number;
  frames: number;
  gaps: number;
  duplicates: number;
  prompts: { sent: number; answered: number; outcomeUnknown: number };
  executions: { commands: number; once: number; never: number; moreThanOnce: number };
  modelAsks: { prompts: number; moreThanOnce: number };
  streams: { completed: number; intact: number };
  resumeMs: { count: number; p50: number; p99: number; max: number };
  restartToFirstFrameMs: number[];
  durationMs: number;
}

/** "STREAM n <tag>" streams n chunks; "RUN <cmd>" runs bash; a tool result ends the turn. */
function script(request: RecordedRequest): ScriptTurn {
  if (lastToolResult(request.body) !== undefined) return say("tool done");
  const text = lastUserText(request.body);
  const stream = /^STREAM (\d+) /.exec(text);
  if (stream) {
    const n = Number(stream[1]);
    return { chunks: Array.from({ length: n }, (_, i) => ({ text: `c${i} ` })), chunkDelayMs: 4 };
  }
  const run = /^RUN (.+)$/s.exec(text);
  if (run) return { chunks: [{ toolCall: { name: "bash", arguments: { command: run[1] } } }] };
  return say(`echo: ${text}`);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : (s[Math.min(s.length - 1, Math.floor(s.length * q))] as number);
};
const round = (x: number) => Math.round(x * 10) / 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => {});
  const [dropMin, dropMax] = options.dropEveryMs ?? [20, 90];
  // Outside /tmp: the bridge refuses a policy file or Pi configuration the tools could write (/tmp is theirs).
  const scratch = mkdtempSync(path.join("/var/tmp", "chaos-"));
  const workspace = mkdtempSync(path.join(scratch, "ws-"));
  const stateDir = mkdtempSync(path.join(scratch, "state-"));
  const home = mkdtempSync(path.join(scratch, "home-"));
  const policyPath = path.join(home, "policy");
  writeFileSync(policyPath, "auto\n");
  const executionsLog = path.join(workspace, "executions.log");
  const model = await startScriptedModel({ script });
  const agentDir = await writeScriptedAgentDir(model.baseUrl, mkdtempSync(path.join(scratch, "agent-")));
  const port = await freePort();
  const started = Date.now();
  let bridge: ChildProcessWithoutNullStreams | undefined;

  const startBridge = async (): Promise<ChildProcessWithoutNullStreams> => {
    const child = spawn(
      process.execPath,
      [
        bundle,
        ...["--listen", `127.0.0.1:${port}`, "--cwd", workspace, "--state-dir", stateDir, "--gate", gate],
        ...["--provider", "scripted", "--model", "scripted-model", "--offline"],
      ],
      {
        cwd: workspace,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          PI_OFFLINE: "1",
          PI_CODING_AGENT_DIR: agentDir,
          AGENT_POLICY_PATH: policyPath,
          AGENT_POLICY: "auto",
          CHAT_UI_AGENT_BRIDGE_TOKEN: TOKEN,
        },
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    await new Promise<void>((resolve, reject) => {
      const decoder = new JsonlDecoder();
      child.stderr.on("data", (chunk: Buffer) => {
        for (const line of decoder.push(chunk)) if (line.includes('"msg":"listening"')) resolve();
      });
      child.once("close", (code) => reject(new Error(`bridge exited (${code}) during start`)));
    });
    return child;
  };

  const report: ChaosReport = {
    drops: 0,
    restarts: 0,
    epochs: 0,
    frames: 0,
    gaps: 0,
    duplicates: 0,
    prompts: { sent: 0, answered: 0, outcomeUnknown: 0 },
    executions: { commands: 0, once: 0, never: 0, moreThanOnce: 0 },
    modelAsks: { prompts: 0, moreThanOnce: 0 },
    streams: { completed: 0, intact: 0 },
    resumeMs: { count: 0, p50: 0, p99: 0, max: 0 },
    restartToFirstFrameMs: [],
    durationMs: 0,
  };
  const client = new BridgeClient({
    url: `ws://127.0.0.1:${port}/v1/rpc`,
    token: TOKEN,
    backoff: { initialMs: 10, maxMs: 100 },
  });
  const epochs = new Set<string>();
  const resumeTimes: number[] = [];
  const seenSeqs = new Set<number>();
  let lastSeq = 0;
  let droppedAt: number | undefined;
  let restartedAt: number | undefined;
  const frames: BridgeFrame[] = [];
  client.on("welcome", (w) => {
    epochs.add(w.epoch);
    if (!w.resumed) lastSeq = w.headSeq;
  });
  client.on("resumed", () => {
    if (droppedAt !== undefined) resumeTimes.push(performance.now() - droppedAt);
    droppedAt = undefined;
  });
  client.on("frame", (frame) => {
    if (restartedAt !== undefined) {
      report.restartToFirstFrameMs.push(round(performance.now() - restartedAt));
      restartedAt = undefined;
    }
    report.frames++;
    if (seenSeqs.has(frame.seq)) report.duplicates++;
    seenSeqs.add(frame.seq);
    if (frame.seq !== lastSeq + 1) report.gaps++;
    lastSeq = frame.seq;
    frames.push(frame);
  });
  try {
    bridge = await startBridge();
    await client.connect();

    // The load: prompts one after the other (streams, and tools that append their id to a file).
    let stop = false;
    const streams: { id: string; n: number }[] = [];
    const runs: string[] = [];
    const load = (async () => {
      for (let i = 0; !stop; i++) {
        const id = `chaos-${i}`;
        const isRun = i % 3 === 2;
        const n = 30 + (i % 5) * 10;
        const message = isRun ? `RUN echo ${id} >> executions.log` : `STREAM ${n} ${id}`;
        if (isRun) runs.push(id);
        else streams.push({ id, n });
        report.prompts.sent++;
        const from = frames.length;
        const response = await client.command({ type: "prompt", id, message });
        if (response.code === "outcome_unknown") report.prompts.outcomeUnknown++;
        else report.prompts.answered++;
        // Until the turn ends (settled), or its Pi is gone (restarted or exited).
        while (
          !stop &&
          !frames
            .slice(from)
            .some((f) => ["agent_settled", "agent_restarted", "agent_exited"].includes(f.type))
        ) {
          await sleep(5);
        }
      }
    })();

    const restartAt = new Set(
      Array.from({ length: options.restarts }, (_, k) =>
        Math.floor(((k + 1) * options.drops) / (options.restarts + 1)),
      ),
    );
    for (let d = 1; d <= options.drops; d++) {
      await sleep(dropMin + Math.random() * (dropMax - dropMin));
      if (restartAt.has(d)) {
        log(`restart ${report.restarts + 1} at drop ${d}`);
        const old = bridge;
        const gone = new Promise((resolve) => old.once("close", resolve));
        old.kill("SIGKILL");
        await gone;
        droppedAt = undefined;
        restartedAt = performance.now();
        bridge = await startBridge();
        report.restarts++;
        while (client.state !== "live") await sleep(5);
      }
      // Sometimes cut right after a welcome (the handshake), mostly mid-stream.
      while (client.state !== "live") await sleep(1);
      droppedAt = performance.now();
      client.dropConnection(Math.random() < 0.2 ? 0 : Math.random() * 20);
      report.drops++;
      if (d % 100 === 0) log(`${d} drops, ${report.frames} frames`);
    }
    while (client.state !== "live") await sleep(5);
    stop = true;
    await load;
    // Let the last turn finish so every execution is counted.
    await sleep(1_500);

    const executed = new Map<string, number>();
    let text = "";
    try {
      text = readFileSync(executionsLog, "utf8");
    } catch {}
    for (const line of text.split("\n")) if (line) executed.set(line, (executed.get(line) ?? 0) + 1);
    report.executions.commands = runs.length;
    for (const id of runs) {
      const times = executed.get(id) ?? 0;
      if (times === 0) report.executions.never++;
      else if (times === 1) report.executions.once++;
      else report.executions.moreThanOnce++;
    }
    const asks = new Map<string, number>();
    for (const request of model.requests) {
      if (lastToolResult(request.body) !== undefined) continue;
      const message = lastUserText(request.body);
      asks.set(message, (asks.get(message) ?? 0) + 1);
    }
    report.modelAsks.prompts = asks.size;
    report.modelAsks.moreThanOnce = [...asks.values()].filter((n) => n > 1).length;
    // A stream whose turn settled without a restart in between must have arrived whole, once, in order.
    for (const { id, n } of streams) {
      const start = frames.findIndex((f) => f.type === "response" && f.id === id);
      if (start < 0) continue;
      const end = frames.findIndex(
        (f, i) => i > start && ["agent_settled", "agent_restarted", "agent_exited"].includes(f.type),
      );
      if (end < 0 || frames[end]?.type !== "agent_settled") continue;
      report.streams.completed++;
      const got = frames
        .slice(start, end)
        .map((f) => f.assistantMessageEvent as { type?: string; delta?: string } | undefined)
        .filter((e) => e?.type === "text_delta")
        .map((e) => e?.delta)
        .join("");
      const want = Array.from({ length: n }, (_, i) => `c${i} `).join("");
      if (got === want) report.streams.intact++;
    }
    report.epochs = epochs.size;
    report.resumeMs = {
      count: resumeTimes.length,
      p50: round(quantile(resumeTimes, 0.5)),
      p99: round(quantile(resumeTimes, 0.99)),
      max: round(Math.max(0, ...resumeTimes)),
    };
    report.durationMs = Date.now() - started;
    return report;
  } finally {
    client.close();
    if (bridge && bridge.exitCode === null && bridge.signalCode === null) {
      const gone = new Promise((resolve) => bridge?.once("close", resolve));
      bridge.kill("SIGTERM");
      await gone;
    }
    await model.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const drops = Number(process.env.CHAOS_DROPS ?? 1_000);
  const restarts = Number(process.env.CHAOS_RESTARTS ?? 3);
  const report = await runChaos({ drops, restarts, log: (line) => process.stderr.write(`${line}\n`) });
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  const ok =
    report.gaps === 0 &&
    report.duplicates === 0 &&
    report.epochs === 1 &&
    report.executions.moreThanOnce === 0 &&
    report.modelAsks.moreThanOnce === 0 &&
    report.streams.intact === report.streams.completed;
  process.exit(ok ? 0 : 1);
}
