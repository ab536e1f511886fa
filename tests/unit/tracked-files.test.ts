// What the repository itself holds: no merge leftover (a half-resolved merge once left conflict markers in
// CHANGELOG.md, and nothing else read that file), and no literal that looks like a real credential (test secrets
// are built at run time by tests/support/fake-secrets.ts). The credential shapes are the image scan's own.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { findTokens } from "../image/support/credential-scan.ts";

const root = path.resolve(import.meta.dirname, "../..");
const MARKER = /^(<{7} |>{7} |={7}$)/m;
const MAX_BYTES = 4 * 1024 * 1024;

/** Every tracked text file present in the checkout, with its text. */
function trackedTexts(): { file: string; text: string }[] {
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter((file) => file !== "");
  assert.ok(files.length > 100, "git lists the checkout's files");
  const texts: { file: string; text: string }[] = [];
  for (const file of files) {
    const full = path.join(root, file);
    let size: number;
    try {
      size = statSync(full).size;
    } catch {
      continue; // deleted in the working tree
    }
    if (size > MAX_BYTES) continue;
    const data = readFileSync(full);
    if (data.includes(0)) continue; // binary
    texts.push({ file, text: data.toString("utf8") });
  }
  return texts;
}

const texts = trackedTexts();

test("no tracked file holds a merge conflict marker", () => {
  assert.deepEqual(
    texts.filter(({ text }) => MARKER.test(text)).map(({ file }) => file),
    [],
  );
});

test("no tracked file holds a literal shaped like a real credential", () => {
  const found = texts.flatMap(({ file, text }) =>
    findTokens(text).map(({ kind, match }) => `${file}: ${kind} ${match.slice(0, 8)}…`),
  );
  assert.deepEqual(found, []);
});
