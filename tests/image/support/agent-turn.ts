// Inside the image: bridge.mjs (stdio mode, as root, Pi isolated as `agent`) runs real agent turns against
// the scripted model on the host's loopback, with the approval gate live: `read-only` blocks a write, and
// `chat-ui-agent-policy set auto` switches the very next decision without restarting anything.
import assert from "node:assert/strict";
import { chmodSync } from "node:fs";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";
import { writeScriptedAgentDir } from "../../../agent-runtime/dev/agent-dir.ts";
import {
  callTool,
  lastToolResult,
  lastUserText,
  type RecordedRequest,
  say,
  startScriptedModel,
} from "../../../agent-runtime/dev/scripted-model.ts";
import { JsonlDecoder } from "../../../agent-runtime/jsonl.ts";
import { tempDir } from "../../support/workspace.ts";
import { docker, execIn } from "./docker.ts";

type Line = { type: string; [key: string]: unknown };

/** "WRITE <path> <content>" calls Pi's write tool; a tool result is reported back verbatim. */
function writeScript(request: RecordedRequest) {
  const result = lastToolResult(request.body);
  if (result !== undefined) return say(`tool said: ${result}`);
  const write = /^WRITE (\S+) (.+)$/s.exec(lastUserText(request.body));
  if (write) return callTool("write", { path: write[1], content: write[2] });
  return say("nothing to do");
}

/** Registered by image.test.ts, which builds the image once per run; `image()` is its tag. */
export function describeAgentTurn(image: () => string): void {
  describe("an agent turn in the image, through the bridge, with the gate", { timeout: 10 * 60_000 }, () => {
    it("read-only blocks a write; `chat-ui-agent-policy set auto` lets the next one through", async (t) => {
      const model = await startScriptedModel({ script: writeScript });
      const agentDir = await writeScriptedAgentDir(model.baseUrl, await tempDir(t, "image-pi-agent-"));
      // Readable, not writable, for others: the bridge seeds Pi's private agent dir from it, and refuses a
      // configuration the agent's tools could have written (issue 11).
      chmodSync(agentDir, 0o755);

      const container = await docker.createContainer({
        Image: image(),
        User: "root",
        Cmd: [
          "node",
          "/opt/chat-ui-agent/bridge.mjs",
          "--cwd",
          "/workspace",
          "--agent-user",
          "agent",
          "--provider",
          "scripted",
          "--model",
          "scripted-model",
          "--no-session",
          "--offline",
        ],
        Env: ["PI_CODING_AGENT_DIR=/pi-agent", "PI_OFFLINE=1"],
        OpenStdin: true,
        StdinOnce: false,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        HostConfig: { NetworkMode: "host", Binds: [`${agentDir}:/pi-agent`] },
      });
      // The container (and Pi's keep-alive connections to the model) goes first, then the model.
      t.after(async () => {
        await container.remove({ force: true });
        await model.close();
      });
      const io = await container.attach({
        stream: true,
        stdin: true,
        stdout: true,
        stderr: true,
        hijack: true,
      });
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      docker.modem.demuxStream(io, stdout, stderr);
      let stderrText = "";
      stderr.on("data", (chunk: Buffer) => {
        stderrText += chunk.toString("utf8");
      });
      const lines: Line[] = [];
      const waiters = new Set<() => void>();
      const decoder = new JsonlDecoder();
      stdout.on("data", (chunk: Buffer) => {
        for (const raw of decoder.push(chunk)) lines.push(JSON.parse(raw) as Line);
        for (const wake of waiters) wake();
      });
      /** The first line from `from` on that matches; a refused command (success: false) fails at once. */
      const waitFor = (predicate: (line: Line) => boolean, from: number, ms = 60_000) =>
        new Promise<Line>((resolve, reject) => {
          const timer = setTimeout(() => {
            waiters.delete(check);
            const seen = JSON.stringify(lines.slice(from)).slice(-2000);
            reject(new Error(`timed out; lines: ${seen}\nstderr: ${stderrText.slice(-3000)}`));
          }, ms);
          function check() {
            const recent = lines.slice(from);
            const refused = recent.find((line) => line.type === "response" && line.success === false);
            const hit = refused ?? recent.find(predicate);
            if (!hit) return;
            waiters.delete(check);
            clearTimeout(timer);
            if (refused) reject(new Error(`a command was refused: ${JSON.stringify(refused)}`));
            else resolve(hit);
          }
          waiters.add(check);
          check();
        });
      const send = (command: object) => io.write(`${JSON.stringify(command)}\n`);

      await container.start();
      const policy = (...args: string[]) => execIn(container, ["chat-ui-agent-policy", ...args]);

      const setReadOnly = await policy("set", "read-only");
      assert.equal(setReadOnly.exitCode, 0, setReadOnly.stderr);
      const got = await policy("get");
      assert.equal(JSON.parse(got.stdout).policy ?? JSON.parse(got.stdout).mode, "read-only", got.stdout);
      let from = lines.length;
      send({ type: "prompt", id: "p1", message: "WRITE /workspace/blocked.txt should-not-exist" });
      await waitFor((line) => line.type === "agent_end", from);
      const blocked = model.requests.map((r) => lastToolResult(r.body)).find((text) => text !== undefined);
      assert.match(blocked ?? "", /read-only/, `the tool result the model saw: ${blocked}`);
      const absent = await execIn(container, [
        "sh",
        "-c",
        "test -e /workspace/blocked.txt && echo EXISTS || echo absent",
      ]);
      assert.equal(absent.stdout.trim(), "absent");
      const setAuto = await policy("set", "auto", "--expected", "read-only");
      assert.equal(setAuto.exitCode, 0, setAuto.stderr);
      const conflict = await policy("set", "ask", "--expected", "read-only");
      assert.equal(conflict.exitCode, 3, "a stale --expected is a conflict");

      from = lines.length;
      const requestsBefore = model.requests.length;
      send({ type: "prompt", id: "p2", message: "WRITE /workspace/allowed.txt written-under-auto" });
      await waitFor((line) => line.type === "agent_end", from);
      const allowed = model.requests
        .slice(requestsBefore)
        .map((r) => lastToolResult(r.body))
        .find((text) => text !== undefined);
      assert.doesNotMatch(allowed ?? "", /block|read-only/i, `the tool result the model saw: ${allowed}`);
      const written = await execIn(container, ["stat", "-c", "%U %n", "/workspace/allowed.txt"]);
      assert.equal(written.stdout.trim(), "agent /workspace/allowed.txt", "Pi (as agent) wrote the file");
      const content = await execIn(container, ["cat", "/workspace/allowed.txt"]);
      assert.equal(content.stdout, "written-under-auto");
      io.end();
    });
  });
}
