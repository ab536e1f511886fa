// What a tool call does, as effects: the vocabulary every analysis reports in and the decision table reads
// (decision-table.ts). An effect has a kind (what the table is keyed by), optionally the path, destination or
// program it concerns, and a sentence for people (dialogs, the audit log, `explain`). No decision ever reads
// the sentence. The set of kinds seen is always complete; the list of effects kept for display is bounded.

/** Effect kinds, in the order `explain` lists their table rows. */
export const EFFECT_KINDS = [
  /** Any shell command (the floor `ask` and `read-only` put on bash). */
  "runs-shell",
  /** Reads or lists ordinary files. */
  "reads",
  /** Reads a credential: a credential file (by name, location, link or content), the environment, history or an archive holding one. */
  "reads-secret",
  /** Writes ordinary files. */
  "writes",
  /** Writes a file other programs run or obey later (rc, start-up and plug-in folders, hooks, /etc, PATH, credential-process settings). */
  "writes-runs-later",
  /** Writes files the gate cannot name (an archive it cannot list, a computed path, a pattern). */
  "writes-unlisted",
  /** Changes the gate itself: the policy, the gate's files, Pi's agent dir, a project's `.pi/`. */
  "changes-gate",
  /** May send data out: a push, publish, upload, a client sending data, a server or tunnel, a proxy or remote the command chose. */
  "sends",
  /** Runs local code the gate read and models (a script, recipe, package script, hook): its own effects are listed too. */
  "runs-file",
  /** Runs code the gate cannot model: a program not in the table, a language or construct the scans do not model, a tool configuration that runs code, code computed at run time. */
  "runs-unmodeled",
  /** The gate could not decide (a parse error, a bound or the time budget): anything may happen. */
  "undecidable",
  /** A tool that is not one of Pi's built-ins (an extension's or MCP's): its effects are unknown. */
  "custom-tool",
  /** The call cannot be decided on at all (malformed input, no parser, no path resolution): refused. */
  "malformed",
] as const;
export type EffectKind = (typeof EFFECT_KINDS)[number];

/** Why code counts as unmodeled (the decision names the case). */
export type UnmodeledCause =
  | "program"
  | "language"
  | "construct"
  | "config"
  | "computed"
  | "changed-before-run"
  | "dependencies";

export interface Effect {
  kind: EffectKind;
  /** The path, destination or program the effect concerns, when known. */
  subject?: string;
  /** For runs-unmodeled: which case of "cannot model" applied. */
  cause?: UnmodeledCause;
  /** For people only. */
  why: string;
}

/** The older, coarser vocabulary (audit lines and dialogs show it beside the effects); derived, never decided on. */
export const GATE_CLASSES = ["EXIT", "SECRET", "WRITE", "READ", "UNKNOWN", "TAMPER"] as const;
export type GateClass = (typeof GATE_CLASSES)[number];

const CLASSES_OF: Record<EffectKind, readonly GateClass[]> = {
  "runs-shell": [],
  reads: ["READ"],
  "reads-secret": ["SECRET"],
  writes: ["WRITE"],
  "writes-runs-later": ["WRITE", "EXIT"],
  "writes-unlisted": ["WRITE", "UNKNOWN"],
  "changes-gate": ["TAMPER"],
  sends: ["EXIT"],
  "runs-file": [],
  "runs-unmodeled": ["UNKNOWN", "EXIT", "SECRET"],
  undecidable: ["UNKNOWN", "EXIT", "SECRET"],
  "custom-tool": ["UNKNOWN"],
  malformed: ["UNKNOWN"],
};

export function classesOf(kinds: Iterable<EffectKind>): GateClass[] {
  const set = new Set<GateClass>();
  for (const kind of kinds) for (const cls of CLASSES_OF[kind]) set.add(cls);
  return GATE_CLASSES.filter((cls) => set.has(cls));
}

/** Effects kept for display per decision (every kind is always counted, whatever this bound). */
export const MAX_SHOWN_EFFECTS = 48;
const MAX_WRITTEN = 256;
/** More local programs than this in one command is not inspected one by one: unmodeled. */
export const MAX_LOCAL_CODE_RUNS = 16;

/**
 * What kind of local code a command runs (write, then run). The shell classifier only reports these; the
 * inspection (read the files bounded, classify or scan them, show them, record the vetted bytes) is a separate
 * step that consumes `Findings.localCode`.
 */
export const LOCAL_CODE_KINDS = [
  /** `bash x.sh`, `sh x.sh`, `source x.sh`, `. x.sh`: a shell script read by a shell. */
  "shell-script",
  /** `./x`, `bin/tool`, `/work/project/run`: a file executed directly (shebang script or binary). */
  "executable",
  /** `git commit`, `git merge`…: the hooks git runs (paths: `<dir>/<hook name>`; the hooks folder is git's). */
  "git-hooks",
  /** Any git command: the commands git's config makes it run (fsmonitor, pager, drivers…; paths: the directory). */
  "git-config",
  /** `python3 x.py`, `python -m pkg.mod` (a module found in the cwd). */
  "python",
  /** `node x.js`, `node --import ./x.mjs`, `tsx x.ts`, `deno run x.ts`, `bun x.ts`. */
  "node",
  "ruby",
  "perl",
  "php",
  /** Any other interpreter given a script file (lua, Rscript, …). */
  "interpreter",
  /** `make [targets]`: recipes of the Makefile make reads (paths: the makefile candidates). */
  "makefile",
  /** `npm test`, `npm run x`, `yarn x`, `pnpm x`, `bun run x`, `npm ci` (lifecycle scripts): package.json scripts. */
  "package-script",
  /** `just`, `task`, `rake`, `invoke`, `nox`, `tox`…: recipes from a task file. */
  "task-runner",
  /** `pytest`, `jest`, `vitest`, `go test`, `cargo test`, `node --test`…: test files found in the tree. */
  "test-runner",
] as const;
export type LocalCodeKind = (typeof LOCAL_CODE_KINDS)[number];

/** A command that runs code from local files. Reported by the shell classifier, refined by the inspection. */
export interface LocalCodeRun {
  kind: LocalCodeKind;
  /** The program as written (`npm`, `./x.sh`, `python3`). */
  program: string;
  /**
   * Absolute paths (lexically resolved against the directory the command runs in, `~` expanded; not
   * canonicalised, may not exist) of the files whose content runs: the script, the makefile candidates, the
   * package.json. Empty when the files are found at run time (test runners, task runners without a file flag).
   */
  paths: string[];
  /** Script, target or recipe names chosen on the command line (`npm run <t>`, `make <t…>`); lifecycle name for installs. */
  targets?: string[];
  /** When it runs, among the command's writes and runs (Findings.runStep); absent: after everything. */
  step?: number;
  /** The directory the command runs in (the session cwd, or where a literal `cd` led). */
  cwd: string;
  /** The files run only if they exist (git hooks): nothing to inspect or show when they are missing. */
  optional?: boolean;
}

/** Hands local-code findings to whoever inspects them; `classifyScript` scans shell text into the same findings. */
export interface LocalCodeInspection {
  findings: Findings;
  /** Classifies a shell script (a file's text, a package.json script, a Makefile recipe) one level deeper. */
  classifyScript(script: string, cwd: string, what: string): void;
}
export type LocalCodeHook = (run: LocalCodeRun, inspection: LocalCodeInspection) => void;

/** The effects of one tool call (or one script a command runs), as the analyses report them. */
export class Findings {
  /** Every kind seen, however many effects were reported. */
  readonly kinds = new Set<EffectKind>();
  /** Unmodeled causes seen (the decision names them). */
  readonly causes = new Set<UnmodeledCause>();
  /** The first effects, for people (bounded). */
  readonly effects: Effect[] = [];
  private readonly counts = new Map<EffectKind, number>();
  /** Local code the command runs, for the inspection step. */
  readonly localCode: LocalCodeRun[] = [];
  /**
   * Files the command itself writes, with the step of the first write (so local code it runs later may have
   * changed); bounded. A write or run inside a loop or function body has no place in the order: step 0 for a
   * write (before everything), Infinity for a run (after everything).
   */
  readonly written = new Map<string, number>();
  /** The first step at which it writes somewhere the gate cannot name (a pattern, a computed path, a tree). */
  writesUnknownAt: number | undefined;
  /** Inside loops or function bodies (set by the classifier while it walks one). */
  unordered = 0;
  private clock = 0;

  /** The step of a write happening now. */
  private writeStep(): number {
    return this.unordered > 0 ? 0 : ++this.clock;
  }

  /** The step of a run happening now. */
  runStep(): number {
    return this.unordered > 0 ? Number.POSITIVE_INFINITY : ++this.clock;
  }

  get writesUnknown(): boolean {
    return this.writesUnknownAt !== undefined;
  }

  /** It writes files the gate cannot name (a tree copy, an extraction, a checkout), without any other effect. */
  writesUnnamed(): void {
    const step = this.writeStep();
    if (this.writesUnknownAt === undefined || step < this.writesUnknownAt) this.writesUnknownAt = step;
  }

  /** Could `file` (canonical) have been written by this command before the run at `step`? */
  mayHaveWritten(file: string, step: number): boolean {
    if (this.writesUnknownAt !== undefined && this.writesUnknownAt < step) return true;
    for (const [written, at] of this.written) {
      if (at >= step) continue;
      if (written === file || file.startsWith(written.endsWith("/") ? written : `${written}/`)) return true;
    }
    return false;
  }

  /** The one place an effect is recorded. */
  record(effect: Effect): void {
    this.kinds.add(effect.kind);
    if (effect.cause) this.causes.add(effect.cause);
    this.counts.set(effect.kind, (this.counts.get(effect.kind) ?? 0) + 1);
    this.show(effect);
  }

  /** Everything another analysis found (a script a command runs), merged in: every kind, the effects shown. */
  merge(other: Findings, prefix?: string): void {
    for (const kind of other.kinds) {
      this.kinds.add(kind);
      this.counts.set(kind, (this.counts.get(kind) ?? 0) + other.count(kind));
    }
    for (const cause of other.causes) this.causes.add(cause);
    for (const effect of other.effects)
      this.show(prefix ? { ...effect, why: `${prefix}: ${effect.why}` } : effect);
  }

  private show(effect: Effect): void {
    if (effect.why === "" || this.effects.length >= MAX_SHOWN_EFFECTS) return;
    const same = (e: Effect) =>
      e.kind === effect.kind && e.why === effect.why && e.subject === effect.subject;
    if (!this.effects.some(same)) this.effects.push(effect);
  }

  count(kind: EffectKind): number {
    return this.counts.get(kind) ?? 0;
  }

  has(kind: EffectKind): boolean {
    return this.kinds.has(kind);
  }

  // ---- the analyzers' words for the kinds ----

  reads(subject?: string): void {
    this.record({ kind: "reads", why: "", ...(subject ? { subject } : {}) });
  }

  readsSecret(why: string, subject?: string): void {
    this.record({ kind: "reads-secret", why, ...(subject ? { subject } : {}) });
  }

  writes(why: string, subject?: string): void {
    this.record({ kind: "writes", why, ...(subject ? { subject } : {}) });
  }

  writesRunsLater(why: string, subject?: string): void {
    this.record({ kind: "writes-runs-later", why, ...(subject ? { subject } : {}) });
  }

  writesUnlisted(why: string, subject?: string): void {
    this.writesUnnamed();
    this.record({ kind: "writes-unlisted", why, ...(subject ? { subject } : {}) });
  }

  changesGate(why: string, subject?: string): void {
    this.record({ kind: "changes-gate", why, ...(subject ? { subject } : {}) });
  }

  sends(why: string, subject?: string): void {
    this.record({ kind: "sends", why, ...(subject ? { subject } : {}) });
  }

  /** Code the gate cannot model (`cause` says which case: "computed" when it cannot even see it). */
  unmodeled(cause: UnmodeledCause, why: string, subject?: string): void {
    this.record({ kind: "runs-unmodeled", cause, why, ...(subject ? { subject } : {}) });
  }

  /** Code the gate cannot see at all (eval, code from a pipe, a computed command name). */
  opaque(why: string): void {
    this.unmodeled("computed", why);
  }

  /** A bound, the time budget or the parser gave up: nothing about the command is known. */
  undecidable(why: string): void {
    this.record({ kind: "undecidable", why });
  }

  /** A file the command writes. */
  wrote(file: string): void {
    if (this.written.has(file)) return;
    if (this.written.size >= MAX_WRITTEN) this.writesUnnamed();
    else this.written.set(file, this.writeStep());
  }

  /** Records local code that will run (modeled until the inspection says otherwise); too many is unmodeled. */
  runsLocalCode(run: LocalCodeRun, why: string): void {
    run.step ??= this.runStep();
    if (!run.optional) this.record({ kind: "runs-file", why, subject: run.paths[0] ?? run.program });
    // The same run twice (`git add a; git add b` read git's config once) is inspected once.
    const same = (other: LocalCodeRun) =>
      other.kind === run.kind &&
      other.program === run.program &&
      other.cwd === run.cwd &&
      other.paths.join("\0") === run.paths.join("\0") &&
      (other.targets ?? []).join("\0") === (run.targets ?? []).join("\0");
    const earlier = this.localCode.find(same);
    if (earlier) {
      // Run again later: it sees every write before the later run.
      earlier.step = Math.max(earlier.step ?? Number.POSITIVE_INFINITY, run.step);
      return;
    }
    if (this.localCode.length >= MAX_LOCAL_CODE_RUNS) {
      this.unmodeled("construct", `runs more than ${MAX_LOCAL_CODE_RUNS} local scripts or programs`);
      return;
    }
    this.localCode.push(run);
  }

  /** The coarse classes (for display and the audit line). */
  classes(): GateClass[] {
    return classesOf(this.kinds);
  }

  /** The sentences of the effects kept, for people. */
  reasons(): string[] {
    return [...new Set(this.effects.map((e) => e.why).filter((why) => why !== ""))];
  }
}
