// Real Pi + scripted model, wired for node:test with cleanup.
import type { TestContext } from "node:test";
import { type PiRpcOptions, PiRpcProcess } from "../../agent-runtime/dev/pi-rpc.ts";
import {
  type ScriptedModel,
  type ScriptedModelOptions,
  startScriptedModel,
} from "../../agent-runtime/dev/scripted-model.ts";
import { tempDir } from "./workspace.ts";

export interface PiSession {
  pi: PiRpcProcess;
  model: ScriptedModel;
  cwd: string;
}

export async function startPiSession(
  t: TestContext,
  modelOptions: ScriptedModelOptions,
  piOptions: Partial<PiRpcOptions> = {},
): Promise<PiSession> {
  const model = await startScriptedModel(modelOptions);
  t.after(() => model.close());
  const cwd = piOptions.cwd ?? (await tempDir(t, "pi-ws-"));
  const pi = await PiRpcProcess.start({ modelBaseUrl: model.baseUrl, cwd, ...piOptions });
  t.after(async () => {
    await pi.close();
  });
  return { pi, model, cwd };
}
