// `npm run demo`: real Pi 0.84.2 in RPC mode against the scripted model, printed as a transcript.
// No network, no credentials, no TTY needed.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type PiLine, PiRpcProcess } from "../agent-runtime/dev/pi-rpc.ts";
import { callTool, type ScriptTurn, say, startScriptedModel } from "../agent-runtime/dev/scripted-model.ts";

const script: ScriptTurn[] = [
  callTool("bash", { command: "cat notes.txt && wc -l notes.txt" }),
  say("The notes file has two lines: a greeting and a reminder to ship the runtime."),
];

function describe(line: PiLine): string | undefined {
  switch (line.type) {
    case "tool_execution_start":
      return `  tool call  ${line.toolName} ${JSON.stringify(line.args)}`;
    case "tool_execution_end": {
      const result = line.result as { content?: { type: string; text?: string }[] } | undefined;
      const text = (result?.content ?? []).map((c) => c.text ?? "").join("");
      const body = text
        .trimEnd()
        .split("\n")
        .map((l) => `             | ${l}`);
      return [`  tool result${line.isError ? " (error)" : ""}`, ...body].join("\n");
    }
    case "message_end": {
      const message = line.message as { role: string; content: { type: string; text?: string }[] };
      if (message.role !== "assistant") return undefined;
      const text = message.content
        .filter((c) => c.type === "text")
        .map((c) => c.text)
        .join("");
      return text ? `  assistant  ${text}` : undefined;
    }
    case "agent_settled":
      return "  (agent settled)";
    default:
      return undefined;
  }
}

const workspace = await mkdtemp(path.join(tmpdir(), "chat-ui-demo-"));
await writeFile(path.join(workspace, "notes.txt"), "hello from the workspace\nremember: ship the runtime\n");
const model = await startScriptedModel({ script });
const pi = await PiRpcProcess.start({ modelBaseUrl: model.baseUrl, cwd: workspace });
try {
  process.stdout.write(
    `chat-ui-agent-runtime demo: real Pi in RPC mode, scripted model at ${model.baseUrl}\n`,
  );
  pi.onLine((line) => {
    const text = describe(line);
    if (text) process.stdout.write(`${text}\n`);
  });
  const prompt = "What is in notes.txt?";
  process.stdout.write(`  user       ${prompt}\n`);
  const response = await pi.request({ type: "prompt", message: prompt });
  if (!response.success) throw new Error(`prompt refused: ${JSON.stringify(response)}`);
  await pi.waitFor((l) => l.type === "agent_settled", 60_000);
  if (model.unscripted.length > 0) throw new Error("the model received requests the script did not expect");
  process.stdout.write("demo finished: one agent turn with a real tool call.\n");
} finally {
  await pi.close();
  await model.close();
  await rm(workspace, { recursive: true, force: true });
}
