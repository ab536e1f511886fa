// The rotated log file (agent-runtime/log-file.ts): bounded by file count and size, secrets redacted.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createLogger } from "../../agent-runtime/log.ts";
import { addLogFile } from "../../agent-runtime/log-file.ts";
import { tempDir } from "../support/workspace.ts";

test("log file: rolls over at its size, keeps a bounded number of files, and redacts secrets", async (t) => {
  const dir = await tempDir(t, "log-file-");
  const log = createLogger("log-file-test", "info");
  const info = await addLogFile(log, {
    file: path.join(dir, "bridge.log"),
    maxFileBytes: 16 * 1024,
    keepFiles: 2,
  });
  assert.equal(info.current, path.join(dir, "current.log"));
  const secret = `Bearer hf_${"s".repeat(30)}`;
  for (let i = 0; i < 2_000; i++) {
    log.info(
      { i, headers: { authorization: secret }, token: "bridge-token-value" },
      "a line of about a hundred bytes",
    );
    if (i % 100 === 0) await sleep(5); // rolling happens between writes
  }
  await sleep(200);
  const files = readdirSync(dir).filter((f) => f.endsWith(".log") && f !== "current.log");
  assert.ok(files.length <= 3, `kept ${files.length} files: ${files.join(", ")}`);
  let total = 0;
  for (const f of files) total += statSync(path.join(dir, f)).size;
  assert.ok(total <= 3 * 20 * 1024, `${total} bytes kept`);
  log.info("the last line");
  assert.match(readFileSync(info.current, "utf8"), /the last line/, "current.log is the file being written");
  const all = files.map((f) => readFileSync(path.join(dir, f), "utf8")).join("");
  assert.match(all, /a line of about a hundred bytes/);
  assert.ok(!all.includes(secret) && !all.includes("bridge-token-value"));
  assert.match(all, /\[redacted\]/);
});
