// Every binary, as built, explains itself: --help and --version print and exit 0 without starting anything (the
// bridge never starts Pi nor touches its state dir for them); an unknown flag or a bad value is exit 2 with one
// sentence of ours on stderr (the bridge adds its JSON log line), never Node's parseArgs text.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { type TestContext, test } from "node:test";
import packageJson from "../../package.json" with { type: "json" };
import { fixture, root } from "../support/bridge.ts";
import { tempDir } from "../support/workspace.ts";

const bundles = path.join(root, "build", "opt", "chat-ui-agent");
const VERSION_LINE = new RegExp(
  `^\\S+ ${packageJson.version.replaceAll(".", "\\.")} \\(chat-ui-agent-runtime, Pi 0\\.84\\.2\\)\\n$`,
);
/** Node's own parseArgs wording, which none of our messages may show. */
const NODE_WORDING = /ERR_PARSE_ARGS|To specify a positional argument|place it at the end of the command/;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(bundle: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const child = spawn(process.execPath, [path.join(bundles, bundle), ...args], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

/** A Pi stand-in that only leaves a mark that it was started, and a state dir that must stay absent. */
async function bridgeSetting(t: TestContext): Promise<{ args: string[]; mark: string; stateDir: string }> {
  const dir = await tempDir(t, "cli-help-");
  const mark = path.join(dir, "pi-started");
  const command = path.join(dir, "pi.mjs");
  await writeFile(
    command,
    `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(mark)}, "");\n`,
  );
  const stateDir = path.join(dir, "state");
  return {
    args: [
      "--state-dir",
      stateDir,
      "--cwd",
      dir,
      "--gate",
      fixture("fake-pi-gate.mjs"),
      "--pi-command",
      command,
    ],
    mark,
    stateDir,
  };
}

function assertUsageError(result: Run, sentence: RegExp): void {
  assert.equal(result.code, 2, `${result.stdout}${result.stderr}`);
  const first = result.stderr.split("\n")[0] ?? "";
  assert.match(first, sentence);
  assert.doesNotMatch(result.stderr, NODE_WORDING);
  assert.equal(result.stdout, "");
}

test("bridge.mjs --help, -h and --version print and exit 0: no Pi, no state dir, in stdio and network mode", async (t) => {
  const setting = await bridgeSetting(t);
  for (const args of [["--help"], ["-h"], ["--listen", "127.0.0.1:0", "--help"], ["--version"]]) {
    const result = await run("bridge.mjs", [...setting.args, ...args]);
    assert.equal(result.code, 0, `${args.join(" ")}: ${result.stderr}`);
    assert.equal(result.stderr, "", args.join(" "));
    if (args.includes("--version")) assert.match(result.stdout, VERSION_LINE);
    else {
      assert.match(result.stdout, /^usage: bridge\.mjs \[options\] \[pi options\]\n/);
      for (const flag of [
        "--listen HOST:PORT",
        "--state-dir DIR",
        "--token-file FILE",
        "--provider <v>",
        "--version",
      ])
        assert.ok(result.stdout.includes(flag), `the help names ${flag}`);
    }
    assert.equal(existsSync(setting.mark), false, `${args.join(" ")} started Pi`);
    assert.equal(existsSync(setting.stateDir), false, `${args.join(" ")} made the state dir`);
  }
});

test("bridge.mjs: an unknown flag or a bad value is exit 2, one sentence, then the JSON log line; nothing started", async (t) => {
  const setting = await bridgeSetting(t);
  const cases: [string[], RegExp][] = [
    [["--bogus"], /^chat-ui-agent bridge: unknown option --bogus \(see bridge\.mjs --help\)$/],
    // Pi's multi-letter short forms would be read as grouped letters: refused, not misread.
    [["-nt"], /^chat-ui-agent bridge: unknown option -n /],
    [["--linger", "soon"], /^chat-ui-agent bridge: --linger: "soon" is not a duration/],
    [["--landlock", "maybe"], /^chat-ui-agent bridge: --landlock must be one of on, off \(got "maybe"\)$/],
    [["--cwd"], /^chat-ui-agent bridge: --cwd needs a value/],
    [
      ["--cwd", "--listen", "127.0.0.1:0"],
      /^chat-ui-agent bridge: --cwd needs a value \(for one that starts with "-"/,
    ],
    [["--no-session=yes"], /^chat-ui-agent bridge: --no-session takes no value/],
    [["hello"], /^chat-ui-agent bridge: unexpected argument "hello": this command takes only options/],
    [["--extension", "x.mjs"], /^chat-ui-agent bridge: --extension cannot be forwarded to Pi/],
  ];
  for (const [args, sentence] of cases) {
    const result = await run("bridge.mjs", [...setting.args, ...args]);
    assertUsageError(result, sentence);
    const log = JSON.parse(result.stderr.split("\n")[1] ?? "null") as { msg?: string; level?: number } | null;
    assert.equal(log?.msg, "bridge failed to start", `${args.join(" ")}: the JSON log line follows`);
    assert.equal(existsSync(setting.mark), false, `${args.join(" ")} started Pi`);
    assert.equal(existsSync(setting.stateDir), false, `${args.join(" ")} made the state dir`);
  }
});

test("chat-ui-agent: --help, -h, help, attach --help and --version print; unknown commands and flags are exit 2", async () => {
  for (const args of [["--help"], ["-h"], ["help"], []]) {
    const result = await run("chat-ui-agent.mjs", args);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^usage: chat-ui-agent <command> \[options\]\n/);
    assert.match(result.stdout, /attach <ws-url>/);
  }
  // The subcommand's help is ours, whatever else is (or is not) on the line: no token, no URL needed.
  for (const args of [
    ["attach", "--help"],
    ["attach", "-h"],
    ["attach", "ws://127.0.0.1:1/v1/rpc", "--help"],
  ]) {
    const result = await run("chat-ui-agent.mjs", args);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^usage: chat-ui-agent attach <ws-url> \[options\]\n/);
    assert.match(result.stdout, /--token-file FILE/);
  }
  const version = await run("chat-ui-agent.mjs", ["--version"]);
  assert.equal(version.code, 0);
  assert.match(version.stdout, VERSION_LINE);
  assertUsageError(await run("chat-ui-agent.mjs", ["--bogus"]), /^chat-ui-agent: unknown option --bogus/);
  assertUsageError(await run("chat-ui-agent.mjs", ["detach"]), /^chat-ui-agent: unknown command "detach"/);
  assertUsageError(
    await run("chat-ui-agent.mjs", ["attach", "ws://127.0.0.1:1/v1/rpc", "--bogus"]),
    /^chat-ui-agent: unknown option --bogus \(see chat-ui-agent attach --help\)$/,
  );
  assertUsageError(
    await run("chat-ui-agent.mjs", ["attach", "ws://127.0.0.1:1/v1/rpc", "--token-file"]),
    /^chat-ui-agent: --token-file needs a value/,
  );
  assertUsageError(
    await run("chat-ui-agent.mjs", ["attach", "ws://127.0.0.1:1/v1/rpc", "ws://127.0.0.1:2/v1/rpc"]),
    /^chat-ui-agent: unexpected argument "ws:\/\/127\.0\.0\.1:2\/v1\/rpc"/,
  );
});

test("chat-ui-agent-policy: every command's --help is its own usage; --version; unknown flags are exit 2", async (t) => {
  const env = { AGENT_POLICY_PATH: path.join(await tempDir(t, "cli-help-policy-"), "policy") };
  const top = await run("policy-cli.mjs", ["--help"], env);
  assert.equal(top.code, 0, top.stderr);
  for (const command of ["get", "set", "explain"]) {
    assert.match(top.stdout, new RegExp(`chat-ui-agent-policy ${command}`));
    const own = await run("policy-cli.mjs", [command, "--help"], env);
    assert.equal(own.code, 0, `${command}: ${own.stderr}`);
    assert.match(own.stdout, new RegExp(`^usage: chat-ui-agent-policy ${command} `));
    assert.doesNotMatch(own.stdout + own.stderr, NODE_WORDING);
  }
  assert.equal(existsSync(env.AGENT_POLICY_PATH), false, "set --help wrote nothing");
  const version = await run("policy-cli.mjs", ["--version"], env);
  assert.equal(version.code, 0);
  assert.match(version.stdout, VERSION_LINE);
  assertUsageError(
    await run("policy-cli.mjs", ["set", "auto", "--bogus"], env),
    /^chat-ui-agent-policy: unknown option --bogus$/,
  );
  assertUsageError(
    await run("policy-cli.mjs", ["--bogus"], env),
    /^chat-ui-agent-policy: unknown option --bogus$/,
  );
  assertUsageError(
    await run("policy-cli.mjs", ["get", "extra"], env),
    /^chat-ui-agent-policy: unexpected argument "extra"/,
  );
  assert.equal(existsSync(env.AGENT_POLICY_PATH), false);
});

test("health-server.mjs: --help and --version print without serving; an unknown flag is exit 2", async () => {
  const help = await run("health-server.mjs", ["--help"], { PORT: "1" });
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^usage: health-server\.mjs/);
  const version = await run("health-server.mjs", ["--version"]);
  assert.equal(version.code, 0);
  assert.match(version.stdout, VERSION_LINE);
  assertUsageError(await run("health-server.mjs", ["--bogus"]), /^health-server: unknown option --bogus$/);
});

test("healthcheck.mjs: --help and --version print without probing; an unknown flag is exit 2", async () => {
  const help = await run("healthcheck.mjs", ["--help"]);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^usage: healthcheck\.mjs/);
  const version = await run("healthcheck.mjs", ["--version"]);
  assert.equal(version.code, 0);
  assert.match(version.stdout, VERSION_LINE);
  assertUsageError(await run("healthcheck.mjs", ["--bogus"]), /^healthcheck: unknown option --bogus$/);
});
