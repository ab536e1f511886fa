// The tools' Landlock domain: which trees they may read and run, which they may write, and what the helper
// (landlock-exec.c, built beside the bundles) is told. Everything not listed is out of reach for the tool
// executor and every process it starts: the bridge's state dir, Pi's private tree, the policy dir.
import { execFile, spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import * as z from "zod/mini";
import { type ProcessBudget, processBudget } from "./process-budget.ts";

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

/** The ABI whose domains can handle TCP connect (the egress guard's rule: no TCP connect leaves by itself). */
export const LANDLOCK_NET_ABI = 4;

/**
 * The helper's argv prefix that applies the domain (filesystem rules, and the scopes when the ABI has them).
 * `tcpConnect`: the domain also handles TCP connect with no rule (the supervisor performs the permitted ones).
 */
export function landlockArgs(
  domain: ToolsDomain,
  abi: number,
  options: { tcpConnect?: boolean } = {},
): string[] {
  const args: string[] = [];
  for (const p of domain.read) args.push("--ro", p);
  for (const p of domain.write) args.push("--rw", p);
  for (const p of domain.devices) args.push("--dev", p);
  if (abi >= LANDLOCK_SCOPES_ABI) args.push("--scope-signal", "--scope-abstract-unix");
  const tcp = options.tcpConnect === true && abi >= LANDLOCK_NET_ABI;
  if (tcp) args.push("--net-tcp");
  const required = tcp ? LANDLOCK_NET_ABI : 1;
  args.push("--require-abi", String(Math.max(required, Math.min(abi, LANDLOCK_SCOPES_ABI))));
  return args;
}

/** What the kernel offers the tools' boundary, as the helper measured it (`landlock-exec --probe`). */
export interface KernelFeatures {
  landlockAbi: number;
  /** Landlock can handle TCP connect (ABI >= 4). */
  landlockNet: boolean;
  seccompFilter: boolean;
  /** seccomp user notification (a supervisor decides a syscall). */
  seccompNotify: boolean;
  /** SECCOMP_IOCTL_NOTIF_ADDFD with SETFD (the supervisor installs its own socket in the tool). */
  notifyAddfd: boolean;
  waitKillable: boolean;
}

export const NO_KERNEL_FEATURES: KernelFeatures = {
  landlockAbi: 0,
  landlockNet: false,
  seccompFilter: false,
  seccompNotify: false,
  notifyAddfd: false,
  waitKillable: false,
};

/** What the tools' boundary can count on here, measured once at start: the kernel and the container's budget. */
export type LandlockProbe = (
  | { abi: number; helper: string }
  | { abi: 0; helper: string | undefined; reason: string }
) & { features: KernelFeatures; budget: ProcessBudget };

export function findLandlockHelper(bundleDir: string): string | undefined {
  const candidate = path.join(bundleDir, LANDLOCK_HELPER_NAME);
  return existsSync(candidate) ? candidate : undefined;
}

const ProbeAnswer = z.strictObject({
  abi: z.number().check(z.int(), z.minimum(0), z.maximum(1000)),
  landlockNet: z.boolean(),
  seccompFilter: z.boolean(),
  seccompNotify: z.boolean(),
  notifyAddfd: z.boolean(),
  waitKillable: z.boolean(),
});

/** How the helper's probe run ended: its exit status, output, and the error that kept it from running. */
interface ProbeRun {
  status: number | null;
  stdout: string;
  stderr: string;
  error?: Error | undefined;
}

const PROBE_ARGS = ["--probe"];
const PROBE_TIMEOUT_MS = 5_000;

/** Asks the helper what this kernel offers: the Landlock ABI (0: none), seccomp filters and notifications. */
export function probeLandlock(
  helper: string | undefined,
  budget: ProcessBudget = processBudget(),
): LandlockProbe {
  if (!helper) return readProbe(helper, undefined, budget);
  const run = spawnSync(helper, PROBE_ARGS, { encoding: "utf8", timeout: PROBE_TIMEOUT_MS });
  return readProbe(helper, run, budget);
}

/** The same probe, without blocking: the bridge starts it first and reads it when it plans the launch. */
export function probeLandlockAsync(
  helper: string | undefined,
  budget: ProcessBudget = processBudget(),
): Promise<LandlockProbe> {
  if (!helper) return Promise.resolve(readProbe(helper, undefined, budget));
  return new Promise((resolve) => {
    execFile(helper, PROBE_ARGS, { encoding: "utf8", timeout: PROBE_TIMEOUT_MS }, (error, stdout, stderr) => {
      const status = error ? (typeof error.code === "number" ? error.code : null) : 0;
      // Named as spawnSync names them: the reason reads the same whichever way the probe ran.
      const code = error?.killed ? "ETIMEDOUT" : typeof error?.code === "string" ? error.code : undefined;
      const cause = status === null ? Object.assign(new Error(error?.message), { code }) : undefined;
      resolve(readProbe(helper, { status, stdout, stderr, error: cause }, budget));
    });
  });
}

function readProbe(
  helper: string | undefined,
  run: ProbeRun | undefined,
  budget: ProcessBudget,
): LandlockProbe {
  const none = { ...NO_KERNEL_FEATURES };
  const refused = (reason: string): LandlockProbe => ({ abi: 0, helper, reason, features: none, budget });
  if (!helper || !run)
    return refused("the Landlock helper (landlock-exec) is not installed beside the bundles");
  if (run.status !== 0) {
    const cause = run.error ? ((run.error as NodeJS.ErrnoException).code ?? run.error.message) : undefined;
    return refused(`the Landlock helper failed: ${cause ?? run.stderr.trim().slice(0, 200)}`);
  }
  let answer: z.infer<typeof ProbeAnswer> | undefined;
  try {
    answer = ProbeAnswer.parse(JSON.parse(run.stdout));
  } catch {}
  if (!answer) return refused("the Landlock helper answered the probe with something unexpected");
  const { abi, ...rest } = answer;
  const features: KernelFeatures = { landlockAbi: abi, ...rest };
  return abi > 0
    ? { abi, helper, features, budget }
    : { abi: 0, helper, reason: "the kernel offers no Landlock (ABI 0)", features, budget };
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
