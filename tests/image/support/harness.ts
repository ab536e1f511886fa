// Pieces every image test that drives real Pi in a container shares: the scripted model's two prompts, the relay
// that lets the container reach the host's scripted model through a unix socket, and polling for a condition.
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestContext } from "node:test";
import { writeScriptedAgentDir } from "../../../agent-runtime/dev/agent-dir.ts";
import {
  callTool,
  lastToolResult,
  lastUserText,
  type RecordedRequest,
  type ScriptedModel,
  say,
  startScriptedModel,
} from "../../../agent-runtime/dev/scripted-model.ts";

/** The scripted model: "BASH <command>" and "WRITE <path> <content>" become that tool call, then "done". */
export function toolScript(request: RecordedRequest) {
  if (lastToolResult(request.body) !== undefined) return say("done");
  const text = lastUserText(request.body);
  const bash = /^BASH (.+)$/s.exec(text);
  if (bash) return callTool("bash", { command: bash[1] });
  const write = /^WRITE (\S+) (.+)$/s.exec(text);
  if (write) return callTool("write", { path: write[1], content: write[2] });
  return say("nothing to do");
}

/** A host-side unix socket server that forwards every connection to a host TCP port (the scripted model). */
export function unixToTcp(t: TestContext, socketPath: string, port: number): Promise<void> {
  const server = net.createServer((socket) => {
    const upstream = net.connect(port, "127.0.0.1");
    socket.pipe(upstream).pipe(socket);
    const end = () => {
      socket.destroy();
      upstream.destroy();
    };
    for (const s of [socket, upstream]) {
      s.on("error", end);
      s.on("close", end);
    }
  });
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return new Promise((resolve) =>
    server.listen(socketPath, () => {
      chmodSync(socketPath, 0o666);
      resolve();
    }),
  );
}

/** Polls `check` every 200 ms until it holds, or fails naming `what` after `ms`. */
export async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * The host side of a container that reaches the scripted model: the model (toolScript), Pi's agent dir naming it
 * at 127.0.0.1:`modelPort` inside the container (mount `seed` at /pi-seed), and a relay socket `model.sock` in
 * `relayDir` (mount it at /relay) for the container's infra to forward that port to. All removed after the test.
 */
export async function hostModel(
  t: TestContext,
  prefix: string,
  modelPort: number,
): Promise<{ model: ScriptedModel; seed: string; relayDir: string }> {
  const model = await startScriptedModel({ script: toolScript });
  t.after(() => model.close());
  const seed = mkdtempSync(path.join(tmpdir(), `${prefix}-seed-`));
  const relayDir = mkdtempSync(path.join(tmpdir(), `${prefix}-relay-`));
  t.after(() => {
    rmSync(seed, { recursive: true, force: true });
    rmSync(relayDir, { recursive: true, force: true });
  });
  chmodSync(relayDir, 0o777);
  await writeScriptedAgentDir(`http://127.0.0.1:${modelPort}/v1`, seed);
  chmodSync(seed, 0o755);
  chmodSync(path.join(seed, "models.json"), 0o644);
  await unixToTcp(t, path.join(relayDir, "model.sock"), Number(new URL(model.baseUrl).port));
  return { model, seed, relayDir };
}
