// warm-compile-cache.mjs [bundle dir]: builds the compile cache (compile-cache.ts) by starting Pi once, as the
// bridge starts it, until it answers, then loading the bridge's own modules. Run where the bundles will run, by
// the user that will run them (the image build runs it as root, after the runtime is in place); exits non-zero
// unless the cache holds Pi's modules and the bridge's.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { COMPILE_CACHE_DIR, COMPILE_CACHE_ENV } from "./compile-cache.ts";
import { encodeJsonl, JsonlDecoder } from "./jsonl.ts";
import { bridgePiArgv } from "./pi-argv.ts";
import { findPiInstall } from "./pi-install.ts";

const ANSWER_TIMEOUT_MS = 120_000;
/** Pi's lines are read with the project's codec, bounded: its get_state answer is a few KB. */
const MAX_LINE_BYTES = 1024 * 1024;
/** Fewer cached modules than this means Pi did not boot as the bridge boots it. */
const MIN_CACHED = 100;

/**
 * The bridge's modules: its entry answers --version after loading prestart; its chunks (the run chunk, which
 * loads while Pi boots) are only imported, which evaluates no more than their declarations and a logger.
 */
function warmBridge(bundleDir: string, cache: string, scratch: string): void {
  const env = { PATH: process.env.PATH, HOME: scratch, [COMPILE_CACHE_ENV]: cache };
  const chunks = readdirSync(path.join(bundleDir, "chunks"))
    .filter((name) => name.endsWith(".mjs"))
    .map((name) => pathToFileURL(path.join(bundleDir, "chunks", name)).href);
  const runs = [
    [path.join(bundleDir, "bridge.mjs"), "--version"],
    ["--input-type=module", "-e", "for (const url of process.argv.slice(1)) await import(url);", ...chunks],
  ];
  for (const args of runs) {
    const run = spawnSync(process.execPath, args, { cwd: scratch, env, stdio: ["ignore", "ignore", "pipe"] });
    if (run.status !== 0) throw new Error(`node ${args[0]} failed: ${String(run.stderr).slice(0, 500)}`);
  }
}

function cachedModules(dir: string): number {
  let files = 0;
  for (const version of readdirSync(dir, { withFileTypes: true })) {
    if (version.isDirectory()) files += readdirSync(path.join(dir, version.name)).length;
  }
  return files;
}

async function warm(bundleDir: string): Promise<number> {
  const cache = path.join(bundleDir, COMPILE_CACHE_DIR);
  mkdirSync(cache, { recursive: true, mode: 0o755 });
  const pi = findPiInstall(bundleDir);
  const scratch = mkdtempSync(path.join(tmpdir(), "warm-compile-cache-"));
  try {
    const child = spawn(
      process.execPath,
      bridgePiArgv(pi.cliPath, path.join(bundleDir, "approval-gate.mjs"), ["--no-session", "--offline"]),
      {
        cwd: scratch,
        env: {
          PATH: process.env.PATH,
          HOME: scratch,
          PI_CODING_AGENT_DIR: path.join(scratch, "agent"),
          AGENT_POLICY_PATH: path.join(scratch, "policy"),
          PI_OFFLINE: "1",
          [COMPILE_CACHE_ENV]: cache,
        },
        stdio: ["pipe", "pipe", "ignore"],
      },
    );
    const exited = new Promise<number | null>((resolve) => child.once("close", resolve));
    const answered = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ANSWER_TIMEOUT_MS);
      const decoder = new JsonlDecoder(MAX_LINE_BYTES);
      child.stdout.on("data", (chunk: Buffer) => {
        for (const raw of decoder.push(chunk)) {
          let line: { type?: unknown; id?: unknown } | undefined;
          try {
            line = JSON.parse(raw);
          } catch {}
          if (line?.type === "response" && line.id === "warm") {
            clearTimeout(timer);
            resolve(true);
          }
        }
      });
      void exited.then(() => resolve(false));
      child.stdin.write(encodeJsonl({ id: "warm", type: "get_state" }));
    });
    // Node writes the cache as Pi exits (Pi ends on SIGTERM by exiting).
    child.kill("SIGTERM");
    await exited;
    if (!answered) throw new Error("Pi did not answer get_state");
    const piModules = cachedModules(cache);
    if (piModules < MIN_CACHED) throw new Error(`only ${piModules} of Pi's modules were cached`);
    warmBridge(bundleDir, cache, scratch);
    const all = cachedModules(cache);
    if (all < piModules + 3) throw new Error("the bridge's modules were not cached");
    return all;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const bundleDir = path.resolve(process.argv[2] ?? import.meta.dirname);
try {
  const cached = await warm(bundleDir);
  process.stderr.write(
    `warm-compile-cache: ${cached} modules in ${path.join(bundleDir, COMPILE_CACHE_DIR)}\n`,
  );
} catch (err) {
  process.stderr.write(`warm-compile-cache: ${(err as Error).message}\n`);
  process.exit(1);
}
