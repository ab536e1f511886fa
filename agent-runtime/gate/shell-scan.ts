// The small interface the shell classifier hands each program analyzer (agent-runtime/gate/analyzers/). Analyzers
// import only this module, shell-words.ts, shell-options.ts and effects.ts: nothing imports back into the
// classifier, so there is no cycle, and an analyzer can be tested with a recording Scan of its own.
import type { Findings, LocalCodeKind } from "./effects.ts";
import type { ShellWord } from "./shell-words.ts";

/**
 * Which of a repository's content a git command prints or copies (repository-content.ts reads it). `operands`
 * are the command's words before `--`: revisions (`main`, `HEAD~2`, `a..b`) or, when they name none, paths.
 */
export type ContentRequest =
  /** Every commit reachable from the revisions (default HEAD; `all`: every ref), with its changes (`log -p`). */
  | { what: "history"; operands: readonly string[]; all: boolean }
  /** The revisions' own changes (default HEAD: `show`, `format-patch -1`). */
  | { what: "commits"; operands: readonly string[] }
  /** A diff: none → the index against the work tree or HEAD; one → that revision against them; two or a range. */
  | { what: "diff"; operands: readonly string[] }
  /** Every file of one revision (default HEAD: `archive`, `grep <rev>`). */
  | { what: "tree"; operands: readonly string[] }
  /** A stash's changes (default the newest), and its untracked files when asked (`stash show -p`). */
  | { what: "stash"; operands: readonly string[]; untracked: boolean }
  /** Every object, reachable or not (`cat-file --batch-all-objects`). */
  | { what: "all-objects" };

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
  /** The file stdin is redirected from (`patch < x.diff`), when a literal `<` gives one. */
  stdinFile?: ShellWord;
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

/** How members become paths when an archive is extracted. */
export interface ExtractOptions {
  /** Leading components removed (`--strip-components`). */
  strip?: number;
  /** Absolute member names kept (`tar -P`). */
  absolute?: boolean;
  /** Folders dropped, base names only (`unzip -j`). */
  junkPaths?: boolean;
  /** Name substitutions (`tar --transform`, `bsdtar -s`). */
  transforms?: readonly ShellWord[];
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
  /**
   * An archive extracted into `into` (default the working directory): decided by the paths its members land at
   * (archive-members.ts); an archive the gate cannot list is a tree write. `archive` undefined: read from stdin.
   */
  extractArchive(
    archive: ShellWord | undefined,
    into: ShellWord | undefined,
    program: string,
    options?: ExtractOptions,
  ): void;
  /** An archive's members printed (`tar -xO`, `unzip -p`): a read of the files inside. */
  printArchive(archive: ShellWord | undefined, program: string): void;
  /** A patch applied in `into` (default the working directory): decided by the files it names. */
  applyPatch(
    patch: ShellWord | undefined,
    into: ShellWord | undefined,
    program: string,
    strip?: number,
  ): void;
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
  /**
   * A small config file's text (`~/` is HOME, else relative to the directory this command runs in): undefined when
   * missing, null when it is not a regular file, too large or unreadable. Read bounded and non-blocking.
   */
  config(file: string): string | null | undefined;
  /**
   * A git command that prints or copies content from the repository rather than the work tree (history, the
   * index, a stash, a revision), limited to `pathspecs`; `where` is `git -C`'s folder. Judged by the files inside.
   */
  repositoryRead(request: ContentRequest, pathspecs: readonly ShellWord[], where?: ShellWord): void;
  /** A git command that writes these revisions' files into the work tree (checkout, reset, merge, stash pop). */
  repositoryCheckout(
    revisions: readonly ShellWord[],
    pathspecs: readonly ShellWord[],
    where?: ShellWord,
  ): void;
}

/** An analyzer decides what one program does with its arguments; it reports through `scan`, never returns. */
export type Analyzer = (call: ProgramCall, scan: Scan) => void;
