// The BUILT helper (build/opt/chat-ui-agent/landlock-exec) as the tools' supervisor of any program, spoken to
// through its control channel as the bridge does: its reports parsed with the one schema, commands written.
import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";
import type { TestContext } from "node:test";
import { WaitableLog } from "../../agent-runtime/dev/waitable-log.ts";
import { JsonlDecoder } from "../../agent-runtime/jsonl.ts";
import type { EgressFilter, NetworkMode } from "../../agent-runtime/sandbox/egress.ts";
import {
  commandLine,
  type SupervisorCommand,
  SupervisorMessage,
  supervisorArgs,
} from "../../agent-runtime/sandbox/supervisor.ts";
import { landlockHelper } from "./executor.ts";

export interface Supervised {
  child: ChildProcess;
  pid: number;
  reports: WaitableLog<SupervisorMessage>;
  /** The program's stdout and stderr so far. */
  output: () => string;
  send: (command: SupervisorCommand) => void;
  /** The program's channel end (the executor's fd 3): writing to it releases a held program. */
  channel: Socket;
  control: Socket;
  /** The supervisor's stdio closed too (its tools may hold its stdout after it was killed). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The supervisor process itself exited. */
  died: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface SuperviseOptions {
  program: string[];
  cwd: string;
  uid?: number;
  gid?: number;
  /** Landlock rules (landlockArgs), empty for none. */
  rules?: string[];
  filter?: EgressFilter;
  mode?: NetworkMode;
  hold?: boolean;
  nproc?: number;
  oomScoreAdj?: number;
  env?: Record<string, string>;
  /** The egress proxy's port: loopback connects to it are reported with their call. */
  proxyPort?: number;
}

export function supervise(t: TestContext, options: SuperviseOptions): Supervised {
  if (!landlockHelper)
    throw new Error("the helper was not built (gcc missing?): it is required for these tests");
  const args = [
    ...supervisorArgs({
      hold: options.hold ?? false,
      nproc: options.nproc ?? 4096,
      oomScoreAdj: options.oomScoreAdj ?? 0,
      filter: options.filter ?? "none",
      mode: options.mode ?? "registries",
      setenv: {},
      graceMs: 2_000,
      ...(options.proxyPort !== undefined ? { proxyPort: options.proxyPort } : {}),
    }),
    ...(options.rules ?? []),
    "--",
    ...options.program,
  ];
  const child = spawn(landlockHelper, args, {
    cwd: options.cwd,
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C.UTF-8", ...options.env },
    stdio: ["ignore", "pipe", "pipe", "pipe", "pipe"],
    detached: true,
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid ?? options.uid } : {}),
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  const reports = new WaitableLog<SupervisorMessage>(() => `; output: ${output.slice(-3000)}`);
  const control = child.stdio[4] as Socket;
  const decoder = new JsonlDecoder(64 * 1024);
  control.on("data", (chunk: Buffer) => {
    for (const line of decoder.push(chunk)) reports.push(SupervisorMessage.parse(JSON.parse(line)));
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("close", (code, signal) => resolve({ code, signal }));
  });
  const died = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal }));
  });
  t.after(async () => {
    control.destroy();
    await Promise.race([died, new Promise((r) => setTimeout(r, 3_000))]);
    try {
      process.kill(-(child.pid ?? 0), "SIGKILL");
    } catch {}
    await died;
  });
  return {
    child,
    pid: child.pid ?? -1,
    reports,
    output: () => output,
    send: (command) => control.write(commandLine(command)),
    channel: child.stdio[3] as Socket,
    control,
    exited,
    died,
  };
}
