// `chat-ui-agent attach <url>`: the operator's terminal client for a running bridge.
import { readFileSync } from "node:fs";
import { type Attached, attach } from "./attach.ts";

const USAGE = `usage: chat-ui-agent attach <ws-url> [--token-file FILE] [--header "Name: value"]... [--client-id ID]
  The bridge token comes from CHAT_UI_AGENT_BRIDGE_TOKEN or --token-file (never from the URL).`;

class UsageError extends Error {}

export interface AttachArgs {
  url: string;
  token: string;
  headers: Record<string, string>;
  clientId?: string;
}

export function parseAttachArgs(argv: readonly string[], env: NodeJS.ProcessEnv): AttachArgs {
  const [subcommand, ...rest] = argv;
  if (subcommand !== "attach") throw new UsageError(`unknown command ${JSON.stringify(subcommand ?? "")}`);
  let url: string | undefined;
  let tokenFile: string | undefined;
  let clientId: string | undefined;
  const headers: Record<string, string> = {};
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] as string;
    const value = () => {
      const next = rest[++i];
      if (next === undefined) throw new UsageError(`${arg} needs a value`);
      return next;
    };
    if (arg === "--token-file") tokenFile = value();
    else if (arg === "--client-id") clientId = value();
    else if (arg === "--header") {
      const header = value();
      const colon = header.indexOf(":");
      if (colon < 1) throw new UsageError(`--header: expected "Name: value", got ${JSON.stringify(header)}`);
      headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
    } else if (arg.startsWith("-")) throw new UsageError(`unknown option ${arg}`);
    else if (url === undefined) url = arg;
    else throw new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
  }
  if (!url) throw new UsageError("missing <ws-url>");
  if (!/^(wss?|https?):\/\//.test(url)) throw new UsageError(`not a ws:// or https:// URL: ${url}`);
  const token = tokenFile ? readTokenFile(tokenFile) : env.CHAT_UI_AGENT_BRIDGE_TOKEN;
  if (!token) throw new UsageError("no bridge token: set CHAT_UI_AGENT_BRIDGE_TOKEN or pass --token-file");
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
  let args: AttachArgs;
  try {
    args = parseAttachArgs(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`chat-ui-agent: ${error.message}\n${USAGE}\n`);
    process.exit(2);
  }
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
