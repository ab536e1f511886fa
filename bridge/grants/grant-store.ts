// The bridge's one store of session grants (agent-runtime/policy/grants.ts has the shapes): added by the gate
// (a command shape the person allowed for the session) or by the egress proxy (a destination), listed and
// revoked over RPC, and written atomically to the file the gate reads. Grants belong to Pi's session: a new
// session starts with none. Bounded: the oldest grant goes when the store is full.
import { randomBytes } from "node:crypto";
import { chmodSync } from "node:fs";
import {
  type Grant,
  type GrantKind,
  type GrantsFile,
  MAX_GRANTS,
  readGrantsFile,
} from "../../agent-runtime/policy/grants.ts";
import { writeFileAtomic } from "../state-files.ts";

/** Why the grants changed (the `cause` of grants_changed). */
export type GrantChange = "granted" | "revoked" | "session_changed";

export interface NewGrant {
  kind: GrantKind;
  key: string;
  label: string;
  dialogId: string | null;
  by: string | null;
}

export class GrantStore {
  private grants: Grant[] = [];
  private sessionId: string | null;
  private readonly file: string | undefined;
  private readonly now: () => Date;
  /** Called after every change, with the grants now in force. */
  onChange: (grants: readonly Grant[], cause: GrantChange) => void = () => {};

  /** `file` (when durable) is read back at start: grants of the same session survive a bridge restart. */
  constructor(options: { file?: string; sessionId: string | null; now?: () => Date }) {
    this.file = options.file;
    this.sessionId = options.sessionId;
    this.now = options.now ?? (() => new Date());
    if (this.file) {
      const read = readGrantsFile(this.file);
      if (read.ok && read.file.sessionId === this.sessionId) this.grants = read.file.grants;
      this.persist();
    }
  }

  list(): readonly Grant[] {
    return this.grants;
  }

  find(kind: GrantKind, key: string): Grant | undefined {
    return this.grants.find((grant) => grant.kind === kind && grant.key === key);
  }

  /** Adds a grant (or returns the one already covering the same kind and key). */
  add(grant: NewGrant): Grant {
    const existing = this.find(grant.kind, grant.key);
    if (existing) return existing;
    const added: Grant = {
      id: `g-${randomBytes(8).toString("hex")}`,
      kind: grant.kind,
      key: grant.key,
      label: grant.label.slice(0, 512),
      sessionId: this.sessionId,
      createdAt: this.now().toISOString(),
      dialogId: grant.dialogId,
      by: grant.by,
    };
    this.grants = [...this.grants, added].slice(-MAX_GRANTS);
    this.changed("granted");
    return added;
  }

  /** Revokes one grant by id, or all of them; returns what was revoked. */
  revoke(which: { id: string } | { all: true }): Grant[] {
    const revoked = "all" in which ? this.grants : this.grants.filter((grant) => grant.id === which.id);
    if (revoked.length === 0) return [];
    const gone = new Set(revoked.map((grant) => grant.id));
    this.grants = this.grants.filter((grant) => !gone.has(grant.id));
    this.changed("revoked");
    return revoked;
  }

  /** Pi moved to another session: grants end with the one they were made in. */
  setSession(sessionId: string | null): void {
    if (sessionId === this.sessionId) return;
    this.sessionId = sessionId;
    const had = this.grants.length > 0;
    this.grants = [];
    if (had) this.changed("session_changed");
    else this.persist();
  }

  private changed(cause: GrantChange): void {
    this.persist();
    this.onChange(this.grants, cause);
  }

  private persist(): void {
    if (!this.file) return;
    const content: GrantsFile = { version: 1, sessionId: this.sessionId, grants: this.grants };
    writeFileAtomic(this.file, JSON.stringify(content));
    // Pi (another uid in the root launch) reads it; nothing in it is secret, and only the bridge writes it.
    chmodSync(this.file, 0o644);
  }
}
