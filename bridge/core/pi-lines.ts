// Pi → clients: each stdout line of Pi relayed as a numbered frame, and the few the bridge acts on routed
// (responses back to the command, dialog or request they answer, dialogs into the book, the mirror updated).
// When Pi goes, everything that waited on it is failed here.
import type { Logger } from "../../agent-runtime/log.ts";
import { SESSION_REPLACING_COMMANDS } from "../protocol.ts";
import type { CommandLedger } from "./command-ledger.ts";
import type { DialogRelay } from "./dialog-relay.ts";
import type { EarlyAnswers } from "./early-answers.ts";
import { type Frame, type FrameSink, failure, withId } from "./frames.ts";
import type { GrantRelay } from "./grant-relay.ts";
import type { Mirror } from "./mirror.ts";
import { type PiLink, readPiLine } from "./pi-link.ts";
import type { PolicyRelay } from "./policy-relay.ts";

export interface PiLinesOptions {
  sink: FrameSink;
  link: PiLink;
  ledger: CommandLedger;
  early: EarlyAnswers;
  dialogs: DialogRelay;
  grants: GrantRelay;
  mirror: Mirror;
  policy: PolicyRelay;
  log: Logger;
  /** Pi changed sessions: ask it for its new state. */
  refreshState: () => void;
  /** Something that counts for the idle exit changed. */
  changed: () => void;
}

export class PiLines {
  private readonly options: PiLinesOptions;

  constructor(options: PiLinesOptions) {
    this.options = options;
  }

  /** One stdout line of Pi. */
  line(raw: string): void {
    const { sink, link, dialogs, mirror, policy, log } = this.options;
    const read = readPiLine(raw);
    if (read.kind === "garbage") {
      log.warn({ line: raw.slice(0, 200) }, "unparseable line on Pi's stdout");
      return;
    }
    if (read.kind === "relay") {
      // The gate rereads the policy for this call: tell the client first if it changed behind our back.
      if (read.type === "tool_execution_start") policy.observe();
      sink.publish({ type: read.type }, raw);
      return;
    }
    const line = read.line;
    switch (line.type) {
      case "response":
        this.response(line);
        return;
      case "extension_ui_request":
        if (this.options.grants.fromPi(line)) return;
        dialogs.request(line, raw);
        return;
      case "bash_execution_update": {
        // Its id is the id of the bash command: Pi saw ours, the client must see its own.
        const route = typeof line.id === "string" ? link.peek(line.id) : undefined;
        if (route?.kind === "client") {
          sink.publish(withId(line, route.clientId));
          return;
        }
        break;
      }
      default:
        if (mirror.noteLine(line)) this.options.changed();
    }
    sink.publish(line, raw);
  }

  /** The unit is gone: its turn, its routes and its dialogs with it. */
  lost(): void {
    const { link, ledger, dialogs, mirror } = this.options;
    mirror.agentGone();
    for (const route of link.failAll()) {
      if (route.kind === "client") {
        if (route.early) this.options.early.lost();
        ledger.finish(route.clientId, failure(route.clientId, route.command, "agent_exited", "Pi exited"));
      } else if (route.kind === "dialog") dialogs.answerLost(route);
    }
    // Answers an unverified Pi gave before it went: nothing it said reaches a client.
    this.options.early.fail("agent_exited", "Pi exited");
    dialogs.book.agentGone();
    this.options.changed();
  }

  private response(line: Frame): void {
    const { link, ledger, dialogs, mirror, log } = this.options;
    const route = typeof line.id === "string" ? link.take(line.id) : undefined;
    if (!route) {
      log.warn({ command: line.command }, "Pi response with no matching command; dropped");
      return;
    }
    if (route.kind === "internal") route.resolve(line);
    if (route.kind === "dialog") dialogs.verdict(route, line);
    if (route.kind !== "client") return;
    if (line.success === true && SESSION_REPLACING_COMMANDS.has(String(line.command))) {
      // Pi discards the old queues without a queue_update, and now writes another session.
      mirror.sessionReplaced();
      this.options.refreshState();
    }
    if (line.command === "get_state" && line.success === true) mirror.noteState(line.data);
    if (route.early) this.options.early.answer(route.clientId, route.command, withId(line, route.clientId));
    else ledger.finish(route.clientId, withId(line, route.clientId));
  }
}
