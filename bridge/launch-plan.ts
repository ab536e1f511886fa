// Everything the bridge decides once, before it starts the agent pair: the principals, the tools' Landlock
// domain, the state dir's private tree for Pi, the policy file the bridge writes, and the
// environments of Pi and the tools. The result is a spawn specification (agent-launch.ts) that a restart reuses.
import {
  chmodSync,
  chownSync,
  constants,
  copyFileSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  realpathSync,
  renameSync,
  statSync,
  utimesSync,
} from "node:fs";
import path from "node:path";
import {
  COMPILE_CACHE_DIR,
  COMPILE_CACHE_ENV,
  type CompileCacheDecision,
  decideCompileCache,
} from "../agent-runtime/compile-cache.ts";
import {
  TOOL_HOME_ENV,
  TOOL_SHELL_HELPER_ENV,
  TOOL_SHELL_NEST_ENV,
} from "../agent-runtime/executor/env-names.ts";
import { isPassableName, toolEnvironment } from "../agent-runtime/executor/tool-env.ts";
import { GRANTS_PATH_ENV } from "../agent-runtime/policy/grants-path.ts";
import { choosePolicyPath } from "../agent-runtime/policy/policy-store.ts";
import {
  checkProxyUrl,
  DEFAULT_NETWORK_MODE,
  EGRESS_GUARD_ENV,
  type EgressPlan,
  planEgress,
  proxyEnvironment,
} from "../agent-runtime/sandbox/egress.ts";
import {
  findLandlockHelper,
  grantedTreeHolding,
  isWithin,
  type LandlockProbe,
  landlockArgs,
  probeLandlock,
  type ToolsDomain,
  toolsDomain,
} from "../agent-runtime/sandbox/landlock.ts";
import { TOOLS_OOM_SCORE_ADJ } from "../agent-runtime/sandbox/process-budget.ts";
import type { AgentLaunchSpec } from "./agent-launch.ts";
import type { Principal, Principals } from "./isolation.ts";
import { RUN_MARKER_ENV } from "./pi-child.ts";
import { LAUNCHER_HOME_ENV } from "./private-home.ts";
import { BRIDGE_SECRET_PREFIX } from "./token-handover.ts";

export const EXECUTOR_BUNDLE = "tool-executor.mjs";

/** Where the bridge keeps the session grants: readable by Pi (the gate), written only by the bridge. */
export function grantsPathOf(stateDir: string): string {
  return path.join(stateDir, "grants.json");
}

export class LaunchError extends Error {}
/** A configuration the operator named (PI_CODING_AGENT_DIR, AGENT_POLICY_PATH) that the tools could write. */
export class RefusedConfigError extends LaunchError {}

export interface PiTree {
  root: string;
  home: string;
  agentDir: string;
  sessions: string;
  tmp: string;
}

export interface LaunchPlan {
  spec: AgentLaunchSpec;
  stateDir: string;
  policyPath: string;
  piTree: PiTree;
  landlock: { requested: boolean; probe: LandlockProbe; domain: ToolsDomain };
  /** The tools' egress guard (what Pi's environment says, and what the supervisor installs). */
  egress: EgressPlan;
  /** Private state a tool could reach (reported as degraded). */
  placement: string[];
  /** What the bridge refused or corrected at start to keep a protection (reported, not degraded). */
  notes: string[];
  /** Whether Pi starts with the bundle dir's compile cache. */
  compileCache: CompileCacheDecision;
}

export interface PlanInput {
  cwd: string;
  stateDir: string;
  principals: Principals;
  landlock: "on" | "off";
  toolEnvNames: readonly string[];
  /** The bridge's bundle directory (tool-executor.mjs and landlock-exec beside bridge.mjs). */
  bundleDir: string;
  /** Pi's package directory (its node_modules must be readable by the tools' executor). */
  piPackageDir: string;
  /** Pi's CLI entry, the gate and the caller's own Pi flags (the session flags are added at each start). */
  pi: { entry: string; gate: string; forwarded: readonly string[] };
  /** The run marker value tools inherit (startAgent sets a fresh one for every pair it starts). */
  runId: string;
  env: NodeJS.ProcessEnv;
  node: string;
  /** The egress proxy the tools are pointed at (`http://127.0.0.1:<port>`), when the bridge runs one. */
  egressProxy?: string;
  /** The helper's probe, when the caller started it earlier (probeLandlockAsync); otherwise it runs here. */
  probe?: LandlockProbe;
}

/** How long the supervisor lets the executor end its tools on SIGTERM before it ends everything itself. */
export const SUPERVISOR_GRACE_MS = 2_000;

export function planLaunch(input: PlanInput): LaunchPlan {
  const { principals, cwd } = input;
  const stateDir = path.resolve(input.stateDir);
  if (isWithin(stateDir, cwd) || isWithin(cwd, stateDir)) {
    throw new LaunchError(`the state dir ${stateDir} and the workspace ${cwd} must not contain each other`);
  }
  for (const name of input.toolEnvNames) {
    if (!isPassableName(name))
      throw new LaunchError(`--tool-env ${name.slice(0, 64)}: not a variable name that may be passed`);
  }
  const helper = findLandlockHelper(input.bundleDir);
  const probe = input.probe ?? probeLandlock(helper);
  const domain = toolsDomain({
    workspace: cwd,
    toolHome: principals.tools.home,
    runtime: runtimeReadTrees(input),
  });
  const requested = input.landlock === "on";
  const sandboxed = requested && probe.abi > 0 && helper !== undefined;
  const egress = planEgress({ requested, helper, features: probe.features });
  const protectedAtAll = sandboxed || principals.uidSeparation;
  const placement: string[] = [];
  const notes: string[] = [];

  // What the bridge trusts must not be writable by the tools; with no protection at all, nothing is.
  const writable = (target: string) => toolsMayWrite(target, principals, sandboxed ? domain : undefined);
  const configuredPolicy = choosePolicyPath(input.env, stateDir);
  let policyPath = configuredPolicy;
  if (protectedAtAll && configuredPolicy !== path.join(stateDir, "policy") && writable(configuredPolicy)) {
    // One the operator named is refused outright (the start fails and says why): a policy the tools could
    // rewrite is no policy. A default that happens to be reachable falls back to the state dir's, reported.
    if (input.env.AGENT_POLICY_PATH && path.resolve(input.env.AGENT_POLICY_PATH) === configuredPolicy)
      throw new RefusedConfigError(
        `the policy file ${configuredPolicy} (AGENT_POLICY_PATH) is writable by the tools: refusing to start (name one they cannot write, or leave it unset)`,
      );
    policyPath = path.join(stateDir, "policy");
    notes.push(
      `the configured policy file ${configuredPolicy} is writable by the tools: the bridge uses ${policyPath}`,
    );
  }
  // The state dir is private by its mode (0700/0711) against another uid; on the tools' own uid (or as root)
  // only the domain keeps it out of reach, so it must not lie in any tree the domain grants.
  const grantedTree = grantedTreeHolding(stateDir, domain);
  if (sandboxed && !principals.uidSeparation && grantedTree) {
    placement.push(`the state dir ${stateDir} lies inside ${grantedTree}, which the tools may reach`);
  }

  // Pi's compile cache is code Pi runs: only one the tools cannot write, never one inherited from the bridge.
  const compileCache = decideCompileCache(path.join(input.bundleDir, COMPILE_CACHE_DIR), writable);
  if (!compileCache.use && compileCache.why !== "missing")
    notes.push(`Pi's compile cache ${compileCache.dir} is not used (${compileCache.why}): Pi starts slower`);
  const inheritedCache = input.env[COMPILE_CACHE_ENV];
  if (inheritedCache && !(compileCache.use && path.resolve(inheritedCache) === compileCache.dir))
    notes.push(
      `${COMPILE_CACHE_ENV} (${inheritedCache}) is not passed to Pi: only the bundle dir's cache is`,
    );

  const piTree = preparePrivateTree(stateDir, principals);
  const seed = operatorAgentDir(input.env);
  if (seed && protectedAtAll && writable(path.join(seed, "models.json"))) {
    // Pi would read whatever the agent planted there (a provider base URL of its own, say) at the next start.
    // One the operator named is refused outright; the default (~/.pi/agent of a HOME the tools share, under
    // --user 1000) is skipped and reported.
    const launcherHome = input.env[LAUNCHER_HOME_ENV] ?? input.env.HOME;
    const defaultDir = launcherHome ? path.join(launcherHome, ".pi", "agent") : undefined;
    if (path.resolve(seed) !== defaultDir)
      throw new RefusedConfigError(
        `the agent dir ${seed} (PI_CODING_AGENT_DIR) is writable by the tools: refusing to configure Pi from it (name one they cannot write)`,
      );
    notes.push(`the operator's agent dir ${seed} is writable by the tools: not used to configure Pi`);
  } else {
    seedAgentDir(seed, piTree.agentDir, principals.pi);
  }

  const executorBundle = path.join(input.bundleDir, EXECUTOR_BUNDLE);
  // The URL the tools are given, and its port as they will connect to it (the supervisor reports those at once).
  const proxyUrl = input.egressProxy === undefined ? undefined : checkProxyUrl(input.egressProxy);
  const proxyPort = proxyUrl === undefined ? undefined : Number(new URL(proxyUrl).port);
  const toolEnv = {
    ...toolEnvironment(input.env, {
      home: principals.tools.home,
      user: principals.tools.user ?? undefined,
      runMarker: { name: RUN_MARKER_ENV, value: input.runId },
      passThrough: input.toolEnvNames,
    }),
    ...(proxyUrl ? proxyEnvironment(proxyUrl) : {}),
  };
  const executorEnv: Record<string, string> = {
    ...toolEnv,
    ...(helper ? { [TOOL_SHELL_HELPER_ENV]: helper } : {}),
    // In a domain, each tool shell nests its own: tools cannot ptrace the executor (and its channel to Pi).
    ...(sandboxed ? { [TOOL_SHELL_NEST_ENV]: "1" } : {}),
  };
  const spawnAs = (p: Principal) => (p.switchTo ? { uid: p.uid, gid: p.gid } : undefined);
  const toolsSpawn = spawnAs(principals.tools);

  const piEnv: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(input.env)) {
    if (!key.startsWith(BRIDGE_SECRET_PREFIX)) piEnv[key] = value;
  }
  Object.assign(piEnv, {
    HOME: piTree.home,
    PI_CODING_AGENT_DIR: piTree.agentDir,
    PI_CODING_AGENT_SESSION_DIR: piTree.sessions,
    TMPDIR: piTree.tmp,
    AGENT_POLICY_PATH: policyPath,
    // The session grants the bridge keeps; the gate reads them before each call.
    [GRANTS_PATH_ENV]: grantsPathOf(stateDir),
    [TOOL_HOME_ENV]: principals.tools.home,
    [EGRESS_GUARD_ENV]: egress.guard,
    ...(principals.pi.user ? { USER: principals.pi.user, LOGNAME: principals.pi.user } : {}),
  });
  delete piEnv[COMPILE_CACHE_ENV];
  if (compileCache.use) piEnv[COMPILE_CACHE_ENV] = compileCache.dir;

  const rules = sandboxed
    ? landlockArgs(domain, probe.abi, { tcpConnect: egress.tier?.landlockTcp === true })
    : [];
  const spec: AgentLaunchSpec = {
    cwd,
    executor: {
      file: helper ?? input.node,
      // Without the helper (a dev machine without gcc): Node itself, no supervisor (reported as degraded).
      args: helper ? [...rules, "--", input.node, executorBundle] : [executorBundle],
      env: executorEnv,
      uid: toolsSpawn?.uid,
      gid: toolsSpawn?.gid,
      ...(helper
        ? {
            supervised: {
              options: {
                hold: true,
                nproc: probe.budget.toolsNproc,
                oomScoreAdj: TOOLS_OOM_SCORE_ADJ,
                filter: egress.tier?.filter ?? "none",
                graceMs: SUPERVISOR_GRACE_MS,
                ...(proxyPort ? { proxyPort } : {}),
              },
              network: { mode: DEFAULT_NETWORK_MODE },
              toolsUid: principals.tools.uid,
              // The tools' uid is theirs alone (no other principal runs as it): every process of it is a tool.
              wholeUid:
                principals.tools.uid !== 0 &&
                principals.tools.uid !== principals.bridgeUid &&
                principals.tools.uid !== principals.pi.uid,
            },
          }
        : {}),
    },
    pi: { node: input.node, ...input.pi, env: piEnv, spawnAs: spawnAs(principals.pi) },
  };
  return {
    spec,
    stateDir,
    policyPath,
    piTree,
    landlock: { requested, probe, domain },
    egress,
    placement,
    notes,
    compileCache,
  };
}

/** What the executor itself must read: its bundle dir, the Node binary, Pi's node_modules. */
function runtimeReadTrees(input: PlanInput): string[] {
  const trees = [input.bundleDir, real(input.node)];
  const marker = `${path.sep}node_modules${path.sep}`;
  const at = input.piPackageDir.lastIndexOf(marker);
  trees.push(at >= 0 ? input.piPackageDir.slice(0, at + marker.length - 1) : input.piPackageDir);
  return trees;
}

function real(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return p;
  }
}

/**
 * Whether the tools could create, modify or replace `file`: the file itself, or any directory above it (where
 * an entry can be renamed away and planted anew), is writable for the tools by its mode bits (when they have
 * another uid) and lies in a tree their Landlock domain grants for writing (when there is a domain). With
 * neither protection, anything is.
 */
export function toolsMayWrite(
  file: string,
  principals: Principals,
  domain: ToolsDomain | undefined,
): boolean {
  const { uid, gid } = principals.tools;
  const modeAllows = (p: string, st: import("node:fs").Stats) => {
    if (!principals.uidSeparation || uid === 0) return true;
    // A sticky directory (e.g. /tmp) lets others rename only their own entries.
    if (st.isDirectory() && (st.mode & 0o1000) !== 0 && st.uid !== uid && p !== file) return false;
    if (st.uid === uid) return (st.mode & 0o200) !== 0;
    if (st.gid === gid) return (st.mode & 0o020) !== 0;
    return (st.mode & 0o002) !== 0;
  };
  let current = path.resolve(file);
  for (;;) {
    const st = statSync(current, { throwIfNoEntry: false });
    if (st) {
      const domainAllows = !domain || domain.write.some((tree) => isWithin(current, tree));
      if (domainAllows && modeAllows(current, st)) return true;
    }
    const parent = path.dirname(current);
    if (parent === current) return false;
    current = parent;
  }
}

/** A directory that must be ours (or Pi's) and private: created if missing, refused if it is a link. */
function privateDir(dir: string, owner: { uid: number; gid: number } | undefined, mode: number): void {
  mkdirSync(dir, { recursive: true, mode });
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new LaunchError(`${dir} is not a directory`);
  const self = process.geteuid?.() ?? 0;
  const expectedUid = owner?.uid ?? self;
  if (st.uid !== expectedUid) {
    if (self !== 0) throw new LaunchError(`${dir} belongs to uid ${st.uid}, not ${expectedUid}`);
    chownSync(dir, expectedUid, owner?.gid ?? st.gid);
  }
  if ((st.mode & 0o7777) !== mode) chmodSync(dir, mode);
}

/** <state>/ (the bridge's), <state>/bridge/ (bridge only), <state>/pi/{home,agent,sessions,tmp} (Pi's, 0700). */
export function preparePrivateTree(stateDir: string, principals: Principals): PiTree {
  const piOwner = principals.pi.switchTo ? { uid: principals.pi.uid, gid: principals.pi.gid } : undefined;
  // Pi runs as another uid: it must be able to pass through the state dir (0711: no listing) to its own tree.
  privateDir(stateDir, undefined, piOwner ? 0o711 : 0o700);
  privateDir(path.join(stateDir, "bridge"), undefined, 0o700);
  const root = path.join(stateDir, "pi");
  const tree: PiTree = {
    root,
    home: path.join(root, "home"),
    agentDir: path.join(root, "agent"),
    sessions: path.join(root, "sessions"),
    tmp: path.join(root, "tmp"),
  };
  privateDir(root, piOwner, 0o700);
  for (const dir of [tree.home, tree.agentDir, tree.sessions, tree.tmp]) privateDir(dir, piOwner, 0o700);
  return tree;
}

const MAX_SEED_FILES = 64;
const MAX_SEED_BYTES = 1024 * 1024;

/** Where the operator keeps Pi's configuration: Pi's own rule (PI_CODING_AGENT_DIR, else ~/.pi/agent). */
export function operatorAgentDir(env: NodeJS.ProcessEnv): string | undefined {
  const configured = env.PI_CODING_AGENT_DIR;
  if (configured)
    return configured.startsWith("~/") && env.HOME ? path.join(env.HOME, configured.slice(2)) : configured;
  return env.HOME ? path.join(env.HOME, ".pi", "agent") : undefined;
}

/**
 * The operator's agent dir (models.json, settings.json, auth.json…) seeds Pi's private one: each top-level
 * regular file is copied in, owned by Pi, mode 0600, when Pi's copy is missing or older than the operator's
 * (so an operator's edit applies at the next start, and what Pi itself wrote since is kept otherwise). Links
 * and large files are skipped. Pi then only ever reads its private copy, which no tool can reach.
 */
export function seedAgentDir(source: string | undefined, target: string, pi: Principal): string[] {
  if (!source) return [];
  const from = path.resolve(source);
  if (from === path.resolve(target)) return [];
  let names: string[];
  try {
    names = readdirSync(from).slice(0, MAX_SEED_FILES);
  } catch {
    return [];
  }
  const copied: string[] = [];
  for (const name of names) {
    const src = path.join(from, name);
    const dst = path.join(target, name);
    try {
      const st = lstatSync(src);
      if (!st.isFile() || st.size > MAX_SEED_BYTES) continue;
      const existing = lstatSync(dst, { throwIfNoEntry: false });
      if (existing && (!existing.isFile() || existing.mtimeMs >= st.mtimeMs)) continue;
      // Copy beside, then rename over: Pi never sees half a file; the temp name cannot pre-exist (EXCL).
      const temp = path.join(target, `.seed-${process.pid}-${name}`);
      copyFileSync(src, temp, constants.COPYFILE_EXCL);
      chmodSync(temp, 0o600);
      // The copy carries the operator's mtime: only a later edit on either side makes the two differ.
      utimesSync(temp, st.atime, st.mtime);
      if (pi.switchTo) chownSync(temp, pi.uid, pi.gid);
      renameSync(temp, dst);
      copied.push(name);
    } catch {
      // unreadable or raced: skip this file
    }
  }
  return copied;
}
