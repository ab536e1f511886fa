// Word decoding: what the shell would pass after quotes, escapes, known variables and brace expansion, and
// which words the gate cannot know (literal: false).
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  DYNAMIC,
  decodeWords,
  type KnownVariables,
  MAX_FORMS,
} from "../../agent-runtime/gate/shell-words.ts";
import { gateParser } from "../support/gate-parser.ts";

const parser = await gateParser();
/** Decodes the argument words of `echo <args>`. */
function words(
  args: string,
  vars: KnownVariables = new Map([["HOME", ["/home/agent"]]]),
  ifsChanged = false,
) {
  const source = `echo ${args}`;
  const tree = parser.parse(source);
  assert.ok(tree);
  try {
    const command = tree.rootNode.namedChildren[0];
    assert.equal(command?.type, "command", args);
    const nodes = command.childrenForFieldName("argument").filter((n) => n !== null);
    return decodeWords(nodes, vars, { braces: true, ifsChanged, source }).map((w) => ({
      text: w.text.replaceAll(DYNAMIC, "…"),
      forms: w.forms.map((f) => f.replaceAll(DYNAMIC, "…")),
      literal: w.literal,
    }));
  } finally {
    tree.delete();
  }
}
const one = (args: string) => {
  const [first] = words(args);
  assert.ok(first, args);
  return first;
};

test("quotes and escapes are removed exactly as bash removes them", () => {
  const cases: Array<[string, string]> = [
    [`g"i"t`, "git"],
    [`g'i't`, "git"],
    ["g\\it", "git"],
    [`"g""it"`, "git"],
    [`$'\\x67it'`, "git"],
    [`$'\\147it'`, "git"],
    [`$'\\u0067it'`, "git"],
    [`"a\\"b"`, 'a"b'],
    [`'a\\b'`, "a\\b"],
    [`"\\$HOME"`, "$HOME"],
    ["a\\ b", "a b"],
    ["pu\\\nsh", "push"],
    ["pu\\\n\\\nsh", "push"],
    [`""`, ""],
  ];
  for (const [source, expected] of cases) {
    const decoded = one(source);
    assert.equal(decoded.text, expected, source);
    assert.equal(decoded.literal, true, source);
  }
});

test("anything computed, globbed, brace-expanded or split is not literal", () => {
  for (const source of [
    "$X",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion under test
    "${X}",
    `"$X"`,
    "$(x)",
    "`x`",
    "$((1+1))",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion under test
    "${X:-a}",
    "pu?h",
    "p*",
    "gi[t]",
    "a{b,c}",
    "{1..3}",
    "$@",
    "$1",
  ]) {
    assert.equal(one(source).literal, false, source);
  }
  for (const source of [`"pu?h"`, `'p*'`, "[", "a]", "a{b}", `"{a,b}"`, "\\{a,b\\}"]) {
    assert.equal(one(source).literal, true, source);
  }
});

test("brace expansion gives every form, in bash's order, bounded", () => {
  assert.deepEqual(one(".en{v,}").forms, [".env", ".en"]);
  assert.deepEqual(one("~/.{aws,ssh}/x").forms, ["~/.aws/x", "~/.ssh/x"]);
  assert.deepEqual(one("a{b,c}{d,e}").forms, ["abd", "abe", "acd", "ace"]);
  assert.deepEqual(one("{a,b{c,d}}").forms, ["a", "bc", "bd"]);
  assert.deepEqual(one("x{1..3}").forms, ["x1", "x2", "x3"]);
  assert.deepEqual(one("{a..c}").forms, ["a", "b", "c"]);
  assert.deepEqual(one(`{a,"b,c"}`).forms, ["a", "b,c"]);
  assert.deepEqual(one("{1..100000}").forms, ["…"], "too many: the group becomes unknown");
  assert.equal(
    one("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}").forms.length,
    1,
    `more than ${MAX_FORMS}: collapsed`,
  );
});

test("known variables are substituted; unquoted values that split or glob make the word uncertain", () => {
  const vars: KnownVariables = new Map([
    ["HOME", ["/home/agent"]],
    ["X", ["git"]],
    ["S", ["a b"]],
    ["G", ["*.md"]],
    ["L", ["a.md", "b.md"]],
  ]);
  assert.deepEqual(
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion under test
    words('$X ${X} "$X"', vars).map((w) => [w.text, w.literal]),
    [
      ["git", true],
      ["git", true],
      ["git", true],
    ],
  );
  assert.equal(words("$S", vars)[0]?.literal, false, "unquoted value with a space splits");
  assert.equal(words(`"$S"`, vars)[0]?.literal, true);
  assert.equal(words("$G", vars)[0]?.literal, false);
  assert.deepEqual(words("$L/x", vars)[0]?.forms, ["a.md/x", "b.md/x"]);
  assert.equal(
    words("$X", vars, true)[0]?.literal,
    false,
    "after IFS changes, unquoted expansions are uncertain",
  );
  assert.equal(words("$NOPE", vars)[0]?.text, "…");
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion under test
  assert.equal(words("${HOME%/}", vars)[0]?.text, "…", "an operator makes the value unknown");
});

test("process substitution is the pipe path bash passes", () => {
  assert.deepEqual(one("<(sort a)").forms, ["/dev/fd/63"]);
  assert.equal(one("<(sort a)").literal, false);
});

test("decoding never throws and stays bounded on random bash-ish text", () => {
  const unit = fc.constantFrom(
    "a",
    "$",
    "{",
    "}",
    ",",
    ".",
    "'",
    '"',
    "\\",
    "(",
    ")",
    "*",
    "?",
    "[",
    "]",
    "~",
    "/",
    " ",
    "`",
    "x",
    "1",
  );
  fc.assert(
    fc.property(fc.string({ unit, maxLength: 40 }), (args) => {
      const tree = parser.parse(`echo ${args}`);
      if (!tree) return true;
      try {
        for (const command of tree.rootNode.descendantsOfType("command")) {
          if (!command) continue;
          const nodes = command.childrenForFieldName("argument").filter((n) => n !== null);
          for (const word of decodeWords(nodes, new Map(), { braces: true, ifsChanged: false })) {
            assert.ok(word.forms.length >= 1 && word.forms.length <= MAX_FORMS + 1);
            assert.equal(typeof word.text, "string");
          }
        }
      } finally {
        tree.delete();
      }
      return true;
    }),
    { numRuns: 2000, seed: 1010 },
  );
});
