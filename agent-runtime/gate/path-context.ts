// Where a tool call runs and what the gate protects: the session cwd, the tools' HOME (what "~" means to a tool),
// Pi's agent dir, the policy file and the gate's own directories, all canonical; and the canonical form of any
// path (symlinks followed, dangling ones included) so a link cannot disguise a credential file or the gate.
import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { policyPath } from "../policy/policy-store.ts";
import { IMAGE_RUNTIME_DIR } from "../runtime-paths.ts";

export interface PathContext {
  /** The session's working directory (relative paths resolve against it). */
  cwd: string;
  /** The tools' HOME: what "~" means in a tool path or a shell command (env CHAT_UI_AGENT_TOOL_HOME, else HOME). */
  home: string;
  /** Pi's agent dir (settings, extensions, auth.json). */
  agentDir: string;
  /** The live policy file. */
  policyPath: string;
  /** Directories whose contents are the gate itself (e.g. /opt/chat-ui-agent). */
  gateDirs: string[];
}

export const IMAGE_GATE_DIR = IMAGE_RUNTIME_DIR;

/** The env var naming the tools' HOME (set by the bridge when tools run as another user than Pi). */
export const TOOL_HOME_ENV = "CHAT_UI_AGENT_TOOL_HOME";

/** The tools' HOME: CHAT_UI_AGENT_TOOL_HOME when set (absolute), else Pi's own HOME. */
export function toolHomeFromEnv(env: NodeJS.ProcessEnv): string {
  const configured = env[TOOL_HOME_ENV];
  if (configured && path.isAbsolute(configured)) return configured;
  return env.HOME && env.HOME.length > 0 ? env.HOME : homedir();
}

/** Pi's own rule: PI_CODING_AGENT_DIR (tilde-expanded) or ~/.pi/agent, with Pi's HOME. */
export function piAgentDir(env: NodeJS.ProcessEnv, home: string): string {
  const configured = env.PI_CODING_AGENT_DIR;
  if (configured) return path.resolve(expandTilde(configured, home));
  return path.join(home, ".pi", "agent");
}

/** The directory holding the running gate code (the bundle's directory in the image). */
export function ownDir(moduleUrl: string): string {
  return path.dirname(fileURLToPath(moduleUrl));
}

export function pathContextFromEnv(
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
  extraGateDirs: string[] = [],
): PathContext {
  return new LazyPathContext(cwd, env, extraGateDirs);
}

/**
 * Canonical forms, so a symlinked /tmp or HOME cannot make a protected path look ordinary. Each is resolved on
 * first use within one decision (a context is built per tool call): calls that never look at a path
 * (e.g. `git push`) skip the syscalls.
 */
class LazyPathContext implements PathContext {
  #cwd: string | undefined;
  #home: string | undefined;
  #agentDir: string | undefined;
  #policyPath: string | undefined;
  #gateDirs: string[] | undefined;
  readonly #lexicalHome: string;
  readonly #piHome: string;

  private readonly lexicalCwd: string;
  private readonly env: NodeJS.ProcessEnv;
  private readonly extraGateDirs: string[];

  constructor(lexicalCwd: string, env: NodeJS.ProcessEnv, extraGateDirs: string[]) {
    this.lexicalCwd = lexicalCwd;
    this.env = env;
    this.extraGateDirs = extraGateDirs;
    this.#piHome = env.HOME && env.HOME.length > 0 ? env.HOME : homedir();
    this.#lexicalHome = toolHomeFromEnv(env);
  }

  get cwd(): string {
    this.#cwd ??= uncachedRealpathOfExisting(path.resolve(this.lexicalCwd), true);
    return this.#cwd;
  }

  get home(): string {
    this.#home ??= uncachedRealpathOfExisting(path.resolve(this.#lexicalHome), true);
    return this.#home;
  }

  get agentDir(): string {
    this.#agentDir ??= uncachedRealpathOfExisting(piAgentDir(this.env, this.#piHome));
    return this.#agentDir;
  }

  get policyPath(): string {
    this.#policyPath ??= uncachedRealpathOfExisting(policyPath(this.env));
    return this.#policyPath;
  }

  get gateDirs(): string[] {
    this.#gateDirs ??= [
      ...new Set(
        [...new Set([IMAGE_GATE_DIR, ...this.extraGateDirs].map((dir) => path.resolve(dir)))].map((dir) =>
          uncachedRealpathOfExisting(dir),
        ),
      ),
    ];
    return this.#gateDirs;
  }
}

export function expandTilde(raw: string, home: string): string {
  if (raw === "~") return home;
  if (raw.startsWith("~/")) return path.join(home, raw.slice(2));
  return raw;
}

/** Longer paths cannot be opened (PATH_MAX): the kernel answers ENAMETOOLONG, so they are decided as written. */
const PATH_MAX = 4096;

/** realpath of the longest existing prefix, with the missing tail appended (targets of writes may not exist). */
export function realpathOfExisting(absolute: string, cache?: Map<string, string>): string {
  if (!cache) return uncachedRealpathOfExisting(absolute);
  if (absolute.length >= PATH_MAX) return absolute;
  const cached = cache.get(absolute);
  if (cached !== undefined) return cached;
  let resolved: string;
  if (existsSync(absolute)) {
    resolved = uncachedRealpathOfExisting(absolute, true);
  } else {
    // The longest existing prefix, by binary search over the components (a prefix that does not exist has no
    // existing extension): O(log n) probes, where walking up one level at a time costs O(n²) kernel work.
    const parts = absolute.split("/").filter((p) => p.length > 0);
    let low = 0; // parts[0..low) exists (the root always does)
    let high = parts.length; // parts[0..high) does not
    while (high - low > 1) {
      const mid = (low + high) >> 1;
      const prefix = `/${parts.slice(0, mid).join("/")}`;
      if (cache.has(prefix) || existsSync(prefix)) low = mid;
      else high = mid;
    }
    const existing = `/${parts.slice(0, low).join("/")}`;
    const firstMissing = `${existing === "/" ? "" : existing}/${parts[low] ?? ""}`;
    if (isSymlink(firstMissing)) {
      // A dangling symlink: writing through it creates its target, so the target is the path that counts.
      resolved = physicalPath(absolute);
    } else {
      const base = cache.get(existing) ?? uncachedRealpathOfExisting(existing, true);
      cache.set(existing, base);
      resolved = path.join(base, ...parts.slice(low));
    }
  }
  cache.set(absolute, resolved);
  return resolved;
}

/** lstat without throwing: ENAMETOOLONG, EACCES, ELOOP… mean "not a link we can follow". */
function isSymlink(absolute: string): boolean {
  try {
    return lstatSync(absolute, { throwIfNoEntry: false })?.isSymbolicLink() === true;
  } catch {
    return false;
  }
}

/** Per-decision memo (a context lives for one decision, so it never goes stale across calls). */
const realpathCaches = new WeakMap<PathContext, Map<string, string>>();

/** realpathOfExisting, memoised for the lifetime of one decision's context. */
export function canonicalIn(ctx: PathContext, absolute: string): string {
  let cache = realpathCaches.get(ctx);
  if (!cache) {
    // The context's own paths are canonical already: seed them (the session cwd is every relative path's parent).
    cache = new Map([
      [ctx.cwd, ctx.cwd],
      [ctx.home, ctx.home],
    ]);
    realpathCaches.set(ctx, cache);
  }
  return realpathOfExisting(absolute, cache);
}

function uncachedRealpathOfExisting(absolute: string, likelyExists = false): string {
  if (absolute.length >= PATH_MAX) return absolute;
  if (likelyExists) {
    // Paths that normally exist (cwd, HOME): one realpath(3) syscall, no existence probe. Elsewhere a missing
    // path is common (a dev machine has no /opt/chat-ui-agent) and a thrown ENOENT costs more than existsSync.
    try {
      return realpathSync.native(absolute);
    } catch {
      // missing: fall through to the walk
    }
  }
  // existsSync first: a thrown ENOENT costs more than the probe, and most arguments are not files.
  if (existsSync(absolute)) {
    try {
      // The native realpath(3) is one syscall; the JS fallback lstat()s every component.
      return realpathSync.native(absolute);
    } catch {
      // vanished or unreadable between the two calls: resolve it component by component
    }
  }
  return physicalPath(absolute);
}

/** More symlinks than this in one resolution is a loop (the kernel's own limit is 40). */
const MAX_SYMLINK_HOPS = 40;

/**
 * The path the kernel would reach, component by component, for a path that does not fully exist: symlinks are
 * followed wherever they are (dangling ones too, since creating a file through a dangling link creates its
 * target), ".." in a link target is physical, and the missing rest is appended as written. Iterative, with a
 * hop budget: a symlink loop stops the walk (the kernel would answer ELOOP, so nothing is opened anyway).
 */
export function physicalPath(absolute: string): string {
  if (absolute.length >= PATH_MAX) return absolute;
  const pending = absolute.split("/").reverse(); // a stack: the next component is last
  let resolved = "/";
  let hops = 0;
  let missing = false;
  while (pending.length > 0) {
    const part = pending.pop() as string;
    if (part === "" || part === ".") continue;
    if (part === "..") {
      resolved = path.dirname(resolved);
      continue;
    }
    const next = resolved === "/" ? `/${part}` : `${resolved}/${part}`;
    if (missing) {
      resolved = next;
      continue;
    }
    let stat: ReturnType<typeof lstatSync>;
    try {
      stat = lstatSync(next, { throwIfNoEntry: false });
    } catch {
      stat = undefined; // EACCES, ENOTDIR…: nothing below can be looked at
    }
    if (!stat) {
      missing = true;
      resolved = next;
      continue;
    }
    if (!stat.isSymbolicLink()) {
      resolved = next;
      continue;
    }
    if (++hops > MAX_SYMLINK_HOPS) return absolute;
    let target: string;
    try {
      target = readlinkSync(next);
    } catch {
      missing = true;
      resolved = next;
      continue;
    }
    if (target.startsWith("/")) resolved = "/";
    for (const piece of target.split("/").reverse()) pending.push(piece);
  }
  return resolved;
}

/** Both paths absolute and normalised (resolve/realpath output): a prefix test, no allocation-heavy relative(). */
export function isWithin(child: string, parent: string): boolean {
  if (child === parent) return true;
  const prefix = parent.endsWith(path.sep) ? parent : parent + path.sep;
  return child.startsWith(prefix);
}
