// The operator's network mode as a file: one word (lockdown | registries | open) beside the policy file, written
// by the bridge (option, RPC) and the operator CLI, read by the bridge (watched) and by the gate before each call.
// Read the way the policy is: never blocking (O_NONBLOCK), regular files only, bounded; written atomically.
import path from "node:path";
import { DEFAULT_NETWORK_MODE, NETWORK_MODES, type NetworkMode } from "../sandbox/egress.ts";
import { assertReplaceable, type WordRead, wordFile, writeWordAtomically } from "./word-file.ts";

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

const MODE_FILE = wordFile({
  words: NETWORK_MODES,
  maxBytes: MAX_NETWORK_MODE_BYTES,
  noFollow: true,
  listWords: true,
});

const asMode = (read: WordRead<NetworkMode>): NetworkModeRead =>
  read.ok ? { ok: true, mode: read.word } : read;

/** One mode, surrounding whitespace ignored, nothing else. */
export function parseNetworkModeText(bytes: Uint8Array): NetworkModeRead {
  return asMode(MODE_FILE.parse(bytes));
}

/** Reads the file without ever blocking: O_NONBLOCK open, fstat, regular files only, bounded read. */
export function readNetworkModeFile(file: string): NetworkModeRead {
  return asMode(MODE_FILE.read(file));
}

/**
 * Writes the mode atomically, mode 0644 so Pi's gate can read it. Refuses to replace a symlink or anything but
 * a regular file. Throws with a clear message.
 */
export async function writeNetworkModeFile(file: string, mode: NetworkMode): Promise<void> {
  if (!isNetworkMode(mode)) throw new Error(`network mode must be one of ${NETWORK_MODES.join(", ")}`);
  await assertReplaceable(file);
  try {
    await writeWordAtomically(file, mode);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(`cannot write ${file}: ${code ?? (error as Error).message}`);
  }
}
