// The egress proxy's decision for one request: what the destination is (granted for the session, a registry,
// anything else), the rule the table gives for the network mode and the policy now (rules.ts), and, where the
// rule asks, the person's answer to a dialog the bridge raises itself. "Allow once" lets exactly the request that
// asked through; "Allow for this session" adds a destination grant to the one grant store; anything else,
// including a refused dialog (no client, grace, shutdown, malformed answer, too many waiting), denies. Requests
// for a destination that is being asked about wait for that answer, then are decided again (one dialog at a time
// per destination; a session grant made meanwhile lets them pass).
import type { Logger } from "../../agent-runtime/log.ts";
import { APPROVAL_CHOICES } from "../../agent-runtime/policy/grants.ts";
import type { PolicyMode } from "../../agent-runtime/policy/policy-modes.ts";
import type { BridgeAnswer, BridgeQuestion } from "../core/dialog-relay.ts";
import type { GrantStore } from "../grants/grant-store.ts";
import type { Attribution } from "./attribution.ts";
import { formatDestination } from "./destination.ts";
import type { EgressRequest, EgressVerdict } from "./proxy.ts";
import { type Registry, registryOf } from "./registries.ts";
import { type DestinationClass, type EgressRule, egressRule, type NetworkMode } from "./rules.ts";

export interface EgressDeciderOptions {
  networkMode: () => NetworkMode;
  policy: () => PolicyMode;
  registries: readonly Registry[];
  grants: GrantStore;
  /** Raises the bridge's own select dialog (BridgeCore.askPerson). */
  ask: (question: BridgeQuestion, signal?: AbortSignal) => Promise<BridgeAnswer>;
  /** Who made the connection (best effort), waiting briefly for the supervisor's report. */
  attribute?: (clientPort: number) => Promise<Attribution | undefined>;
  log: Logger;
}

/** The options of a destination dialog, exactly (the same three answers as the gate's). */
export const DESTINATION_CHOICES = [
  APPROVAL_CHOICES.once,
  APPROVAL_CHOICES.session,
  APPROVAL_CHOICES.deny,
] as const;

/** How many requests may wait behind one destination's open dialog. */
const MAX_WAITING_PER_DESTINATION = 16;

export class EgressDecider {
  private readonly options: EgressDeciderOptions;
  /** Destination key → the dialog about it now, and how many requests wait behind it. */
  private readonly asking = new Map<string, { answered: Promise<unknown>; waiting: number }>();

  constructor(options: EgressDeciderOptions) {
    this.options = options;
  }

  readonly decide = async (request: EgressRequest): Promise<EgressVerdict> => {
    const key = formatDestination(request.destination);
    for (;;) {
      const open = this.asking.get(key);
      if (!open) break;
      if (open.waiting >= MAX_WAITING_PER_DESTINATION)
        return deny("busy", `too many requests wait for the answer about ${key}`);
      open.waiting += 1;
      await open.answered;
      open.waiting -= 1;
    }
    const { rule, grant, registry } = this.rule(request);
    const who = this.options.attribute ? await this.options.attribute(request.clientPort) : undefined;
    const by = who ? { call: who.call, pid: who.pid } : {};
    switch (rule.action) {
      case "allow":
        return {
          allow: true,
          rule: grant ? `grant:${grant}` : rule.name,
          reason: registry ? `${rule.why} (${registry})` : rule.why,
          ...(grant ? { grant } : {}),
          ...by,
        };
      case "deny":
        return { ...deny(rule.name, rule.why), ...by };
      case "ask": {
        const answered = this.askPerson(request, key, rule, who);
        const entry = { answered, waiting: 0 };
        this.asking.set(key, entry);
        try {
          return { ...(await answered), ...by };
        } finally {
          if (this.asking.get(key) === entry) this.asking.delete(key);
        }
      }
    }
  };

  /** The row of the table for this destination now, and the grant or registry that classed it. */
  private rule(request: EgressRequest): { rule: EgressRule; grant?: string; registry?: string } {
    const key = formatDestination(request.destination);
    const grant = this.options.grants.find("destination", key);
    const registry = grant ? undefined : registryOf(this.options.registries, request.destination);
    const kind: DestinationClass = grant ? "granted" : registry ? "registry" : "other";
    const rule = egressRule(this.options.networkMode(), this.options.policy(), kind);
    return {
      rule,
      ...(grant && rule.name === "session-grant" ? { grant: grant.id } : {}),
      ...(registry && rule.name === "auto-registry" ? { registry: registry.name } : {}),
    };
  }

  private async askPerson(
    request: EgressRequest,
    key: string,
    rule: EgressRule,
    who: Attribution | undefined,
  ): Promise<EgressVerdict> {
    const { destination } = request;
    const asker = who
      ? `${who.call ? `tool call ${who.call}` : "a tool process outside any call"} (pid ${who.pid})`
      : "a tool (the call is not known)";
    const answer = await this.options.ask(
      {
        topic: "egress",
        title: `Allow network access to ${key}?`,
        message: [
          `host: ${destination.host}`,
          `port: ${destination.port}`,
          `asked by: ${asker}`,
          `how: ${request.via === "connect" ? "a tunnel (HTTP CONNECT)" : "a plain HTTP request"}`,
          `why: ${rule.why} (rule ${rule.name})`,
        ].join("\n"),
        options: DESTINATION_CHOICES,
        details: {
          kind: "egress",
          host: destination.host,
          port: destination.port,
          call: who?.call ?? null,
          pid: who?.pid ?? null,
        },
      },
      request.signal,
    );
    const dialog = answer.dialogId;
    if (answer.choice === null)
      return { ...deny(`dialog-refused:${answer.refused}`, "the person did not allow it"), dialog };
    // The mode or the policy may have changed while the dialog was open: a stricter one wins over the answer.
    const now = egressRule(this.options.networkMode(), this.options.policy(), "other");
    if (now.action === "deny") return { ...deny(now.name, now.why), dialog };
    switch (answer.choice) {
      case APPROVAL_CHOICES.once:
        return { allow: true, rule: "person-once", reason: "the person allowed this request once", dialog };
      case APPROVAL_CHOICES.session: {
        const grant = this.options.grants.add({
          kind: "destination",
          key,
          label: key,
          dialogId: dialog,
          by: answer.by,
        });
        this.options.log.info(
          { grant: { id: grant.id, kind: grant.kind, key: grant.key }, dialogId: dialog },
          "session grant made",
        );
        return {
          allow: true,
          rule: `grant:${grant.id}`,
          reason: "the person allowed this destination for the session",
          grant: grant.id,
          dialog,
        };
      }
      default:
        return { ...deny("person-deny", "the person denied it"), dialog };
    }
  }
}

function deny(rule: string, reason: string): EgressVerdict {
  return { allow: false, rule, reason };
}
