// The rotated log file (agent-runtime/log-file.ts): bounded by file count and size, secrets redacted.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { createLogger } from "../../agent-runtime/log.ts";
import { addLogFile } from "../../agent-runtime/log-file.ts";
import { waitUntil } from "../support/bridge.ts";
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
  const written = () => realpathSync(info.current);
  const logFiles = () => readdirSync(dir).filter((f) => f.endsWith(".log") && f !== "current.log");
  // 20 batches of 100 lines (about 20 KiB each, over the 16 KiB bound): each must roll over to a new file.
  for (let batch = 0; batch < 20; batch++) {
    const before = written();
    for (let i = 0; i < 100; i++) {
      log.info(
        { i: batch * 100 + i, headers: { authorization: secret }, token: "bridge-token-value" },
        "a line of about a hundred bytes",
      );
    }
    await waitUntil(() => written() !== before, 5_000, `batch ${batch} to roll over to a new file`);
  }
  // Old files are removed after each roll (asynchronously): the bound holds once the last removal is done.
  await waitUntil(() => logFiles().length <= 3, 5_000, "old files to be removed");
  const files = logFiles();
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
