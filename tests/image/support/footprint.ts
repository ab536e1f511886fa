// What the image costs: its size over its base, by kind of layer, and the time from `docker run` to a bridge
// that answers a client's hello with `welcome` (chat-ui's path; /health's time is measured beside it).
import { randomBytes } from "node:crypto";
import type Docker from "dockerode";
import { BridgeClient, type Welcome } from "../../../bridge/client.ts";
import { demultiplex } from "./docker.ts";

export interface Footprint {
  imageBytes: number;
  baseBytes: number;
  overBaseBytes: number;
  /** Layers above the base, summed by what made them (non-empty only). */
  layers: { label: string; bytes: number }[];
}

/** Names a layer by the Dockerfile step that made it (legacy builder `CreatedBy` text). */
function layerLabel(createdBy: string): string {
  if (/apt-get install/.test(createdBy)) return "apt";
  if (/node_modules/.test(createdBy)) return "node_modules";
  if (/COPY dir:[0-9a-f]+ in \/opt\/chat-ui-agent\/ /.test(createdBy)) return "bundles";
  return "other";
}

export async function imageFootprint(docker: Docker, image: string, base: string): Promise<Footprint> {
  const [imageInfo, baseInfo] = await Promise.all([
    docker.getImage(image).inspect(),
    docker.getImage(base).inspect(),
  ]);
  const [history, baseHistory] = (await Promise.all([
    docker.getImage(image).history(),
    docker.getImage(base).history(),
  ])) as [{ CreatedBy: string; Size: number }[], unknown[]];
  // History is newest first; the base's entries are the oldest ones.
  const ours = history.slice(0, history.length - baseHistory.length);
  const byLabel = new Map<string, number>();
  for (const layer of ours) {
    if (layer.Size === 0) continue;
    const label = layerLabel(layer.CreatedBy);
    byLabel.set(label, (byLabel.get(label) ?? 0) + layer.Size);
  }
  return {
    imageBytes: imageInfo.Size,
    baseBytes: baseInfo.Size,
    overBaseBytes: imageInfo.Size - baseInfo.Size,
    layers: [...byLabel].map(([label, bytes]) => ({ label, bytes })),
  };
}

/**
 * Runs the image with the bridge started as the README tells chat-ui to start it (network mode on loopback,
 * the token in the environment, the image's default user) and measures from `docker run` to the first
 * `welcome` a client gets. The client retries the connection until the bridge listens.
 */
export async function timeToWelcome(
  docker: Docker,
  image: string,
  port: number,
  deadlineMs = 60_000,
): Promise<{ ms: number; welcome: Welcome }> {
  const token = randomBytes(24).toString("hex");
  const container = await docker.createContainer({
    Image: image,
    Cmd: [
      "node",
      "/opt/chat-ui-agent/bridge.mjs",
      "--listen",
      `127.0.0.1:${port}`,
      "--cwd",
      "/workspace",
      "--agent-user",
      "agent",
    ],
    Env: [`CHAT_UI_AGENT_BRIDGE_TOKEN=${token}`, "PI_OFFLINE=1"],
    HostConfig: { NetworkMode: "host" },
  });
  const client = new BridgeClient({
    url: `ws://127.0.0.1:${port}/v1/rpc`,
    token,
    clientId: "image-test-welcome",
    backoff: { initialMs: 20, maxMs: 50 },
  });
  let deadline: NodeJS.Timeout | undefined;
  try {
    const welcomed = new Promise<Welcome>((resolve) => client.once("welcome", resolve));
    const started = performance.now();
    await container.start();
    await Promise.race([
      client.connect(),
      new Promise((_resolve, reject) => {
        deadline = setTimeout(() => reject(new Error(`no welcome within ${deadlineMs} ms`)), deadlineMs);
      }),
    ]);
    const ms = performance.now() - started;
    return { ms, welcome: await welcomed };
  } catch (error) {
    const logs = (await container.logs({ stdout: true, stderr: true })) as unknown as Buffer;
    const { stdout, stderr } = demultiplex(logs);
    throw new Error(`${error instanceof Error ? error.message : error}\n${(stdout + stderr).slice(-3000)}`);
  } finally {
    clearTimeout(deadline);
    client.close();
    await container.remove({ force: true });
  }
}
