// Runs the BUILT bridge bundle as a child process and talks to it like chat-ui would (WebSocket) or like
// a Pi RPC client (stdio).
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestContext } from "node:test";
import WebSocket from "ws";
import { writeScriptedAgentDir } from "../../agent-runtime/dev/agent-dir.ts";
import {
  type ScriptedModel,
  type ScriptedModelOptions,
  startScriptedModel,
} from "../../agent-runtime/dev/scripted-model.ts";
import { WaitableLog } from "../../agent-runtime/dev/waitable-log.ts";
import { encodeJsonl, JsonlDecoder } from "../../agent-runtime/jsonl.ts";
import {
  type AuthKey,
  bridgeProof,
  clientProof,
  deriveKey,
  newNonce,
  proofMatches,
} from "../../bridge/handshake.ts";
import { PROTOCOL_VERSION } from "../../bridge/protocol.ts";
import { privateTempDir, tempDir } from "./workspace.ts";

export const root = path.resolve(import.meta.dirname, "..", "..");
export const bridgeBundle = path.join(root, "build", "opt", "chat-ui-agent", "bridge.mjs");
export const fixture = (name: string) => path.join(root, "tests", "support", "fixtures", name);
export const TEST_TOKEN = "test-bridge-token-0123456789abcdef";

export type Frame = { type: string; seq?: number; [key: string]: unknown };

export interface BridgeProcess {
  child: ChildProcessWithoutNullStreams;
  logs: Record<string, unknown>[];
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exitStatus: () => { code: number | null; signal: NodeJS.Signals | null } | undefined;
  waitForLog: (
    pred: (log: Record<string, unknown>) => boolean,
    ms?: number,
  ) => Promise<Record<string, unknown>>;
}

export interface StartBridgeOptions {
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Start the bridge as this uid/gid (the test must be root): the image's non-root launch. */
  uid?: number;
  gid?: number;
}

/** Spawns `node bridge.mjs …`; kills it (and waits) at test end. Each bridge gets its own state dir. */
export function spawnBridge(t: TestContext, options: StartBridgeOptions): BridgeProcess {
  if (!existsSync(bridgeBundle))
    throw new Error(`${bridgeBundle} is missing: run \`node scripts/build.mjs\` first`);
  const args = options.args.includes("--state-dir")
    ? options.args
    : ["--state-dir", mkdtempSync(path.join(tmpdir(), "bridge-state-dir-")), ...options.args];
  const ownStateDir = options.args.includes("--state-dir") ? undefined : args[1];
  const child = spawn(process.execPath, [bridgeBundle, ...args], {
    cwd: options.cwd ?? root,
    env: { PATH: process.env.PATH, LANG: "C.UTF-8", PI_OFFLINE: "1", ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid ?? options.uid } : {}),
  });
  let stderr = "";
  const logs = new WaitableLog<Record<string, unknown>>(() => `; stderr: ${stderr.slice(-3000)}`);
  const decoder = new JsonlDecoder();
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
    for (const line of decoder.push(chunk)) {
      try {
        logs.push(JSON.parse(line));
      } catch {
        logs.push({ raw: line });
      }
    }
  });
  child.stdin.on("error", () => {});
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("close", (code, signal) => {
      exitInfo = { code, signal };
      logs.end(`bridge exited ${JSON.stringify(exitInfo)}`);
      resolve(exitInfo);
    });
  });
  t.after(async () => {
    if (!exitInfo) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 8_000);
      await exited;
      clearTimeout(timer);
    }
    if (ownStateDir) await rm(ownStateDir, { recursive: true, force: true });
  });
  const waitForLog = (pred: (log: Record<string, unknown>) => boolean, ms = 20_000) => logs.waitFor(pred, ms);
  return { child, logs: logs.items, stderr: () => stderr, exited, exitStatus: () => exitInfo, waitForLog };
}

export interface NetworkBridge extends BridgeProcess {
  port: number;
  model: ScriptedModel | undefined;
  cwd: string;
  policyPath: string;
  url: string;
  /** The bridge's --state-dir (pass it to `startNetworkBridge` again to restart on it). */
  stateDir: string;
  /** Everything needed to start another bridge on the same state, model and workspace. */
  reuse: NetworkBridgeReuse;
}

export interface NetworkBridgeReuse {
  model?: ScriptedModel;
  agentDir?: string;
  stateDir: string;
  cwd: string;
  home: string;
}

/** A network-mode bridge over real Pi (scripted model) or a fake Pi (`fakePi`), listening on 127.0.0.1:0. */
export async function startNetworkBridge(
  t: TestContext,
  options: {
    model?: ScriptedModelOptions;
    fakePi?: string;
    args?: string[];
    gate?: string;
    /** Restart on the state (and workspace, model, agent dir) of an earlier bridge. */
    reuse?: NetworkBridgeReuse;
    env?: NodeJS.ProcessEnv;
    /** Listen on this port (a restarted bridge takes over its predecessor's address); default: any free one. */
    port?: number;
    /** Another Pi CLI (e.g. an unpatched copy) behind the scripted model. */
    piCommand?: string;
  } = {},
): Promise<NetworkBridge> {
  const reuse = options.reuse;
  const cwd = reuse?.cwd ?? (await tempDir(t, "bridge-ws-"));
  // The policy, Pi's seed and the state outside /tmp: the bridge refuses what the tools could write.
  const home = reuse?.home ?? (await privateTempDir(t, "bridge-home-"));
  const stateDir = reuse?.stateDir ?? (await privateTempDir(t, "bridge-state-"));
  const policyPath = path.join(home, "policy");
  let model: ScriptedModel | undefined = reuse?.model;
  let agentDir = reuse?.agentDir;
  const env: NodeJS.ProcessEnv = {
    CHAT_UI_AGENT_BRIDGE_TOKEN: TEST_TOKEN,
    AGENT_POLICY_PATH: policyPath,
    HOME: home,
    ...options.env,
  };
  const args = [
    "--listen",
    `127.0.0.1:${options.port ?? 0}`,
    "--cwd",
    cwd,
    "--state-dir",
    stateDir,
    "--gate",
    options.gate ?? fixture("fake-pi-gate.mjs"),
    "--auth-failure-delay",
    "50ms",
  ];
  if (options.fakePi) {
    args.push("--pi-command", options.fakePi);
  } else {
    if (!model) {
      model = await startScriptedModel(options.model ?? { script: [] });
      const theModel = model;
      t.after(() => theModel.close());
    }
    agentDir ??= await writeScriptedAgentDir(model.baseUrl, await privateTempDir(t, "bridge-agent-"));
    env.PI_CODING_AGENT_DIR = agentDir;
    args.push("--provider", "scripted", "--model", "scripted-model", "--offline");
    if (options.piCommand) args.push("--pi-command", options.piCommand);
  }
  const bridge = spawnBridge(t, { args: [...args, ...(options.args ?? [])], env });
  const listening = await bridge.waitForLog((l) => l.msg === "listening");
  const port = Number(listening.port);
  return {
    ...bridge,
    port,
    model,
    cwd,
    policyPath,
    url: `ws://127.0.0.1:${port}/v1/rpc`,
    stateDir,
    reuse: { ...(model ? { model } : {}), ...(agentDir ? { agentDir } : {}), stateDir, cwd, home },
  };
}

const keys = new Map<string, Promise<AuthKey>>();

/** The handshake key of a token, derived once per test process (PBKDF2 is deliberately slow). */
export function keyOf(token: string): Promise<AuthKey> {
  let key = keys.get(token);
  if (!key) {
    key = deriveKey(token);
    keys.set(token, key);
  }
  return key;
}

/** A WebSocket client that records every frame and can wait for one. */
export class TestClient {
  closeInfo: { code: number; reason: string } | undefined;
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly log = new WaitableLog<Frame>();

  readonly ws: WebSocket;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on("message", (data) => {
      this.log.push(JSON.parse(String(data)) as Frame);
    });
    this.closed = new Promise((resolve) => {
      ws.on("close", (code, reason) => {
        this.closeInfo = { code, reason: String(reason) };
        this.log.end(`connection closed ${JSON.stringify(this.closeInfo)}`);
        resolve(this.closeInfo);
      });
    });
    ws.on("error", () => {});
  }

  /** Connects without saying anything: the bridge's challenge is the first frame it records. */
  static async open(url: string, headers?: Record<string, string>): Promise<TestClient> {
    const ws = new WebSocket(url, headers ? { headers } : {});
    const client = new TestClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    return client;
  }

  /** Opens a connection, answers the challenge with a protocol-2 hello and waits for the (verified) welcome. */
  static async connect(
    url: string,
    hello: { clientId?: string; resume?: { epoch: string; lastSeq: number }; token?: string } = {},
    /** How long to wait for the welcome (it waits for Pi to be proved patched, refused or crash-looping). */
    welcomeMs = 20_000,
  ): Promise<{ client: TestClient; welcome: Frame }> {
    const client = await TestClient.open(url);
    const sent = await client.hello(hello);
    const welcome = await client.waitFor((f) => f.type === "welcome", welcomeMs);
    const expected = bridgeProof(await keyOf(hello.token ?? TEST_TOKEN), {
      ...sent,
      epoch: String(welcome.epoch),
    });
    if (!proofMatches(expected, welcome.proof)) throw new Error("the welcome's proof does not check");
    return { client, welcome };
  }

  /** The nonce of the bridge's challenge (its first frame). */
  async challenge(ms = 20_000): Promise<string> {
    const frame = await this.waitFor(() => true, ms);
    if (frame.type !== "challenge" || frame.protocol !== PROTOCOL_VERSION || typeof frame.nonce !== "string")
      throw new Error(`expected a challenge first, got ${JSON.stringify(frame).slice(0, 200)}`);
    return frame.nonce;
  }

  /** Answers the challenge with a protocol-2 hello made with `token` (default: the test token). */
  async hello(
    hello: { clientId?: string; resume?: { epoch: string; lastSeq: number }; token?: string } = {},
  ): Promise<{ bridgeNonce: string; clientNonce: string; clientId: string }> {
    const bridgeNonce = await this.challenge();
    const clientNonce = newNonce();
    const clientId = hello.clientId ?? "test-client";
    const proof = clientProof(await keyOf(hello.token ?? TEST_TOKEN), { bridgeNonce, clientNonce, clientId });
    this.send({
      type: "hello",
      protocol: PROTOCOL_VERSION,
      clientId,
      ...(hello.resume ? { resume: hello.resume } : {}),
      nonce: clientNonce,
      proof,
    });
    return { bridgeNonce, clientNonce, clientId };
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }

  /** Highest seq received so far (the resume cursor). */
  get lastSeq(): number {
    let max = 0;
    for (const f of this.frames) if (typeof f.seq === "number" && f.seq > max) max = f.seq;
    return max;
  }

  /** Every frame received, in order. */
  get frames(): readonly Frame[] {
    return this.log.items;
  }

  waitFor(pred: (f: Frame) => boolean, ms = 20_000, from = 0): Promise<Frame> {
    return this.log.waitFor(pred, ms, from);
  }

  /** Sends a command with an id and waits for its response. */
  async request(frame: Record<string, unknown>, ms = 20_000): Promise<Frame> {
    const from = this.frames.length;
    this.send(frame);
    return this.waitFor((f) => f.type === "response" && f.id === frame.id, ms, from);
  }

  /** Answers a dialog and waits for the verdict (keyed by commandId, not the dialog id). */
  async answer(
    frame: { id: string; commandId: string; [key: string]: unknown },
    ms = 20_000,
  ): Promise<Frame> {
    const from = this.frames.length;
    this.send({ type: "extension_ui_response", ...frame });
    return this.waitFor((f) => f.type === "response" && f.id === frame.commandId, ms, from);
  }

  close(): Promise<{ code: number; reason: string }> {
    this.ws.close();
    return this.closed;
  }

  /** Drops the TCP connection without a close handshake (a network blip). */
  drop(): Promise<{ code: number; reason: string }> {
    this.ws.terminate();
    return this.closed;
  }
}

/** Drives a stdio-mode bridge exactly like a `pi --mode rpc` child. */
export class StdioDriver {
  readonly rawLines: string[] = [];
  private readonly log: WaitableLog<Frame>;

  readonly bridge: BridgeProcess;

  constructor(bridge: BridgeProcess) {
    this.bridge = bridge;
    this.log = new WaitableLog<Frame>(() => `; stderr: ${bridge.stderr().slice(-2000)}`);
    const decoder = new JsonlDecoder();
    bridge.child.stdout.on("data", (chunk: Buffer) => {
      for (const line of decoder.push(chunk)) {
        this.rawLines.push(line);
        this.log.push(JSON.parse(line) as Frame);
      }
    });
    void bridge.exited.then(() => this.log.end("bridge exited"));
  }

  /** Every stdout line, parsed, in order. */
  get lines(): readonly Frame[] {
    return this.log.items;
  }

  send(frame: unknown): void {
    this.bridge.child.stdin.write(typeof frame === "string" ? frame : encodeJsonl(frame));
  }

  waitFor(pred: (f: Frame) => boolean, ms = 20_000, from = 0): Promise<Frame> {
    return this.log.waitFor(pred, ms, from);
  }

  async request(frame: Record<string, unknown>, ms = 20_000): Promise<Frame> {
    const from = this.lines.length;
    this.send(frame);
    return this.waitFor((f) => f.type === "response" && f.id === frame.id, ms, from);
  }
}

/** True if a process (or, with a negative pid, a process group) still exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export async function waitUntil(cond: () => boolean, ms = 10_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
