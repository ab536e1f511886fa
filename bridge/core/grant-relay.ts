// Session grants between the store, the clients and Pi: `list_grants` and `revoke_grant` answered here, every
// change announced as `grants_changed`, the grants ended with Pi's session, and the gate's requests for a grant
// (an "Allow for this session" answer to a dialog it offered) taken from Pi's extension requests: the gate is the
// only extension Pi runs, and only extension code can make one, so the model cannot.
import { z } from "zod";
import type { Logger } from "../../agent-runtime/log.ts";
import {
  APPROVAL_CHOICES,
  GRANT_REQUEST_STATUS_KEY,
  GrantRequest,
} from "../../agent-runtime/policy/grants.ts";
import type { GrantChange, GrantStore } from "../grants/grant-store.ts";
import type { Frame, FrameSink } from "./frames.ts";
import { failure, isRecord } from "./frames.ts";

export interface GrantRelayOptions {
  store: GrantStore;
  sink: FrameSink;
  log: Logger;
  /** The client attached now (a grant records who answered). */
  attachedClient: () => string | undefined;
  /** The option a client chose in a select dialog that Pi took (the dialog relay's record), if any. */
  takenChoice: (dialogId: string) => string | undefined;
}

/**
 * Dialogs whose session answer already made a grant: remembered longer than the dialog relay remembers answers
 * (64), so an answer is forgotten there before it is forgotten here.
 */
const USED_DIALOGS = 1024;

export class GrantRelay {
  private readonly options: GrantRelayOptions;
  /** One session answer makes one grant: a second request naming the same dialog is refused. */
  private readonly used = new Set<string>();

  constructor(options: GrantRelayOptions) {
    this.options = options;
    options.store.onChange = (grants, cause: GrantChange) =>
      options.sink.publish({ type: "grants_changed", cause, grants: [...grants] });
  }

  list() {
    return [...this.options.store.list()];
  }

  /** The answer to list_grants or revoke_grant. */
  command(
    id: string | undefined,
    command: { type: "list_grants" } | { type: "revoke_grant"; grant: string },
  ): Frame {
    if (command.type === "list_grants")
      return { type: "response", id, command: command.type, success: true, data: { grants: this.list() } };
    const revoked = this.options.store.revoke(
      command.grant === "all" ? { all: true } : { id: command.grant },
    );
    if (command.grant !== "all" && revoked.length === 0)
      return failure(id, command.type, "grant_not_found", `no grant ${command.grant} is in force`);
    this.options.log.info(
      { revoked: revoked.map((g) => ({ id: g.id, kind: g.kind, key: g.key })) },
      "grants revoked",
    );
    return { type: "response", id, command: command.type, success: true, data: { revoked } };
  }

  /** Pi is on another session: its grants end. */
  session(sessionId: string | null): void {
    this.options.store.setSession(sessionId);
  }

  /** True when `line` (an extension_ui_request) is the gate asking for a grant: it is taken here, not relayed. */
  fromPi(line: Frame): boolean {
    if (line.method !== "setStatus" || line.statusKey !== GRANT_REQUEST_STATUS_KEY) return false;
    let parsed: unknown;
    try {
      parsed = typeof line.statusText === "string" ? JSON.parse(line.statusText) : undefined;
    } catch {
      parsed = undefined;
    }
    const request = GrantRequest.safeParse(isRecord(parsed) ? parsed : undefined);
    if (!request.success) {
      this.options.log.warn(
        { problem: z.prettifyError(request.error).slice(0, 500) },
        "a malformed grant request from Pi was ignored",
      );
      return true;
    }
    // Only the person's own answer makes a grant: the bridge relayed "Allow for this session" to that dialog.
    if (this.options.takenChoice(request.data.dialogId) !== APPROVAL_CHOICES.session) {
      this.options.log.warn(
        { dialogId: request.data.dialogId, kind: request.data.kind },
        "a grant request without the person's answer for the session was refused",
      );
      return true;
    }
    if (this.used.has(request.data.dialogId)) {
      this.options.log.warn(
        { dialogId: request.data.dialogId, kind: request.data.kind },
        "a second grant request for one session answer was refused",
      );
      return true;
    }
    this.used.add(request.data.dialogId);
    if (this.used.size > USED_DIALOGS) this.used.delete(this.used.values().next().value as string);
    const grant = this.options.store.add({ ...request.data, by: this.options.attachedClient() ?? null });
    this.options.log.info(
      { grant: { id: grant.id, kind: grant.kind, key: grant.key }, dialogId: grant.dialogId },
      "session grant made",
    );
    return true;
  }
}
