// A throwaway PI_CODING_AGENT_DIR whose only provider is a scripted (or any OpenAI-compatible) model.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

export const SCRIPTED_PROVIDER = "scripted";
export const SCRIPTED_MODEL_ID = "scripted-model";

export async function writeScriptedAgentDir(modelBaseUrl: string, dir?: string): Promise<string> {
  const agentDir = dir ?? (await mkdtemp(path.join(tmpdir(), "pi-agent-")));
  const models = {
    providers: {
      [SCRIPTED_PROVIDER]: {
        baseUrl: modelBaseUrl,
        api: "openai-completions",
        apiKey: "scripted-placeholder",
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [
          {
            id: SCRIPTED_MODEL_ID,
            name: "Scripted test model",
            input: ["text", "image"],
            contextWindow: 128000,
            maxTokens: 4096,
          },
        ],
      },
    },
  };
  await writeFile(path.join(agentDir, "models.json"), `${JSON.stringify(models, null, 2)}\n`);
  return agentDir;
}
