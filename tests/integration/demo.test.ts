// The README's first command, run the way CI runs it (no TTY): the scenario's transcript lines appear in order.
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
