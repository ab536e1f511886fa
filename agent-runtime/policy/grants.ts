// Session grants ("Allow for this session"): what the person allowed once for the rest of the session, so the
// same thing does not ask again. One store, kept by the bridge (bridge/grants/grant-store.ts) and written to one
// file that the gate reads before each tool call (bounded, non-blocking, like the policy file). Two kinds: a
// command shape the gate offered, and a network destination the egress proxy asked about. Boundary actions
// (push, publish, deploy, secret reads) are never granted: the gate never offers them.
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { z } from "zod";

export const GRANT_KINDS = ["command", "destination"] as const;
export type GrantKind = (typeof GRANT_KINDS)[number];

export const MAX_GRANTS = 256;
export const MAX_GRANTS_FILE_BYTES = 512 * 1024;

/** A grant's id: `g-` and 16 hex digits. */
export const GRANT_ID = z.string().regex(/^g-[0-9a-f]{16}$/);

export const Grant = z.strictObject({
  id: GRANT_ID,
  kind: z.enum(GRANT_KINDS),
  /** What it matches: the gate's command shape, or a canonical `host:port`. */
  key: z.string().min(1).max(4096),
  /** What the person saw and chose, for lists and dialogs. */
  label: z.string().max(512),
  /** Pi's session it belongs to (grants end with the session). */
  sessionId: z.string().max(256).nullable(),
  createdAt: z.string().max(64),
  /** The dialog whose answer made it, and the client that answered (audit). */
  dialogId: z.string().max(256).nullable(),
  by: z.string().max(256).nullable(),
});
export type Grant = z.infer<typeof Grant>;

export const GrantsFile = z.strictObject({
  version: z.literal(1),
  sessionId: z.string().max(256).nullable(),
  grants: z.array(Grant).max(MAX_GRANTS),
});
export type GrantsFile = z.infer<typeof GrantsFile>;

// Where the bridge writes the grants file and the gate reads it: grants-path.ts (no zod there, for the prestart).
export { GRANTS_PATH_ENV } from "./grants-path.ts";

/**
 * The gate asks the bridge for a grant through an extension `setStatus` request with this key (its text is a
 * GrantRequest as JSON): the bridge takes it, keeps the grant, and never relays the request to clients.
 */
export const GRANT_REQUEST_STATUS_KEY = "chat-ui-agent:grant";

/** The three answers of an approval dialog that may be granted (a select); boundary actions offer only a confirm. */
export const APPROVAL_CHOICES = {
  once: "Allow once",
  session: "Allow for this session",
  deny: "Deny",
} as const;

/**
 * What the gate sends: the person answered APPROVAL_CHOICES.session to the dialog `dialogId`. The bridge takes it
 * only when it relayed that answer to that dialog itself, so nothing but the person's own answer makes a grant.
 */
export const GrantRequest = z.strictObject({
  kind: z.enum(GRANT_KINDS),
  key: z.string().min(1).max(4096),
  label: z.string().max(512),
  dialogId: z.string().min(1).max(256),
});
export type GrantRequest = z.infer<typeof GrantRequest>;

export type GrantsRead = { ok: true; file: GrantsFile } | { ok: false; problem: string };

/**
 * Reads the grants file without ever blocking (O_NONBLOCK, regular files only, bounded). A missing or invalid
 * file means no grants: the gate then asks, as it would without them.
 */
export function readGrantsFile(file: string): GrantsRead {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { ok: false, problem: code === "ENOENT" ? "missing" : `cannot open (${code ?? "error"})` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { ok: false, problem: "not a regular file" };
    if (stat.size > MAX_GRANTS_FILE_BYTES) return { ok: false, problem: "oversized" };
    // Read every call: sized by the file (one byte more shows a file that grew since fstat), never the maximum.
    const buffer = Buffer.alloc(stat.size + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    if (length > stat.size) return { ok: false, problem: "changed while read" };
    let json: unknown;
    try {
      json = JSON.parse(buffer.subarray(0, length).toString("utf8"));
    } catch {
      return { ok: false, problem: "not JSON" };
    }
    const parsed = GrantsFile.safeParse(json);
    return parsed.success ? { ok: true, file: parsed.data } : { ok: false, problem: "unexpected shape" };
  } catch (error) {
    return { ok: false, problem: `cannot read (${(error as NodeJS.ErrnoException).code ?? "error"})` };
  } finally {
    closeSync(fd);
  }
}

/** The grant that covers `key` of `kind` in `sessionId`, if the person made one. */
export function findGrant(
  file: GrantsFile | undefined,
  kind: GrantKind,
  key: string,
  sessionId: string | null,
): Grant | undefined {
  if (!file || file.sessionId !== sessionId) return undefined;
  return file.grants.find((grant) => grant.kind === kind && grant.key === key);
}
