// dockerode helpers for the image tests: builds and runs with host networking only (dockerd has no
// bridge), build output kept for failure messages, one-shot commands with demultiplexed output.
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { before } from "node:test";
import Docker from "dockerode";
import { ensureEngine } from "../../../scripts/docker/ensure-engine.mjs";
import { ensureTestBase } from "../../../scripts/docker/test-base.mjs";

export const repoRoot = path.resolve(import.meta.dirname, "../../..");
export const docker = new Docker();

/**
 * An image tag for these tests. IMAGE_TEST_TAG_SUFFIX (lowercase letters, digits, dashes) keeps the images of
 * checkouts that share one engine apart, so parallel runs never test each other's builds.
 */
export function imageTag(name: string): string {
  const suffix = process.env.IMAGE_TEST_TAG_SUFFIX ?? "";
  if (suffix === "") return name;
  if (!/^[a-z0-9][a-z0-9-]{0,40}$/.test(suffix))
    throw new Error("IMAGE_TEST_TAG_SUFFIX: lowercase letters, digits and dashes only (at most 41)");
  return `${name}-${suffix}`;
}

/** How long one file's image build may take (a cold test base and no layer cache). */
export const IMAGE_BUILD_TIMEOUT_MS = 40 * 60_000;

/**
 * What every image test file needs first: an engine that answers, the locally built test base, and this
 * checkout's image built on it as `tag` (a failed build throws with the end of its log).
 */
export async function buildProductImage(tag: string): Promise<void> {
  await ensureEngine();
  const base = await ensureTestBase(docker);
  const build = await buildImage(repoRoot, tag, { buildargs: { NODE_IMAGE: base } });
  if (!build.ok)
    throw new Error(
      `the image failed to build: ${build.error}\n${build.log.split("\n").slice(-40).join("\n")}`,
    );
}

/** `name`'s test tag, with the file's `before` hook that builds it (buildProductImage): one line per test file. */
export function testedImage(name: string): string {
  const tag = imageTag(name);
  before(() => buildProductImage(tag), { timeout: IMAGE_BUILD_TIMEOUT_MS });
  return tag;
}

export interface BuildResult {
  ok: boolean;
  /** The build's own output (step lines and RUN output), for assertions and failure messages. */
  log: string;
  error?: string;
  seconds: number;
}

interface BuildEvent {
  stream?: string;
  error?: string;
  errorDetail?: { message?: string };
}

/** Builds `context` (its .dockerignore applies) with the legacy builder and host networking. */
export async function buildImage(
  context: string,
  tag: string,
  options: {
    dockerfile?: string;
    buildargs?: Record<string, string>;
    nocache?: boolean;
    target?: string;
  } = {},
): Promise<BuildResult> {
  const started = performance.now();
  const src = readdirSync(context);
  const stream = await docker.buildImage(
    { context, src },
    {
      t: tag,
      dockerfile: options.dockerfile ?? "Dockerfile",
      buildargs: options.buildargs ?? {},
      networkmode: "host",
      rm: true,
      forcerm: true,
      nocache: options.nocache ?? false,
      ...(options.target ? { target: options.target } : {}),
    },
  );
  const events: BuildEvent[] = await new Promise((resolve, reject) => {
    docker.modem.followProgress(stream, (error: Error | null, output: BuildEvent[]) =>
      error ? reject(error) : resolve(output),
    );
  });
  const log = events.map((event) => event.stream ?? (event.error ? `ERROR: ${event.error}\n` : "")).join("");
  const failed = events.find((event) => event.error);
  const seconds = (performance.now() - started) / 1000;
  if (failed) return { ok: false, log, error: failed.errorDetail?.message ?? failed.error, seconds };
  return { ok: true, log, seconds };
}

/**
 * A throwaway copy of the product build context (the sources the Dockerfile copies), so a test can
 * change the Dockerfile without touching the shared checkout. Removed with the returned cleanup.
 */
export function copyBuildContext(dockerfile: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), "chat-ui-image-ctx-"));
  for (const entry of [".dockerignore", "package.json", "package-lock.json", "tsconfig.json"]) {
    cpSync(path.join(repoRoot, entry), path.join(dir, entry));
  }
  for (const folder of ["patches", "scripts", "agent-runtime", "bridge"]) {
    cpSync(path.join(repoRoot, folder), path.join(dir, folder), {
      recursive: true,
      filter: (source) => !source.split(path.sep).includes("node_modules"),
    });
  }
  writeFileSync(path.join(dir, "Dockerfile"), dockerfile);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Splits Docker's multiplexed log stream (8-byte frame headers) into stdout and stderr. */
export function demultiplex(raw: Buffer): { stdout: string; stderr: string } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let at = 0;
  while (at + 8 <= raw.length) {
    const kind = raw.readUInt8(at);
    const length = raw.readUInt32BE(at + 4);
    const frame = raw.subarray(at + 8, at + 8 + length);
    (kind === 2 ? err : out).push(frame);
    at += 8 + length;
  }
  return { stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") };
}

/** Runs one command to completion in a fresh container of `image` (through its tini ENTRYPOINT). */
export async function runInImage(
  image: string,
  cmd: string[],
  options: { user?: string; env?: string[]; binds?: string[]; entrypoint?: string[] } = {},
): Promise<RunResult> {
  const container = await docker.createContainer({
    Image: image,
    Cmd: cmd,
    ...(options.entrypoint ? { Entrypoint: options.entrypoint } : {}),
    ...(options.user ? { User: options.user } : {}),
    Env: options.env ?? [],
    HostConfig: { NetworkMode: "host", Binds: options.binds ?? [] },
  });
  try {
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    const logs = (await container.logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer;
    return { exitCode: StatusCode, ...demultiplex(logs) };
  } finally {
    await container.remove({ force: true });
  }
}

/** A free loopback TCP port (the container shares the host's network namespace). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject()));
    });
  });
}

/**
 * Removes untagged images left by earlier builds (old versions of the tagged ones), so repeated runs on one
 * machine do not fill its disk. Layers of tagged images, the build cache that matters, stay.
 */
export async function pruneDanglingImages(): Promise<number> {
  const result = await docker.pruneImages({ filters: JSON.stringify({ dangling: ["true"] }) });
  return result.SpaceReclaimed ?? 0;
}

export async function removeImage(tag: string): Promise<void> {
  try {
    await docker.getImage(tag).remove({ force: true });
  } catch {
    // Already gone (or never built): nothing to clean.
  }
}

/** `docker exec` to completion in a running container. */
export async function execIn(container: Docker.Container, cmd: string[], user = "root"): Promise<RunResult> {
  const exec = await container.exec({ Cmd: cmd, User: user, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  const { ExitCode } = await exec.inspect();
  return { exitCode: ExitCode ?? -1, ...demultiplex(Buffer.concat(chunks)) };
}
