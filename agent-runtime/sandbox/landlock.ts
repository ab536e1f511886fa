// The tools' Landlock domain: which trees they may read and run, which they may write, and what the helper
// (landlock-exec.c, built beside the bundles) is told. Everything not listed is out of reach for the tool
// executor and every process it starts: the bridge's state dir, Pi's private tree, the policy dir.
import { spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";

export const LANDLOCK_HELPER_NAME = "landlock-exec";
/** The ABI that scopes signals and abstract unix sockets (so tools cannot signal or reach other principals). */
export const LANDLOCK_SCOPES_ABI = 6;

/** System trees tools read and execute (a missing one is skipped by the helper). */
export const SYSTEM_READ_TREES = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/etc",
  "/opt",
];
/** Kernel views tools need read access to (ps, node, ...). Other processes' memory and environment stay closed: */
/** Landlock refuses ptrace-mode access to processes outside the domain. */
export const KERNEL_READ_TREES = ["/proc", "/sys"];
/** Device files tools read and write. */
export const TOOL_DEVICES = [
  "/dev/null",
  "/dev/zero",
  "/dev/full",
  "/dev/random",
  "/dev/urandom",
  "/dev/tty",
  "/dev/ptmx",
  "/dev/pts",
];
/** Scratch trees every tool expects to write. */
export const SCRATCH_TREES = ["/tmp", "/dev/shm"];

export interface ToolsDomain {
  /** Read and execute. */
  read: string[];
  /** Every filesystem right. */
  write: string[];
  devices: string[];
}

/** The tools' domain: the system, the runtime's own files (read-only), and the workspace, /tmp and their HOME. */
export function toolsDomain(input: {
  workspace: string;
  toolHome: string;
  /** Files the executor itself needs (its bundle dir, the Node binary, Pi's node_modules): read-only. */
  runtime: string[];
  extraRead?: string[];
  extraWrite?: string[];
}): ToolsDomain {
  return {
    read: unique([...SYSTEM_READ_TREES, ...KERNEL_READ_TREES, ...input.runtime, ...(input.extraRead ?? [])]),
    write: unique([input.workspace, input.toolHome, ...SCRATCH_TREES, ...(input.extraWrite ?? [])]),
    devices: [...TOOL_DEVICES],
  };
}

/** The helper's argv prefix that applies the domain (filesystem rules, and the scopes when the ABI has them). */
export function landlockArgs(domain: ToolsDomain, abi: number): string[] {
  const args: string[] = [];
  for (const p of domain.read) args.push("--ro", p);
  for (const p of domain.write) args.push("--rw", p);
  for (const p of domain.devices) args.push("--dev", p);
  if (abi >= LANDLOCK_SCOPES_ABI) args.push("--scope-signal", "--scope-abstract-unix");
  args.push("--require-abi", String(Math.max(1, Math.min(abi, LANDLOCK_SCOPES_ABI))));
  return args;
}

export type LandlockProbe =
  | { abi: number; helper: string }
  | { abi: 0; helper: string | undefined; reason: string };

export function findLandlockHelper(bundleDir: string): string | undefined {
  const candidate = path.join(bundleDir, LANDLOCK_HELPER_NAME);
  return existsSync(candidate) ? candidate : undefined;
}

/** Asks the helper which Landlock ABI this kernel offers (0: none). */
export function probeLandlock(helper: string | undefined): LandlockProbe {
  if (!helper)
    return {
      abi: 0,
      helper,
      reason: "the Landlock helper (landlock-exec) is not installed beside the bundles",
    };
  const result = spawnSync(helper, ["--probe"], { encoding: "utf8", timeout: 5_000 });
  if (result.status !== 0) {
    return {
      abi: 0,
      helper,
      reason: `the Landlock helper failed: ${result.error?.message ?? result.stderr.trim().slice(0, 200)}`,
    };
  }
  try {
    const abi = (JSON.parse(result.stdout) as { abi?: unknown }).abi;
    if (typeof abi === "number" && Number.isInteger(abi) && abi >= 0) {
      return abi > 0 ? { abi, helper } : { abi: 0, helper, reason: "the kernel offers no Landlock (ABI 0)" };
    }
  } catch {}
  return { abi: 0, helper, reason: "the Landlock helper answered the probe with something unexpected" };
}

/** The scopes a domain gets at this ABI. */
export function landlockScopes(abi: number): ("signal" | "abstract_unix_socket")[] {
  return abi >= LANDLOCK_SCOPES_ABI ? ["signal", "abstract_unix_socket"] : [];
}

/** True if `child` is `parent` or beneath it (both absolute; symlinks resolved where they exist). */
export function isWithin(child: string, parent: string): boolean {
  const c = canonical(child);
  const p = canonical(parent);
  return c === p || c.startsWith(p.endsWith("/") ? p : `${p}/`);
}

/** The first granted tree `target` lies in, if any: a private path there would be reachable by tools. */
export function grantedTreeHolding(target: string, domain: ToolsDomain): string | undefined {
  return [...domain.write, ...domain.read].find((tree) => isWithin(target, tree));
}

function canonical(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

function unique(paths: string[]): string[] {
  return [...new Set(paths.map((p) => path.resolve(p)))];
}
