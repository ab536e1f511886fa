// The supervisor of the one agent unit (Pi and its tool executor): an explicit state, the patch probes before
// anything is served, the watchdog, restarts through the restart policy, and the linger once no Pi will ever
// serve again. States: starting (probing; commands wait), running (serving), restarting (gone; another one
// follows), refused (failed the patch probe: nothing is served, the bridge exits after its linger), exited
// (gone for good: shutdown, or stdio mode where Pi is never restarted).
//
// Nothing the tools can do ends the bridge: a spawn failure (EAGAIN with the process table full) is retried,
// a crash loop keeps retrying with a long backoff and is reported, a hung Pi is killed and started again.
import type { Logger } from "../../agent-runtime/log.ts";
import { createProbeExchange } from "../../agent-runtime/pi-patch-behaviour.ts";
import type { ProbeVerdict } from "../../agent-runtime/pi-patch-probe.ts";
import type { AgentUnit, PiExitInfo } from "../pi-child.ts";
import type { HealthReason, PiStatus } from "../protocol.ts";
import { RestartPolicy } from "../restart-policy.ts";
import type { Clock, TimerHandle } from "./clock.ts";
import type { FrameSink } from "./frames.ts";
import type { PiLink } from "./pi-link.ts";
import { type HangReason, Watchdog, type WatchdogOptions } from "./watchdog.ts";

export type SupervisorState = PiStatus["state"];

export interface Report {
  reason: HealthReason;
  detail: string;
}

export interface SupervisorHooks {
  /** One stdout line of the Pi that runs now. */
  line(raw: string): void;
  /** A Pi passed its probes: release what waits. */
  serving(): void;
  /** The unit is gone: fail what it held (routes, dialogs, the running turn). */
  lost(): void;
  /** No Pi will serve soon: fail what waits, with this code. */
  unavailable(code: "agent_unverified" | "agent_exited", message: string): void;
  /** State or health changed. */
  changed(): void;
  /** Nothing in flight, no turn running (the watchdog's liveness check runs only then). */
  idle(): boolean;
  /** Pi's get_state data, from a probe or a liveness check. */
  noteState(data: unknown): void;
  /** Pi's session (agent_restarted names it). */
  sessionId(): string | null;
}

export interface SupervisorOptions {
  clock: Clock;
  link: PiLink;
  sink: FrameSink;
  log: Logger;
  hooks: SupervisorHooks;
  /** Starts a new unit on the current session; without it Pi is never restarted (stdio). */
  restart?: () => AgentUnit;
  restartPolicy?: RestartPolicy;
  watchdog?: Partial<WatchdogOptions>;
  /** How long to keep serving (replay) once no Pi will serve again; 0: shut down at once. */
  lingerMs: number;
  requestShutdown: (reason: string, exitCode?: number) => void;
}

export type StartCause = { kind: "agent_exited" | "bridge_restarted"; previous: PiExitInfo | null };

export class Supervisor {
  private unit: AgentUnit | undefined;
  private current: SupervisorState = "starting";
  private patched: boolean | null = null;
  private problem: string | null = null;
  /** A hang the watchdog reported, until a Pi serves again. */
  private hang: Report | null = null;
  private restartTimer: TimerHandle;
  private lingerTimer: TimerHandle;
  private shuttingDown = false;
  /** Units whose end was handled (an exit comes once, whether Pi's own or the one a kill implies). */
  private readonly ended = new WeakSet<AgentUnit>();
  private readonly policy: RestartPolicy;
  private readonly watchdog: Watchdog;
  private readonly options: SupervisorOptions;

  constructor(options: SupervisorOptions) {
    this.options = options;
    this.policy = options.restartPolicy ?? new RestartPolicy({}, () => options.clock.now());
    this.watchdog = new Watchdog(
      options.clock,
      {
        ping: (timeoutMs) => this.ping(timeoutMs),
        idle: () => options.hooks.idle(),
        slow: (detail) => this.report({ reason: "starting_too_long", detail }),
        hung: (reason, detail) => this.hung(reason, detail),
      },
      options.watchdog,
    );
  }

  get state(): SupervisorState {
    return this.current;
  }

  /** The unit bound now (for shutdown). */
  get agent(): AgentUnit | undefined {
    return this.unit;
  }

  /** Binds a started unit and proves it patched before anything is forwarded to it. */
  start(unit: AgentUnit, cause?: StartCause): void {
    const { link, log, hooks } = this.options;
    this.unit = unit;
    this.current = "starting";
    this.patched = null;
    link.connect(unit);
    unit.bind((raw) => hooks.line(raw), log);
    void unit.exited.then((exit) => this.onExit(unit, exit));
    this.watchdog.starting();
    void this.probe(unit).then((verdict) => {
      if (this.unit !== unit || this.current !== "starting" || verdict === undefined) return;
      if (verdict.ok) this.serve(unit, cause);
      else this.refuse(unit, verdict.reason);
    });
    hooks.changed();
  }

  /** Stops restarting and lingering; the unit is ended by the caller. */
  shutdown(): void {
    this.shuttingDown = true;
    this.watchdog.stop();
    this.options.clock.clear(this.restartTimer);
    this.options.clock.clear(this.lingerTimer);
  }

  /** Whether a command goes to Pi now, waits for the Pi that starts, or fails at once (code and message). */
  admission(): "forward" | "hold" | { code: "agent_unverified" | "agent_exited"; message: string } {
    switch (this.current) {
      case "running":
        return "forward";
      case "refused":
        return { code: "agent_unverified", message: this.problem ?? "refused" };
      case "exited":
        return { code: "agent_exited", message: "Pi is not running" };
      default:
        // Waiting makes sense only while a start can be expected soon.
        return this.policy.inCrashLoop
          ? { code: "agent_exited", message: this.health()?.detail ?? "Pi keeps exiting" }
          : "hold";
    }
  }

  /** Where the probe of the Pi bound now stands: early answers (early-answers.ts) wait on it. */
  verdict(): "pending" | "serving" | { code: "agent_unverified" | "agent_exited"; message: string } {
    if (this.current === "starting" && this.unit) return "pending";
    if (this.current === "running") return "serving";
    const admission = this.admission();
    return typeof admission === "object" ? admission : { code: "agent_exited", message: "Pi is restarting" };
  }

  /** Why Pi cannot serve as it should, or null. */
  health(): Report | null {
    if (this.current === "refused") return { reason: "refused", detail: this.problem ?? "refused" };
    if (this.current === "exited") return { reason: "agent_exited", detail: this.problem ?? "Pi exited" };
    if (this.hang) return this.hang;
    if (this.policy.inCrashLoop && this.current !== "running")
      return { reason: "crash_loop", detail: this.problem ?? "Pi keeps exiting" };
    return null;
  }

  /** True once a client need not wait for this start any longer (serving, refused, gone, or reported). */
  get settled(): boolean {
    return !(this.current === "starting" || this.current === "restarting") || this.health() !== null;
  }

  status(): PiStatus {
    const unit = this.unit;
    const exit = this.current === "exited" || this.current === "restarting" ? unit?.exitInfo : undefined;
    return {
      pid: unit?.pid ?? null,
      state: this.current,
      exit: exit ? { code: exit.code, signal: exit.signal } : null,
      patched: this.patched,
      problem: this.health()?.detail ?? null,
      restarts: this.policy.count,
    };
  }

  /** Drives the one patch-probe exchange (pi-patch-behaviour.ts) over the link, with the bridge's own ids. */
  private async probe(unit: AgentUnit): Promise<ProbeVerdict | undefined> {
    const { link, hooks } = this.options;
    const exchange = createProbeExchange(() => link.allocId());
    const complete = await new Promise<boolean>((resolve) => {
      for (const id of exchange.answerIds) {
        link.track(id, {
          kind: "internal",
          // No response: Pi went before completing the exchange (its exit or the watchdog handles it).
          resolve: (response) => {
            if (response === undefined) resolve(false);
            else if (exchange.accept(response)) resolve(true);
          },
        });
      }
      for (const line of exchange.lines) link.write(line);
    });
    // A probe Pi stayed silent on keeps no route.
    for (const id of exchange.answerIds) link.forget(id);
    if (!complete || this.unit !== unit) return undefined;
    const state = exchange.sentinelAnswer;
    if (state?.success === true) hooks.noteState(state.data);
    return exchange.verdict();
  }

  private serve(unit: AgentUnit, cause: StartCause | undefined): void {
    const { log, sink, hooks } = this.options;
    this.current = "running";
    this.patched = true;
    this.problem = null;
    this.hang = null;
    this.policy.served();
    this.watchdog.running();
    log.info({ pid: unit.pid }, "Pi passed the patch probes");
    if (cause) {
      sink.publish({
        type: "agent_restarted",
        cause: cause.kind,
        previous: cause.previous ? { code: cause.previous.code, signal: cause.previous.signal } : null,
        pid: unit.pid ?? null,
        restarts: this.policy.count,
        sessionId: hooks.sessionId(),
      });
    }
    hooks.serving();
    hooks.changed();
  }

  /** Fail closed: this Pi lacks the patched behaviour, so nothing is served through it. */
  private refuse(unit: AgentUnit, reason: string): void {
    const { log, sink, hooks } = this.options;
    this.current = "refused";
    this.patched = false;
    this.problem = `Pi failed the patch probe: ${reason}`;
    this.watchdog.stop();
    log.error({ reason }, "Pi failed the patch probe: refusing to serve");
    hooks.unavailable("agent_unverified", this.problem);
    sink.publish({ type: "agent_exited", code: null, signal: null, reason: `unverified: ${reason}` });
    void unit.terminate(1_000);
    this.finalExit(1, "Pi failed the patch probe");
    hooks.changed();
  }

  private onExit(unit: AgentUnit, exit: PiExitInfo): void {
    if (this.unit !== unit || this.ended.has(unit)) return;
    this.ended.add(unit);
    const { log, sink, hooks } = this.options;
    this.watchdog.stop();
    const wasRefused = this.current === "refused";
    hooks.lost();
    if (wasRefused) {
      hooks.changed();
      return;
    }
    if (this.shuttingDown || !this.options.restart) {
      this.current = "exited";
      this.problem = "Pi exited";
      sink.publish({ type: "agent_exited", code: exit.code, signal: exit.signal, reason: "exited" });
      if (!this.shuttingDown) {
        hooks.unavailable("agent_exited", "Pi exited");
        void unit.killTree();
        this.finalExit(0, "agent exited");
      }
      hooks.changed();
      return;
    }
    log.warn({ code: exit.code, signal: exit.signal, pid: unit.pid }, "Pi exited unexpectedly");
    // Its tools must not finish their side effects: end the whole tree, then start a new Pi on the session.
    const ended = unit.killTree().then(
      (result) => {
        if (result.found > 0) log.warn({ ...result }, "ended the tool processes Pi left behind");
      },
      (err: Error) => log.error({ err: err.message }, "ending Pi's tool processes failed"),
    );
    this.scheduleRestart(exit, ended, `Pi exited (${exit.signal ?? `code ${exit.code}`})`);
  }

  /** The next start, after the restart policy's delay (and after `before`, the old tree's end). */
  private scheduleRestart(exit: PiExitInfo, before: Promise<void>, why: string): void {
    const { clock, log, sink, hooks } = this.options;
    this.current = "restarting";
    const wasLooping = this.policy.inCrashLoop;
    const { delayMs, crashLoop } = this.policy.next();
    if (crashLoop) {
      const { maxRestarts, windowMs } = this.policy.options;
      this.problem = `${why}; more than ${maxRestarts} restarts within ${windowMs / 60_000} minutes: crash loop, next start in ${Math.round(delayMs / 1000)} s`;
      if (!wasLooping) {
        log.error({ delayMs }, "Pi is crash-looping: retrying with a long backoff");
        sink.publish({ type: "agent_exited", code: exit.code, signal: exit.signal, reason: "crash_loop" });
        hooks.unavailable("agent_exited", this.problem);
      }
    }
    hooks.changed();
    void before.then(() => {
      if (this.shuttingDown) return;
      this.restartTimer = clock.set(delayMs, () => this.spawn(exit));
    });
  }

  private spawn(previous: PiExitInfo): void {
    const { log, restart } = this.options;
    if (this.shuttingDown || !restart) return;
    let next: AgentUnit;
    try {
      next = restart();
    } catch (err) {
      // EAGAIN with the process table full, and the like: transient, retried through the same policy.
      const message = (err as Error).message;
      log.error({ err: message }, "starting Pi failed: retrying");
      this.scheduleRestart(previous, Promise.resolve(), `starting Pi failed: ${message}`);
      return;
    }
    log.info({ pid: next.pid, restarts: this.policy.count }, "Pi restarted");
    this.start(next, { kind: "agent_exited", previous });
  }

  private report(report: Report): void {
    if (this.current !== "starting" && this.current !== "running") return;
    this.hang = report;
    this.options.log.error({ reason: report.reason }, report.detail);
    this.options.hooks.changed();
  }

  /** The watchdog found Pi hung: reported, its whole tree killed; its exit starts the next one. */
  private hung(reason: HangReason, detail: string): void {
    const unit = this.unit;
    if (!unit || (this.current !== "starting" && this.current !== "running")) return;
    this.report({ reason, detail });
    // Its exit starts the next one; a Pi that does not even die of SIGKILL is left behind, not waited for.
    void unit.killTree().then(() => this.onExit(unit, unit.exitInfo ?? { code: null, signal: "SIGKILL" }));
  }

  private async ping(timeoutMs: number): Promise<boolean> {
    const response = await this.options.link.request({ type: "get_state" }, timeoutMs);
    if (response?.success === true) this.options.hooks.noteState(response.data);
    return response !== undefined;
  }

  /** No Pi will serve again: keep serving replay for the linger, then shut down (at once without one). */
  private finalExit(exitCode: number, reason: string): void {
    if (this.shuttingDown) return;
    const { clock, lingerMs, requestShutdown } = this.options;
    if (lingerMs <= 0) {
      requestShutdown(reason, exitCode);
      return;
    }
    clock.clear(this.lingerTimer);
    this.lingerTimer = clock.set(lingerMs, () => requestShutdown(`${reason}; linger over`, exitCode));
  }
}
