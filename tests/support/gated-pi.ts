// Real Pi with the shipped approval gate (build/opt/chat-ui-agent/approval-gate.mjs, its wasm and its search
// exclude config copied to a temp dir, so the bundle runs from its own directory with no node_modules beside
// it), a scripted model, a policy file, and dialogs answered by a list of answers (none left → no).
import assert from "node:assert/strict";
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { TestContext } from "node:test";
import type { PiLine, PiRpcProcess } from "../../agent-runtime/dev/pi-rpc.ts";
import type { ScriptedModel, ScriptTurn } from "../../agent-runtime/dev/scripted-model.ts";
import { startPiSession } from "./pi.ts";
import { tempDir } from "./workspace.ts";

const BUILD_DIR = path.join(import.meta.dirname, "..", "..", "build", "opt", "chat-ui-agent");
export const GATE_FILES = [
  "approval-gate.mjs",
  "tree-sitter.wasm",
  "tree-sitter-bash.wasm",
  "rg-exclude.conf",
];

/** The built gate in a directory of its own (as in the image), so it runs from there with nothing beside it. */
export async function installGate(t: TestContext): Promise<string> {
  const dir = path.join(await tempDir(t, "gate-install-"), "opt", "chat-ui-agent");
  await mkdir(dir, { recursive: true });
  for (const file of GATE_FILES) {
    await copyFile(path.join(BUILD_DIR, file), path.join(dir, file)).catch((error: unknown) => {
      throw new Error(`${file} missing in ${BUILD_DIR}: run \`npm run build\` first (${error})`);
    });
  }
  return path.join(dir, "approval-gate.mjs");
}

export type DialogAnswer = (dialog: PiLine) => Record<string, unknown>;
export const yes: DialogAnswer = () => ({ confirmed: true });
export const no: DialogAnswer = () => ({ confirmed: false });

export interface GatedSession {
  pi: PiRpcProcess;
  model: ScriptedModel;
  turns: ScriptTurn[];
  cwd: string;
  policyFile: string;
  dialogs: PiLine[];
}

/** Every built-in tool (Pi enables only read, bash, edit and write unless told). */
export const ALL_TOOLS = ["--tools", "read,bash,edit,write,grep,find,ls"];

export async function startGated(
  t: TestContext,
  script: ScriptTurn[],
  options: { policy?: string; env?: NodeJS.ProcessEnv; answers?: DialogAnswer[]; cwd?: string } = {},
): Promise<GatedSession> {
  const gate = await installGate(t);
  const policyFile = path.join(await tempDir(t, "gate-policy-"), "policy");
  if (options.policy !== undefined) await writeFile(policyFile, options.policy);
  const turns = [...script];
  const { pi, model, cwd } = await startPiSession(
    t,
    { script: () => turns.shift() },
    {
      extensions: [gate],
      env: { AGENT_POLICY_PATH: policyFile, ...options.env },
      extraArgs: ALL_TOOLS,
      ...(options.cwd ? { cwd: options.cwd } : {}),
    },
  );
  const dialogs: PiLine[] = [];
  const answers = [...(options.answers ?? [])];
  pi.onLine((line) => {
    if (line.type !== "extension_ui_request" || line.method !== "confirm") return;
    dialogs.push(line);
    const answer = answers.shift() ?? no;
    pi.send({ type: "extension_ui_response", id: line.id, ...answer(line) });
  });
  return { pi, model, turns, cwd, policyFile, dialogs };
}

/** Sends a prompt and waits until the agent settles; returns the tool_execution_end lines of that run. */
export async function runPrompt(pi: PiRpcProcess, message: string): Promise<PiLine[]> {
  const from = pi.lines.length;
  const response = await pi.request({ type: "prompt", message });
  assert.equal(response.success, true, JSON.stringify(response));
  await pi.waitFor((l) => l.type === "agent_settled", 90_000, from);
  return pi.lines.slice(from).filter((l) => l.type === "tool_execution_end");
}

/** The gate's audit lines ("tool call decision") from Pi's stderr. */
export function decisionLogs(pi: PiRpcProcess): Array<Record<string, unknown>> {
  return pi.stderr
    .split("\n")
    .filter((line) => line.includes('"tool call decision"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
