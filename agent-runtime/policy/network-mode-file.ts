// The operator's network mode as a file: one word (lockdown | registries | open) beside the policy file, written
// by the bridge (option, RPC) and the operator CLI, read by the bridge (watched) and by the gate before each call.
// Read the way the policy is: never blocking (O_NONBLOCK), regular files only, bounded; written atomically.
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { lstat, open, rename, rm } from "node:fs/promises";
import path from "node:path";
import { DEFAULT_NETWORK_MODE, NETWORK_MODES, type NetworkMode } from "../sandbox/egress.ts";

export { DEFAULT_NETWORK_MODE, NETWORK_MODES, type NetworkMode };

/** The file's name, in the policy file's directory (which nothing of the agent's may write). */
export const NETWORK_MODE_FILE = "network-mode";
/** Largest file accepted; one byte more is read to detect an oversized file. */
export const MAX_NETWORK_MODE_BYTES = 64;

export function isNetworkMode(value: unknown): value is NetworkMode {
  return typeof value === "string" && (NETWORK_MODES as readonly string[]).includes(value);
}

/** The network mode file that goes with a policy file. */
export function networkModePathOf(policyFile: string): string {
  return path.join(path.dirname(policyFile), NETWORK_MODE_FILE);
}

export type NetworkModeRead = { ok: true; mode: NetworkMode } | { ok: false; problem: string };

/** One mode, surrounding whitespace ignored, nothing else. */
export function parseNetworkModeText(bytes: Uint8Array): NetworkModeRead {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return { ok: false, problem: "invalid: not UTF-8 text" };
  }
  const value = text.trim();
  if (value.length === 0) return { ok: false, problem: "invalid: empty" };
  if (!isNetworkMode(value)) {
    // Only printable ASCII, capped: logs and frames never carry odd bytes.
    const shown = JSON.stringify(value.replace(/[^\x20-\x7e]/g, "?").slice(0, 32));
    return { ok: false, problem: `invalid: unknown value ${shown} (use ${NETWORK_MODES.join(", ")})` };
  }
  return { ok: true, mode: value };
}

/** Reused by every (synchronous, never overlapping) read. */
const readBuffer = Buffer.alloc(MAX_NETWORK_MODE_BYTES + 1);

/** Reads the file without ever blocking: O_NONBLOCK open, fstat, regular files only, bounded read. */
export function readNetworkModeFile(file: string): NetworkModeRead {
  let fd: number;
  try {
    fd = openSync(
      file,
      constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW,
    );
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { ok: false, problem: "missing" };
    if (code === "ELOOP") return { ok: false, problem: "invalid: a symlink" };
    return { ok: false, problem: `invalid: cannot open (${code ?? "error"})` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { ok: false, problem: "invalid: not a regular file" };
    if (stat.size > MAX_NETWORK_MODE_BYTES) return { ok: false, problem: "oversized" };
    let length = 0;
    // The size can change between fstat and read; the buffer bound is what counts.
    while (length < readBuffer.length) {
      const n = readSync(fd, readBuffer, length, readBuffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    if (length > MAX_NETWORK_MODE_BYTES) return { ok: false, problem: "oversized" };
    return parseNetworkModeText(readBuffer.subarray(0, length));
  } catch (error) {
    return {
      ok: false,
      problem: `invalid: cannot read (${(error as NodeJS.ErrnoException).code ?? "error"})`,
    };
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes the mode atomically (temp file in the same directory, fsync, rename, fsync the directory), mode 0644 so
 * Pi's gate can read it. Refuses to replace a symlink or anything but a regular file. Throws with a clear message.
 */
export async function writeNetworkModeFile(file: string, mode: NetworkMode): Promise<void> {
  if (!isNetworkMode(mode)) throw new Error(`network mode must be one of ${NETWORK_MODES.join(", ")}`);
  try {
    const stat = await lstat(file);
    if (stat.isSymbolicLink()) throw new Error(`refusing to replace a symlink: ${file}`);
    if (!stat.isFile()) throw new Error(`refusing to replace a non-regular file: ${file}`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const dir = path.dirname(file);
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  try {
    const handle = await open(temp, "wx", 0o644);
    try {
      // Whatever the umask (a launcher's `umask 077`): Pi's gate, another uid, reads this file.
      await handle.chmod(0o644);
      await handle.writeFile(`${mode}\n`);
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
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(`cannot write ${file}: ${code ?? (error as Error).message}`);
  }
}
