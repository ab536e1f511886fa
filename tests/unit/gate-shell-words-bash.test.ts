// Differential test: the words the gate decodes are the words bash really passes. Random argument text, built
// from an alphabet with no way to run anything (no `$`, backquote, parentheses, `;`, `&`, `|`, redirections),
// is given to `printf '%s\0'` in real bash (in an empty directory, so globs match nothing) and to the decoder.
// Every word the decoder calls literal must be exactly bash's; brace expansion must give bash's list.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import fc from "fast-check";
import { startsComment } from "../../agent-runtime/gate/shell-classifier.ts";
import { DYNAMIC, decodeWords } from "../../agent-runtime/gate/shell-words.ts";
import { gateParser } from "../support/gate-parser.ts";

const parser = await gateParser();
const SAFE_UNITS = [
  "a",
  "b",
  "x",
  "1",
  "$",
  ".",
  "/",
  "-",
  "=",
  ",",
  "{",
  "}",
  "'",
  '"',
  "\\",
  " ",
  "*",
  "?",
  "[",
  "]",
  "#",
  "\\\n",
  ":",
  "@",
  "%",
  "+",
];

function bashWords(args: string, cwd: string): string[] | undefined {
  try {
    const out = execFileSync("bash", ["--norc", "--noprofile", "-c", `printf '%s\\0' _ ${args}`], {
      cwd,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent-home", LC_ALL: "C" },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 5000,
    });
    return out.split("\0").slice(1, -1); // the `_` sentinel: printf with no words would still print once
  } catch {
    return undefined; // a syntax error in bash: nothing to compare
  }
}

function gateWords(args: string): Array<{ forms: string[]; literal: boolean; braced: boolean }> | undefined {
  const source = `printf '%s\\0' _ ${args}`;
  const tree = parser.parse(source);
  if (!tree) return undefined;
  try {
    if (tree.rootNode.hasError) return undefined; // the classifier treats parse errors as opaque
    // The classifier treats a comment where bash would not start one as opaque.
    if (tree.rootNode.descendantsOfType("comment").some((c) => c && !startsComment(source, c.startIndex)))
      return undefined;
    const command = tree.rootNode.namedChildren[0];
    if (command?.type !== "command") return undefined;
    const nodes = command.childrenForFieldName("argument").filter((n) => n !== null);
    return decodeWords(nodes, new Map(), { braces: true, ifsChanged: false, source })
      .slice(2)
      .map((w) => ({ forms: [...w.forms], literal: w.literal, braced: w.forms.length > 1 }));
  } finally {
    tree.delete();
  }
}

test("decoded words agree with real bash on random quoting, escaping, continuation and brace text", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "gate-words-"));
  try {
    let compared = 0;
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...SAFE_UNITS), { minLength: 1, maxLength: 14 }), (units) => {
        const args = units.join("");
        const mine = gateWords(args);
        const theirs = bashWords(args, dir);
        if (!mine || !theirs) return true;
        // Only when every word is either literal or a pure brace expansion can the lists be compared whole.
        // (bash drops the empty words an unquoted brace expansion can produce; braced words are never literal,
        // so such samples only test what is not claimed.)
        const comparable = mine.every(
          (w) => w.literal || (w.braced && !w.forms.some((f) => f.includes(DYNAMIC) || f === "")),
        );
        if (!comparable) {
          // Non-literal words must at least not claim more certainty than they have: skip them.
          return true;
        }
        compared++;
        const flattened = mine.flatMap((w) => w.forms);
        assert.deepEqual(flattened, theirs, `args ${JSON.stringify(args)}`);
        return true;
      }),
      { numRuns: 600, seed: 1010 },
    );
    assert.ok(compared > 150, `only ${compared} comparable samples`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("fixed cases where tree-sitter's tokens and bash's words differ are decoded as bash does", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "gate-words-"));
  try {
    for (const args of [
      "pu\\\nsh",
      "g\\\nit push",
      ".en\\\nv",
      "a\\\n\\\nb c",
      "'a'\\ b",
      "\"a\"b'c'",
      "x{a,b}y",
      "{a,b}{c,d}",
      "a#b",
      "#a",
    ]) {
      const mine = gateWords(args);
      assert.ok(mine, args);
      assert.deepEqual(
        mine.flatMap((w) => w.forms),
        bashWords(args, dir),
        args,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
