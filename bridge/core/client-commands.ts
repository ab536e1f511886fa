// Clients → Pi: what the intake read, acted on. Each command begins in the ledger (idempotency), the bridge's
// own commands are answered here, Pi commands go to Pi now, wait in the held queue while a Pi starts (a
// read-only one goes to the Pi being probed at once, its answer held instead: early-answers.ts), or fail with
// the reason no Pi can take them.
import { SESSION_REPLACING_COMMANDS } from "../protocol.ts";
import type { CommandLedger } from "./command-ledger.ts";
import type { DialogRelay } from "./dialog-relay.ts";
import type { EarlyAnswers } from "./early-answers.ts";
import { type Frame, type FrameSink, failure } from "./frames.ts";
import type { GrantRelay } from "./grant-relay.ts";
import type { HeldQueue } from "./held-queue.ts";
import type { BridgeCommand, Intake } from "./intake.ts";
import type { NetworkModeRelay } from "./network-mode-relay.ts";
import type { PiLink } from "./pi-link.ts";
import type { PolicyRelay } from "./policy-relay.ts";
import type { Supervisor } from "./supervisor.ts";

export interface ClientCommandsOptions {
  sink: FrameSink;
  ledger: CommandLedger;
  held: HeldQueue;
  early: EarlyAnswers;
  link: PiLink;
  supervisor: Supervisor;
  policy: PolicyRelay;
  dialogs: DialogRelay;
  grants: GrantRelay;
  network: NetworkModeRelay;
  /** bridge_status data. */
  status: () => unknown;
  shuttingDown: () => boolean;
  /** A client acknowledged frames up to `seq`. */
  acked: (seq: number) => void;
  /** Something that counts for the idle exit changed. */
  changed: () => void;
}

export class ClientCommands {
  private readonly options: ClientCommandsOptions;

  constructor(options: ClientCommandsOptions) {
    this.options = options;
  }

  handle(intake: Intake): void {
    const { sink, ledger, dialogs } = this.options;
    switch (intake.kind) {
      case "reject":
        sink.publish(intake.frame);
        return;
      case "ack":
        this.options.acked(intake.seq);
        return;
      case "answer":
        dialogs.answer(intake.frame, intake.dialogId, intake.commandId);
        return;
      case "bad_answer":
        dialogs.badAnswer(intake.dialogId, intake.problem);
        return;
    }
    const { id, payload } = intake;
    const type = intake.kind === "bridge" ? intake.command.type : intake.type;
    if (id !== undefined && !ledger.begin(id, payload, type)) return;
    if (this.options.shuttingDown()) {
      ledger.finish(id, failure(id, type, "shutting_down", "the bridge is shutting down"));
      return;
    }
    if (intake.kind === "bridge") this.bridgeCommand(id, intake.command);
    else this.submit(payload, id, type);
  }

  /** A Pi serves: the answers it gave early, then the held commands, oldest first. */
  release(): void {
    this.options.early.deliver();
    for (const h of this.options.held.drain()) this.forward(h.command, h.clientId, h.type);
  }

  /** No Pi will serve them: every held command and early answer fails with this code. */
  failHeld(code: "agent_unverified" | "agent_exited" | "shutting_down", message: string): void {
    this.options.early.fail(code === "shutting_down" ? "agent_exited" : code, message);
    for (const h of this.options.held.drain())
      this.options.ledger.finish(h.clientId, failure(h.clientId, h.type, code, message));
  }

  private bridgeCommand(id: string | undefined, command: BridgeCommand): void {
    const { ledger, policy } = this.options;
    const answer = (data: unknown) =>
      ledger.finish(id, { type: "response", id, command: command.type, success: true, data });
    switch (command.type) {
      case "get_policy":
        answer(policy.report());
        return;
      case "bridge_status":
        answer(this.options.status());
        return;
      case "list_grants":
      case "revoke_grant":
        ledger.finish(id, this.options.grants.command(id, command));
        return;
      case "set_policy":
        void policy.set(id, command.policy, command.expected).then((r) => ledger.finish(id, r));
        return;
      case "get_network_mode":
        ledger.finish(id, this.options.network.get(id));
        return;
      case "set_network_mode":
        void this.options.network.set(id, command.mode).then((r) => ledger.finish(id, r));
        return;
    }
  }

  /** Forwards a Pi command now, holds it while Pi (re)starts, or fails it when no Pi can serve it. */
  private submit(command: Frame, clientId: string | undefined, type: string): void {
    const { ledger, held, supervisor, early } = this.options;
    const admission = supervisor.admission();
    if (admission === "forward") {
      this.forward(command, clientId, type);
    } else if (
      admission === "hold" &&
      held.size === 0 && // order holds: nothing overtakes a held command
      supervisor.verdict() === "pending" &&
      early.admit(type)
    ) {
      this.options.link.send(command, { kind: "client", clientId, command: type, early: true });
      this.options.changed();
    } else if (admission === "hold") {
      if (held.push(command, clientId, type)) this.options.changed();
      else
        ledger.finish(
          clientId,
          failure(clientId, type, "agent_starting", "Pi is starting and too many commands are waiting"),
        );
    } else {
      ledger.finish(clientId, failure(clientId, type, admission.code, admission.message));
    }
  }

  private forward(command: Frame, clientId: string | undefined, type: string): void {
    const { ledger, link, policy, dialogs } = this.options;
    const refused = type === "bash" ? policy.bashRefusal() : undefined;
    if (refused) {
      // A person's `!` command is a shell like any other (the gate refuses it as well).
      ledger.finish(clientId, failure(clientId, type, "policy_blocks_bash", refused));
      return;
    }
    // Cancel means refused; and Pi would block a session swap on an open dialog.
    if (type === "abort" || SESSION_REPLACING_COMMANDS.has(type)) dialogs.book.refusePending("cancelled");
    link.send(command, { kind: "client", clientId, command: type });
    this.options.changed();
  }
}
