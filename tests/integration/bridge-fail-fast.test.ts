// The built bridge refuses to start, before Pi starts, with exit 2 and one sentence a person reads on stderr
// (then the JSON log line), on a token that is missing, too short or unreadable and on an address in use. The
// operator's client says what is wrong with its arguments or with the address it was given.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import { type TestContext, test } from "node:test";
import { fixture, root, spawnBridge, startNetworkBridge, TEST_TOKEN } from "../support/bridge.ts";
import { privateTempDir, tempDir } from "../support/workspace.ts";

const attachCli = path.join(root, "build", "opt", "chat-ui-agent", "chat-ui-agent.mjs");

/** A Pi stand-in that only leaves a mark that it was started. */
async function markingPi(t: TestContext): Promise<{ command: string; mark: string }> {
  const dir = await tempDir(t, "marking-pi-");
  const mark = path.join(dir, "pi-started");
  const command = path.join(dir, "pi.mjs");
  await writeFile(
    command,
    `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(mark)}, "");\n`,
  );
  return { command, mark };
}

async function refusedStart(
  t: TestContext,
  options: { listen: string; token?: string; tokenFile?: string; args?: string[] },
): Promise<{ code: number | null; sentence: string; stderr: string; piStarted: boolean }> {
  const pi = await markingPi(t);
  const cwd = await tempDir(t, "fail-fast-ws-");
  const bridge = spawnBridge(t, {
    args: [
      "--listen",
      options.listen,
      "--cwd",
      cwd,
      "--state-dir",
      await privateTempDir(t, "fail-fast-state-"),
      "--gate",
      fixture("fake-pi-gate.mjs"),
      "--pi-command",
      pi.command,
      ...(options.tokenFile ? ["--token-file", options.tokenFile] : []),
      ...(options.args ?? []),
    ],
    env: options.token === undefined ? {} : { CHAT_UI_AGENT_BRIDGE_TOKEN: options.token },
  });
  const { code } = await bridge.exited;
  const stderr = bridge.stderr();
  const fatal = bridge.logs.find((l) => l.msg === "bridge failed to start");
  assert.ok(fatal, `the JSON log line follows the sentence: ${stderr}`);
  assert.ok(!bridge.logs.some((l) => l.msg === "Pi started"));
  return { code, sentence: stderr.split("\n")[0] ?? "", stderr, piStarted: existsSync(pi.mark) };
}

test("a missing token: exit 2, one sentence naming the minimum, nothing started", async (t) => {
  const refused = await refusedStart(t, { listen: "127.0.0.1:0" });
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(
    refused.sentence,
    /^chat-ui-agent bridge: network mode needs a token of at least 16 characters: set CHAT_UI_AGENT_BRIDGE_TOKEN or pass --token-file$/,
  );
  assert.equal(refused.piStarted, false);
});

test("a token under 16 characters: exit 2, says how long it is and the minimum", async (t) => {
  const refused = await refusedStart(t, { listen: "127.0.0.1:0", token: "short-token" });
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.sentence, /the bridge token has 11 characters; it must have at least 16/);
  assert.ok(!refused.stderr.includes("short-token"), "the token itself is never printed");
  assert.equal(refused.piStarted, false);
});

test("an unreadable --token-file: exit 2 and a sentence, not a raw ENOENT", async (t) => {
  const refused = await refusedStart(t, { listen: "127.0.0.1:0", tokenFile: "/nonexistent/token" });
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.sentence, /the token file \/nonexistent\/token does not exist$/);
  assert.equal(refused.piStarted, false);
});

test("an address in use: exit 2 before Pi starts, naming the address", async (t) => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const port = (holder.address() as { port: number }).port;
  const refused = await refusedStart(t, { listen: `127.0.0.1:${port}`, token: TEST_TOKEN });
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.sentence, new RegExp(`the address 127\\.0\\.0\\.1:${port} is already in use`));
  assert.equal(refused.piStarted, false, "Pi was started although the bridge could not listen");
});

function runAttach(args: string[]): Promise<{ code: number | null; output: string; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, [attachCli, "attach", ...args], {
    env: { PATH: process.env.PATH, CHAT_UI_AGENT_BRIDGE_TOKEN: TEST_TOKEN },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => {
    output += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    output += d.toString();
  });
  return new Promise((resolve) =>
    child.on("close", (code) => resolve({ code, output, ms: Date.now() - started })),
  );
}

test("attach: a closed port, a wrong path and a missing token file each get one clear line, and no retry loop", async (t) => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = (closed.address() as { port: number }).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const refused = await runAttach([`ws://127.0.0.1:${port}/v1/rpc`]);
  assert.equal(refused.code, 1, refused.output);
  assert.match(refused.output, /connection was refused: nothing listens at that address \(ECONNREFUSED\)/);
  assert.doesNotMatch(refused.output, /reconnecting/);

  const bridge = await startNetworkBridge(t, { fakePi: fixture("fake-pi.mjs") });
  const wrongPath = await runAttach([`ws://127.0.0.1:${bridge.port}/v1/wrong`]);
  assert.equal(wrongPath.code, 1, wrongPath.output);
  assert.match(wrongPath.output, /answered 404 to the WebSocket upgrade: wrong path or host/);

  const noFile = await runAttach([bridge.url, "--token-file", "/nonexistent"]);
  assert.equal(noFile.code, 2, noFile.output);
  assert.match(noFile.output, /^chat-ui-agent: --token-file: \/nonexistent does not exist$/m);
  assert.doesNotMatch(noFile.output, /ENOENT/);
});

test("a registries file that is missing or invalid: exit 2, one sentence naming it, nothing started", async (t) => {
  const dir = await tempDir(t, "fail-fast-registries-");
  const invalid = path.join(dir, "registries.json");
  await writeFile(invalid, JSON.stringify({ registries: [{ name: "x", hosts: ["Evil.COM."] }] }));
  for (const file of [invalid, path.join(dir, "missing.json")]) {
    const refused = await refusedStart(t, {
      listen: "127.0.0.1:0",
      token: TEST_TOKEN,
      args: ["--registries-file", file],
    });
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.sentence, new RegExp(`--registries-file ${file}`));
    assert.equal(refused.piStarted, false);
  }
});
