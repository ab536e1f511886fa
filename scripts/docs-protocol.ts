// `npm run docs:protocol`: rewrites the generated reference block of docs/protocol.md from bridge/protocol.ts.
// The only writer of that file's generated part (tests/unit/bridge-protocol-doc.test.ts fails when it is stale).
import { readFileSync, writeFileSync } from "node:fs";
import { DOC_PATH, withCurrentReference } from "../bridge/protocol-doc.ts";

const before = readFileSync(DOC_PATH, "utf8");
const after = withCurrentReference(before);
if (after === before) {
  process.stderr.write(`${DOC_PATH} is up to date\n`);
} else {
  writeFileSync(DOC_PATH, after);
  process.stderr.write(`updated ${DOC_PATH}\n`);
}
