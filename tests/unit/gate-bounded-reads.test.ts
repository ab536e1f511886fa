// Issue 17 item 6, the gate's part: every file the gate, the router and the executor's checks read from the
// workspace or a tool-writable place goes through one bounded, non-blocking reader (bounded-read.ts). A FIFO named
// like a config the gate reads, then the command that makes the gate read it: the gate answers, it never hangs.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { BoundedFile, readBounded } from "../../agent-runtime/gate/bounded-read.ts";
import { buildFixture } from "../support/fixture-workspace.ts";
import { tempDir } from "../support/workspace.ts";

const ROOT = path.join(import.meta.dirname, "..", "..");

/** The modules that read files the tools may have written (the gate, the router, the executor's own checks). */
async function sourcesReadingToolFiles(): Promise<string[]> {
  const files: string[] = [];
  const walk = async (dir: string) => {
    for (const entry of await readdir(path.join(ROOT, dir), { withFileTypes: true })) {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(relative);
      else if (/\.ts$/.test(entry.name)) files.push(relative);
    }
  };
  await walk("agent-runtime/gate");
  await walk("agent-runtime/tools");
  files.push(
    "agent-runtime/approval-gate.ts",
    "agent-runtime/vetted-content.ts",
    "agent-runtime/executor/tool-runner.ts",
    "agent-runtime/executor/protocol.ts",
    "agent-runtime/executor/pi-modules.ts",
  );
  return files;
}

test("no module that reads tool-writable files reads them but through bounded-read.ts", async () => {
  const raw = /\b(?:readFileSync|openSync|readFile|createReadStream|readSync|readv|readvSync|open)\s*\(/;
  const offending: string[] = [];
  for (const file of await sourcesReadingToolFiles()) {
    if (file.endsWith("bounded-read.ts")) continue;
    const lines = (await readFile(path.join(ROOT, file), "utf8")).split("\n");
    for (const [index, line] of lines.entries()) {
      if (/^\s*(?:\/\/|\*)/.test(line)) continue;
      // Directory handles (`opendirSync(…).readSync()`) read names, not contents; regex `.exec(` is not a read.
      const code = line.replace(/handle\.readSync\(\)|opendirSync\(/g, "");
      if (
        raw.test(code) &&
        /\bfrom "node:fs|\bfs\.|readFileSync|openSync|createReadStream|readSync/.test(code)
      )
        offending.push(`${file}:${index + 1}: ${line.trim()}`);
    }
    const source = lines.join("\n");
    for (const name of ["readFileSync", "openSync", "createReadStream", "readSync"])
      if (new RegExp(`import \\{[^}]*\\b${name}\\b[^}]*\\} from "node:fs`).test(source))
        offending.push(`${file}: imports ${name} from node:fs`);
    if (/from "node:fs\/promises"/.test(source)) offending.push(`${file}: imports node:fs/promises`);
  }
  assert.deepEqual(offending, []);
});

test("the bounded reader never blocks on a FIFO, refuses what is not a regular file, and bounds the bytes", async (t) => {
  const root = await tempDir(t, "gate-bounded-");
  const roots = { ws: path.join(root, "ws"), home: path.join(root, "home") };
  await buildFixture(roots, { files: { fifo: { fifo: true }, big: "x".repeat(1000), small: "hello" } });
  assert.deepEqual(readBounded(path.join(roots.ws, "fifo"), 100), { ok: false, reason: "not_a_file" });
  assert.deepEqual(readBounded(roots.ws, 100), { ok: false, reason: "not_a_file" });
  assert.deepEqual(readBounded(path.join(roots.ws, "big"), 100), { ok: false, reason: "too_large" });
  const prefix = readBounded(path.join(roots.ws, "big"), 100, { prefix: true });
  assert.ok(prefix.ok && prefix.bytes.length === 100 && prefix.truncated);
  assert.deepEqual(readBounded(path.join(roots.ws, "nope"), 100), { ok: false, reason: "missing" });
  assert.equal(BoundedFile.open(path.join(roots.ws, "fifo"), 100, 100), "not_a_file");
  const file = BoundedFile.open(path.join(roots.ws, "small"), 100, 3);
  assert.ok(typeof file !== "string");
  assert.throws(() => file.readAt(0, 5), /budget/);
  file.close();
});

test("a FIFO named like every file the gate reads: the decision comes back, as unknown or plain, never a hang", async (t) => {
  const root = await tempDir(t, "gate-fifo-");
  const roots = { ws: path.join(root, "ws"), home: path.join(root, "home") };
  const fifo = { fifo: true } as const;
  await buildFixture(roots, {
    git: [{ commit: { "a.txt": "a\n" } }],
    files: {
      "pytest.ini": fifo,
      "tests/test_a.py": fifo,
      "package.json": fifo,
      Makefile: fifo,
      "run.sh": fifo,
      "notes.txt": fifo,
      "kit.tar": fifo,
      "p.diff": fifo,
      "~/.gitconfig": fifo,
      ".git/info/attributes": fifo,
    },
  });
  const calls: Array<[string, Record<string, unknown>]> = [
    ["bash", { command: "pytest" }],
    ["bash", { command: "npm test" }],
    ["bash", { command: "make" }],
    ["bash", { command: "bash run.sh" }],
    ["bash", { command: "git status" }],
    ["bash", { command: "tar xf kit.tar" }],
    ["bash", { command: "patch -p1 < p.diff" }],
    ["bash", { command: "git log -p" }],
    ["read", { path: "notes.txt" }],
  ];
  const started = Date.now();
  const { stdout } = await promisify(execFile)(
    path.join(ROOT, "node_modules", ".bin", "node"),
    [
      "--import",
      "tsx",
      path.join(ROOT, "tests", "support", "fixtures", "decide-once.ts"),
      roots.ws,
      roots.home,
      ...calls.flatMap(([tool, input]) => [tool, JSON.stringify(input)]),
    ],
    { cwd: ROOT, timeout: 60_000, killSignal: "SIGKILL" },
  );
  const decisions = stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { decision: string });
  assert.equal(decisions.length, calls.length, `every call answered (${Date.now() - started} ms)`);
  for (const [index, decision] of decisions.entries())
    assert.ok(["allow", "confirm", "block"].includes(decision.decision), JSON.stringify(calls[index]));
  // What the gate cannot read is not plain: pytest's config, the script, the archive, the patch, git's config.
  for (const index of [0, 3, 4, 5, 6])
    assert.equal(decisions[index]?.decision, "confirm", JSON.stringify(calls[index]));
});
