// Which dialogs may offer "Allow for this session", and which grants let a call skip its dialog. Decisions as
// data: an effect kind either may be covered by a session grant or it is a boundary (push, publish, deploy, repo
// create, a secret read, a change to the gate, code or files the gate cannot see or name, whose effects could be
// any of these). A call is grantable only when every effect it has is grantable, its policy is not read-only, and
// it has a command shape (command-shape.ts). A grant never changes the decision itself: the call is decided again
// every time, and only a "confirm" of a grantable call with the same shape in the same Pi session runs unasked.

import { findGrant, GRANTS_PATH_ENV, type Grant, readGrantsFile } from "../policy/grants.ts";
import type { PolicyMode } from "../policy/policy-modes.ts";
import type { GateDecision } from "./decision-table.ts";
import type { EffectKind } from "./effects.ts";

export const GRANTABLE: Readonly<Record<EffectKind, boolean>> = {
  "runs-shell": true,
  reads: true,
  /** A secret read always asks. */
  "reads-secret": false,
  writes: true,
  /** Hooks, rc files, PATH entries: the code runs later, outside any dialog. */
  "writes-runs-later": false,
  /** Files the gate cannot name may be protected ones. */
  "writes-unlisted": false,
  "changes-gate": false,
  /** Push, publish, upload, deploy, repo create, a client sending data: a boundary. */
  sends: false,
  /** Local code the gate read and models; the shape covers its exact bytes. */
  "runs-file": true,
  /** Code the gate cannot model may push or deploy: it always asks. */
  "runs-unmodeled": false,
  undecidable: false,
  "custom-tool": false,
  malformed: false,
};

/** True when a session grant may cover a call with these effects under this policy. */
export function grantableEffects(policy: PolicyMode, kinds: readonly EffectKind[]): boolean {
  return policy !== "read-only" && kinds.every((kind) => GRANTABLE[kind]);
}

export type GrantLookup = { grant: Grant } | { grant: undefined; problem?: string };

/**
 * The command grant of Pi's session `sessionId` for `key`, read from the bridge's grants file now (the person
 * may have revoked it a moment ago). A missing or invalid file means no grants.
 */
export function lookUpCommandGrant(
  env: NodeJS.ProcessEnv,
  key: string,
  sessionId: string | null,
): GrantLookup {
  const file = env[GRANTS_PATH_ENV];
  if (!file) return { grant: undefined };
  const read = readGrantsFile(file);
  if (!read.ok) return { grant: undefined, ...(read.problem === "missing" ? {} : { problem: read.problem }) };
  return { grant: findGrant(read.file, "command", key, sessionId) };
}

/** A grant turns a grantable call's "confirm" into a run without a dialog; nothing else. */
export function grantApplies(
  decision: GateDecision,
  policy: PolicyMode,
  kinds: readonly EffectKind[],
): boolean {
  return decision === "confirm" && grantableEffects(policy, kinds);
}
