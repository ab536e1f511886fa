// The image's HEALTHCHECK (healthcheck.mjs): healthy when every service of ours running in the container says so.
// It finds them in /proc, so it holds in both documented launches: the Space (the default command, the health
// server on $PORT) and a command override that runs sbx-server, which starts bridges (each on its --listen
// address). Whatever else runs there (sbx-server itself) is not ours to judge: with none of ours running yet,
// the container is healthy. Only processes of root or of this uid count, so in the root start the tools
// (another uid) cannot make it report anything.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { readCommandLine } from "../agent-runtime/cli-args.ts";
import { versionLine } from "../agent-runtime/version.ts";
import { http } from "./node-http.ts";

export interface Target {
  what: string;
  url: string;
}

const BUNDLE_DIR = import.meta.dirname;
const TIMEOUT_MS = 3_000;

/** The flag's value in an argv (`--flag value` or `--flag=value`). */
function flag(argv: readonly string[], name: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === name) return argv[i + 1];
    if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1);
  }
  return undefined;
}

/** A loopback host:port as the bridge validates it (it never listens elsewhere). */
function loopbackUrl(listen: string, pathname: string): string | undefined {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(listen);
  if (!match) return undefined;
  const host = match[1] ?? "";
  const bare = host.replace(/^\[|\]$/g, "");
  if (!(bare === "localhost" || bare === "::1" || /^127\.\d+\.\d+\.\d+$/.test(bare))) return undefined;
  return `http://${host}:${match[2]}${pathname}`;
}

/** What to ask, from the processes' command lines (pure: tested without /proc). */
export function targetsOf(
  processes: readonly (readonly string[])[],
  env: NodeJS.ProcessEnv,
  bundleDir = BUNDLE_DIR,
): Target[] {
  const targets: Target[] = [];
  const bridge = path.join(bundleDir, "bridge.mjs");
  const healthServer = path.join(bundleDir, "health-server.mjs");
  for (const argv of processes) {
    if (argv.includes(healthServer)) {
      const host = env.HOST && !["0.0.0.0", "::", ""].includes(env.HOST) ? env.HOST : "127.0.0.1";
      const at = host.includes(":") ? `[${host}]` : host;
      targets.push({ what: "the health server", url: `http://${at}:${env.PORT || "7860"}/health` });
    } else if (argv.includes(bridge)) {
      const listen = flag(argv, "--listen");
      const url = listen ? loopbackUrl(listen, "/v1/health") : undefined;
      if (url) targets.push({ what: `the bridge on ${listen}`, url });
    }
  }
  return targets;
}

/** Command lines of the processes of root or of this uid (every other one is ignored). */
function processes(): string[][] {
  const uid = process.getuid?.() ?? 0;
  const found: string[][] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const owner = statSync(`/proc/${name}`).uid;
      if (owner !== 0 && owner !== uid) continue;
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").filter(Boolean);
      if (argv.length > 0) found.push(argv);
    } catch {}
  }
  return found;
}

function healthy(url: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const req = http.request(url, { method: "GET", timeout: TIMEOUT_MS }, (res) => {
      res.resume();
      resolve(res.statusCode === 200 ? undefined : `HTTP ${res.statusCode}`);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer in ${TIMEOUT_MS} ms`)));
    req.on("error", (err) => resolve(err.message));
    req.end();
  });
}

async function main(): Promise<void> {
  const targets = targetsOf(processes(), process.env);
  const problems = (
    await Promise.all(targets.map(async (t) => ({ t, problem: await healthy(t.url) })))
  ).filter((r) => r.problem !== undefined);
  for (const { t, problem } of problems)
    process.stdout.write(`unhealthy: ${t.what} (${t.url}): ${problem}\n`);
  if (problems.length === 0) {
    process.stdout.write(
      targets.length === 0
        ? "healthy: none of the runtime's services runs here yet\n"
        : `healthy: ${targets.map((t) => t.what).join(", ")}\n`,
    );
  }
  process.exitCode = problems.length === 0 ? 0 : 1;
}

const HELP = `usage: healthcheck.mjs [--help | --version]
  The image's HEALTHCHECK: asks every service of ours running here (the health server on $PORT, each bridge
  on its --listen address). exit status: 0 healthy (or none running yet), 1 unhealthy, 2 bad usage.`;

if (process.argv[1] && path.resolve(process.argv[1]) === path.join(BUNDLE_DIR, "healthcheck.mjs")) {
  let values: { help?: boolean; version?: boolean };
  try {
    values = readCommandLine(process.argv.slice(2), {
      help: { type: "boolean", short: "h" },
      version: { type: "boolean" },
    }).values;
  } catch (error) {
    process.stderr.write(`healthcheck: ${(error as Error).message}\n`);
    process.exit(2);
  }
  if (values.help || values.version)
    process.stdout.write(`${values.help ? HELP : versionLine("healthcheck.mjs")}\n`);
  else await main();
}
