// The three launch modes an image test attacks, each as a container whose command is the sbx-server stand-in
// (support/sbx-standin.mjs), so one container can start the bridge several times (different settings, a refused
// start, a restart) and read each start's exit status and stderr:
//   - root: the image's start user named explicitly, the token in a private --token-file;
//   - sbx: the image's default user, the token in the environment (as sbx-server starts it);
//   - user1000: `docker run --user 1000` (one uid for the bridge, Pi and the tools), the token in the environment.
// Host networking: everything listens on 127.0.0.1, so the host's scripted model is reachable as is.
import { randomBytes } from "node:crypto";
import path from "node:path";
import type { TestContext } from "node:test";
import type Docker from "dockerode";
import { docker, execIn, freePort, repoRoot } from "./docker.ts";
import { until } from "./harness.ts";

export interface LaunchMode {
  key: "root" | "sbx" | "user1000";
  name: string;
  /** docker run --user (undefined: the image's default user). */
  user: string | undefined;
  token: "file" | "env";
}

export const LAUNCH_MODES: readonly LaunchMode[] = [
  { key: "root", name: "root, --agent-user agent, token in a --token-file", user: "root", token: "file" },
  {
    key: "sbx",
    name: "the image's default user, started as sbx-server would (token in the environment)",
    user: undefined,
    token: "env",
  },
  { key: "user1000", name: "--user 1000 (one uid, token in the environment)", user: "1000", token: "env" },
];

/** What the stand-in knows of one child: its pid, its exit (null while it runs), its stderr's tail. */
export interface Job {
  pid: number | null;
  exitCode: number | null;
  signal: string | null;
  stderr: string;
}

const SUPPORT = path.join(repoRoot, "tests", "image", "support");

export class SbxContainer {
  readonly container: Docker.Container;
  readonly mode: LaunchMode;
  private readonly sbx: { port: number; token: string };

  private constructor(container: Docker.Container, mode: LaunchMode, sbx: { port: number; token: string }) {
    this.container = container;
    this.mode = mode;
    this.sbx = sbx;
  }

  /** A container of `image` in `mode` running the stand-in; removed after the test. */
  static async start(
    t: TestContext,
    image: string,
    mode: LaunchMode,
    options: { env?: string[]; binds?: string[] } = {},
  ): Promise<SbxContainer> {
    const sbx = { port: await freePort(), token: randomBytes(16).toString("hex") };
    const container = await docker.createContainer({
      Image: image,
      ...(mode.user ? { User: mode.user } : {}),
      Cmd: ["node", "/sbx/sbx-standin.mjs"],
      Env: [`PORT=${sbx.port}`, "HOST=127.0.0.1", `SBX_TOKEN=${sbx.token}`, ...(options.env ?? [])],
      HostConfig: {
        NetworkMode: "host",
        Binds: [`${SUPPORT}:/sbx:ro`, ...(options.binds ?? [])],
      },
    });
    t.after(async () => {
      await container.remove({ force: true });
    });
    await container.start();
    await until(
      async () => (await fetch(`http://127.0.0.1:${sbx.port}/`).catch(() => undefined))?.ok === true,
      30_000,
      "the sbx stand-in",
    );
    return new SbxContainer(container, mode, sbx);
  }

  /** A shell command as root in the container (setup and inspection, never the tools' part). */
  async root(command: string): Promise<string> {
    const r = await execIn(this.container, ["sh", "-c", command], "root");
    return r.stdout + r.stderr;
  }

  /**
   * Starts `node bridge.mjs --listen 127.0.0.1:<port> --cwd /workspace --agent-user agent <args>` through the
   * stand-in, with `token` as the mode hands it over and `env` added to the container's environment.
   */
  async startBridge(
    id: string,
    options: { port: number; token: string; env?: Record<string, string>; args?: string[] },
  ): Promise<void> {
    const argv = [
      "node",
      "/opt/chat-ui-agent/bridge.mjs",
      "--listen",
      `127.0.0.1:${options.port}`,
      "--cwd",
      "/workspace",
      "--agent-user",
      "agent",
      ...(this.mode.token === "file" ? ["--token-file", "/run/bridge-token"] : []),
      ...(options.args ?? []),
    ];
    const response = await this.post("/exec", {
      id,
      argv,
      env: {
        ...options.env,
        ...(this.mode.token === "env" ? { CHAT_UI_AGENT_BRIDGE_TOKEN: options.token } : {}),
      },
      files:
        this.mode.token === "file"
          ? [{ path: "/run/bridge-token", content: options.token, mode: 0o600 }]
          : undefined,
    });
    if (response.status !== 200) throw new Error(`the stand-in refused /exec: ${await response.text()}`);
  }

  async job(id: string): Promise<Job> {
    const response = await fetch(`http://127.0.0.1:${this.sbx.port}/jobs/${id}`, {
      headers: { "x-sandbox-token": this.sbx.token },
    });
    if (response.status !== 200) throw new Error(`no job ${id}: ${await response.text()}`);
    return (await response.json()) as Job;
  }

  /** Waits for the bridge's "listening" log line; fails at once (with its stderr) if it exits instead. */
  async listening(id: string, ms = 90_000): Promise<void> {
    let last: Job | undefined;
    await until(
      async () => {
        last = await this.job(id);
        if (last.exitCode !== null || last.signal !== null)
          throw new Error(`${id} exited (${last.exitCode ?? last.signal}):\n${last.stderr.slice(-4000)}`);
        return last.stderr.includes('"msg":"listening"');
      },
      ms,
      `${id} to listen`,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${last?.stderr.slice(-4000) ?? ""}`);
    });
  }

  /** Waits for the job to end (bounded: a bridge that started anyway fails the wait, it does not hang). */
  async exited(id: string, ms = 60_000): Promise<Job> {
    let last: Job | undefined;
    await until(
      async () => {
        last = await this.job(id);
        return last.exitCode !== null || last.signal !== null;
      },
      ms,
      `${id} to exit`,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; it is still running:\n${last?.stderr.slice(-4000) ?? ""}`);
    });
    return last as Job;
  }

  /** SIGTERM to the job (sent by root), then waits for it to end. */
  async stop(id: string): Promise<Job> {
    const { pid } = await this.job(id);
    await this.root(`kill -TERM ${pid}`);
    return this.exited(id, 30_000);
  }

  private post(route: string, body: unknown): Promise<Response> {
    return fetch(`http://127.0.0.1:${this.sbx.port}${route}`, {
      method: "POST",
      headers: { "x-sandbox-token": this.sbx.token },
      body: JSON.stringify(body),
    });
  }
}
