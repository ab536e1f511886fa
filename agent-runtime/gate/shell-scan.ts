// The small interface the shell classifier hands each program analyzer (agent-runtime/gate/analyzers/). Analyzers
// import only this module, shell-words.ts, shell-options.ts and effects.ts: nothing imports back into the
// classifier, so there is no cycle, and an analyzer can be tested with a recording Scan of its own.
import type { Findings, LocalCodeKind } from "./effects.ts";
import type { ShellWord } from "./shell-words.ts";

/** How a program uses a path operand. */
export type PathAccess =
  /** Prints, copies or sends the file's content (cat, cp, base64, tar c). */
  | "read"
  /** Looks at names, sizes or hashes only (ls, stat, wc, test, sha256sum). */
  | "stat"
  /** Creates or changes the file (redirection, tee, cp's destination, sed -i). */
  | "write"
  /** Removes it or moves it away (rm, mv's source, unlink). */
  | "delete"
  /** An operand of a program the gate has no entry for: it may read or write it. */
  | "operand";

/** One simple command, after the classifier has decoded its words. */
export interface ProgramCall {
  /** The name the analyzer table is keyed by (the command word's basename, version suffix kept). */
  name: string;
  /** The command word as written (`/usr/bin/git`, `./x.sh`, `python3.12`). */
  invokedAs: string;
  args: readonly ShellWord[];
  /** stdin carries data or code (a pipe, heredoc, here-string, or arguments xargs reads). */
  stdinIsData: boolean;
}

export interface NestedCommand {
  stdinIsData?: boolean;
  /** The nested command runs in another directory (`env -C dir`, `sudo -D dir`, `make -C dir`). */
  cwd?: ShellWord;
  /** It runs in this shell, not a child process (`time`, `command`, `builtin`, `!`): `cd` and assignments persist. */
  sameShell?: boolean;
  /** Variables it runs without: all (`env -i`, `exec -c`) or some (`env -u NAME`). */
  environment?: { cleared?: boolean; unset?: readonly ShellWord[] };
}

/** ripgrep's own globs, which come after our search excludes (the last matching glob wins). */
export interface SearchGlobs {
  globs: readonly ShellWord[];
  /** `--iglob` or `--glob-case-insensitive`. */
  caseInsensitive: boolean;
}

export interface Scan {
  readonly findings: Findings;
  /** The tools' HOME (what `~` means). */
  readonly home: string;
  /** The directory this command runs in (the session cwd, or where a literal `cd` led). */
  readonly cwd: string;
  /** Classifies words as a command of its own (a wrapper's payload: `sudo …`, `xargs …`, `find -exec …`). */
  command(words: readonly ShellWord[], options?: NestedCommand): void;
  /** Parses and classifies shell text one level deeper (`sh -c`, `eval`, `su -c`); computed text is opaque. */
  script(word: ShellWord | undefined, what: string, options?: NestedCommand): void;
  /**
   * An environment assignment (`VAR=x cmd`, `env VAR=x`, `sudo VAR=x`): one rule for every spelling. `persists`
   * when it stays in this shell (`! VAR=x`, `"export" VAR=x`): later commands see the value.
   */
  assignment(name: string, value: ShellWord | undefined, options?: { persists?: boolean }): void;
  /** Checks a path operand: credential files (SECRET), the gate's files (TAMPER), files run later (EXIT). */
  path(word: ShellWord, access: PathAccess): void;
  /**
   * A recursive content read rooted at `word` (grep -r, rg, tar c, cp -r, zip -r). `hidden: false` when the
   * program skips dotfiles (rg, ag without --hidden); `excludes` when it reads our search excludes (ripgrep
   * with its config), with the globs of its own that could bring a credential file back.
   */
  recursiveRead(
    word: ShellWord,
    program: string,
    options?: { hidden?: boolean; excludes?: SearchGlobs },
  ): void;
  /** A write whose file names the gate cannot list (archive extraction, tree copy) into directory `dir`. */
  treeWrite(dir: ShellWord | undefined, program: string): void;
  /** A directory tree copied or moved (cp -r, mv, rsync): checks what the source holds at its top level. */
  treeCopy(source: ShellWord, destination: ShellWord, program: string): void;
  /** The command runs code from local files (class 7): recorded for inspection, plain local work until then. */
  localCode(
    kind: LocalCodeKind,
    program: string,
    files: readonly ShellWord[],
    targets?: readonly string[],
    options?: { optional?: boolean },
  ): void;
  /** A variable now holds a value the gate cannot see (`read x`, `printf -v x`). */
  forget(variable: string): void;
  /** `cd`, `pushd`: later commands in this script run there. */
  chdir(word: ShellWord | undefined): void;
  /** The absolute path a literal word names (`~` expanded, relative to cwd); undefined when computed. */
  resolve(word: ShellWord): string | undefined;
  /** Whether something exists at `relative` (to the directory this command runs in); looks, never reads. */
  exists(relative: string): boolean;
}

/** An analyzer decides what one program does with its arguments; it reports through `scan`, never returns. */
export type Analyzer = (call: ProgramCall, scan: Scan) => void;
