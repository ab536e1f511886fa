// The vocabulary every decision speaks: what a tool call might do, with human-readable reasons.
export const GATE_CLASSES = ["EXIT", "SECRET", "WRITE", "READ", "UNKNOWN", "TAMPER"] as const;
export type GateClass = (typeof GATE_CLASSES)[number];

const MAX_REASONS = 24;
const MAX_WRITTEN = 256;
/** More local programs than this in one command is not inspected one by one: opaque. */
export const MAX_LOCAL_CODE_RUNS = 16;

/**
 * What kind of local code a command runs (issue 10, class 7: write, then run). The shell classifier only
 * reports these; the inspection (read the files bounded, classify or scan them, show them, record the vetted
 * bytes) is a separate step that consumes `Findings.localCode`.
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

export class Findings {
  readonly classes = new Set<GateClass>();
  readonly reasons: string[] = [];
  /** Local code the command runs (class 7), for the inspection step. Until it refines them they count as plain. */
  readonly localCode: LocalCodeRun[] = [];
  /** Files the command itself writes (so local code it then runs may be new); bounded. */
  readonly written = new Set<string>();
  /** It writes somewhere the gate cannot name (a pattern, a computed path, a whole tree). */
  writesUnknown = false;

  /** A file the command writes. */
  wrote(file: string): void {
    if (this.written.size >= MAX_WRITTEN) this.writesUnknown = true;
    else this.written.add(file);
  }

  add(cls: GateClass, reason?: string): void {
    this.classes.add(cls);
    if (reason && this.reasons.length < MAX_REASONS && !this.reasons.includes(reason))
      this.reasons.push(reason);
  }

  /** Something the parser cannot see statically: count it as a possible exit and a possible secret read. */
  opaque(reason: string): void {
    this.add("UNKNOWN", reason);
    this.add("EXIT");
    this.add("SECRET");
  }

  /** Records local code that will run (plain local work until inspected); too many of them is opaque. */
  runsLocalCode(run: LocalCodeRun, reason: string): void {
    if (!run.optional) this.add("WRITE", reason);
    // The same run twice (`git add a; git add b` read git's config once) is inspected once.
    const same = (other: LocalCodeRun) =>
      other.kind === run.kind &&
      other.program === run.program &&
      other.cwd === run.cwd &&
      other.paths.join("\0") === run.paths.join("\0") &&
      (other.targets ?? []).join("\0") === (run.targets ?? []).join("\0");
    if (this.localCode.some(same)) return;
    if (this.localCode.length >= MAX_LOCAL_CODE_RUNS) {
      this.opaque(`runs more than ${MAX_LOCAL_CODE_RUNS} local scripts or programs`);
      return;
    }
    this.localCode.push(run);
  }

  has(cls: GateClass): boolean {
    return this.classes.has(cls);
  }

  /** Classes in a stable order (the order of GATE_CLASSES). */
  sortedClasses(): GateClass[] {
    return GATE_CLASSES.filter((cls) => this.classes.has(cls));
  }
}
