// Who runs as whom (issue 11): the bridge (root when it can be), Pi (its own uid, `pi`), and the agent's tools
// (the `--agent-user`, in the tool executor, inside a Landlock domain). Decides the principals from the uid the
// bridge has and the users that exist, and reports every protection that holds or does not, with reasons.
import { readFileSync } from "node:fs";
import { DEFAULT_NETWORK_MODE, type NetworkMode, planEgress } from "../agent-runtime/sandbox/egress.ts";
import type { LandlockProbe } from "../agent-runtime/sandbox/landlock.ts";
import { LANDLOCK_SCOPES_ABI, landlockScopes } from "../agent-runtime/sandbox/landlock.ts";
import { TOOLS_OOM_SCORE_ADJ } from "../agent-runtime/sandbox/process-budget.ts";
import type { Isolation } from "./protocol.ts";

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

export function parsePasswd(text: string): PasswdEntry[] {
  const entries: PasswdEntry[] = [];
  for (const line of text.split("\n")) {
    const [name, , uidText, gidText, , home] = line.split(":");
    if (name === undefined || home === undefined || line.startsWith("#")) continue;
    const uid = Number(uidText);
    const gid = Number(gidText);
    if (!Number.isInteger(uid) || !Number.isInteger(gid)) continue;
    entries.push({ name, uid, gid, home });
  }
  return entries;
}

export interface Principal {
  user: string | null;
  uid: number;
  gid: number;
  home: string;
  /** True when the bridge must switch to this uid/gid to start the process. */
  switchTo: boolean;
}

export interface Principals {
  bridgeUid: number;
  tools: Principal;
  pi: Principal;
  /** Bridge, Pi and tools on three different uids, none of them root except the bridge. */
  uidSeparation: boolean;
  /** Why uid separation does not hold (empty when it does). */
  reasons: string[];
}

export const DEFAULT_PI_USER = "pi";

/** The three principals from the bridge's uid, the flags and the user database (pure; tested without root). */
export function decidePrincipals(input: {
  euid: number;
  egid: number;
  agentUser: string | undefined;
  piUser: string | undefined;
  passwd: () => string;
  env: NodeJS.ProcessEnv;
}): Principals {
  let entries: PasswdEntry[] = [];
  let passwdError: string | undefined;
  try {
    entries = parsePasswd(input.passwd());
  } catch (error) {
    passwdError = (error as Error).message;
  }
  const self = entries.find((e) => e.uid === input.euid);
  const sameAsBridge: Principal = {
    user: self?.name ?? input.env.USER ?? null,
    uid: input.euid,
    gid: input.egid,
    home: self?.home ?? input.env.HOME ?? "/",
    switchTo: false,
  };
  if (input.euid !== 0) {
    return {
      bridgeUid: input.euid,
      tools: sameAsBridge,
      pi: sameAsBridge,
      uidSeparation: false,
      reasons: [
        `the bridge is not root (uid ${input.euid}), so the bridge, Pi and the tools share one uid` +
          (input.agentUser && input.agentUser !== self?.name
            ? ` (--agent-user ${input.agentUser} cannot be used)`
            : ""),
      ],
    };
  }
  const reasons: string[] = [];
  if (passwdError) reasons.push(`cannot read the user database (${passwdError})`);
  const lookup = (name: string | undefined, role: string): PasswdEntry | undefined => {
    if (!name) return undefined;
    const entry = entries.find((e) => e.name === name);
    if (!entry) {
      if (!passwdError) reasons.push(`${role} user ${name} does not exist`);
      return undefined;
    }
    if (entry.uid === 0 || entry.gid === 0) {
      reasons.push(`${role} user ${name} is privileged (uid/gid 0)`);
      return undefined;
    }
    return entry;
  };
  if (!input.agentUser) reasons.push("no --agent-user given");
  const toolsEntry = lookup(input.agentUser, "the tools'");
  const piName = input.piUser ?? DEFAULT_PI_USER;
  let piEntry = lookup(piName, "Pi's");
  if (piEntry && toolsEntry && piEntry.uid === toolsEntry.uid) {
    reasons.push(`Pi's user ${piName} has the tools' uid ${toolsEntry.uid}`);
    piEntry = undefined;
  }
  const tools: Principal = toolsEntry
    ? {
        user: toolsEntry.name,
        uid: toolsEntry.uid,
        gid: toolsEntry.gid,
        home: toolsEntry.home,
        switchTo: true,
      }
    : { ...sameAsBridge };
  const pi: Principal = piEntry
    ? { user: piEntry.name, uid: piEntry.uid, gid: piEntry.gid, home: piEntry.home, switchTo: true }
    : { ...sameAsBridge };
  if (!toolsEntry) reasons.push("the tools run as root");
  if (!piEntry) reasons.push("Pi runs as root");
  return { bridgeUid: 0, tools, pi, uidSeparation: reasons.length === 0, reasons };
}

export function decideProcessPrincipals(
  agentUser: string | undefined,
  piUser: string | undefined,
  /** The HOME the bridge was started with (before it took a private one): the tools' HOME if no passwd entry says. */
  launcherHome: string | undefined,
): Principals {
  return decidePrincipals({
    euid: process.geteuid?.() ?? 0,
    egid: process.getegid?.() ?? 0,
    agentUser,
    piUser,
    passwd: () => readFileSync("/etc/passwd", "utf8"),
    // Never the bridge's private HOME: the tools' HOME is granted to them, and the bridge's must stay its own.
    env: { ...process.env, HOME: launcherHome },
  });
}

/** What the bridge knows about each protection, at start and as the executor runs. */
export interface ProtectionState {
  principals: Principals;
  landlock: { requested: boolean; probe: LandlockProbe; failure: string | undefined };
  toolEnv: { passThrough: readonly string[] };
  token: { scrubbed: boolean; detail: string };
  executor: { running: boolean; detail: string };
  /** Problems with where private state lives (e.g. a state dir inside a tree the tools may read). */
  placement: string[];
  /** What the bridge refused or corrected at start (not a degradation: the protection held). */
  notes: string[];
  /** The network mode the tools' supervisor applies (AgentLaunch's spec holds it; default `registries`). */
  network?: { mode: NetworkMode };
  /** The bridge's egress proxy (bridge/egress): absent when none was started, `running` false when it failed. */
  egressProxy?: { running: boolean; detail: string };
}

/** The egress protection: the guard the kernel allows, the mode, and whether the supervisor runs it now. */
function egressProtection(state: ProtectionState, landlockFailed: boolean) {
  const { probe, requested } = state.landlock;
  const plan = planEgress({ requested, helper: probe.helper, features: probe.features });
  const mode = state.network?.mode ?? DEFAULT_NETWORK_MODE;
  const running = state.executor.running && !landlockFailed;
  let detail = plan.detail;
  if (plan.guard === "enforcing" && mode === "open")
    detail =
      "network mode open: the tools connect anywhere over TCP and send datagrams (as without the guard)";
  else if (plan.guard === "enforcing" && !running) detail = "the tool supervisor is not running";
  else if (plan.guard === "enforcing" && state.egressProxy?.running === false)
    detail += `; ${state.egressProxy.detail}: the tools reach nothing beyond loopback`;
  else if (plan.guard === "enforcing")
    detail += `; mode ${mode}: other destinations only through the egress proxy or a call the person approved`;
  const f = probe.features;
  return {
    active: plan.guard === "enforcing" && mode !== "open" && running && state.egressProxy?.running !== false,
    guard: plan.guard,
    mode,
    filter: plan.tier?.filter ?? null,
    kernel: {
      landlockAbi: f.landlockAbi,
      landlockNet: f.landlockNet,
      seccompFilter: f.seccompFilter,
      seccompNotify: f.seccompNotify,
      notifyAddfd: f.notifyAddfd,
    },
    detail,
  };
}

/** The tool-process protection: a supervisor above every tool, the task cap, the OOM order. */
function toolProcessesProtection(state: ProtectionState) {
  const { probe } = state.landlock;
  const { budget } = probe;
  const supervised = probe.helper !== undefined;
  const toolsAreRoot = state.principals.tools.uid === 0;
  let detail: string;
  if (!supervised)
    detail = "no supervisor (the helper is not installed): detached tool processes can outlive their call";
  else if (!state.executor.running) detail = "the tool supervisor is not running";
  else {
    const budgetText =
      budget.containerMax === null
        ? "the container has no pids budget"
        : `the container's budget of ${budget.containerMax} keeps ${budget.reserve} for the bridge, Pi and sbx-server`;
    detail =
      "every tool process ends with its call, its pair and the bridge (a subreaper above each call and above the executor)" +
      (toolsAreRoot
        ? "; the tools run as root, so the task cap does not bind them"
        : `; the tools hold at most ${budget.toolsNproc} tasks (RLIMIT_NPROC; ${budgetText})`) +
      `; the OOM killer takes them first (oom_score_adj ${TOOLS_OOM_SCORE_ADJ}${state.landlock.requested && probe.abi > 0 ? ", which they cannot lower" : ""})`;
  }
  return {
    active: supervised && state.executor.running && !toolsAreRoot,
    nproc: supervised ? budget.toolsNproc : null,
    containerPids: budget.containerMax,
    oomScoreAdj: supervised ? TOOLS_OOM_SCORE_ADJ : null,
    detail,
  };
}

/** The Isolation report (bridge_status, welcome, /v1/health): full only when every protection holds. */
export function isolationReport(state: ProtectionState): Isolation {
  const { principals, landlock } = state;
  const reasons = [...principals.reasons.map((r) => `uid separation: ${r}`)];
  const abi = landlock.probe.abi;
  const landlockActive =
    landlock.requested && abi > 0 && landlock.failure === undefined && state.executor.running;
  let landlockDetail: string;
  if (!landlock.requested) landlockDetail = "switched off (--landlock off)";
  else if (abi === 0) landlockDetail = "reason" in landlock.probe ? landlock.probe.reason : "unavailable";
  else if (landlock.failure) landlockDetail = landlock.failure;
  else if (!state.executor.running) landlockDetail = "the tool executor is not running";
  else
    landlockDetail =
      `ABI ${abi}: the tools read and run the system trees, write only the workspace, /tmp and their HOME` +
      (abi >= LANDLOCK_SCOPES_ABI
        ? "; no signals to or abstract sockets of other processes (each tool call in a scoped domain of its own: not even the executor's or another call's); no ptrace of them"
        : "");
  if (!landlockActive) reasons.push(`Landlock: ${landlockDetail}`);
  else if (abi < LANDLOCK_SCOPES_ABI) {
    reasons.push(
      `Landlock: ABI ${abi} cannot scope signals and abstract unix sockets (needs ${LANDLOCK_SCOPES_ABI})`,
    );
  }
  if (!state.token.scrubbed) reasons.push(`token: ${state.token.detail}`);
  if (!state.executor.running) reasons.push(`tool routing: ${state.executor.detail}`);
  for (const problem of state.placement) reasons.push(`state: ${problem}`);
  const egress = egressProtection(state, landlock.failure !== undefined);
  if (!egress.active) reasons.push(`egress: ${egress.detail}`);
  const toolProcesses = toolProcessesProtection(state);
  if (!toolProcesses.active) reasons.push(`tool processes: ${toolProcesses.detail}`);
  return {
    mode: reasons.length === 0 ? "isolated" : "degraded",
    user: principals.tools.user,
    uid: principals.tools.uid,
    gid: principals.tools.gid,
    reason: reasons.length === 0 ? null : reasons.join("; "),
    reasons,
    notes: [...state.notes],
    principals: {
      bridge: { uid: principals.bridgeUid },
      pi: { user: principals.pi.user, uid: principals.pi.uid, gid: principals.pi.gid },
      tools: {
        user: principals.tools.user,
        uid: principals.tools.uid,
        gid: principals.tools.gid,
        home: principals.tools.home,
      },
    },
    protections: {
      uidSeparation: {
        active: principals.uidSeparation,
        detail: principals.uidSeparation
          ? `bridge uid ${principals.bridgeUid}, Pi uid ${principals.pi.uid}, tools uid ${principals.tools.uid}`
          : principals.reasons.join("; "),
      },
      landlock: {
        active: landlockActive,
        abi,
        scopes: landlockActive ? landlockScopes(abi) : [],
        detail: landlockDetail,
      },
      toolEnvScrubbed: {
        active: true,
        detail:
          "tools get an allow-listed environment (PATH, HOME, USER, LOGNAME, LANG, LC_*, TERM, TZ, TMPDIR, the run marker)" +
          (state.toolEnv.passThrough.length > 0
            ? ` plus ${state.toolEnv.passThrough.join(", ")} (--tool-env)`
            : ""),
      },
      tokenScrubbed: { active: state.token.scrubbed, detail: state.token.detail },
      executorRouting: { active: state.executor.running, detail: state.executor.detail },
      egress,
      toolProcesses,
    },
  };
}
