// The V8 compile cache: the bytecode Node keeps for the modules it loads (NODE_COMPILE_CACHE), built once into
// the bundle dir when the image is built, so that Pi's start and the bridge's own skip compiling them (measured:
// a fifth of Pi's boot). Bytecode is code: Pi is given the cache only where the tools can write neither it nor
// anything in it, the same trust as the bundles beside it; otherwise Pi starts without one (and without one it
// inherited). The bridge uses it only when it is as much its owner's as the bundle that asks.
import { lstatSync, readdirSync, type Stats, statSync } from "node:fs";
// The default export, not named ones: the bridge imports this before its Node version check runs, and a name
// an older Node lacks would fail the import instead of the check.
import nodeModule from "node:module";
import path from "node:path";

/** The cache's directory inside the bundle dir. */
export const COMPILE_CACHE_DIR = "compile-cache";
/** Node's variable: its cache directory for the process it starts in. */
export const COMPILE_CACHE_ENV = "NODE_COMPILE_CACHE";
/** Node keeps one directory per Node version, flags and uid; more than this is not a cache we built. */
const MAX_ENTRIES = 16;

export type CompileCacheDecision =
  | { use: true; dir: string }
  | { use: false; dir: string; why: "missing" | "not a directory" | "writable by the tools" | "unexpected" };

/**
 * Whether Pi may be started with `dir` as its compile cache. `toolsMayWrite` is the launch plan's rule for
 * what the tools can change (their Landlock domain, modes and owners). The directory and each of Node's
 * per-version directories in it are checked; the files are written by the process that owns those.
 */
export function decideCompileCache(
  dir: string,
  toolsMayWrite: (target: string) => boolean,
): CompileCacheDecision {
  let st: Stats | undefined;
  try {
    st = lstatSync(dir);
  } catch {
    return { use: false, dir, why: "missing" };
  }
  if (!st.isDirectory()) return { use: false, dir, why: "not a directory" };
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return { use: false, dir, why: "unexpected" };
  }
  if (entries.length > MAX_ENTRIES) return { use: false, dir, why: "unexpected" };
  for (const target of [dir, ...entries.map((name) => path.join(dir, name))]) {
    const entry = target === dir ? st : lstatSync(target, { throwIfNoEntry: false });
    if (!entry?.isDirectory()) return { use: false, dir, why: "unexpected" };
    if (toolsMayWrite(target)) return { use: false, dir, why: "writable by the tools" };
  }
  return { use: true, dir };
}

/**
 * The bridge's own modules from the bundle dir's cache, before anything else loads: only a cache that belongs
 * to the owner of `entry` (the bundle running) and that no one else may write, by mode (nothing else is known
 * yet). Says whether it is on; without it the bridge only starts slower.
 */
export function enableBundleCompileCache(bundleDir: string, entry: string): boolean {
  let owner: number;
  try {
    owner = statSync(entry).uid;
  } catch {
    return false;
  }
  const othersMayWrite = (target: string) => {
    const st = lstatSync(target);
    return st.uid !== owner || (st.mode & 0o022) !== 0;
  };
  const decision = decideCompileCache(path.join(bundleDir, COMPILE_CACHE_DIR), othersMayWrite);
  if (!decision.use) return false;
  const { status } = nodeModule.enableCompileCache(decision.dir);
  const { ENABLED, ALREADY_ENABLED } = nodeModule.constants.compileCacheStatus;
  return status === ENABLED || status === ALREADY_ENABLED;
}
