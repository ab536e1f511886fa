// The operator's terminal client (the built `chat-ui-agent` bundle) in a real pseudo-terminal, answering a dialog,
// and the same client without a TTY, which only prints and answers nothing.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { callTool, say } from "../../agent-runtime/dev/scripted-model.ts";
import { startNetworkBridge, TEST_TOKEN, TestClient } from "../support/bridge.ts";

const root = path.resolve(import.meta.dirname, "..", "..");
const bundleDir = path.join(root, "build", "opt", "chat-ui-agent");
const gate = path.join(bundleDir, "approval-gate.mjs");
const attachCli = path.join(bundleDir, "chat-ui-agent.mjs");
const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

interface Terminal {
  output: () => string;
  type: (text: string) => void;
  waitFor: (pattern: RegExp, ms?: number) => Promise<void>;
  exited: Promise<number | null>;
  kill: () => void;
}

/** Runs the attach CLI; under util-linux `script` its stdin/stdout are a real pty. */
function runAttach(url: string, tty: boolean): Terminal {
  const argv = [process.execPath, attachCli, "attach", url];
  const child = tty
    ? spawn("script", ["-qefc", argv.map(shellQuote).join(" "), "/dev/null"], {
        env: { PATH: process.env.PATH, TERM: "dumb", CHAT_UI_AGENT_BRIDGE_TOKEN: TEST_TOKEN },
      })
    : spawn(argv[0] as string, argv.slice(1), {
        env: { PATH: process.env.PATH, CHAT_UI_AGENT_BRIDGE_TOKEN: TEST_TOKEN },
        stdio: ["ignore", "pipe", "pipe"],
      });
  let output = "";
  const wakers = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString("utf8");
    for (const wake of [...wakers]) wake();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  return {
    output: () => output,
    type: (text) => child.stdin?.write(text),
    kill: () => child.kill("SIGTERM"),
    exited,
    waitFor: (pattern, ms = 20_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!pattern.test(output)) return;
          wakers.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          wakers.delete(check);
          reject(new Error(`no ${pattern} in terminal output:\n${output}`));
        }, ms);
        wakers.add(check);
        check();
      }),
  };
}

test("in a pty the operator sees the gated command and why, answers y, and the tool runs", async (t) => {
  const bridge = await startNetworkBridge(t, {
    model: {
      script: [callTool("bash", { command: "echo from-operator > op.txt" }), say("Operator approved it.")],
    },
    gate,
  });
  await writeFile(bridge.policyPath, "ask\n");
  const terminal = runAttach(bridge.url, true);
  t.after(() => {
    terminal.type("/quit\n");
  });
  await terminal.waitFor(/attached \(epoch/);
  terminal.type("please write op.txt\n");
  await terminal.waitFor(/\[approval\][\s\S]*echo from-operator > op\.txt/);
  assert.match(terminal.output(), /Why: /);
  terminal.type("y\n");
  await terminal.waitFor(/you answered yes/);
  await terminal.waitFor(/Operator approved it\./);
  assert.equal(await readFile(path.join(bridge.cwd, "op.txt"), "utf8"), "from-operator\n");
  terminal.type("/status\n");
  await terminal.waitFor(/status: \{/);
  terminal.type("/quit\n");
  assert.equal(await terminal.exited, 0);
});

test("without a TTY the client prints the pending dialog and answers nothing; it stays pending", async (t) => {
  const bridge = await startNetworkBridge(t, {
    model: { script: [callTool("bash", { command: "echo nobody > nobody.txt" }), say("done")] },
    gate,
  });
  await writeFile(bridge.policyPath, "ask\n");
  // chat-ui prompts, the dialog opens, then chat-ui goes away.
  const driver = await TestClient.connect(bridge.url, { clientId: "chat-ui" });
  driver.client.send({ type: "prompt", id: "p1", message: "write nobody.txt" });
  await driver.client.waitFor((f) => f.type === "extension_ui_request" && f.method === "confirm");
  driver.client.ws.close();
  await driver.client.closed;

  const printer = runAttach(bridge.url, false);
  await printer.waitFor(/\[approval\][\s\S]*echo nobody > nobody\.txt/);
  assert.doesNotMatch(printer.output(), /you answered/);
  printer.kill();
  assert.equal(await printer.exited, 0);

  const checker = await TestClient.connect(bridge.url, { clientId: "checker" });
  checker.client.send({ type: "bridge_status", id: "s1" });
  const status = await checker.client.waitFor((f) => f.type === "response" && f.id === "s1");
  const data = status.data as { pendingDialogs: unknown[] };
  assert.equal(data.pendingDialogs.length, 1, "nobody answered: the dialog is still pending");
  await assert.rejects(readFile(path.join(bridge.cwd, "nobody.txt")), { code: "ENOENT" });
});
