// `chat-ui-agent`: the operator's command. `attach <url>` is the terminal client for a running bridge.
import { readFileSync } from "node:fs";
import { optionLines, readCommandLine, UsageError } from "../../agent-runtime/cli-args.ts";
import { versionLine } from "../../agent-runtime/version.ts";
import { type Attached, attach } from "./attach.ts";

const ATTACH_OPTIONS = {
  "token-file": { type: "string" },
  header: { type: "string", multiple: true },
  "client-id": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

const ATTACH_HELP = `usage: chat-ui-agent attach <ws-url> [options]

Attaches this terminal to a running bridge: shows the agent's turns, answers its dialogs, sends prompts.
<ws-url> is ws://127.0.0.1:<port>/v1/rpc, or sbx-server's https:// proxy URL.

options:
${optionLines([
  {
    usage: "--token-file FILE",
    help: "read the bridge token from FILE (default: CHAT_UI_AGENT_BRIDGE_TOKEN)",
  },
  { usage: '--header "Name: value"', help: "an extra handshake header, e.g. X-Sandbox-Token (repeatable)" },
  { usage: "--client-id ID", help: "this client's id (default: a random one)" },
  { usage: "-h, --help", help: "print this help and exit" },
])}

The token is never taken from the URL. exit status: 0 closed, 1 failure, 2 bad usage.`;

const HELP = `usage: chat-ui-agent <command> [options]

commands:
${optionLines([
  {
    usage: "attach <ws-url>",
    help: "attach this terminal to a running bridge (chat-ui-agent attach --help)",
  },
  { usage: "help", help: "print this help" },
])}

options:
${optionLines([
  { usage: "-h, --help", help: "print this help and exit" },
  { usage: "--version", help: "print the version and exit" },
])}`;

export interface AttachArgs {
  url: string;
  token: string;
  headers: Record<string, string>;
  clientId?: string;
}

/** What the command line asks for: a help or version text to print, or an attach to run. */
export type Invocation = { kind: "print"; text: string } | { kind: "attach"; args: AttachArgs };

export function parseInvocation(argv: readonly string[], env: NodeJS.ProcessEnv): Invocation {
  const [first, ...rest] = argv;
  if (first === undefined || first === "help" || first === "--help" || first === "-h")
    return { kind: "print", text: HELP };
  if (first === "--version") return { kind: "print", text: versionLine("chat-ui-agent") };
  if (first !== "attach") {
    const what = first.startsWith("-")
      ? `unknown option ${first}`
      : `unknown command ${JSON.stringify(first)}`;
    throw new UsageError(`${what} (see chat-ui-agent --help)`);
  }
  let line: ReturnType<typeof readCommandLine<typeof ATTACH_OPTIONS>>;
  try {
    line = readCommandLine(rest, ATTACH_OPTIONS, 1);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    throw new UsageError(`${error.message} (see chat-ui-agent attach --help)`);
  }
  const { values, positionals } = line;
  if (values.help) return { kind: "print", text: ATTACH_HELP };
  return { kind: "attach", args: attachArgs(values, positionals[0], env) };
}

function attachArgs(
  values: ReturnType<typeof readCommandLine<typeof ATTACH_OPTIONS>>["values"],
  url: string | undefined,
  env: NodeJS.ProcessEnv,
): AttachArgs {
  const headers: Record<string, string> = {};
  for (const header of values.header ?? []) {
    const colon = header.indexOf(":");
    if (colon < 1) throw new UsageError(`--header: expected "Name: value", got ${JSON.stringify(header)}`);
    headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
  }
  if (!url) throw new UsageError("missing <ws-url>");
  if (!/^(wss?|https?):\/\//.test(url)) throw new UsageError(`not a ws:// or https:// URL: ${url}`);
  const tokenFile = values["token-file"];
  const token = tokenFile ? readTokenFile(tokenFile) : env.CHAT_UI_AGENT_BRIDGE_TOKEN;
  if (!token) throw new UsageError("no bridge token: set CHAT_UI_AGENT_BRIDGE_TOKEN or pass --token-file");
  const clientId = values["client-id"];
  return { url, token, headers, ...(clientId ? { clientId } : {}) };
}

const FILE_PROBLEMS: Record<string, string> = {
  ENOENT: "does not exist",
  EACCES: "is not readable by you",
  EISDIR: "is a directory",
};

function readTokenFile(file: string): string {
  try {
    return readFileSync(file, "utf8").trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "";
    throw new UsageError(
      `--token-file: ${file} ${FILE_PROBLEMS[code] ?? `cannot be read (${code || error})`}`,
    );
  }
}

async function main(): Promise<void> {
  let invocation: Invocation;
  try {
    invocation = parseInvocation(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`chat-ui-agent: ${error.message}\n`);
    process.exit(2);
  }
  if (invocation.kind === "print") {
    process.stdout.write(`${invocation.text}\n`);
    return;
  }
  const { args } = invocation;
  // Installed before connecting: a signal during the handshake must still end the client cleanly.
  let session: Attached | undefined;
  const stop = () => (session ? session.close() : process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  session = await attach({
    ...args,
    // An operator attaches to a running bridge: nothing listening is an answer at once, not a wait.
    startGraceMs: 0,
    output: process.stdout,
    ...(process.stdin.isTTY ? { input: process.stdin } : {}),
  });
  await session.done;
}

main().catch((error: unknown) => {
  process.stderr.write(`chat-ui-agent: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
