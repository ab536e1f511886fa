// `npm run docs:protocol`: rewrites the generated reference block of docs/protocol.md and docs/protocol.schema.json
// from bridge/protocol.ts. The only writer of both (tests/unit/bridge-protocol-doc.test.ts and
// tests/unit/protocol-schema.test.ts fail when they are stale).
import { readFileSync, writeFileSync } from "node:fs";
import { DOC_PATH, withCurrentReference } from "../bridge/protocol-doc.ts";
import { renderProtocolSchema, SCHEMA_PATH } from "../bridge/protocol-schema.ts";

const generated: [file: string, update: (before: string) => string][] = [
  [DOC_PATH, withCurrentReference],
  [SCHEMA_PATH, () => renderProtocolSchema()],
];
for (const [file, update] of generated) {
  let before = "";
  try {
    before = readFileSync(file, "utf8");
  } catch {}
  const after = update(before);
  if (after === before) {
    process.stderr.write(`${file} is up to date\n`);
  } else {
    writeFileSync(file, after);
    process.stderr.write(`updated ${file}\n`);
  }
}
