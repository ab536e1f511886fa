// The Space's default command: a small health endpoint. HF Jobs replace it with sbx-server.
import Fastify from "fastify";
import { createLogger } from "./log.ts";
import { PI_VERSION, RUNTIME_VERSION } from "./version.ts";

const log = createLogger("health-server");

function parsePort(raw: string | undefined): number {
  if (raw === undefined || raw === "") return 7860;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`PORT must be an integer in 1..65535, got ${JSON.stringify(raw)}`);
  }
  return port;
}

export function healthBody() {
  return { status: "ok", version: RUNTIME_VERSION, pi: PI_VERSION, node: process.versions.node };
}

async function main(): Promise<void> {
  const port = parsePort(process.env.PORT);
  const host = process.env.HOST ?? "0.0.0.0";
  const app = Fastify({ loggerInstance: log });
  for (const url of ["/", "/health"]) {
    app.get(url, async () => healthBody());
  }
  await app.listen({ host, port });
  const stop = async (signal: string) => {
    log.info({ signal }, "shutting down");
    await app.close();
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop("SIGTERM"));
  process.once("SIGINT", () => void stop("SIGINT"));
}

main().catch((error: unknown) => {
  log.fatal({ err: error }, "health server failed to start");
  process.exit(1);
});
