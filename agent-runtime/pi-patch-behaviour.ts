// Runs the behavioural patch probes (pi-patch-probe.ts) against a Pi: the exchange on its own (any process
// that speaks Pi's RPC on stdin/stdout can drive it), and a one-shot check of the installed Pi for the health
// server, started exactly as the bridge starts it (its package's `bin.pi`), briefly, with no credentials,
// PI_OFFLINE=1 and a throwaway HOME and agent dir. The file hash (pi-patch-status.ts) says what is on disk;
// this says what the code that actually runs answers. From Pi 0.84.3 on, `bin.pi` runs dist/bundle/cli.js,
// which carries its own copy of the RPC handler: a patch to dist/modes/rpc/rpc-mode.js would never run, and
// only a check like this one notices.
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { JsonlDecoder } from "./jsonl.ts";
import { barePiArgv } from "./pi-argv.ts";
import type { PiInstall } from "./pi-install.ts";
import { judgeProbe, PATCH_PROBES, type ProbeVerdict } from "./pi-patch-probe.ts";

const PROBE_ID_PREFIX = "patch-probe-";
/** Any Pi answers get_state; sent last, its answer closes the exchange. */
const SENTINEL_ID = `${PROBE_ID_PREFIX}end`;

/**
 * One probe exchange, the only definition of it: the bridge drives it over its routes to each Pi it starts,
 * probeInstalledPi over a throwaway Pi's stdio. Write `lines` to Pi in order, feed every parsed stdout line
 * (or, through routes, every response to one of `answerIds`) to `accept` until it returns true, then read
 * `verdict()`. The sentinel goes last: a patched Pi writes both probe answers synchronously while it reads
 * their lines (reference §1.5, §2.2), so they precede the sentinel's answer on its FIFO stdout; a probe still
 * unanswered once the sentinel is answered is one Pi stayed silent on (the unpatched behaviour). No timing is
 * involved in that judgement. `newId` gives each line its correlation id (default: `patch-probe-<n>`, `-end`).
 */
export function createProbeExchange(newId?: () => string) {
  const ids = PATCH_PROBES.map((_probe, index) => newId?.() ?? `${PROBE_ID_PREFIX}${index}`);
  const sentinelId = newId?.() ?? SENTINEL_ID;
  const answers = new Map<string, Record<string, unknown>>();
  let sentinelAnswer: Record<string, unknown> | undefined;
  return {
    lines: [
      ...PATCH_PROBES.map((probe, index) => probe.frame(ids[index] as string)),
      { type: "get_state", id: sentinelId },
    ] as Record<string, unknown>[],
    /** The ids Pi answers with, probes first, the sentinel last (a probe's line may carry another id). */
    answerIds: [...ids, sentinelId] as readonly string[],
    /** Takes one line Pi wrote; true once the exchange is complete. Lines that are not our answers are ignored. */
    accept(line: unknown): boolean {
      if (typeof line !== "object" || line === null) return sentinelAnswer !== undefined;
      const { type, id } = line as { type?: unknown; id?: unknown };
      if (type !== "response" || typeof id !== "string") return sentinelAnswer !== undefined;
      if (id === sentinelId) sentinelAnswer ??= line as Record<string, unknown>;
      else if (ids.includes(id) && !answers.has(id) && sentinelAnswer === undefined)
        answers.set(id, line as Record<string, unknown>);
      return sentinelAnswer !== undefined;
    },
    get complete(): boolean {
      return sentinelAnswer !== undefined;
    },
    /** Pi's answer to the sentinel (its state), once complete. */
    get sentinelAnswer(): Record<string, unknown> | undefined {
      return sentinelAnswer;
    },
    /** Every probe judged; before completion, an unanswered probe counts as silent (fail closed). */
    verdict(): ProbeVerdict {
      const failures = PATCH_PROBES.map((probe, index) =>
        judgeProbe(probe, answers.get(ids[index] as string)),
      )
        .filter((verdict): verdict is { ok: false; reason: string } => !verdict.ok)
        .map((verdict) => verdict.reason);
      return failures.length === 0 ? { ok: true } : { ok: false, reason: failures.join("; ") };
    },
  };
}

export interface InstalledPiProbeOptions {
  /** Node binary for Pi (default: this process's). */
  node?: string;
  /** Give up (and fail) after this long, Pi's start included. Default 30 s. */
  timeoutMs?: number;
}

/** A probe verdict and how long the whole check took (Pi's start included). */
export type BehaviourVerdict = ProbeVerdict & { elapsedMs: number };

/** Longest stdout line or stderr tail kept from the probed Pi. */
const MAX_LINE_BYTES = 1024 * 1024;
const STDERR_TAIL_BYTES = 4096;

/**
 * Starts the installed Pi in RPC mode (argv only; no extensions, skills, prompts, context files or themes),
 * runs one probe exchange and stops it. Never throws: every failure is a verdict with a reason.
 */
export async function probeInstalledPi(
  install: PiInstall,
  options: InstalledPiProbeOptions = {},
): Promise<BehaviourVerdict> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const timeoutMs = options.timeoutMs ?? 30_000;
  let scratch: string | undefined;
  try {
    scratch = await mkdtemp(path.join(tmpdir(), "pi-patch-probe-"));
    const verdict = await runExchange(install, options.node ?? process.execPath, scratch, timeoutMs);
    return { ...verdict, elapsedMs: elapsed() };
  } catch (error) {
    const reason = `could not probe Pi: ${error instanceof Error ? error.message : String(error)}`;
    return { ok: false, reason, elapsedMs: elapsed() };
  } finally {
    if (scratch) await rm(scratch, { recursive: true, force: true }).catch(() => {});
  }
}

async function runExchange(
  install: PiInstall,
  node: string,
  scratch: string,
  timeoutMs: number,
): Promise<ProbeVerdict> {
  const home = path.join(scratch, "home");
  const agentDir = path.join(scratch, "agent");
  await mkdir(home, { mode: 0o700 });
  await mkdir(agentDir, { mode: 0o700 });
  const child = spawn(node, barePiArgv(install.cliPath), {
    cwd: scratch,
    // Nothing of ours: no credential, no policy, no bridge variable reaches the probed Pi.
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      LANG: "C.UTF-8",
      PI_OFFLINE: "1",
      PI_CODING_AGENT_DIR: agentDir,
    },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true, // its own process group, ended as a whole below
  });
  // Resolves once Pi is gone, so the scratch directory is removed after it, never under it.
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const exchange = createProbeExchange();
  let stderrTail = "";
  const verdict = await new Promise<ProbeVerdict>((resolve) => {
    let settled = false;
    const finish = (verdict: ProbeVerdict) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stopGroup(child.pid);
      resolve(verdict);
    };
    const timer = setTimeout(
      () => finish({ ok: false, reason: `Pi did not answer the patch probes within ${timeoutMs} ms` }),
      timeoutMs,
    );
    const decoder = new JsonlDecoder(MAX_LINE_BYTES);
    child.stdout.on("data", (chunk: Buffer) => {
      for (const raw of decoder.push(chunk)) {
        let line: unknown;
        try {
          line = JSON.parse(raw);
        } catch {
          continue; // stdout is protocol only; a stray line is not an answer
        }
        if (exchange.accept(line)) finish(exchange.verdict());
      }
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_BYTES);
    });
    child.on("error", (error) => finish({ ok: false, reason: `Pi could not start: ${error.message}` }));
    child.on("close", (code, signal) => {
      const tail = stderrTail.trim().split("\n").slice(-3).join(" | ").slice(0, 500);
      finish({
        ok: false,
        reason: `Pi exited (code ${code}, signal ${signal}) before answering the patch probes${tail ? `: ${tail}` : ""}`,
      });
    });
    child.stdin.on("error", () => {}); // an early exit surfaces through "close"
    for (const line of exchange.lines) child.stdin.write(`${JSON.stringify(line)}\n`);
  });
  if (child.pid !== undefined) await exited;
  return verdict;
}

/** Ends the probed Pi's whole process group (it was started detached), quietly if it is already gone. */
function stopGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Already exited.
  }
}
