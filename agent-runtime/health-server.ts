// The Space's default command: a small health endpoint. HF Jobs replace it with sbx-server.
// Fail closed: it answers 200 only once the installed Pi handler is our verified patched file AND the installed
// Pi, started once, answered the behavioural patch probes; until then 503 (probing), and 503 with the reason
// if either check failed. It also says what isolation a bridge started in this container would get.
import { readFileSync } from "node:fs";
import Fastify from "fastify";
import { readCommandLine } from "./cli-args.ts";
import { createLogger, type Logger } from "./log.ts";
import { findPiInstall } from "./pi-install.ts";
import { type BehaviourVerdict, probeInstalledPi } from "./pi-patch-behaviour.ts";
import { checkPatchedPi, type PatchStatus } from "./pi-patch-status.ts";
import { findLandlockHelper, probeLandlock } from "./sandbox/landlock.ts";
import { dropRoot, type IsolationCapability, isolationCapability } from "./sandbox/privileges.ts";
import { PI_VERSION, RUNTIME_VERSION, versionLine } from "./version.ts";

export type { PatchStatus };

/** The behavioural probe of the installed Pi: running at start, then passed or failed for good. */
export type ProbeState =
  | { state: "pending" }
  | { state: "passed"; elapsedMs: number }
  | { state: "failed"; reason: string }
  /** Not run, because the file check already failed (an unreviewed handler is never started). */
  | { state: "skipped" };

/** Credentials the runtime may be handed at run time: reported as present/absent, never by value. */
export const CREDENTIAL_NAMES = ["HF_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SANDBOX_TOKEN"] as const;

export interface HealthServerOptions {
  patchStatus: PatchStatus;
  /** Read on every request: the probe finishes after the server is already listening. */
  probe: () => ProbeState;
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
  probe: ProbeState,
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
  if (!patchStatus.ok) {
    return {
      status: "unhealthy",
      ...common,
      patches: "unverified",
      patchProbe: probe.state,
      reason: patchStatus.reason,
    };
  }
  const handler = { handlerSha256: patchStatus.sha256 };
  switch (probe.state) {
    case "passed":
      return {
        status: "ok",
        ...common,
        patches: "verified",
        ...handler,
        patchProbe: "passed",
        probeMs: probe.elapsedMs,
      };
    case "pending":
      return { status: "starting", ...common, patches: "probing", ...handler, patchProbe: "pending" };
    case "failed":
      return {
        status: "unhealthy",
        ...common,
        patches: "unverified",
        ...handler,
        patchProbe: "failed",
        reason: `the installed Pi does not behave as patched: ${probe.reason}`,
      };
    default:
      // "skipped" with a verified file cannot happen; fail closed all the same.
      return {
        status: "unhealthy",
        ...common,
        patches: "unverified",
        ...handler,
        patchProbe: probe.state,
        reason: "patch probe not run",
      };
  }
}

/** 200 only when the file check and the behavioural probe both passed. */
export function healthStatusCode(patchStatus: PatchStatus, probe: ProbeState): number {
  return patchStatus.ok && probe.state === "passed" ? 200 : 503;
}

/** The Fastify app (not listening): GET and HEAD on `/` and `/health`. */
export function buildHealthServer(options: HealthServerOptions) {
  const env = options.env ?? process.env;
  // Probes come every few seconds: Fastify's two info lines per request would bury everything else, so each
  // request is one debug line instead.
  const app = Fastify({
    loggerInstance: options.logger ?? createLogger("health-server"),
    disableRequestLogging: true,
  });
  app.addHook("onResponse", async (request, reply) => {
    request.log.debug(
      { method: request.method, url: request.url, statusCode: reply.statusCode, ms: reply.elapsedTime },
      "health probe",
    );
  });
  for (const url of ["/", "/health"]) {
    // Fastify answers HEAD for every GET route (exposeHeadRoutes), with the same status.
    app.get(url, async (_request, reply) => {
      const probe = options.probe();
      reply.code(healthStatusCode(options.patchStatus, probe)).header("cache-control", "no-store");
      return healthBody(options.patchStatus, probe, env, options.isolation);
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

/**
 * The start-up checks: the file hash at once, then (only if the file is the reviewed one) the behavioural
 * probe of the same installed Pi, in the background. `probe()` reports where that stands; `settled` resolves
 * when it is decided. A probe that throws is a failed probe.
 */
export function startPatchChecks(
  fromDir: string,
  runProbe: (fromDir: string) => Promise<BehaviourVerdict> = (dir) => probeInstalledPi(findPiInstall(dir)),
) {
  const patchStatus = currentPatchStatus(fromDir);
  let state: ProbeState = patchStatus.ok ? { state: "pending" } : { state: "skipped" };
  const settled: Promise<ProbeState> = patchStatus.ok
    ? runProbe(fromDir)
        .then(
          (verdict): ProbeState =>
            verdict.ok
              ? { state: "passed", elapsedMs: verdict.elapsedMs }
              : { state: "failed", reason: verdict.reason },
        )
        .catch(
          (error: unknown): ProbeState => ({
            state: "failed",
            reason: error instanceof Error ? error.message : String(error),
          }),
        )
        .then((final) => {
          state = final;
          return final;
        })
    : Promise.resolve(state);
  return { patchStatus, probe: () => state, settled };
}

async function main(): Promise<void> {
  const log = createLogger("health-server");
  const port = parsePort(process.env.PORT);
  const host = parseHost(process.env.HOST);
  const startUid = process.geteuid?.() ?? 0;
  const isolation = isolationCapability({
    startUid,
    landlock: probeLandlock(findLandlockHelper(import.meta.dirname)),
    passwd: readPasswd(),
  });
  // Serving needs no privilege: as root (the image's start user), become `nobody` before listening, and
  // before the patch probe starts Pi.
  const dropped = dropRoot(process.env.HEALTH_USER || "nobody");
  if (dropped) log.info({ user: dropped.name, uid: dropped.uid }, "dropped root");
  if (isolation.expected === "degraded")
    log.warn({ reasons: isolation.reasons }, "a bridge started here runs degraded");
  const checks = startPatchChecks(import.meta.dirname);
  const { patchStatus } = checks;
  if (patchStatus.ok)
    log.info({ handlerSha256: patchStatus.sha256 }, "patched Pi handler file verified; probing Pi");
  else log.error({ reason: patchStatus.reason }, "Pi handler NOT verified: serving 503");
  void checks.settled.then((probe) => {
    if (probe.state === "passed")
      log.info({ probeMs: probe.elapsedMs }, "Pi answered the patch probes: serving 200");
    else if (probe.state === "failed")
      log.error({ reason: probe.reason }, "Pi failed the patch probes: serving 503");
  });
  const app = buildHealthServer({ patchStatus, probe: checks.probe, isolation, logger: log });
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
const HEALTH_HELP = `usage: health-server.mjs [--help | --version]
  Serves GET /health (200 when the patched Pi answers its probes, else 503) on HOST:PORT (default
  0.0.0.0:7860), as HEALTH_USER (default nobody) when started as root. Settings come from the environment.`;

if (/health-server\.(mjs|ts)$/.test(entry)) {
  let args: ReturnType<typeof readCommandLine>["values"];
  try {
    args = readCommandLine(process.argv.slice(2), {
      help: { type: "boolean", short: "h" },
      version: { type: "boolean" },
    }).values;
  } catch (error) {
    process.stderr.write(`health-server: ${(error as Error).message}\n`);
    process.exit(2);
  }
  if (args.help || args.version) {
    process.stdout.write(`${args.help ? HEALTH_HELP : versionLine("health-server.mjs")}\n`);
    process.exit(0);
  }
  main().catch((error: unknown) => {
    createLogger("health-server").fatal({ err: error }, "health server failed to start");
    process.exit(1);
  });
}
