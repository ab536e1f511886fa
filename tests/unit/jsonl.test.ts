import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { encodeJsonl, JsonlDecoder } from "../../agent-runtime/jsonl.ts";

test("splits on LF only: U+2028/U+2029 and lone CR stay inside a line", () => {
  const decoder = new JsonlDecoder();
  const lines = decoder.push(Buffer.from('{"a":"x\u2028y\u2029z"}\nc\rd\n'));
  assert.deepEqual(lines, ['{"a":"x\u2028y\u2029z"}', "c\rd"]);
});

test("strips one trailing CR like Pi's reader", () => {
  assert.deepEqual(new JsonlDecoder().push("a\r\nb\r\r\n"), ["a", "b\r"]);
});

test("reassembles multi-byte characters split across chunks", () => {
  const bytes = Buffer.from('{"t":"héllo 🌍"}\n');
  const decoder = new JsonlDecoder();
  const out: string[] = [];
  for (const byte of bytes) out.push(...decoder.push(Buffer.from([byte])));
  assert.deepEqual(out, ['{"t":"héllo 🌍"}']);
});

test("end() returns an unterminated tail", () => {
  const decoder = new JsonlDecoder();
  assert.deepEqual(decoder.push("one\ntw"), ["one"]);
  assert.equal(decoder.end(), "tw");
  assert.equal(decoder.end(), undefined);
});

test("oversized lines are dropped and reported, and the next line is intact", () => {
  const reports: number[] = [];
  const decoder = new JsonlDecoder(8, (err) => reports.push(err.limit));
  const out = [...decoder.push("0123456789abc"), ...decoder.push("def\nok\n")];
  assert.deepEqual(out, ["ok"]);
  assert.equal(reports.length, 1);
});

test("property: any sequence of JSON values survives encode → arbitrary chunking → decode", () => {
  fc.assert(
    fc.property(fc.array(fc.jsonValue(), { maxLength: 20 }), fc.array(fc.nat(64)), (values, cuts) => {
      const wire = Buffer.from(values.map(encodeJsonl).join(""));
      const decoder = new JsonlDecoder();
      const lines: string[] = [];
      let at = 0;
      for (const cut of cuts) {
        const next = Math.min(wire.length, at + cut);
        lines.push(...decoder.push(wire.subarray(at, next)));
        at = next;
      }
      lines.push(...decoder.push(wire.subarray(at)));
      assert.equal(decoder.end(), undefined);
      assert.deepEqual(
        lines.map((l) => JSON.parse(l)),
        values.map((v) => JSON.parse(JSON.stringify(v))),
      );
    }),
  );
});
