// The operator's terminal client (the built `chat-ui-agent` bundle) in a real pseudo-terminal, answering a dialog,
// and the same client without a TTY, which only prints and answers nothing.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Writable } from "node:stream";
import { test } from "node:test";
import { callTool, say } from "../../agent-runtime/dev/scripted-model.ts";
import { Transcript } from "../../bridge/attach/transcript.ts";
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
  return terminalOver({
    outputs: [child.stdout, child.stderr],
    input: child.stdin,
    exited: new Promise((resolve) => child.on("close", resolve)),
    kill: () => child.kill("SIGTERM"),
  });
}

/** What the person sees: everything printed so far, in whatever pieces it arrived. */
function terminalOver(io: {
  outputs: ({ on(event: "data", listener: (chunk: Buffer | string) => void): unknown } | null)[];
  input: Writable | null;
  exited: Promise<number | null>;
  kill: () => void;
}): Terminal {
  let output = "";
  const wakers = new Set<() => void>();
  const onData = (chunk: Buffer | string) => {
    output += chunk.toString();
    for (const wake of [...wakers]) wake();
  };
  for (const stream of io.outputs) stream?.on("data", onData);
  return {
    output: () => output,
    type: (text) => io.input?.write(text),
    kill: io.kill,
    exited: io.exited,
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

/**
 * The operator sees the whole dialog: the gated command and, after it, why it was gated. A pty hands output
 * over in pieces (n_tty writes each line's "\r\n" into the pty on its own), so a reader can see a dialog cut
 * at any line end even though attach prints it with one write: wait for all of it, never for a part.
 */
async function operatorSeesDialog(terminal: Terminal): Promise<void> {
  await terminal.waitFor(/\[approval\][\s\S]*│ echo from-operator > op\.txt\r?\n[\s\S]*│ Why: [^\n]+\n/);
}

// The dialog as the failing run's pty delivered it (issue 22): cut right after the command line.
const DIALOG_FIRST_PIECE =
  "[approval] Allow this shell command?\r\n  │ Command:\r\n  │ echo from-operator > op.txt\r\n";
const DIALOG_REST =
  "  │ Working directory: /tmp/bridge-ws-x\r\n  │ Why: WRITE, READ — redirection writes op.txt; ask policy confirms every shell command\r\n";

test("a dialog cut after its command line is not taken as seen until why it was gated arrives", async () => {
  const screen = new EventEmitter();
  const terminal = terminalOver({
    outputs: [screen],
    input: null,
    exited: Promise.resolve(0),
    kill: () => {},
  });
  screen.emit("data", DIALOG_FIRST_PIECE);
  const seen = operatorSeesDialog(terminal);
  // The rest comes with a later read, after everything the first piece set off has run.
  setImmediate(() => screen.emit("data", DIALOG_REST));
  await seen;
  assert.match(terminal.output(), /│ Why: WRITE, READ/);
});

test("attach prints a dialog with one write, so no writer of its own splits it", () => {
  const writes: string[] = [];
  const transcript = new Transcript({ write: (text) => writes.push(text) });
  const message = "Command:\necho from-operator > op.txt\nWorking directory: /w\nWhy: WRITE";
  transcript.frame({
    type: "extension_ui_request",
    seq: 1,
    id: "d1",
    method: "confirm",
    title: "Allow?",
    message,
  });
  assert.equal(writes.length, 1, JSON.stringify(writes));
  assert.match(
    writes[0] ?? "",
    /^\[approval\] Allow\?\n[\s\S]*│ echo from-operator > op\.txt\n[\s\S]*│ Why: WRITE\n$/,
  );
});

test("in a pty the operator sees the gated command and why, chooses from numbered choices, lists and revokes the grant, and answers a boundary action y/n", async (t) => {
  const write = callTool("bash", { command: "echo from-operator > op.txt" });
  const bridge = await startNetworkBridge(t, {
    model: {
      script: [
        write,
        say("Operator approved it."),
        write,
        say("Ran again unasked."),
        callTool("bash", { command: "git push origin main" }),
        say("Push answered."),
      ],
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
  await operatorSeesDialog(terminal);
  await terminal.waitFor(
    /1\) Allow once\r?\n {2}2\) Allow for this session\r?\n {2}3\) Deny\r?\nchoose \[1-3\]/,
  );
  terminal.type("2\n");
  await terminal.waitFor(/you chose Allow for this session/);
  await terminal.waitFor(
    /grants granted: 1 in force\r?\n {2}g-[0-9a-f]{16} {2}command {2}bash: echo from-operator > op\.txt/,
  );
  await terminal.waitFor(/Operator approved it\./);
  terminal.type("again\n");
  await terminal.waitFor(/Ran again unasked\./);
  assert.equal(
    (terminal.output().match(/\[approval\]/g) ?? []).length,
    1,
    "the grant ran it without a dialog",
  );
  assert.equal(await readFile(path.join(bridge.cwd, "op.txt"), "utf8"), "from-operator\n");
  terminal.type("/grants\n");
  await terminal.waitFor(/session grants: 1\r?\n {2}g-[0-9a-f]{16} {2}command/);
  terminal.type("/revoke bogus\n");
  await terminal.waitFor(/usage: \/revoke <grant id>\|all/);
  terminal.type("/revoke all\n");
  await terminal.waitFor(/revoked 1 grant\(s\)/);
  await terminal.waitFor(/grants revoked: 0 in force/);
  terminal.type("push it\n");
  await terminal.waitFor(
    /\[approval\] Allow this shell command\?[\s\S]*git push origin main[\s\S]*allow\? \[y\/n\]/,
  );
  terminal.type("n\n");
  await terminal.waitFor(/you answered no/);
  await terminal.waitFor(/Push answered\./);
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
  await driver.client.waitFor((f) => f.type === "extension_ui_request" && f.method === "select");
  driver.client.ws.close();
  await driver.client.closed;

  const printer = runAttach(bridge.url, false);
  await printer.waitFor(/\[approval\][\s\S]*echo nobody > nobody\.txt/);
  printer.kill();
  assert.equal(await printer.exited, 0);
  assert.doesNotMatch(printer.output(), /you answered|you chose/, "its whole output, now that it has exited");
  assert.doesNotMatch(printer.output(), /choose \[1-3\]/, "a print-only client offers no prompt");

  const checker = await TestClient.connect(bridge.url, { clientId: "checker" });
  checker.client.send({ type: "bridge_status", id: "s1" });
  const status = await checker.client.waitFor((f) => f.type === "response" && f.id === "s1");
  const data = status.data as { pendingDialogs: { id: string }[] };
  assert.equal(data.pendingDialogs.length, 1, "nobody answered: the dialog is still pending");
  // Proof that no answer was taken or is on its way to Pi: this one is delivered (a second would not be).
  const dialogId = data.pendingDialogs[0]?.id as string;
  const declined = await checker.client.answer({ id: dialogId, commandId: "decline-1", value: "Deny" });
  assert.equal(declined.success, true, JSON.stringify(declined));
  await checker.client.waitFor((f) => f.type === "agent_settled");
  await assert.rejects(readFile(path.join(bridge.cwd, "nobody.txt")), { code: "ENOENT" });
});
