// Starts real Pi in RPC mode and speaks its JSONL protocol: for tests, benchmarks and the demo.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { encodeJsonl, JsonlDecoder } from "../jsonl.ts";
import { barePiArgv } from "../pi-argv.ts";
import { findPiInstall } from "../pi-install.ts";
import { SCRIPTED_MODEL_ID, SCRIPTED_PROVIDER, writeScriptedAgentDir } from "./agent-dir.ts";
import { WaitableLog } from "./waitable-log.ts";

export type PiLine = { type: string; [key: string]: unknown };
export type PiResponse = PiLine & { type: "response"; id?: string; command: string; success: boolean };

export interface PiRpcOptions {
  /** OpenAI-compatible base URL (e.g. the scripted model's). */
  modelBaseUrl: string;
  cwd: string;
  /** Extension files loaded with -e (discovery stays off). */
  extensions?: string[];
  /** Flags appended after ours. */
  extraArgs?: string[];
  /** `rpc` (default) or another Pi mode, e.g. `json` to exercise ctx.hasUI === false. */
  mode?: string;
  env?: NodeJS.ProcessEnv;
  agentDir?: string;
  /** Node binary; must be >= 22.19. Defaults to the running one. */
  node?: string;
  /** Extra trailing arguments (e.g. a prompt for json/print mode). */
  messages?: string[];
}

export interface PiExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class PiRpcProcess {
  stderr = "";
  private readonly log = new WaitableLog<PiLine>(() => `; stderr: ${this.stderr.slice(-2000)}`);
  readonly exited: Promise<PiExit>;
  private readonly listeners = new Set<(line: PiLine) => void>();
  private exitInfo: PiExit | undefined;

  readonly child: ChildProcessWithoutNullStreams;
  readonly agentDir: string;

  private constructor(
    child: ChildProcessWithoutNullStreams,
    agentDir: string,
    /** Temp dirs this harness made (HOME, and the agent dir unless the caller gave one): removed once Pi is gone. */
    ownedDirs: string[],
  ) {
    this.child = child;
    this.agentDir = agentDir;
    const decoder = new JsonlDecoder();
    child.stdout.on("data", (chunk: Buffer) => {
      for (const raw of decoder.push(chunk)) this.accept(raw);
    });
    child.stdout.on("end", () => {
      const tail = decoder.end();
      if (tail !== undefined) this.accept(tail);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString("utf8");
    });
    child.stdin.on("error", () => {});
    this.exited = new Promise((resolve) => {
      // "close" (not "exit"): all stdout has been read by then.
      child.on("close", (code, signal) => {
        this.exitInfo = { code, signal };
        const exit = this.exitInfo;
        this.log.end(`Pi exited (${JSON.stringify(exit)})`);
        void Promise.all(ownedDirs.map((dir) => rm(dir, { recursive: true, force: true }))).then(() =>
          resolve(exit),
        );
      });
    });
  }

  static async start(options: PiRpcOptions): Promise<PiRpcProcess> {
    const agentDir = options.agentDir ?? (await writeScriptedAgentDir(options.modelBaseUrl));
    const home = await mkdtemp(path.join(tmpdir(), "pi-home-"));
    const pi = findPiInstall(import.meta.dirname);
    const args = [
      ...barePiArgv(pi.cliPath, options.mode),
      "--provider",
      SCRIPTED_PROVIDER,
      "--model",
      SCRIPTED_MODEL_ID,
      ...(options.extensions ?? []).flatMap((file) => ["-e", file]),
      ...(options.extraArgs ?? []),
      ...(options.messages ?? []),
    ];
    const child = spawn(options.node ?? process.execPath, args, {
      cwd: options.cwd,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        LANG: "C.UTF-8",
        PI_OFFLINE: "1",
        PI_CODING_AGENT_DIR: agentDir,
        ...options.env,
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    return new PiRpcProcess(child, agentDir, options.agentDir ? [home] : [home, agentDir]);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get exitStatus(): PiExit | undefined {
    return this.exitInfo;
  }

  onLine(listener: (line: PiLine) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  send(command: Record<string, unknown>): void {
    this.child.stdin.write(encodeJsonl(command));
  }

  /** Sends a command (adding an id if it has none) and resolves with its response. */
  async request(command: Record<string, unknown>, timeoutMs = 30_000): Promise<PiResponse> {
    const id = typeof command.id === "string" ? command.id : randomUUID();
    const from = this.lines.length;
    this.send({ ...command, id });
    return (await this.waitFor((l) => l.type === "response" && l.id === id, timeoutMs, from)) as PiResponse;
  }

  /** Every line Pi wrote, parsed, in order. */
  get lines(): readonly PiLine[] {
    return this.log.items;
  }

  /** Resolves with the first line (at or after index `from`) matching `predicate`. */
  waitFor(predicate: (line: PiLine) => boolean, timeoutMs = 30_000, from = 0): Promise<PiLine> {
    return this.log.waitFor(predicate, timeoutMs, from);
  }

  /** Closes stdin (Pi's own shutdown path) and waits; SIGKILL if it does not exit in time. */
  async close(timeoutMs = 5_000): Promise<PiExit> {
    if (this.exitInfo) return this.exitInfo;
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    const result = await this.exited;
    clearTimeout(timer);
    return result;
  }

  private accept(raw: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = { type: "__unparseable__", raw };
    }
    const line = parsed as PiLine;
    this.log.push(line);
    for (const listener of [...this.listeners]) listener(line);
  }
}
