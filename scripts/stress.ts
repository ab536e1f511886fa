// npm run test:stress — runs the reconnect, idempotency, dialog and attach integration tests many times while
// busy loops (one per core by default) compete for the CPU, and prints one JSON object: each test's runs and
// failures (with the first distinct errors). Exits 1 on any failure. A test that fails once is a defect until
// its cause is found (issue 22); this is the run that would have caught those. Not part of `npm test`.
//
//   npm run test:stress -- [--iterations 200] [--load <busy loops, default: cores>] [--only <regex>]
//                          [--timeout-ms 180000] [--note "<what else ran on the machine>"]
import { type ChildProcess, spawn } from "node:child_process";
import { availableParallelism, loadavg } from "node:os";
import path from "node:path";
import { run } from "node:test";
import { parseArgs } from "node:util";

const root = path.resolve(import.meta.dirname, "..");

/** The stressed tests, by file, each name exactly as declared (a renamed test is reported as missing). */
const STRESSED: readonly { file: string; tests: readonly string[] }[] = [
  {
    file: "tests/integration/client.test.ts",
    tests: [
      "resumes after several drops mid-stream: every frame once, in order, all text intact",
      "a command retried across a reconnect takes effect once",
      "a cursor older than the replay ring is surfaced as a reset with a snapshot",
      "dialogs: answered after a reconnect, verdicts relayed, a second answer is not delivered",
    ],
  },
  {
    file: "tests/integration/client-retry-echo.test.ts",
    tests: [
      "an echo in flight is not taken as the answer to a conflicting command with the same id",
      "a reused id is answered by the response to its own send, not by an echo of an earlier one",
    ],
  },
  {
    file: "tests/integration/attach-cli.test.ts",
    tests: [
      "in a pty the operator sees the gated command and why, answers y, and the tool runs",
      "without a TTY the client prints the pending dialog and answers nothing; it stays pending",
    ],
  },
  {
    file: "tests/integration/bridge-network.test.ts",
    tests: ["network mode over real Pi: resume, reset, idempotency, dialogs, policy, bad input"],
  },
  {
    file: "tests/integration/bridge-supervision.test.ts",
    tests: [
      "Pi killed mid-dialog while an answer races its death: one dialog_closed, one response, nothing approved",
    ],
  },
  {
    file: "tests/integration/ui-response.test.ts",
    tests: ["correlated extension_ui_response: truthful verdicts for every dialog outcome"],
  },
  {
    file: "tests/integration/bridge-durable.test.ts",
    tests: [
      "kill -9 the bridge mid-stream and mid-tool: same epoch, no gap or duplicate, nothing re-run, the conversation kept",
      "the typed client: outcome_unknown surfaced after a crash; after a genuine epoch change nothing non-idempotent is resent",
    ],
  },
];

const MAX_ERRORS_KEPT = 3;
const MAX_ERROR_CHARS = 600;

interface TestTally {
  file: string;
  name: string;
  runs: number;
  failures: number;
  /** Distinct errors (their first lines), the first few only. */
  errors: string[];
  totalMs: number;
  maxMs: number;
}

function options() {
  const { values } = parseArgs({
    options: {
      iterations: { type: "string", default: "200" },
      load: { type: "string", default: String(availableParallelism()) },
      only: { type: "string" },
      "timeout-ms": { type: "string", default: "180000" },
      note: { type: "string" },
    },
    strict: true,
  });
  const int = (name: string, text: string, min: number, max: number) => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < min || value > max)
      throw new Error(`--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
    return value;
  };
  if (values.note !== undefined && values.note.length > 500)
    throw new Error("--note is limited to 500 chars");
  return {
    iterations: int("iterations", values.iterations, 1, 100_000),
    load: int("load", values.load, 0, 64),
    only: values.only === undefined ? undefined : new RegExp(values.only),
    timeoutMs: int("timeout-ms", values["timeout-ms"], 1_000, 3_600_000),
    note: values.note ?? null,
  };
}

/** A busy loop that ends itself once this process is gone (so none is ever left spinning). */
const BUSY_LOOP = `const parent = process.ppid;
for (;;) {
  for (let i = 0; i < 5e7; i++);
  try { process.kill(parent, 0); } catch { process.exit(0); }
}`;

function startLoad(count: number): ChildProcess[] {
  return Array.from({ length: count }, () => spawn(process.execPath, ["-e", BUSY_LOOP], { stdio: "ignore" }));
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Runs the selected tests of one file once (its own process, as `npm test` does); returns each test's outcome. */
async function runFile(
  file: string,
  tests: readonly string[],
  timeoutMs: number,
  signal: AbortSignal,
): Promise<Map<string, { ok: boolean; ms: number; error?: string }>> {
  const outcomes = new Map<string, { ok: boolean; ms: number; error?: string }>();
  let fileError: string | undefined;
  const stream = run({
    files: [path.join(root, file)],
    testNamePatterns: tests.map((name) => new RegExp(`^${escapeRegExp(name)}$`)),
    concurrency: 1,
    timeout: timeoutMs,
    signal,
  });
  for await (const event of stream) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const data = event.data as {
      name: string;
      nesting: number;
      skip?: unknown;
      details: { duration_ms: number; error?: { message?: string; cause?: { message?: string } } };
    };
    if (data.nesting !== 0 || data.skip) continue;
    const error = data.details.error;
    const message = error?.cause?.message ?? error?.message;
    if (!tests.includes(data.name)) {
      // The file itself failed (it did not load, a hook threw): that is why its tests did not run.
      if (event.type === "test:fail")
        fileError ??= `${data.name}: ${String(message)}`.slice(0, MAX_ERROR_CHARS);
      continue;
    }
    outcomes.set(data.name, {
      ok: event.type === "test:pass",
      ms: data.details.duration_ms,
      ...(event.type === "test:fail" ? { error: String(message ?? "failed").slice(0, MAX_ERROR_CHARS) } : {}),
    });
  }
  for (const name of tests) {
    if (!outcomes.has(name))
      outcomes.set(name, {
        ok: false,
        ms: 0,
        error: fileError ?? "not run: no test of that name in the file",
      });
  }
  return outcomes;
}

async function main(): Promise<void> {
  const opts = options();
  const selected = STRESSED.map(({ file, tests }) => ({
    file,
    tests: tests.filter((name) => !opts.only || opts.only.test(name)),
  })).filter((entry) => entry.tests.length > 0);
  if (selected.length === 0) throw new Error("--only matches none of the stressed tests");
  const tallies = new Map<string, TestTally>();
  for (const { file, tests } of selected)
    for (const name of tests)
      tallies.set(name, { file, name, runs: 0, failures: 0, errors: [], totalMs: 0, maxMs: 0 });

  const abort = new AbortController();
  const load = startLoad(opts.load);
  const stopLoad = () => {
    for (const child of load) child.kill("SIGKILL");
  };
  process.once("exit", stopLoad);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      abort.abort();
      stopLoad();
      process.exit(130);
    });
  }

  const startedAt = new Date();
  const loadAtStart = loadavg();
  try {
    for (let i = 1; i <= opts.iterations; i++) {
      for (const { file, tests } of selected) {
        const outcomes = await runFile(file, tests, opts.timeoutMs, abort.signal);
        for (const name of tests) {
          const tally = tallies.get(name) as TestTally;
          const outcome = outcomes.get(name) as { ok: boolean; ms: number; error?: string };
          tally.runs += 1;
          tally.totalMs += outcome.ms;
          tally.maxMs = Math.max(tally.maxMs, outcome.ms);
          if (outcome.ok) continue;
          tally.failures += 1;
          const line = String(outcome.error)
            .split("\n")
            .map((part) => part.trim())
            .filter(Boolean)
            .slice(0, 3)
            .join(" ⏎ ");
          if (tally.errors.length < MAX_ERRORS_KEPT && !tally.errors.includes(line)) tally.errors.push(line);
          process.stderr.write(`iteration ${i}: FAILED ${name}: ${line}\n`);
        }
      }
      const failed = [...tallies.values()].reduce((n, t) => n + t.failures, 0);
      process.stderr.write(`iteration ${i}/${opts.iterations} done, ${failed} failure(s) so far\n`);
    }
  } finally {
    stopLoad();
  }

  const tests = [...tallies.values()].map((t) => ({
    file: t.file,
    name: t.name,
    runs: t.runs,
    failures: t.failures,
    meanMs: t.runs ? Math.round(t.totalMs / t.runs) : 0,
    maxMs: Math.round(t.maxMs),
    errors: t.errors,
  }));
  const failures = tests.reduce((n, t) => n + t.failures, 0);
  const report = {
    iterations: opts.iterations,
    failures,
    tests,
    machine: {
      cores: availableParallelism(),
      busyLoops: opts.load,
      loadAverage1m: { atStart: loadAtStart[0], atEnd: loadavg()[0] },
      note: opts.note,
    },
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  process.exitCode = failures === 0 ? 0 : 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`stress: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
});
