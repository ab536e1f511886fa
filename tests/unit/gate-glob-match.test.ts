// The glob matcher: the same answers as a straightforward reference (a regular expression, fine for short
// inputs), and a bounded amount of work on the patterns that make backtracking matchers explode.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { compileGlob, globMatch, globMatchCompiled, hasGlob } from "../../agent-runtime/gate/glob-match.ts";

/** Reference semantics: `*` any run (slashes included), `?` one character, `[...]`/`[!...]` classes. */
function reference(pattern: string, text: string): boolean {
  let source = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charAt(i);
    if (c === "*") source += "[\\s\\S]*";
    else if (c === "?") source += "[\\s\\S]";
    else if (c === "[") {
      let j = i + 1;
      let negated = false;
      if (pattern.charAt(j) === "!" || pattern.charAt(j) === "^") {
        negated = true;
        j++;
      }
      const start = j;
      let close = -1;
      for (let k = j; k < pattern.length; k++) {
        if (pattern.charAt(k) === "]" && k > start) {
          close = k;
          break;
        }
      }
      if (close === -1) {
        source += "\\[";
        continue;
      }
      let body = "";
      for (let k = start; k < close; k++) {
        const member = pattern.charAt(k);
        if (pattern.charAt(k + 1) === "-" && k + 2 < close) {
          body += `${escapeClass(member)}-${escapeClass(pattern.charAt(k + 2))}`;
          k += 2;
        } else body += escapeClass(member);
      }
      source += `[${negated ? "^" : ""}${body}]`;
      i = close;
    } else source += c.replace(/[.+^${}()|\\[\]\\/-]/g, "\\$&");
  }
  try {
    return new RegExp(`^${source}$`, "s").test(text);
  } catch {
    return false; // an inverted range: no reference answer
  }
}

function escapeClass(c: string): string {
  return /[\]\\^-]/.test(c) ? `\\${c}` : c;
}

const alphabet = fc.constantFrom("a", "b", "/", ".", "*", "?", "[", "]", "!", "-", "x");

test("matches like the reference on random short patterns and texts", () => {
  fc.assert(
    fc.property(
      fc.string({ unit: alphabet, maxLength: 12 }),
      fc.string({ unit: fc.constantFrom("a", "b", "/", ".", "x", "-", "!"), maxLength: 12 }),
      (pattern, text) => {
        // Ranges whose ends are inverted are errors in a RegExp; skip just those.
        let expected: boolean;
        try {
          expected = reference(pattern, text);
        } catch {
          return true;
        }
        return globMatch(pattern, text) === expected;
      },
    ),
    { numRuns: 4000, seed: 1010 },
  );
});

test("known cases: stars cross slashes, classes, unclosed brackets are literal", () => {
  assert.equal(globMatch("/home/*/.ssh/*", "/home/agent/.ssh/id_rsa"), true);
  assert.equal(globMatch("*/.aws/credentials", "/home/agent/.aws/credentials"), true);
  assert.equal(globMatch("/work/*.env", "/work/project/.env"), true);
  assert.equal(globMatch("id_[rd]sa", "id_rsa"), true);
  assert.equal(globMatch("id_[!r]sa", "id_rsa"), false);
  assert.equal(globMatch("[a", "[a"), true);
  assert.equal(globMatch("*.pem", "server.pem"), true);
  assert.equal(globMatch("?", ""), false);
  assert.equal(hasGlob("/a/b"), false);
  assert.equal(hasGlob("a*"), true);
});

test("pathological patterns compile and match in bounded work (no backtracking blow-up)", () => {
  const stars = `/${"*".repeat(200_000)}x`;
  const compiled = compileGlob(stars);
  assert.equal(compiled.tokens.length, 3, "runs of stars collapse");
  assert.equal(globMatchCompiled(compiled, `/${"a".repeat(10_000)}`), false);
  const alternating = "*a".repeat(5_000);
  assert.equal(
    globMatch(alternating, "a".repeat(4_999)),
    false,
    "more fixed tokens than characters: rejected at once",
  );
  assert.equal(globMatch(alternating, "a".repeat(5_000)), true);
  const unclosed = "[".repeat(200_000);
  assert.equal(
    compileGlob(unclosed).tokens.length,
    200_000,
    "every unclosed [ is a literal, found in one scan",
  );
  assert.equal(globMatch(`*${"a*".repeat(50)}b`, "a".repeat(200)), false);
});
