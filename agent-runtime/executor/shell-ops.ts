// The shell backend of Pi's bash tool (and of a person's `!` commands) inside the executor: Pi's BashOperations
// contract (docs/extensions.md, "Remote Execution"), implemented so that every shell starts through the helper
// as one call (`landlock-exec --call LABEL`): no fd of the executor's (nor one its parents leaked) reaches a
// tool; the call's shell runs in a nested, scoped domain (it cannot signal or trace the executor, the helper or
// another call); the helper stays the call's subreaper, and when the shell exits, or an abort or timeout ends the
// call, it kills everything the call left, however detached (own session, empty environment, double fork).
import { AsyncLocalStorage } from "node:async_hooks";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import type { BashOperations } from "@earendil-works/pi-coding-agent";
import { killTree, type TreeSelector } from "../process-tree.ts";
import type { PiChildProcess } from "./pi-modules.ts";

/** How a tool shell starts: `file [--call LABEL] args… command`. */
export interface ShellLaunch {
  file: string;
  args: string[];
  /** Whether the launcher closes every inherited fd above 2 before bash starts. */
  closesInheritedFds: boolean;
  /** Whether each shell gets a nested Landlock domain (no ptrace of the executor; scoped from ABI 6). */
  nested: boolean;
  /** Whether the helper runs each shell as one call (`--call LABEL`): a subreaper that ends what it leaves. */
  perCall: boolean;
}

/**
 * Bash (as Pi's getShellConfig picks it on Linux), through the helper when there is one. `nest` (when the
 * executor runs in a Landlock domain) gives each shell a nested domain, so tools cannot ptrace the executor.
 */
export function toolShellLaunch(helper: string | undefined, nest: boolean, bash = "/bin/bash"): ShellLaunch {
  if (helper) {
    return {
      file: helper,
      args: ["--close-fds", ...(nest ? ["--nest"] : []), "--", bash, "-c"],
      closesInheritedFds: true,
      nested: nest,
      perCall: true,
    };
  }
  return { file: bash, args: ["-c"], closesInheritedFds: false, nested: false, perCall: false };
}

/**
 * The call a shell belongs to (server.ts runs each request inside it): the label the helper carries on its
 * command line, by which the supervisor attributes a connect and applies a per-call grant, and whether the person
 * approved the call (the helper then carries --network-approved: the supervisor lets this call's processes, and
 * only them, connect anywhere until the helper ends them with the call).
 */
export const currentCall = new AsyncLocalStorage<{ label: string; networkApproved: boolean }>();

/** A call label the helper and the supervisor accept. */
const CALL_LABEL = /^[A-Za-z0-9._:-]{1,128}$/;

/** How long an ended call's helper has to end the call before the executor kills the tree itself. */
const CALL_END_GRACE_MS = 2_000;

const MAX_TIMEOUT_MS = 2_147_483_647;

/** Pi's rule for the bash `timeout` parameter (seconds), with Pi's messages. */
function timeoutMs(timeout: number | undefined): number | undefined {
  if (timeout === undefined) return undefined;
  if (!Number.isFinite(timeout) || timeout <= 0) {
    throw new Error("Invalid timeout: must be a finite number of seconds");
  }
  const ms = timeout * 1000;
  if (ms > MAX_TIMEOUT_MS) throw new Error(`Invalid timeout: maximum is ${MAX_TIMEOUT_MS / 1000} seconds`);
  return ms;
}

/**
 * Every shell gets CHAT_UI_AGENT_TOOL_CALL=<executor id>.<n> in its environment, which its descendants inherit:
 * processes that left the shell's session and ancestry are still found (ShellSessions, killTree).
 */
export const TOOL_CALL_MARKER_ENV = "CHAT_UI_AGENT_TOOL_CALL";

/** A shell's tree: its session, its group, its descendants, and everything carrying one of these markers. */
function shellTrees(shells: number[], marker: { values?: string[]; prefixes?: string[] }): TreeSelector {
  return {
    pids: shells,
    groups: shells,
    sessions: shells,
    marker: { name: TOOL_CALL_MARKER_ENV, ...marker },
  };
}

/** Shell sessions this executor started, so they can all be ended when the executor stops. */
export class ShellSessions {
  private readonly sessions = new Set<number>();
  private readonly max: number;
  /** This executor's marker prefix: every shell's marker is `<id>.<n>`. */
  readonly markerPrefix = `${randomBytes(8).toString("hex")}.`;
  private nextCall = 1;

  constructor(max = 4096) {
    this.max = max;
  }

  /** A fresh marker entry value for one shell (`<id>.<n>`). */
  nextMarker(): string {
    return `${this.markerPrefix}${this.nextCall++}`;
  }

  add(pid: number): void {
    this.sessions.add(pid);
    if (this.sessions.size > this.max) {
      const oldest = this.sessions.values().next().value;
      if (oldest !== undefined) this.sessions.delete(oldest);
    }
  }

  /** Ends every process of every session started so far (background processes included). */
  killAll(): number {
    const roots = [...this.sessions];
    this.sessions.clear();
    return killTree(shellTrees(roots, { prefixes: [this.markerPrefix] }));
  }
}

export function createShellOperations(
  launch: ShellLaunch,
  childProcess: PiChildProcess,
  sessions: ShellSessions,
): BashOperations {
  return {
    exec: async (command, cwd, { onData, signal, timeout, env }) => {
      const limitMs = timeoutMs(timeout);
      if (signal?.aborted) throw new Error("aborted");
      try {
        await access(cwd, constants.F_OK);
      } catch {
        throw new Error(`Working directory does not exist: ${cwd}\nCannot execute bash commands.`);
      }
      const marker = sessions.nextMarker();
      const call = currentCall.getStore();
      const labelled = call !== undefined && CALL_LABEL.test(call.label);
      const label = labelled ? call.label : marker;
      const approved = labelled && call.networkApproved ? ["--network-approved"] : [];
      const args = launch.perCall
        ? ["--call", label, ...approved, ...launch.args, command]
        : [...launch.args, command];
      const child = spawn(launch.file, args, {
        cwd,
        detached: true,
        env: { ...(env ?? {}), [TOOL_CALL_MARKER_ENV]: marker },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const pid = child.pid;
      if (pid !== undefined) sessions.add(pid);
      let timedOut = false;
      let timer: NodeJS.Timeout | undefined;
      let fallback: NodeJS.Timeout | undefined;
      const killShellTree = () => {
        killTree(shellTrees(pid !== undefined ? [pid] : [], { values: [marker] }));
      };
      const end = () => {
        if (!launch.perCall || pid === undefined || child.exitCode !== null || child.signalCode !== null) {
          killShellTree();
          return;
        }
        // The call's helper ends everything below it, however detached; killing the helper itself first
        // would orphan what it has not ended yet. Should it not exit (it cannot be signalled by the call's tools
        // from Landlock ABI 6 on), the tree is killed from here.
        try {
          process.kill(pid, "SIGTERM");
        } catch {}
        fallback ??= setTimeout(killShellTree, CALL_END_GRACE_MS);
      };
      try {
        if (limitMs !== undefined) {
          timer = setTimeout(() => {
            timedOut = true;
            end();
          }, limitMs);
        }
        child.stdout?.on("data", onData);
        child.stderr?.on("data", onData);
        if (signal) {
          if (signal.aborted) end();
          else signal.addEventListener("abort", end, { once: true });
        }
        const exitCode = await childProcess.waitForChildProcess(child);
        if (signal?.aborted) throw new Error("aborted");
        if (timedOut) throw new Error(`timeout:${timeout}`);
        return { exitCode };
      } finally {
        if (timer) clearTimeout(timer);
        if (fallback) clearTimeout(fallback);
        signal?.removeEventListener("abort", end);
      }
    },
  };
}
