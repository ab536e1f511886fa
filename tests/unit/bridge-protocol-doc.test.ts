// docs/protocol.md must match the zod schemas in bridge/protocol.ts.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import {
  BRIDGE_FRAME_TYPES,
  ChallengeFrame,
  CLIENT_FRAME_TYPES,
  HelloFrame,
  WelcomeFrame,
} from "../../bridge/protocol.ts";
import {
  DOC_PATH,
  documentedReference,
  renderProtocolReference,
  withCurrentReference,
} from "../../bridge/protocol-doc.ts";

const doc = readFileSync(DOC_PATH, "utf8");
const DOC_MODULE = path.join(import.meta.dirname, "..", "..", "bridge", "protocol-doc.ts");

test("the generated reference in docs/protocol.md is up to date with bridge/protocol.ts", () => {
  const documented = documentedReference(doc);
  assert.ok(documented, "docs/protocol.md has the generated-reference markers");
  assert.equal(documented, renderProtocolReference(), "docs/protocol.md is stale: run npm run docs:protocol");
});

test("every frame type is named in the document, and the documented examples parse", () => {
  for (const type of [...CLIENT_FRAME_TYPES, ...BRIDGE_FRAME_TYPES])
    assert.ok(doc.includes(`\`${type}\``), type);
  const fill = (text: string) =>
    JSON.parse(
      text
        .replace('"epoch":"…"', `"epoch":"${"a".repeat(32)}"`)
        .replaceAll(/"(nonce|proof)":"…"/g, `"$1":"${"b".repeat(64)}"`)
        .replaceAll("…", "x")
        .replace("N}", "3}"),
    );
  const hello = /`(\{"type":"hello"[^`]+)`/.exec(doc)?.[1];
  assert.ok(hello);
  assert.equal(HelloFrame.safeParse(fill(hello)).success, true, hello);
  const challenge = /`(\{"type":"challenge"[^`]+)`/.exec(doc)?.[1];
  assert.ok(challenge);
  assert.equal(ChallengeFrame.safeParse(fill(challenge)).success, true, challenge);
  assert.equal(WelcomeFrame.safeParse({ type: "welcome" }).success, false);
});

test("importing protocol-doc.ts never writes: only `npm run docs:protocol` does", () => {
  const before = statSync(DOC_PATH).mtimeMs;
  // `--write` in argv used to make any importer rewrite the document.
  const run = spawnSync(
    process.execPath,
    [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      `await import(${JSON.stringify(DOC_MODULE)})`,
      "--",
      "--write",
    ],
    { encoding: "utf8", timeout: 60_000 },
  );
  assert.equal(run.status, 0, run.stderr);
  assert.equal(statSync(DOC_PATH).mtimeMs, before, "importing the module touched docs/protocol.md");
  assert.equal(run.stderr, "");
});

test("withCurrentReference replaces a stale generated block and appends a missing one", () => {
  const stale = doc.replace(/Client frame types: [^\n]*/, "Client frame types: `stale`.");
  assert.notEqual(stale, doc);
  assert.equal(withCurrentReference(stale), withCurrentReference(doc));
  assert.equal(documentedReference(withCurrentReference(stale)), renderProtocolReference());
  assert.equal(documentedReference(withCurrentReference("# Protocol\n")), renderProtocolReference());
});
