// The README's first command, run the way CI runs it (no TTY): the scenario's transcript lines appear in order.
// Then in a real pseudo-terminal (util-linux `script`), as a person runs it: answering yes really pushes, and
// answering no says so; the model's closing line and the summary follow what happened.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { test } from "node:test";

const root = path.resolve(import.meta.dirname, "..", "..");

test("the demo plays its scenario through the bridge without a TTY and exits 0", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(root, "scripts", "demo.ts")], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LANG: "C.UTF-8" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  assert.equal(code, 0, `demo failed:\n${stdout}\n${stderr}`);
  const expected = [
    /demo: bridge on 127\.0\.0\.1:\d+ \(random token\)/,
    /── 1\. policy auto: the agent reads a file/,
    /▶ read \{"path":"notes\.txt"\}/,
    /remember: ship teh runtime/,
    /▶ edit /,
    /Successfully replaced 1 block/,
    /\[approval\] /,
    /git push origin HEAD/,
    /Why: .*EXIT/,
    /\(no TTY: the demo declines this approval\)/,
    /The person declined this tool call/,
    /policy: auto → read-only/,
    /▶ write \{"path":"CHANGELOG\.md"/,
    /Blocked by the approval gate \(policy read-only/,
    /✂ demo: cutting the connection at seq \d+/,
    /✓ resumed from seq \d+: \d+ missed frame\(s\) replayed, nothing lost/,
    /• read notes\.txt without a prompt/,
    /• edited notes\.txt under auto \(allowed\)/,
    /• git push was held for approval and declined/,
    /• the write was blocked under read-only/,
    /• resumed after the drop: \d+ frames, seq 1–\d+, no gap, no duplicate/,
    /demo finished\./,
  ];
  let from = 0;
  for (const pattern of expected) {
    const match = pattern.exec(stdout.slice(from));
    assert.ok(match, `missing (in order) ${pattern}\n--- stdout ---\n${stdout}`);
    from += match.index + match[0].length;
  }
  assert.equal(stderr.includes("kept"), false, "the demo cleans up after a successful run");
});

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** Runs the demo in a pty and types `answer` once its approval prompt shows; resolves with the whole output. */
async function demoInPty(answer: "y" | "n"): Promise<{ code: number | null; output: string }> {
  const argv = [process.execPath, "--import", "tsx", path.join(root, "scripts", "demo.ts")];
  const child = spawn("script", ["-qefc", argv.map(shellQuote).join(" "), "/dev/null"], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LANG: "C.UTF-8", TERM: "dumb" },
  });
  let output = "";
  let answered = false;
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
    // The dialog is printed whole, then the demo waits for the person: answer once it has asked.
    if (!answered && /\[approval\][\s\S]*git push origin HEAD[\s\S]*Why: [^\n]*\n/.test(output)) {
      answered = true;
      child.stdin.write(`${answer}\n`);
    }
  });
  child.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, output };
}

function assertInOrder(output: string, expected: RegExp[]): void {
  let from = 0;
  for (const pattern of expected) {
    const match = pattern.exec(output.slice(from));
    assert.ok(match, `missing (in order) ${pattern}\n--- output ---\n${output}`);
    from += match.index + match[0].length;
  }
}

test("in a pty, answering yes to the push really pushes, and the demo says so", async () => {
  const { code, output } = await demoInPty("y");
  assert.equal(code, 0, output);
  assertInOrder(output, [
    /\[approval\]/,
    /git push origin HEAD/,
    /you answered yes/,
    /The typo is fixed and, with your approval, pushed\./,
    /• git push waited for your answer; you said yes, and the remote has the commit/,
    /demo finished\./,
  ]);
  // The push's and the demo's own failure wording (the transcript's "✗ blocked or failed" label of step 3's
  // blocked write is expected, so a bare /failed/ would match every run).
  assert.doesNotMatch(
    output,
    /does not appear to be a git repository|fatal:|failed to push|but it failed|approved but failed|checks failed|demo failed/,
  );
});

test("in a pty, answering no keeps the push from running, and the demo says so", async () => {
  const { code, output } = await demoInPty("n");
  assert.equal(code, 0, output);
  // The transcript prints the answer's acknowledgement when the bridge confirms it, which may come after Pi's
  // reaction to it: required, but not at a fixed place.
  assert.match(output, /you answered no/);
  assertInOrder(output, [
    /\[approval\]/,
    /the push was not approved, so nothing left the machine/,
    /• git push was held for approval and declined: the remote is unchanged/,
    /demo finished\./,
  ]);
});
