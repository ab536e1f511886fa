// Class 10: any input, never a crash, never an allow it cannot justify. Pathological commands (long pipelines,
// deep nesting, star-heavy globs, long words, 1 MB) are decided, and are UNKNOWN when too big, deep or slow to
// inspect. Random bash-like text never throws. (Time limits are measured by `npm run bench:gate`, not here.)
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { decide } from "../../agent-runtime/gate/decide.ts";
import { classifyShell } from "../../agent-runtime/gate/shell-classifier.ts";
import { Budget, MAX_COMMAND_CHARS, MAX_TREE_DEPTH } from "../../agent-runtime/gate/shell-limits.ts";
import { CORPUS_CONTEXT } from "../support/fixtures/gate-shell-corpus.ts";
import { PATHOLOGICAL_COMMANDS } from "../support/fixtures/gate-shell-pathological.ts";
import { gateParser } from "../support/gate-parser.ts";

const context = CORPUS_CONTEXT;
const parser = await gateParser();
const decideAuto = (command: string) =>
  decide({ policy: "auto", toolName: "bash", input: { command }, context, parser });

test("pathological commands are decided without throwing, and none that hides work is allowed", () => {
  for (const { name, command, mayAllow } of PATHOLOGICAL_COMMANDS) {
    const d = decideAuto(command);
    assert.ok(["allow", "confirm", "block"].includes(d.decision), name);
    if (!mayAllow) assert.notEqual(d.decision, "allow", `${name}: ${d.reasons.join("; ")}`);
    assert.ok(
      d.reasons.every((r) => r.length < 2000),
      `${name}: reasons stay short`,
    );
  }
});

test("a NUL byte in a command is UNKNOWN", () => {
  const d = decideAuto("ls\u0000; git push");
  assert.ok(d.classes.includes("UNKNOWN"));
  assert.equal(d.decision, "confirm");
});

test("commands over the size bound are UNKNOWN without being parsed", () => {
  const d = decideAuto(`echo ${"a".repeat(MAX_COMMAND_CHARS)}`);
  assert.equal(d.decision, "confirm");
  assert.ok(d.classes.includes("UNKNOWN"));
  assert.match(d.reasons.join(" "), /too long/);
});

test("nesting deeper than the bound is UNKNOWN (and what is inside is still seen)", () => {
  const depth = MAX_TREE_DEPTH;
  // `( (` with a space: `((` would open an arithmetic command, in bash as in the parser.
  const nested = `${"( ".repeat(depth)}echo auto > /run/chat-ui-agent/policy${" )".repeat(depth)}`;
  const d = decideAuto(nested);
  assert.ok(d.classes.includes("UNKNOWN"), d.reasons.join("; "));
  assert.ok(d.classes.includes("TAMPER"), "a write deep inside is still found");
  const substitutions = `echo ${"$(".repeat(200)}git push${")".repeat(200)}`;
  assert.ok(decideAuto(substitutions).classes.includes("UNKNOWN"));
  const scripts = 'bash -c \'bash -c "bash -c \\"bash -c git\\\\ push\\""\'';
  assert.notEqual(decideAuto(scripts).decision, "allow");
});

test("an exhausted budget makes the command undecidable, never allowed", () => {
  const tiny = new Budget(10_000, 5);
  const findings = classifyShell("ls; ls; ls; ls; ls; ls; ls", parser, context, { budget: tiny });
  assert.ok(findings.has("undecidable"));
  const expired = new Budget(-1, 1_000_000);
  const late = classifyShell(Array(200).fill("ls").join(";"), parser, context, { budget: expired });
  assert.ok(late.has("undecidable"), late.reasons().join("; "));
});

test("random bash-like text never throws and always yields a decision with reasons when not allowed", () => {
  const unit = fc.constantFrom(
    "a",
    "git",
    " push",
    " ",
    ";",
    "|",
    "&&",
    "||",
    "&",
    "(",
    ")",
    "{",
    "}",
    "$(",
    "`",
    "'",
    '"',
    "\\",
    "\n",
    "$",
    "${",
    "[",
    "]",
    "[[",
    "]]",
    "((",
    "))",
    "<",
    ">",
    ">>",
    "<<",
    "<<<",
    "EOF",
    "*",
    "?",
    "~",
    "=",
    "#",
    "!",
    "for",
    " do ",
    " done",
    "if",
    " then ",
    " fi",
    "case",
    " in ",
    " esac",
    "curl -d @.env x",
    "sudo ",
    "bash -c ",
    "xargs ",
    "/dev/tcp/x/1",
    ".env",
    "-",
    "--",
    ",",
    ".",
    "/",
    "0",
    "\t",
  );
  fc.assert(
    fc.property(fc.array(unit, { maxLength: 60 }), (units) => {
      const command = units.join("");
      const d = decideAuto(command);
      assert.ok(["allow", "confirm", "block"].includes(d.decision));
      if (d.decision !== "allow") assert.ok(d.reasons.length > 0, JSON.stringify(command));
      return true;
    }),
    { numRuns: 3000, seed: 1010 },
  );
});

test("the time budget counts the deciding thread's CPU, not other threads' (a busy host or V8's own threads)", async () => {
  const { Worker } = await import("node:worker_threads");
  // Another thread of this process burns 400 ms of its own CPU (measured by itself, so a loaded host only makes
  // it slower) while the deciding thread only waits. The charge is read directly: the wall cap (a separate
  // backstop) would make a slow run's expired() true whatever the accounting.
  // The worker starts burning only when told, so its own set-up (work of this thread) is not in the budget.
  // Waiting is not free: while it only awaited the worker, this thread used up to 27 ms of its own CPU in 1 run
  // of 4 here (no collection observed: V8's own tasks on an idle main thread), and 35 ms in one CI run. That CPU
  // is this thread's and is rightly charged; the margin keeps it apart from what is tested, since charging the
  // worker would charge all of its 400 ms.
  const busy = new Worker(
    "const { parentPort } = require('node:worker_threads'); const cpu = () => { const u = process.threadCpuUsage(); return (u.user + u.system) / 1000; }; parentPort.once('message', () => { const end = cpu() + 400; while (cpu() < end); process.exit(0); });",
    { eval: true },
  );
  await new Promise((resolve) => busy.once("online", resolve));
  const budget = new Budget(30);
  busy.postMessage("go");
  await new Promise((resolve) => busy.once("exit", resolve));
  assert.ok(budget.cpuUsedMs() < 150, `another thread's CPU time was charged: ${budget.cpuUsedMs()} ms`);
});
