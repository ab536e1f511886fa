// The Space's default command: a small health endpoint. HF Jobs replace it with sbx-server.
// Fail closed: unless the installed Pi handler is our verified patched one, it answers 503 with the reason.
import { readFileSync } from "node:fs";
import Fastify from "fastify";
import { createLogger, type Logger } from "./log.ts";
import { findPiInstall } from "./pi-install.ts";
import { checkPatchedPi, type PatchStatus } from "./pi-patch-status.ts";
import { findLandlockHelper, probeLandlock } from "./sandbox/landlock.ts";
import { dropRoot, type IsolationCapability, isolationCapability } from "./sandbox/privileges.ts";
import { PI_VERSION, RUNTIME_VERSION } from "./version.ts";

export type { PatchStatus };

/** Credentials the runtime may be handed at run time: reported as present/absent, never by value. */
export const CREDENTIAL_NAMES = ["HF_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SANDBOX_TOKEN"] as const;

export interface HealthServerOptions {
  patchStatus: PatchStatus;
  /** What isolation a bridge started in this container would get (issue 11). */
  isolation?: IsolationCapability;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
}

export function parsePort(raw: string | undefined): number {
  if (raw === undefined || raw === "") return 7860;
  if (!/^\d+$/.test(raw)) throw new Error(`PORT must be an integer in 1..65535, got ${JSON.stringify(raw)}`);
  const port = Number(raw);
  if (port < 1 || port > 65535) {
    throw new Error(`PORT must be an integer in 1..65535, got ${JSON.stringify(raw)}`);
  }
  return port;
}

export function parseHost(raw: string | undefined): string {
  if (raw === undefined || raw === "") return "0.0.0.0";
  // An address literal only: a name would be resolved, and this endpoint has no reason to.
  if (!/^(\d{1,3}(\.\d{1,3}){3}|[0-9a-fA-F:]+)$/.test(raw)) {
    throw new Error(`HOST must be an IP address, got ${JSON.stringify(raw)}`);
  }
  return raw;
}

/** Presence of each credential, never its value (an empty variable counts as absent). */
export function credentialPresence(env: NodeJS.ProcessEnv): Record<string, "present" | "absent"> {
  return Object.fromEntries(
    CREDENTIAL_NAMES.map((name) => [name, env[name] ? "present" : "absent"] as const),
  );
}

export function healthBody(
  patchStatus: PatchStatus,
  env: NodeJS.ProcessEnv,
  isolation?: IsolationCapability,
) {
  const common = {
    ...(isolation ? { isolation } : {}),
    version: RUNTIME_VERSION,
    pi: PI_VERSION,
    node: process.versions.node,
    config: {
      AGENT_POLICY: env.AGENT_POLICY ?? null,
      AGENT_POLICY_PATH: env.AGENT_POLICY_PATH ?? null,
      credentials: credentialPresence(env),
    },
  };
  if (patchStatus.ok) {
    return { status: "ok", ...common, patches: "verified", handlerSha256: patchStatus.sha256 };
  }
  return { status: "unhealthy", ...common, patches: "unverified", reason: patchStatus.reason };
}

/** The Fastify app (not listening): GET and HEAD on `/` and `/health`. */
export function buildHealthServer(options: HealthServerOptions) {
  const env = options.env ?? process.env;
  const app = Fastify({ loggerInstance: options.logger ?? createLogger("health-server") });
  const statusCode = options.patchStatus.ok ? 200 : 503;
  for (const url of ["/", "/health"]) {
    // Fastify answers HEAD for every GET route (exposeHeadRoutes), with the same status.
    app.get(url, async (_request, reply) => {
      reply.code(statusCode).header("cache-control", "no-store");
      return healthBody(options.patchStatus, env, options.isolation);
    });
  }
  return app;
}

/** Re-checks the installed Pi once at start; a check that throws is a failed check, never a pass. */
export function currentPatchStatus(fromDir: string): PatchStatus {
  try {
    return checkPatchedPi(findPiInstall(fromDir).packageDir);
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

async function main(): Promise<void> {
  const log = createLogger("health-server");
  const port = parsePort(process.env.PORT);
  const host = parseHost(process.env.HOST);
  const patchStatus = currentPatchStatus(import.meta.dirname);
  const startUid = process.geteuid?.() ?? 0;
  const isolation = isolationCapability({
    startUid,
    landlock: probeLandlock(findLandlockHelper(import.meta.dirname)),
    passwd: readPasswd(),
  });
  // Serving needs no privilege: as root (the image's start user), become `nobody` before listening.
  const dropped = dropRoot(process.env.HEALTH_USER || "nobody");
  if (dropped) log.info({ user: dropped.name, uid: dropped.uid }, "dropped root");
  if (isolation.expected === "degraded")
    log.warn({ reasons: isolation.reasons }, "a bridge started here runs degraded");
  if (patchStatus.ok) log.info({ handlerSha256: patchStatus.sha256 }, "patched Pi handler verified");
  else log.error({ reason: patchStatus.reason }, "Pi handler NOT verified: serving 503");
  const app = buildHealthServer({ patchStatus, isolation, logger: log });
  await app.listen({ host, port });
  const stop = async (signal: string) => {
    log.info({ signal }, "shutting down");
    await app.close();
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop("SIGTERM"));
  process.once("SIGINT", () => void stop("SIGINT"));
}

function readPasswd(): string {
  try {
    return readFileSync("/etc/passwd", "utf8");
  } catch {
    return "";
  }
}

// Run only as the program (the bundle or `node health-server.ts`), not when a test imports the module.
const entry = process.argv[1] ?? "";
if (/health-server\.(mjs|ts)$/.test(entry)) {
  main().catch((error: unknown) => {
    createLogger("health-server").fatal({ err: error }, "health server failed to start");
    process.exit(1);
  });
}
