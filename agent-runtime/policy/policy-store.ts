// The live policy file: a bounded, never-blocking reader and an atomic compare-and-swap writer.
// The gate rereads it before every tool call; the operator CLI and the bridge's set_policy write it.
import { accessSync, closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { lstat, open, rename, rm } from "node:fs/promises";
import path from "node:path";
import { DEFAULT_POLICY_PATH } from "../runtime-paths.ts";

import { isPolicyMode, POLICY_MODES, type PolicyMode } from "./policy-modes.ts";

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

/** Parses policy text: one mode, surrounding whitespace ignored, nothing else. */
export function parsePolicyText(bytes: Uint8Array): FileRead {
  if (bytes.length === 0) return { ok: false, problem: "invalid: empty" };
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return { ok: false, problem: "invalid: not UTF-8 text" };
  }
  const value = text.trim();
  if (value.length === 0) return { ok: false, problem: "invalid: empty" };
  if (!isPolicyMode(value)) {
    // Echo only printable ASCII, capped, so logs never carry odd bytes.
    const shown = JSON.stringify(value.replace(/[^\x20-\x7e]/g, "?").slice(0, 32));
    return { ok: false, problem: `invalid: unknown value ${shown}` };
  }
  return { ok: true, policy: value };
}

/** Reused by every (synchronous, so never overlapping) read: one allocation per process, not per tool call. */
const readBuffer = Buffer.alloc(MAX_POLICY_BYTES + 1);

/** Reads the file without ever blocking: O_NONBLOCK open, fstat, regular files only, bounded read. */
function readPolicyFile(file: string): FileRead {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { ok: false, problem: "missing" };
    return { ok: false, problem: `invalid: cannot open (${code ?? "error"})` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { ok: false, problem: "invalid: not a regular file" };
    if (stat.size > MAX_POLICY_BYTES) return { ok: false, problem: "oversized" };
    const buffer = readBuffer;
    let length = 0;
    // The size can change between fstat and read; the buffer bound is what counts.
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    if (length > MAX_POLICY_BYTES) return { ok: false, problem: "oversized" };
    return parsePolicyText(buffer.subarray(0, length));
  } catch (error) {
    return {
      ok: false,
      problem: `invalid: cannot read (${(error as NodeJS.ErrnoException).code ?? "error"})`,
    };
  } finally {
    closeSync(fd);
  }
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
    const stat = await lstat(file);
    if (stat.isSymbolicLink()) {
      return { ok: false, error: "symlink_target", message: `refusing to replace a symlink: ${file}` };
    }
    if (!stat.isFile()) {
      return { ok: false, error: "io_error", message: `refusing to replace a non-regular file: ${file}` };
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") return ioError(error, file);
  }
  const previous = readEffectivePolicy(env);
  if (options.expected !== undefined && previous.policy !== options.expected) {
    return { ok: false, error: "policy_conflict", current: previous };
  }
  const dir = path.dirname(file);
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  try {
    const handle = await open(temp, "wx", 0o644);
    try {
      // Whatever the umask (a launcher's `umask 077`): Pi's gate, another uid, reads this file.
      await handle.chmod(0o644);
      await handle.writeFile(`${options.policy}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
    const dirHandle = await open(dir, "r");
    try {
      await dirHandle.sync();
    } finally {
      await dirHandle.close();
    }
  } catch (error) {
    await rm(temp, { force: true }).catch(() => {});
    return ioError(error, file);
  }
  return { ok: true, previous, current: readEffectivePolicy(env) };
}

function ioError(error: unknown, file: string): SetPolicyResult {
  const code = (error as NodeJS.ErrnoException).code ?? "error";
  return { ok: false, error: "io_error", message: `cannot write ${file}: ${code}` };
}
