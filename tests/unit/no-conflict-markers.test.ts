// No merge leftovers land: a tracked text file with a conflict marker at the start of a line (a half-resolved
// merge once left one in CHANGELOG.md, and nothing else read that file) fails here.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

const root = path.resolve(import.meta.dirname, "../..");
const MARKER = /^(<{7} |>{7} |={7}$)/m;
const MAX_BYTES = 4 * 1024 * 1024;

test("no tracked file holds a merge conflict marker", () => {
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter((file) => file !== "");
  assert.ok(files.length > 100, "git lists the checkout's files");
  const marked = files.filter((file) => {
    const full = path.join(root, file);
    let size: number;
    try {
      size = statSync(full).size;
    } catch {
      return false; // deleted in the working tree
    }
    if (size > MAX_BYTES) return false;
    const text = readFileSync(full);
    if (text.includes(0)) return false; // binary
    return MARKER.test(text.toString("utf8"));
  });
  assert.deepEqual(marked, []);
});
