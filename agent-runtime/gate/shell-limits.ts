// The bounds every shell decision stays inside (issue 10, class 10): what is too big, too deep or too slow to
// inspect becomes UNKNOWN (a dialog in `auto` and `ask`, blocked in `read-only`), never a crash or a stall.

/**
 * Commands longer than this (UTF-16 units) are not parsed at all. tree-sitter can cancel a parse between
 * tokens but not inside one, and a single word, quoted string or heredoc body is one token: this bounds the
 * longest uncancellable step (about 8 ms for a 64 KiB word on an idle core).
 */
export const MAX_COMMAND_CHARS = 64 * 1024;
/**
 * Pipeline stages one script may have. tree-sitter-bash's parse of a long pipeline whose stages take options and
 * operands (`a -d x | a -d x | …`) grows quadratically, in steps the deadline cannot interrupt (a 1,024-stage one
 * spends ~50 ms in one step, a 4,000-stage one ~500 ms): past this bound the script is not parsed at all.
 */
export const MAX_PIPELINE_STAGES = 256;

/**
 * The pipe operators in a script, counted before parsing: every `|` outside quotes that is not part of `||`
 * (a linear scan; `|&` counts, a `|` inside `$(…)` or backquotes too). Over-counts are harmless (an unusual
 * script is asked about, never allowed by mistake).
 */
export function pipeOperators(script: string, stopAt: number): number {
  let count = 0;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < script.length; i++) {
    const c = script.charCodeAt(i);
    if (quote === "'") {
      if (c === 39) quote = undefined;
      continue;
    }
    if (c === 92) {
      i++; // a backslash quotes the next character (in double quotes, too, for what matters here)
      continue;
    }
    if (quote === '"') {
      if (c === 34) quote = undefined;
      continue;
    }
    if (c === 39) quote = "'";
    else if (c === 34) quote = '"';
    else if (c === 124) {
      if (script.charCodeAt(i + 1) === 124) {
        i++;
        continue;
      }
      if (++count > stopAt) return count;
    }
  }
  return count;
}

/** Scripts nested in scripts (`bash -c "bash -c …"`, `eval`, `su -c`) deeper than this are not followed. */
export const MAX_SCRIPT_DEPTH = 6;
/** Wrappers around wrappers (`sudo nice env timeout …`) deeper than this are not followed. */
export const MAX_WRAPPER_DEPTH = 24;
/** Syntax nested deeper than this (`$(` in `$(` …, subshells in subshells) is reported as too deep to trust. */
export const MAX_TREE_DEPTH = 128;
/** Work units per decision (a node, a word, a path check, 256 characters decoded), over every nested script. */
export const MAX_NODES = 400_000;
/**
 * Time budget for classifying one command (parse + walk + path checks + the local code it runs); the rest of a
 * decision is µs. It leaves room under the 50 ms target for the one step that cannot be interrupted (lexing a
 * single long token). Counted in this process's CPU time, so a decision does not depend on how busy the
 * machine is (a plain command must not turn "too complex" on a loaded host); WALL_CAP_MS bounds the wall time.
 */
export const TIME_BUDGET_MS = 25;
/** However the CPU time goes, a decision gives up past this much wall time. */
export const WALL_CAP_MS = 250;

/**
 * The CPU time (user + system) of this thread, in milliseconds. The whole process's time would count V8's
 * compiler and GC threads and the thread pool too: at a cold start or on a loaded host they made a plain
 * script "too complex to inspect in time" (seen in the unit suite).
 */
function cpuMs(): number {
  const used = process.threadCpuUsage();
  return (used.user + used.system) / 1000;
}

/** Thrown when a bound is hit; the classifier turns it into an opaque finding. */
export class InspectionLimit extends Error {}

/** Counts work and watches the clock; one per decision, shared by nested scripts. */
export class Budget {
  private readonly cpuStart: number;
  private readonly timeMs: number;
  private readonly wallStart: number;
  private readonly wallDeadline: number;
  /** CPU time is read (a system call) at most once per wall millisecond, and only once the budget could be spent. */
  private nextCpuCheck: number;
  private nodes = 0;
  private sinceClock = 0;
  private readonly maxNodes: number;

  constructor(timeMs: number = TIME_BUDGET_MS, maxNodes: number = MAX_NODES) {
    this.cpuStart = cpuMs();
    this.timeMs = timeMs;
    this.wallStart = performance.now();
    this.wallDeadline = this.wallStart + Math.min(WALL_CAP_MS, Math.max(timeMs, 0) * 8);
    // The main thread cannot use more CPU than wall time: nothing to check before `timeMs` have passed.
    this.nextCpuCheck = this.wallStart + timeMs;
    this.maxNodes = maxNodes;
  }

  /** `units` of work (nodes, words, path checks); the clock is read every 32 units. */
  tick(units = 1): void {
    this.nodes += units;
    if (this.nodes > this.maxNodes) throw new InspectionLimit("command too large to inspect");
    this.sinceClock += units;
    if (this.sinceClock >= 32) {
      this.sinceClock = 0;
      if (this.expired()) throw new InspectionLimit("command too complex to inspect in time");
    }
  }

  expired(): boolean {
    const now = performance.now();
    if (now > this.wallDeadline) return true;
    if (now < this.nextCpuCheck) return false;
    this.nextCpuCheck = now + 1;
    return this.cpuUsedMs() > this.timeMs;
  }

  /** The CPU time the deciding thread has used since the budget began (what `expired` charges). */
  cpuUsedMs(): number {
    return cpuMs() - this.cpuStart;
  }
}
