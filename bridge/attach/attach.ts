// The operator's terminal client: a live transcript, y/n (or numbered) answers to approval dialogs,
// and a few slash commands. Without a TTY it only prints: dialogs stay pending for another client.
import { randomUUID } from "node:crypto";
import { createInterface, type Interface } from "node:readline";
import type { Readable } from "node:stream";
import { GRANT_ID, type Grant } from "../../agent-runtime/policy/grants.ts";
import { BridgeClient, type BridgeClientOptions } from "../client.ts";
import { PolicyName } from "../protocol.ts";
import { describeDialog, describeGrants, Transcript, type TranscriptWriter } from "./transcript.ts";

export interface AttachOptions extends BridgeClientOptions {
  output: TranscriptWriter;
  /** Where answers and slash commands come from; omit for a print-only client. */
  input?: Readable;
}

export interface Attached {
  client: BridgeClient;
  transcript: Transcript;
  /**
   * Resolves when the person types /quit (or input ends) and the client has closed; rejects with the failure
   * when the client stops on one (an impostor, a wrong token…).
   */
  done: Promise<void>;
  close(): void;
}

export const HELP =
  "commands: y/n answer the oldest approval (select: its number), /policy <auto|ask|read-only>, /grants, /revoke <grant id|all>, /queue, /abort, /status, /quit; other text is sent as a prompt";

export async function attach(options: AttachOptions): Promise<Attached> {
  const client = new BridgeClient(options);
  const transcript = new Transcript(options.output, { prompts: options.input !== undefined });
  transcript.attach(client);
  client.on("state", (state, detail) => {
    if (state === "connecting") transcript.line(`connecting to ${options.url}…`);
    if (state === "closed" && detail.closeCode && detail.closeCode >= 4000)
      transcript.line(`closed by the bridge (${detail.closeCode})`);
    if (state === "closed" && detail.failure) transcript.line(`! ${detail.failure.message}`);
  });
  await client.connect();
  transcript.line(`attached (epoch ${client.bridgeEpoch?.slice(0, 8)}…, seq ${client.lastSeq})`);
  for (const dialog of client.dialogs.values())
    transcript.line(describeDialog(dialog, { prompt: options.input !== undefined }));

  let rl: Interface | undefined;
  let finish: () => void = () => {};
  let fail: (error: Error) => void = () => {};
  const done = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  // Whoever awaits `done` gets the failure; nobody awaiting it is not an unhandled rejection.
  done.catch(() => {});
  client.on("failure", (error) => {
    fail(error);
    rl?.close();
  });
  const close = () => {
    rl?.close();
    client.close();
    finish();
  };

  if (options.input) {
    transcript.line(HELP);
    rl = createInterface({ input: options.input, terminal: false });
    rl.on("line", (line) => {
      void handleLine(line.trim()).catch((error: unknown) =>
        transcript.line(`! ${error instanceof Error ? error.message : String(error)}`),
      );
    });
    rl.on("close", () => close());
  }

  async function handleLine(line: string): Promise<void> {
    if (line === "") return;
    const oldest = [...client.dialogs.values()].sort((a, b) => a.seq - b.seq)[0];
    if (oldest && !line.startsWith("/")) {
      await answerDialog(oldest.id, line);
      return;
    }
    const [command, ...rest] = line.split(/\s+/);
    switch (command) {
      case "/quit":
        close();
        return;
      case "/policy": {
        const parsed = PolicyName.safeParse(rest[0]);
        if (!parsed.success) {
          transcript.line("usage: /policy auto|ask|read-only");
          return;
        }
        const response = await client.setPolicy(parsed.data);
        transcript.line(
          response.success ? `policy set to ${parsed.data}` : `! policy not set: ${response.error}`,
        );
        return;
      }
      case "/grants": {
        const response = await client.command({ type: "list_grants", id: randomUUID() });
        if (!response.success) {
          transcript.line(`! grants not listed: ${response.error}`);
          return;
        }
        const grants = (response.data as { grants?: Grant[] } | undefined)?.grants ?? [];
        transcript.line(`session grants: ${grants.length}\n${describeGrants(grants)}`);
        return;
      }
      case "/revoke": {
        const which = rest[0] === "all" ? "all" : GRANT_ID.safeParse(rest[0]).data;
        if (!which || rest.length !== 1) {
          transcript.line("usage: /revoke <grant id>|all (see /grants)");
          return;
        }
        const response = await client.command({ type: "revoke_grant", id: randomUUID(), grant: which });
        const revoked = (response.data as { revoked?: Grant[] } | undefined)?.revoked ?? [];
        transcript.line(
          response.success ? `revoked ${revoked.length} grant(s)` : `! not revoked: ${response.error}`,
        );
        return;
      }
      case "/queue":
        transcript.line(`queue: ${JSON.stringify(client.queue)}`);
        return;
      case "/abort":
        await client.abort();
        transcript.line("abort sent");
        return;
      case "/status": {
        const response = await client.status();
        transcript.line(`status: ${JSON.stringify(response.data)}`);
        return;
      }
      default:
        if (line.startsWith("/")) {
          transcript.line(HELP);
          return;
        }
        await client.prompt(line, { streamingBehavior: "followUp" });
    }
  }

  async function answerDialog(dialogId: string, line: string): Promise<void> {
    const dialog = client.dialogs.get(dialogId);
    if (!dialog) return;
    let result: Awaited<ReturnType<BridgeClient["answer"]>>;
    if (dialog.method === "confirm") {
      const yes = /^(y|yes)$/i.test(line);
      const no = /^(n|no)$/i.test(line);
      if (!yes && !no) {
        transcript.line("answer y or n");
        return;
      }
      result = await client.answer(dialogId, { kind: "confirm", confirmed: yes });
      transcript.line(
        `you answered ${yes ? "yes" : "no"}${result.delivered ? "" : " (too late: not delivered)"}`,
      );
    } else if (dialog.method === "select") {
      const choice = (dialog.options ?? [])[Number(line) - 1];
      if (!choice) {
        transcript.line(`choose 1-${dialog.options?.length ?? 0}`);
        return;
      }
      result = await client.answer(dialogId, { kind: "select", value: choice });
      transcript.line(`you chose ${choice}${result.delivered ? "" : " (too late: not delivered)"}`);
    } else {
      result = await client.answer(dialogId, { kind: "text", value: line });
      transcript.line(result.delivered ? "answer sent" : "too late: not delivered");
    }
  }

  return { client, transcript, done, close };
}
