// The live policy file: a bounded, never-blocking reader and an atomic compare-and-swap writer.
// The gate rereads it before every tool call; the operator CLI and the bridge's set_policy write it.
import { accessSync, constants } from "node:fs";
import path from "node:path";
import { DEFAULT_POLICY_PATH } from "../runtime-paths.ts";

import { isPolicyMode, POLICY_MODES, type PolicyMode } from "./policy-modes.ts";
import {
  assertReplaceable,
  ReplaceRefused,
  type WordRead,
  wordFile,
  writeWordAtomically,
} from "./word-file.ts";

export { isPolicyMode, POLICY_MODES, type PolicyMode };
export type PolicySource = "file" | "env" | "default";
export interface EffectivePolicy {
  policy: PolicyMode;
  source: PolicySource;
  path: string;
  /** Why the file was not used: "missing" | "oversized" | "invalid: …". */
  fileProblem?: string;
}
export type SetPolicyResult =
  | { ok: true; previous: EffectivePolicy; current: EffectivePolicy }
  | { ok: false; error: "policy_conflict"; current: EffectivePolicy }
  | { ok: false; error: "invalid_policy" | "symlink_target" | "io_error"; message: string };

export { DEFAULT_POLICY_PATH };
export const DEFAULT_POLICY: PolicyMode = "ask";
/** Largest policy file we accept; we read one byte more to detect an oversized file. */
export const MAX_POLICY_BYTES = 256;

export function policyPath(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.AGENT_POLICY_PATH;
  return configured && configured.length > 0 ? path.resolve(configured) : DEFAULT_POLICY_PATH;
}

/**
 * The policy file the bridge writes (and the operator CLI reads and writes): the configured one
 * (AGENT_POLICY_PATH, else the image's default) when its directory is writable by this uid (root in the image),
 * otherwise `<state>/policy` in the bridge's state dir, which only the bridge's uid can reach. The bridge tells
 * Pi which (AGENT_POLICY_PATH in Pi's environment).
 */
export function choosePolicyPath(env: NodeJS.ProcessEnv, stateDir: string): string {
  const configured = policyPath(env);
  try {
    accessSync(path.dirname(configured), constants.W_OK);
    return configured;
  } catch {
    return path.join(stateDir, "policy");
  }
}

type FileRead = { ok: true; policy: PolicyMode } | { ok: false; problem: string };

const POLICY_FILE = wordFile({ words: POLICY_MODES, maxBytes: MAX_POLICY_BYTES });

const asPolicy = (read: WordRead<PolicyMode>): FileRead => (read.ok ? { ok: true, policy: read.word } : read);

/** Parses policy text: one mode, surrounding whitespace ignored, nothing else. */
export function parsePolicyText(bytes: Uint8Array): FileRead {
  return asPolicy(POLICY_FILE.parse(bytes));
}

/** Reads the file without ever blocking: O_NONBLOCK open, fstat, regular files only, bounded read. */
function readPolicyFile(file: string): FileRead {
  return asPolicy(POLICY_FILE.read(file));
}

/** File first, then AGENT_POLICY, then "ask". Synchronous and bounded: safe to call before every tool call. */
export function readEffectivePolicy(env: NodeJS.ProcessEnv = process.env): EffectivePolicy {
  const file = policyPath(env);
  const read = readPolicyFile(file);
  if (read.ok) return { policy: read.policy, source: "file", path: file };
  const fromEnv = env.AGENT_POLICY?.trim();
  if (isPolicyMode(fromEnv)) return { policy: fromEnv, source: "env", path: file, fileProblem: read.problem };
  return { policy: DEFAULT_POLICY, source: "default", path: file, fileProblem: read.problem };
}

/**
 * Writes the policy atomically (temp file in the same directory, fsync, rename, fsync the directory).
 * `expected` is compared with the current effective policy; a mismatch is a conflict and nothing is written.
 * The check and the rename are not one atomic step across processes; writers are the operator and the bridge,
 * and the file is root-owned in the image, so the window is accepted.
 */
export async function setPolicy(options: {
  policy: PolicyMode;
  expected?: PolicyMode;
  env?: NodeJS.ProcessEnv;
}): Promise<SetPolicyResult> {
  const env = options.env ?? process.env;
  if (!isPolicyMode(options.policy)) {
    return {
      ok: false,
      error: "invalid_policy",
      message: `policy must be one of ${POLICY_MODES.join(", ")}`,
    };
  }
  if (options.expected !== undefined && !isPolicyMode(options.expected)) {
    return {
      ok: false,
      error: "invalid_policy",
      message: `expected policy must be one of ${POLICY_MODES.join(", ")}`,
    };
  }
  const file = policyPath(env);
  try {
    await assertReplaceable(file);
  } catch (error) {
    if (error instanceof ReplaceRefused)
      return { ok: false, error: error.symlink ? "symlink_target" : "io_error", message: error.message };
    return ioError(error, file);
  }
  const previous = readEffectivePolicy(env);
  if (options.expected !== undefined && previous.policy !== options.expected) {
    return { ok: false, error: "policy_conflict", current: previous };
  }
  try {
    await writeWordAtomically(file, options.policy);
  } catch (error) {
    return ioError(error, file);
  }
  return { ok: true, previous, current: readEffectivePolicy(env) };
}

function ioError(error: unknown, file: string): SetPolicyResult {
  const code = (error as NodeJS.ErrnoException).code ?? "error";
  return { ok: false, error: "io_error", message: `cannot write ${file}: ${code}` };
}
