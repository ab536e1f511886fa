// `npm run demo`: the whole runtime on an embedded default. A scripted model, the built bridge in network
// mode on loopback with a random token, real patched Pi behind it with the approval gate, and the terminal
// client showing what happens. No network, no credentials. With a TTY the person answers the approval;
// without one the demo declines it. What the model says and what the summary reports come from what really
// happened (the tool's result, the remote's branch), never from the script. `--keep` keeps the workspace and the
// bridge log (they are kept anyway when something failed). `--provider X --model Y` runs the same bridge
// against a real model.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { writeScriptedAgentDir } from "../agent-runtime/dev/agent-dir.ts";
import { waitForHttp } from "../agent-runtime/dev/http-probe.ts";
import {
  callTool,
  lastToolResult,
  type ScriptResponder,
  type ScriptTurn,
  say,
  startScriptedModel,
} from "../agent-runtime/dev/scripted-model.ts";
import { JsonlDecoder } from "../agent-runtime/jsonl.ts";
import { attach } from "../bridge/attach/attach.ts";
import type { BridgeFrame } from "../bridge/client.ts";

const root = path.resolve(import.meta.dirname, "..");
const bridgeBundle = path.join(root, "build", "opt", "chat-ui-agent", "bridge.mjs");
const out = (text: string) => process.stdout.write(text);
const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY);

interface DemoArgs {
  /** --provider/--model for a real model; undefined runs the scripted one. */
  modelFlags: string[] | undefined;
  /** Keep the workspace and the bridge log even when everything worked. */
  keep: boolean;
}

function parseDemoArgs(argv: string[]): DemoArgs {
  const flags: string[] = [];
  let keep = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--provider" || argv[i] === "--model") flags.push(argv[i] as string, argv[++i] ?? "");
    else if (argv[i] === "--keep") keep = true;
    else throw new Error(`unknown argument ${argv[i]} (the demo takes --keep, --provider P, --model M)`);
  }
  return { modelFlags: flags.length > 0 ? flags : undefined, keep };
}

/** What became of the push, read from the tool's result (the gate's refusal, or bash's exit status). */
type PushOutcome = "declined" | "failed" | "ran";

function pushOutcome(toolResult: string): PushOutcome {
  if (/The person declined this tool call|Nothing ran|Blocked by the approval gate/.test(toolResult))
    return "declined";
  if (/Command exited with code \d+|^Error|fatal:/m.test(toolResult)) return "failed";
  return "ran";
}

/** The tool result's first line that explains a failure (git's own `fatal:`/`error:` line when there is one). */
function failureLine(toolResult: string): string {
  const lines = toolResult.split("\n").map((line) => line.trim());
  return (
    lines.find((line) => /^(fatal|error):/.test(line)) ??
    lines.find((line) => line.length > 0) ??
    "no output"
  ).slice(0, 300);
}

const slowSummary = [
  "Summary: ",
  "I read notes.txt, ",
  "fixed the typo, ",
  "asked before pushing, ",
  "and respected the read-only switch. ",
  "This sentence streams slowly ",
  "so the demo can cut the connection ",
  "in the middle of it ",
  "and show that the client resumes ",
  "without losing a single frame.",
];

const script: Array<ScriptTurn | ScriptResponder> = [
  callTool("read", { path: "notes.txt" }),
  say("notes.txt has a typo: 'teh' should be 'the'."),
  callTool("edit", { path: "notes.txt", edits: [{ oldText: "teh runtime", newText: "the runtime" }] }),
  callTool("bash", { command: "git commit -qam 'Fix typo in notes' && git push origin HEAD" }),
  // The model's closing line follows the tool's real result.
  (request) => {
    const result = lastToolResult(request.body) ?? "";
    switch (pushOutcome(result)) {
      case "declined":
        return say("The typo is fixed locally; the push was not approved, so nothing left the machine.");
      case "failed":
        return say(`You approved the push, but it failed: ${failureLine(result)}`);
      case "ran":
        return say("The typo is fixed and, with your approval, pushed.");
    }
  },
  callTool("write", { path: "CHANGELOG.md", content: "- fixed a typo in notes.txt\n" }),
  say("The policy is read-only now, so I could not write CHANGELOG.md."),
  { chunks: slowSummary.map((text) => ({ text })), chunkDelayMs: 120 },
];

async function git(cwd: string, ...args: string[]): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn("git", args, { cwd, stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`git ${args.join(" ")}: ${code}`)),
    );
  });
}

async function gitOutput(cwd: string, ...args: string[]): Promise<string> {
  return await new Promise((resolve) => {
    execFile("git", args, { cwd }, (error, stdout) => resolve(error ? "" : stdout.trim()));
  });
}

async function main(): Promise<void> {
  const { modelFlags, keep } = parseDemoArgs(process.argv.slice(2));
  // Not in /tmp: the agent's tools may write there, and the bridge refuses a policy file or a Pi
  // configuration the tools could have written (the workspace below is granted to them explicitly).
  const temp = await mkdtemp(path.join("/var/tmp", "chat-ui-demo-"));
  // The "remote" is where the tools may write (their sandbox grants /tmp), so an approved push really pushes;
  // it is still on this machine, so nothing leaves it.
  const remoteDir = await mkdtemp(path.join(tmpdir(), "chat-ui-demo-remote-"));
  const workspace = path.join(temp, "workspace");
  const remote = path.join(remoteDir, "remote.git");
  const policyPath = path.join(temp, "policy");
  const bridgeLog = path.join(temp, "bridge.log");
  let bridge: ChildProcess | undefined;
  let succeeded = false;
  const model = modelFlags ? undefined : await startScriptedModel({ script });
  try {
    // A workspace with a local "remote", so an approved push really pushes (and nothing leaves the machine).
    await git(temp, "init", "-q", "--bare", remote);
    await git(temp, "init", "-q", "-b", "main", workspace);
    await writeFile(
      path.join(workspace, "notes.txt"),
      "hello from the workspace\nremember: ship teh runtime\n",
    );
    const gitEnv = ["-c", "user.name=demo", "-c", "user.email=demo@example.invalid"];
    await git(workspace, ...gitEnv, "add", "-A");
    await git(workspace, ...gitEnv, "commit", "-qm", "Initial notes");
    await git(workspace, "remote", "add", "origin", remote);
    await git(workspace, "config", "user.name", "demo");
    await git(workspace, "config", "user.email", "demo@example.invalid");
    await writeFile(policyPath, "auto\n");

    const token = randomBytes(24).toString("hex");
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      LANG: "C.UTF-8",
      HOME: process.env.HOME,
      CHAT_UI_AGENT_BRIDGE_TOKEN: token,
      AGENT_POLICY_PATH: policyPath,
      PI_OFFLINE: "1",
    };
    const piFlags = modelFlags ?? ["--provider", "scripted", "--model", "scripted-model"];
    if (model)
      env.PI_CODING_AGENT_DIR = await writeScriptedAgentDir(
        model.baseUrl,
        await mkdtemp(path.join(temp, "agent-")),
      );
    else
      Object.assign(env, process.env, { CHAT_UI_AGENT_BRIDGE_TOKEN: token, AGENT_POLICY_PATH: policyPath });

    const child = spawn(
      process.execPath,
      // A state dir of its own: the demo starts a new conversation every time (and never shares a bridge's).
      [
        bridgeBundle,
        "--listen",
        "127.0.0.1:0",
        "--cwd",
        workspace,
        "--state-dir",
        path.join(temp, "state"),
        ...piFlags,
        "--no-session",
      ],
      { env, stdio: ["ignore", "ignore", "pipe"] },
    );
    bridge = child;
    const port = await waitForListening(child, bridgeLog);
    // Attach once the bridge is healthy (bounded: a bridge that never gets there fails the demo); the welcome
    // itself waits until Pi is proved patched.
    await waitForHttp(`http://127.0.0.1:${port}/v1/health`, {
      deadlineMs: 30_000,
      until: (response) => response.status === 200,
    });
    out(
      `demo: bridge on 127.0.0.1:${port} (random token), real Pi ${modelFlags ? "with your model" : "with a scripted model"}\n`,
    );
    out(
      keep
        ? `demo: the workspace and the bridge log (JSON) stay in ${temp}\n\n`
        : "demo: the workspace and the bridge log are kept if something fails (--keep keeps them anyway)\n\n",
    );

    const session = await attach({
      url: `ws://127.0.0.1:${port}/v1/rpc`,
      token,
      output: process.stdout,
      clientId: "demo-terminal",
      backoff: { initialMs: 50, maxMs: 500 },
      ...(interactive ? { input: process.stdin } : {}),
    });
    const { client, transcript } = session;
    const seqs: number[] = [];
    client.on("frame", (frame: BridgeFrame) => seqs.push(frame.seq));
    const settled = () =>
      new Promise<void>((resolve) => {
        const onFrame = (frame: BridgeFrame) => {
          if (frame.type !== "agent_settled") return;
          client.off("frame", onFrame);
          resolve();
        };
        client.on("frame", onFrame);
      });
    const step = (title: string) => transcript.line(`\n── ${title}`);
    const summary: string[] = [];

    step("1. policy auto: the agent reads a file (allowed, no prompt)");
    let idle = settled();
    await client.prompt("Look at notes.txt");
    await idle;
    summary.push("read notes.txt without a prompt");

    step("2. policy auto: an edit is allowed; `git push` is an exit point and needs a person");
    if (!interactive) {
      client.on("dialog", (dialog) => {
        // After the transcript has shown the dialog (listeners run in registration order).
        setImmediate(() => {
          transcript.line("(no TTY: the demo declines this approval)");
          void client.answer(dialog.id, { kind: "confirm", confirmed: false });
        });
      });
    } else {
      transcript.line("(answer the approval below with y or n)");
    }
    let pushResult: string | undefined;
    const onPushResult = (frame: BridgeFrame) => {
      if (frame.type !== "tool_execution_end" || frame.toolName !== "bash") return;
      const content = (frame.result as { content?: { text?: string }[] } | undefined)?.content ?? [];
      pushResult = content.map((part) => part.text ?? "").join("");
    };
    client.on("frame", onPushResult);
    idle = settled();
    await client.prompt("Fix the typo, commit and push");
    await idle;
    client.off("frame", onPushResult);
    client.removeAllListeners("dialog");
    const notes = await readFile(path.join(workspace, "notes.txt"), "utf8");
    summary.push(
      notes.includes("the runtime") ? "edited notes.txt under auto (allowed)" : "edit did not land",
    );
    // What happened, from the tool's result and the remote itself.
    const outcome = pushOutcome(pushResult ?? "");
    const pushed =
      (await gitOutput(workspace, "rev-parse", "HEAD")) ===
      (await gitOutput(remoteDir, "--git-dir", remote, "rev-parse", "--verify", "-q", "main"));
    const pushProblem =
      outcome === "failed"
        ? `git push was approved but failed: ${failureLine(pushResult ?? "")}`
        : outcome === "ran" && !pushed
          ? "git push ran, but the remote does not have the commit"
          : outcome === "declined" && pushed
            ? "git push was declined, yet the remote has the commit"
            : pushResult === undefined
              ? "git push never ran or reported"
              : undefined;
    summary.push(
      pushProblem ??
        (outcome === "declined"
          ? "git push was held for approval and declined: the remote is unchanged"
          : "git push waited for your answer; you said yes, and the remote has the commit"),
    );

    step("3. the policy is switched live to read-only: the next write is blocked");
    const switched = await client.setPolicy("read-only", "auto");
    // Success shows up in the transcript as the bridge's policy_changed frame.
    if (!switched.success) transcript.line(`! ${switched.error}`);
    idle = settled();
    await client.prompt("Add a changelog entry");
    await idle;
    let changelogWritten = true;
    await readFile(path.join(workspace, "CHANGELOG.md")).catch(() => {
      changelogWritten = false;
    });
    summary.push(
      changelogWritten ? "CHANGELOG.md was written (unexpected)" : "the write was blocked under read-only",
    );

    step("4. the connection drops mid-stream; the client resumes from its last seq");
    idle = settled();
    let dropped = false;
    const dropOnText = (frame: BridgeFrame) => {
      const event = frame.assistantMessageEvent as { type?: string } | undefined;
      if (dropped || frame.type !== "message_update" || event?.type !== "text_delta") return;
      dropped = true;
      transcript.line(`✂ demo: cutting the connection at seq ${frame.seq}`);
      client.dropConnection(800);
    };
    client.on("frame", dropOnText);
    await client.prompt("Summarise what you did");
    await idle;
    client.off("frame", dropOnText);
    const contiguous = seqs.every((seq, i) => i === 0 || seq === (seqs[i - 1] as number) + 1);
    summary.push(
      contiguous
        ? `resumed after the drop: ${seqs.length} frames, seq ${seqs[0]}–${seqs.at(-1)}, no gap, no duplicate`
        : "frames were lost or repeated",
    );

    transcript.line("\n── summary");
    for (const line of summary) transcript.line(`  • ${line}`);
    session.close();
    if (model && model.unscripted.length > 0)
      throw new Error("the scripted model got requests it had no turn for");
    if (!contiguous || changelogWritten || pushProblem)
      throw new Error("the demo's checks failed (see the summary)");
    out("demo finished.\n");
    succeeded = true;
  } finally {
    if (bridge && bridge.exitCode === null) {
      const exited = new Promise((resolve) => bridge?.once("exit", resolve));
      bridge.kill("SIGTERM");
      await exited;
    }
    await model?.close();
    // Keep the workspace and the bridge log when something went wrong (they explain it), or when asked.
    if (succeeded && !keep) {
      await rm(temp, { recursive: true, force: true });
      await rm(remoteDir, { recursive: true, force: true });
    } else {
      process.stderr.write(
        `demo: kept ${temp} (workspace, bridge.log) and ${remoteDir} (the remote) for inspection\n`,
      );
    }
  }
}

/** Copies the bridge's JSON log to a file and resolves with the port it reports listening on. */
function waitForListening(child: ChildProcess, logFile: string): Promise<number> {
  const log = createWriteStream(logFile);
  const decoder = new JsonlDecoder();
  return new Promise((resolve, reject) => {
    child.stderr?.on("data", (chunk: Buffer) => {
      log.write(chunk);
      for (const line of decoder.push(chunk)) {
        try {
          const entry = JSON.parse(line) as { msg?: string; port?: number };
          if (entry.msg === "listening" && typeof entry.port === "number") resolve(entry.port);
        } catch {
          // not JSON: kept in the log file only
        }
      }
    });
    child.once("exit", (code) =>
      reject(new Error(`bridge exited (${code}) before listening; see ${logFile}`)),
    );
  });
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`demo failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
