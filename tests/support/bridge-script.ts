// The scripted model's behaviour in bridge tests, chosen by the prompt text:
// "STREAM n" streams n text chunks; "RUN cmd" calls bash with cmd; anything else is echoed.
import {
  lastToolResult,
  lastUserText,
  type RecordedRequest,
  type ScriptTurn,
  say,
} from "../../agent-runtime/dev/scripted-model.ts";

export function bridgeScript(request: RecordedRequest): ScriptTurn {
  const body = request.body;
  if (lastToolResult(body) !== undefined) return say("tool done");
  const text = lastUserText(body);
  const stream = /^STREAM (\d+)/.exec(text);
  if (stream) {
    const n = Number(stream[1]);
    return { chunks: Array.from({ length: n }, (_, i) => ({ text: `w${i} ` })), chunkDelayMs: 3 };
  }
  const run = /^RUN (.+)$/s.exec(text);
  if (run) return { chunks: [{ toolCall: { name: "bash", arguments: { command: run[1] } } }] };
  return say(`echo: ${text}`);
}
