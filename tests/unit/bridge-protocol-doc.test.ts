// docs/protocol.md must match the zod schemas in bridge/protocol.ts.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { BRIDGE_FRAME_TYPES, CLIENT_FRAME_TYPES, HelloFrame, WelcomeFrame } from "../../bridge/protocol.ts";
import { DOC_PATH, documentedReference, renderProtocolReference } from "../../bridge/protocol-doc.ts";

const doc = readFileSync(DOC_PATH, "utf8");

test("the generated reference in docs/protocol.md is up to date with bridge/protocol.ts", () => {
  const documented = documentedReference(doc);
  assert.ok(documented, "docs/protocol.md has the generated-reference markers");
  assert.equal(
    documented,
    renderProtocolReference(),
    "docs/protocol.md is stale: run node --import tsx bridge/protocol-doc.ts --write",
  );
});

test("every frame type is named in the document, and the documented examples parse", () => {
  for (const type of [...CLIENT_FRAME_TYPES, ...BRIDGE_FRAME_TYPES])
    assert.ok(doc.includes(`\`${type}\``), type);
  const hello = /`(\{"type":"hello"[^`]+)`/.exec(doc)?.[1];
  assert.ok(hello);
  const example = JSON.parse(
    hello
      .replaceAll("…", "x")
      .replace('"epoch":"x"', `"epoch":"${"a".repeat(32)}"`)
      .replace("N}", "3}"),
  );
  assert.equal(HelloFrame.safeParse(example).success, true);
  assert.equal(WelcomeFrame.safeParse({ type: "welcome" }).success, false);
});
