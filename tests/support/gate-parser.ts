// The bash parser as the gate runs it: loaded, then warmed up (decide.ts warmUp), as approval-gate.ts does at
// its start. Cold, the first classification compiles the classifier inside its 25 ms CPU budget, and on a
// loaded host (CI runs the image suite beside the unit tests) a plain script turned "too complex to inspect in
// time" (seen in gate-local-code). Tests decide with the gate's parser in the gate's state.
import { warmUp } from "../../agent-runtime/gate/decide.ts";
import { loadBashParser, type Parser } from "../../agent-runtime/gate/shell-parser.ts";

export async function gateParser(): Promise<Parser> {
  const parser = await loadBashParser();
  warmUp(parser);
  return parser;
}
