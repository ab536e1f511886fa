// git: the real subcommand after the global options; config that can run commands; network subcommands (a
// computed argument is an exit); subcommands whose options run programs (grep -O, difftool -x, rebase -x);
// hooks that subcommands run (class 7); operands that are file paths (diff --no-index, config -f).
import { type ParsedArgs, parseArgs } from "../shell-options.ts";
import type { Analyzer, ProgramCall, Scan } from "../shell-scan.ts";
import { type ShellWord, syntheticWord } from "../shell-words.ts";
import { distinct } from "./common.ts";
import { serverFinding } from "./servers.ts";

const GIT_GLOBAL_WITH_VALUE = new Set([
  "-C",
  "-c",
  "--git-dir",
  "--work-tree",
  "--namespace",
  "--exec-path",
  "--super-prefix",
  "--config-env",
  "--list-cmds",
  "--attr-source",
]);

/** Subcommands that only read the repository. */
export const GIT_READ_ONLY = new Set(
  distinct("read-only git subcommands", [
    "status",
    "log",
    "diff",
    "show",
    "grep",
    "blame",
    "annotate",
    "ls-files",
    "ls-tree",
    "rev-parse",
    "rev-list",
    "describe",
    "shortlog",
    "reflog",
    "version",
    "help",
    "cat-file",
    "show-ref",
    "merge-base",
    "name-rev",
    "for-each-ref",
    "diff-tree",
    "diff-files",
    "diff-index",
    "count-objects",
    "check-ignore",
    "check-attr",
    "check-ref-format",
    "check-mailmap",
    "whatchanged",
    "var",
    "range-diff",
    "verify-commit",
    "verify-tag",
    "verify-pack",
    "show-branch",
    "cherry",
    "get-tar-commit-id",
    "column",
    "fsck",
    "show-index",
    "ls-remote",
    "diagnose",
    "bugreport",
  ]),
);
/** Subcommands that can rewrite files in the work tree. */
const GIT_WORKTREE_WRITERS = new Set([
  "checkout",
  "switch",
  "merge",
  "pull",
  "reset",
  "restore",
  "stash",
  "apply",
  "am",
  "cherry-pick",
  "revert",
  "read-tree",
  "checkout-index",
  "sparse-checkout",
  "worktree",
  "mv",
  "bisect",
]);
/** Every subcommand git ships (the ones with special rules are handled before this set is consulted). */
const GIT_KNOWN = new Set(
  distinct("git subcommands", [
    ...GIT_READ_ONLY,
    "add",
    "commit",
    "checkout",
    "switch",
    "branch",
    "merge",
    "rebase",
    "reset",
    "stash",
    "tag",
    "init",
    "clone",
    "fetch",
    "pull",
    "rm",
    "mv",
    "restore",
    "cherry-pick",
    "revert",
    "worktree",
    "clean",
    "apply",
    "am",
    "format-patch",
    "bisect",
    "notes",
    "gc",
    "hash-object",
    "symbolic-ref",
    "update-ref",
    "mergetool",
    "difftool",
    "sparse-checkout",
    "maintenance",
    "prune",
    "repack",
    "stripspace",
    "interpret-trailers",
    "read-tree",
    "write-tree",
    "commit-tree",
    "update-index",
    "lfs",
    "submodule",
    "remote",
    "config",
    "archive",
    "bundle",
    "mailinfo",
    "mailsplit",
    "merge-file",
    "merge-tree",
    "mktag",
    "mktree",
    "pack-objects",
    "pack-refs",
    "prune-packed",
    "replace",
    "rerere",
    "unpack-objects",
    "update-server-info",
    "multi-pack-index",
    "commit-graph",
    "backfill",
    "refs",
    "hook",
    "fast-export",
    "fast-import",
    "index-pack",
    "unpack-file",
    "checkout-index",
    "merge-index",
    "merge-one-file",
    "patch-id",
    "shell",
    "fsmonitor--daemon",
    "citool",
    "gui",
    "gitk",
    "instaweb",
    "daemon",
    "credential",
    "credential-store",
    "credential-cache",
    "send-email",
    "request-pull",
    "svn",
    "p4",
    "cvsimport",
    "cvsexportcommand",
    "cvsserver",
    "imap-send",
    "push",
    "filter-branch",
    "upload-pack",
    "receive-pack",
    "upload-archive",
    "http-backend",
    "send-pack",
    "fetch-pack",
    "archimport",
    "quiltimport",
    "sh-i18n",
    "web--browse",
  ]),
);
/** Subcommands whose operands are working-tree files (written, removed or created). */
const GIT_FILE_OPERANDS = new Set([
  "add",
  "rm",
  "mv",
  "restore",
  "clean",
  "worktree",
  "checkout-index",
  "update-index",
]);

/** Network subcommands: literal arguments fetch; computed ones can carry data in a URL or ref name. */
const GIT_NETWORK = new Set([
  "clone",
  "fetch",
  "pull",
  "ls-remote",
  "submodule",
  "remote",
  "push",
  "archive",
  "lfs",
]);

/** Config keys that make git run programs, reach hosts or trust other config. */
export const GIT_EXEC_CONFIG =
  /^(alias\.|core\.(pager|hookspath|sshcommand|editor|fsmonitor|askpass|gitproxy|worktree|attributesfile|excludesfile)|pager\.|credential|url\.|remote\.|include|filter\.|diff\.|merge\.|gpg\.|sequence\.editor|http\.|https\.|sendemail\.|protocol\.|uploadpack\.|receivepack\.|transfer\.|submodule\.|uploadarchive\.|instaweb\.|web\.browser|browser\.|man\.|interactive\.difffilter|ssh\.|safe\.|init\.templatedir|clone\.|fetch\.|pull\.|push\.|lfs\.|mergetool\.|difftool\.|gc\.|maintenance\.)/i;
/** Config keys that only change how git prints or who commits. */
export const GIT_HARMLESS_CONFIG =
  /^(color\.|user\.(name|email)$|core\.quotepath$|core\.autocrlf$|core\.eol$|core\.filemode$|core\.ignorecase$|core\.whitespace$|advice\.|init\.defaultbranch$|log\.|format\.pretty$|column\.|i18n\.|commit\.verbose$|commit\.gpgsign$|tag\.sort$|branch\.sort$|status\.|blame\.|grep\.|help\.autocorrect$|rerere\.enabled$|feature\.manyfiles$)/i;

/** Hooks each subcommand runs (client side), for class 7 inspection. */
const GIT_HOOKS: Record<string, readonly string[]> = {
  commit: ["pre-commit", "prepare-commit-msg", "commit-msg", "post-commit"],
  merge: ["pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-merge"],
  pull: ["post-merge", "post-rewrite", "post-checkout"],
  checkout: ["post-checkout"],
  switch: ["post-checkout"],
  clone: ["post-checkout"],
  rebase: ["pre-rebase", "post-rewrite", "post-checkout"],
  am: ["applypatch-msg", "pre-applypatch", "post-applypatch"],
  "cherry-pick": ["prepare-commit-msg", "commit-msg", "post-commit"],
  revert: ["prepare-commit-msg", "commit-msg", "post-commit"],
  push: ["pre-push", "reference-transaction"],
  gc: ["pre-auto-gc"],
  worktree: ["post-checkout"],
};

interface GitGlobals {
  cwd?: ShellWord;
  subIndex: number;
}

/** A relative path operand of `git -C dir …` is relative to dir. */
function underDirectory(word: ShellWord, cwd: ShellWord | undefined): ShellWord {
  if (!cwd || word.text.startsWith("-") || word.text.startsWith("/") || word.text.startsWith("~"))
    return word;
  const base = cwd.text.replace(/\/+$/, "");
  const forms = word.forms.map((form) => `${base}/${form}`);
  return { ...word, text: forms[0] ?? "", forms, literal: word.literal && cwd.literal };
}

/**
 * The file an operand of a reading subcommand names: a path (`a/b`, `.env`, `~/x`), or the path part of a
 * `rev:path` blob name (`HEAD:.env`, `:.env`), whose content `git show` / `git cat-file` print.
 */
function pathOperand(word: ShellWord, cwd: ShellWord | undefined): ShellWord | undefined {
  const text = word.text;
  if (text.startsWith("-") || /^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return undefined;
  const blob = /^[^:\s]*:(.+)$/s.exec(text);
  if (blob?.[1]) {
    const forms = word.forms.map((form) => form.slice(form.indexOf(":") + 1));
    return underDirectory({ ...word, text: forms[0] ?? "", forms }, cwd);
  }
  if (text.includes("/") || text.startsWith(".") || text.startsWith("~")) return underDirectory(word, cwd);
  return undefined;
}

function globalOptions(call: ProgramCall, scan: Scan): GitGlobals | undefined {
  const f = scan.findings;
  const args = call.args;
  let cwd: ShellWord | undefined;
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i];
    if (!arg) break;
    if (!arg.literal) {
      f.opaque(`git option computed at run time (${arg.source})`);
      return undefined;
    }
    const text = arg.text;
    if (!text.startsWith("-")) break;
    const eq = text.indexOf("=");
    const [flag, inline] = eq === -1 ? [text, undefined] : [text.slice(0, eq), text.slice(eq + 1)];
    const value = inline !== undefined ? syntheticWord(inline) : args[i + 1];
    if (flag === "-c") {
      const setting = value?.text ?? "";
      if (!value?.literal) f.opaque("git -c with a value computed at run time");
      else if (!GIT_HARMLESS_CONFIG.test(setting))
        f.sends(`\`git -c ${setting.slice(0, 80)}\` can set aliases, hooks or a pager that run commands`);
    }
    if (flag === "--config-env") f.opaque("git --config-env sets config from an environment variable");
    if (flag === "--exec-path" && inline !== undefined)
      f.opaque("git --exec-path runs git commands from another directory");
    if (flag === "--git-dir" && value) gitDirectory(value, scan);
    if (flag === "--bare")
      f.sends("git --bare uses this directory as a repository (its config can run commands)");
    if (flag === "-C" && value)
      cwd =
        cwd && value.literal && !value.text.startsWith("/") && cwd.literal
          ? syntheticWord(`${cwd.text}/${value.text}`)
          : value;
    if (GIT_GLOBAL_WITH_VALUE.has(flag) && inline === undefined) i++;
  }
  return { cwd, subIndex: i };
}

/** `--git-dir X`, `GIT_DIR`: a repository other than the working tree's `.git` brings its own config. */
function gitDirectory(value: ShellWord, scan: Scan) {
  const base = value.text.replace(/\/+$/, "").split("/").at(-1);
  if (!value.literal || base !== ".git")
    scan.findings.sends(`git uses the repository at ${value.source} (its config and hooks can run commands)`);
}

function runsHooks(sub: string, rest: readonly ShellWord[], cwd: ShellWord | undefined, scan: Scan) {
  const hooks = GIT_HOOKS[sub];
  if (!hooks) return;
  if (rest.some((a) => a.text === "--no-verify" || (a.text === "-n" && sub === "commit"))) return;
  const root = cwd?.literal ? `${cwd.text.replace(/\/+$/, "")}/` : "";
  // The hooks folder is git's to find (the repository above, core.hooksPath): named by the directory git runs in.
  scan.localCode(
    "git-hooks",
    `git ${sub} (hooks)`,
    hooks.map((hook) => syntheticWord(`${root}${hook}`)),
    [sub],
    { optional: true },
  );
}

function config(rest: readonly ShellWord[], scan: Scan) {
  const f = scan.findings;
  const parsed = parseArgs(rest, {
    shortWithValue: "f",
    longWithValue: ["file", "blob", "type", "default", "comment", "value", "url"],
    abbreviations: true,
  });
  for (const file of parsed.values("f", "file")) {
    scan.path(file, "read");
  }
  if (rest.some((a) => !a.literal)) return f.opaque("git config with arguments computed at run time");
  const actions = new Set([
    "get",
    "get-all",
    "get-regexp",
    "get-urlmatch",
    "list",
    "set",
    "unset",
    "unset-all",
    "rename-section",
    "remove-section",
    "edit",
  ]);
  const operands = parsed.operands.map((o) => o.text);
  const action = actions.has(operands[0] ?? "") ? operands.shift() : undefined;
  const reading =
    ["get", "get-all", "get-regexp", "get-urlmatch", "list"].includes(action ?? "") ||
    parsed.has(
      "get",
      "get-all",
      "get-regexp",
      "get-urlmatch",
      "l",
      "list",
      "get-color",
      "get-colorbool",
      "show-origin",
      "show-scope",
      "name-only",
    );
  if (parsed.has("e", "edit") || action === "edit")
    return f.sends("git config --edit can set anything (aliases, hooks, pager)");
  const key = operands[0];
  const writesTo = parsed.values("f", "file")[0];
  if (writesTo && !reading) scan.path(writesTo, "write");
  if (reading) {
    if (
      operands.some((t) => /credential|token|password|extraheader|secret/i.test(t)) ||
      parsed.has("l", "list") ||
      action === "list"
    )
      f.readsSecret(
        "reads git config that can hold credentials (extraheader, credential helpers, tokens in URLs)",
      );
    return f.reads();
  }
  if (!key) return f.reads();
  if (!GIT_HARMLESS_CONFIG.test(key) || GIT_EXEC_CONFIG.test(key))
    f.sends(`\`git config ${key.slice(0, 80)}\` may set an alias, hook, pager or remote that runs or sends`);
  f.writes("git config writes configuration");
}

function grep(rest: readonly ShellWord[], scan: Scan, cwd: ShellWord | undefined) {
  const parsed = parseArgs(rest, {
    shortWithValue: "efABCm",
    longWithValue: [
      "regexp",
      "file",
      "after-context",
      "before-context",
      "context",
      "max-count",
      "max-depth",
      "threads",
      "open-files-in-pager",
      "color",
      "colour",
    ],
    abbreviations: true,
  });
  if (parsed.has("O", "open-files-in-pager"))
    return scan.findings.opaque("`git grep -O` runs a program on the matching files");
  for (const file of parsed.values("f", "file")) scan.path(file, "read");
  scan.findings.reads();
  // Tracked files can be credentials too (a committed `.env`): every git grep reads its tree like grep -r.
  const paths = parsed.has("e", "regexp", "f", "file") ? parsed.operands : parsed.operands.slice(1);
  const program = parsed.has("no-index", "untracked") ? "git grep --no-index" : "git grep";
  for (const path of paths.length ? paths : [underDirectory(syntheticWord("."), cwd)]) {
    if (path.text === "--") continue;
    scan.path(path, "read");
    scan.recursiveRead(path, program);
  }
}

function diff(sub: string, rest: readonly ShellWord[], scan: Scan) {
  const parsed: ParsedArgs = parseArgs(rest, {
    shortWithValue: "OSGlU",
    longWithValue: [
      "output",
      "relative",
      "src-prefix",
      "dst-prefix",
      "line-prefix",
      "word-diff-regex",
      "color-moved",
      "diff-algorithm",
      "anchored",
      "find-object",
      "ignore-matching-lines",
      "submodule",
      "ws-error-highlight",
      "rotate-to",
      "skip-to",
      "format",
      "pretty",
      "since",
      "until",
      "author",
      "committer",
      "grep",
      "date",
      "decorate-refs",
      "decorate-refs-exclude",
      "encoding",
      "notes",
    ],
    abbreviations: true,
  });
  for (const file of parsed.values("O")) scan.path(file, "read");
  for (const file of parsed.values("output")) scan.path(file, "write");
  if (parsed.has("ext-diff") && sub === "diff")
    scan.findings.writes("git diff --ext-diff runs the configured external diff");
  // Operands arrive as files where they name one (`a/b`, `.env`, the path of `HEAD:.env`); revisions are
  // checked too, harmlessly: a revision name is not a credential path.
  for (const operand of parsed.operands) if (operand.literal) scan.path(operand, "read");
  scan.findings.reads();
}

function remote(rest: readonly ShellWord[], scan: Scan) {
  const parsed = parseArgs(rest);
  const action = parsed.operands[0]?.text;
  if (action === undefined || ["show", "get-url", "prune", "update"].includes(action))
    return scan.findings.reads();
  scan.findings.sends(`\`git remote ${action}\` changes where git pushes or fetches`);
}

function submodule(rest: readonly ShellWord[], scan: Scan) {
  const parsed = parseArgs(rest, { stopAtOperand: true });
  const action = parsed.operands[0];
  if (action?.text === "foreach")
    return scan.findings.opaque("git submodule foreach runs a command in every submodule");
  // Submodules are fetched from the URLs .gitmodules names: a remote helper there runs a command.
  const modules = scan.config(".gitmodules");
  if (modules === null) return scan.findings.opaque("git submodule reads a .gitmodules the gate cannot read");
  if (modules && /^\s*url\s*=\s*(?:ext|fd)::/m.test(modules))
    return scan.findings.opaque("a submodule's URL is a remote helper that runs a command");
  scan.findings.writes("git submodule");
  scan.findings.writesUnnamed();
}

function rebase(rest: readonly ShellWord[], scan: Scan) {
  if (rest.some((t) => t.text === "-x" || t.text.startsWith("--exec") || /^-[a-zA-Z]*x/.test(t.text)))
    return scan.findings.opaque("git rebase --exec runs commands");
  scan.findings.writes("git rebase");
  scan.findings.writesUnnamed();
}

function clone(rest: readonly ShellWord[], scan: Scan) {
  const parsed = parseArgs(rest, {
    shortWithValue: "obucj",
    longWithValue: [
      "origin",
      "branch",
      "upload-pack",
      "template",
      "config",
      "depth",
      "shallow-since",
      "shallow-exclude",
      "reference",
      "reference-if-able",
      "separate-git-dir",
      "server-option",
      "jobs",
      "filter",
      "bundle-uri",
      "ref-format",
      "revision",
    ],
    abbreviations: true,
  });
  if (parsed.has("u", "upload-pack")) return scan.findings.opaque("git clone --upload-pack runs a program");
  if (parsed.has("template"))
    scan.findings.sends("git clone --template installs hooks from another directory");
  for (const setting of parsed.values("c", "config"))
    if (!setting.literal || !GIT_HARMLESS_CONFIG.test(setting.text))
      scan.findings.sends(`\`git clone -c ${setting.source}\` sets config that can run commands`);
  const [url, dir] = parsed.operands;
  if (url && /^(ext|fd)::/.test(url.text)) scan.findings.opaque("git remote helper runs a command");
  if (url && /^(\/|\.{0,2}\/|file:)/.test(url.text)) scan.path(url, "read");
  if (dir) scan.path(dir, "write");
  scan.findings.writes("git clone writes a repository");
  scan.findings.writesUnnamed();
}

// ---- content through the repository (history, index, stash, revisions) ----

/** Options that print file contents (patches) from log, show, whatchanged and diff. */
const PATCH_OPTION =
  /^(?:-p|-u|--patch|--patch-with-stat|--patch-with-raw|-c|--cc|--combined-all-paths|-m|--word-diff(?:=.*)?|--color-words(?:=.*)?|--full-diff|-U\d*|--unified(?:=\d+)?|--binary|--ext-diff|-L.+|--textconv|-W|--function-context)$/;
/** Options that make show and diff print names and counts only. */
const NAMES_ONLY =
  /^(?:--stat(?:=.*)?|--shortstat|--numstat|--dirstat(?:=.*)?|--name-only|--name-status|--summary|-s|--no-patch|--raw|--compact-summary|--check|--quiet|--exit-code)$/;
/** Options that walk every ref. */
const ALL_REFS =
  /^(?:--all|--branches(?:=.*)?|--tags(?:=.*)?|--remotes(?:=.*)?|--glob=.*|--reflog|-g|--walk-reflogs|--stdin|--alternate-refs)$/;

/** Operands before `--` (revisions or paths) and pathspecs after it; options and their known values skipped. */
function operandsAndPathspecs(rest: readonly ShellWord[], withValue: readonly string[] = []) {
  const dash = rest.findIndex((a) => a.text === "--");
  const before = dash === -1 ? rest : rest.slice(0, dash);
  const operands: ShellWord[] = [];
  for (let i = 0; i < before.length; i++) {
    const word = before[i] as ShellWord;
    if (word.text.startsWith("-")) {
      if (withValue.includes(word.text)) i++;
      continue;
    }
    operands.push(word);
  }
  return { operands, pathspecs: dash === -1 ? [] : rest.slice(dash + 1) };
}

const CONTENT_OPTIONS_WITH_VALUE = [
  "-n",
  "--max-count",
  "--skip",
  "-S",
  "-G",
  "--author",
  "--grep",
  "--since",
  "--until",
  "-o",
  "--output",
  "--format",
  "--pretty",
];

/** log, show, whatchanged, diff, format-patch: which repository content they print, if any. */
function repositoryContent(sub: string, rest: readonly ShellWord[], cwd: ShellWord | undefined, scan: Scan) {
  const texts = rest.map((a) => a.text);
  if (texts.includes("--no-index")) return;
  const patch = texts.some((t) => PATCH_OPTION.test(t));
  const namesOnly = texts.some((t) => NAMES_ONLY.test(t)) && !patch;
  const { operands, pathspecs } = operandsAndPathspecs(rest, CONTENT_OPTIONS_WITH_VALUE);
  // `rev:path` names one file (checked as a path elsewhere).
  const revisions = operands.filter((w) => !w.text.includes(":"));
  if (revisions.some((w) => !w.literal)) {
    scan.findings.readsSecret(`\`git ${sub}\` prints repository content named at run time`);
    return;
  }
  const names = revisions.map((w) => w.text);
  const all = texts.some((t) => ALL_REFS.test(t));
  switch (sub) {
    case "log":
    case "whatchanged":
      if (patch) scan.repositoryRead({ what: "history", operands: names, all }, pathspecs, cwd);
      return;
    case "show":
      // `show rev:path` prints that one file (checked as a path); with no other revision, no commit is shown.
      if (!namesOnly && (names.length > 0 || revisions.length === operands.length))
        scan.repositoryRead({ what: "commits", operands: names }, pathspecs, cwd);
      return;
    case "diff":
      if (!namesOnly) scan.repositoryRead({ what: "diff", operands: names }, pathspecs, cwd);
      return;
    case "format-patch":
      scan.repositoryRead({ what: "history", operands: names, all }, pathspecs, cwd);
      return;
    case "bundle":
      if (names[0] === "create")
        scan.repositoryRead({ what: "history", operands: names.slice(2), all }, pathspecs, cwd);
      return;
    case "cat-file":
      if (texts.some((t) => t === "--batch-all-objects" || /^--batch(?:-command)?(?:=.*)?$/.test(t)))
        scan.repositoryRead({ what: "all-objects" }, [], cwd);
      else if (texts.some((t) => t === "-p" || t === "blob") && revisions.length > 0)
        scan.repositoryRead({ what: "all-objects" }, [], cwd);
      return;
  }
}

const CHECKOUT_OPTIONS_WITH_VALUE = [
  "-b",
  "-B",
  "-c",
  "-C",
  "--orphan",
  "-m",
  "--strategy",
  "-s",
  "-X",
  "--strategy-option",
  "--onto",
  "-x",
];

/** `git apply` and `git am`: decided by the files the patches name (default -p1; `--directory` prefix). */
function patches(
  sub: string,
  rest: readonly ShellWord[],
  cwd: ShellWord | undefined,
  stdinFile: ShellWord | undefined,
  scan: Scan,
) {
  const texts = rest.map((a) => a.text);
  if (texts.some((t) => /^--(?:check|stat|numstat|summary|abort|skip|quit|show-current-patch)/.test(t)))
    return;
  const strip = texts.map((t) => /^-p(\d+)$/.exec(t)?.[1]).find((n) => n !== undefined);
  const directory = rest.find((a) => a.text.startsWith("--directory="));
  const into =
    directory && cwd?.literal !== false
      ? syntheticWord(
          `${cwd?.text ? `${cwd.text.replace(/\/+$/, "")}/` : ""}${directory.text.slice(12)}`,
          directory.literal,
        )
      : cwd;
  const files = operandsAndPathspecs(rest, ["-C", "--exclude", "--include", "--whitespace"]).operands;
  for (const file of files.length ? files : [undefined])
    scan.applyPatch(file ?? stdinFile, into, `git ${sub}`, strip === undefined ? 1 : Number(strip));
}

/** Subcommands that write a revision's files into the work tree, and the revisions they take. */
function worktreeWrites(sub: string, rest: readonly ShellWord[], cwd: ShellWord | undefined, scan: Scan) {
  const texts = rest.map((a) => a.text);
  const { operands, pathspecs } = operandsAndPathspecs(rest, CHECKOUT_OPTIONS_WITH_VALUE);
  switch (sub) {
    case "checkout":
    case "switch":
    case "merge":
    case "cherry-pick":
    case "revert":
    case "rebase":
      return scan.repositoryCheckout(operands, pathspecs, cwd);
    case "reset":
      if (texts.some((t) => /^--(?:hard|merge|keep)$/.test(t)))
        scan.repositoryCheckout(operands, pathspecs, cwd);
      return;
    case "restore": {
      const index = rest.findIndex(
        (a) => a.text.startsWith("--source=") || a.text === "-s" || a.text === "--source",
      );
      if (index === -1) return; // from the index: nothing but what the repository already holds
      const flag = rest[index];
      const source = flag?.text.startsWith("--source=")
        ? syntheticWord(flag.text.slice(9), flag.literal)
        : rest[index + 1];
      const staged =
        texts.some((t) => t === "--staged" || t === "-S") &&
        !texts.some((t) => t === "--worktree" || t === "-W");
      if (!source || staged) return;
      const files = pathspecs.length ? pathspecs : operands.filter((w) => w !== source);
      return scan.repositoryCheckout([source], files, cwd);
    }
    case "stash": {
      const action = operands[0]?.text;
      if (action === "pop" || action === "apply" || action === "branch")
        return scan.repositoryCheckout(
          [operands[action === "branch" ? 2 : 1] ?? syntheticWord("stash@{0}")],
          [],
          cwd,
        );
      if (
        action === "show" &&
        texts.some((t) => /^(?:-p|--patch|-u|--include-untracked|--only-untracked)$/.test(t))
      )
        return scan.repositoryRead(
          {
            what: "stash",
            operands: operands.slice(1).map((w) => w.text),
            untracked: texts.some((t) => /^(?:-u|--include-untracked|--only-untracked)$/.test(t)),
          },
          [],
          cwd,
        );
      return;
    }
  }
}

const git: Analyzer = (call, scan) => {
  const f = scan.findings;
  const globals = globalOptions(call, scan);
  if (!globals) return;
  const subWord = call.args[globals.subIndex];
  if (!subWord) return f.reads();
  if (!subWord.literal) return f.opaque(`git subcommand computed at run time (${subWord.source})`);
  const sub = subWord.text;
  const rest = call.args.slice(globals.subIndex + 1);
  if (GIT_NETWORK.has(sub) && rest.some((a) => !a.literal)) {
    f.sends(`\`git ${sub}\` with an argument computed at run time (data can leave in a URL or ref)`);
  }
  if (rest.some((a) => /^--(upload-pack|receive-pack|exec)(=|$)/.test(a.text)) && sub !== "rebase")
    f.opaque(`\`git ${sub}\` option runs a program`);
  for (const arg of rest) if (/^(ext|fd)::/.test(arg.text)) f.opaque("git remote helper runs a command");
  runsHooks(sub, rest, globals.cwd, scan);
  // Every git command obeys git's config, which can name commands (core.fsmonitor runs on `git status`).
  const root = globals.cwd?.literal ? globals.cwd.text : ".";
  // Credential helpers and ssh commands run only when git talks to a remote.
  const network = GIT_NETWORK.has(sub);
  // The URLs the command names (credential helpers scoped to a URL run only for it).
  const urls = network
    ? rest.filter((a) => a.literal && /^[a-z][a-z0-9+.-]*:\/\//i.test(a.text)).map((a) => a.text)
    : [];
  scan.localCode("git-config", network ? "git (network)" : "git", [syntheticWord(root)], urls, {
    optional: true,
  });
  repositoryContent(sub, rest, globals.cwd, scan);
  worktreeWrites(sub, rest, globals.cwd, scan);
  if (sub === "apply" || sub === "am") patches(sub, rest, globals.cwd, call.stdinFile, scan);
  switch (sub) {
    case "push":
    case "send-email":
    case "request-pull":
    case "svn":
    case "p4":
    case "imap-send":
    case "send-pack":
    case "cvsexportcommand":
      return f.sends(`\`git ${sub}\` sends commits to a remote`);
    case "daemon":
    case "instaweb":
    case "http-backend":
    case "upload-pack":
    case "receive-pack":
    case "upload-archive":
    case "shell":
    case "cvsserver":
      return serverFinding(scan, `git ${sub}`);
    case "credential":
    case "credential-store":
    case "credential-cache":
      return f.readsSecret(`\`git ${sub}\` reads stored credentials`);
    case "remote":
      return remote(rest, scan);
    case "config":
      return config(rest, scan);
    case "grep":
      return grep(
        rest.map((w) => underDirectory(w, globals.cwd)),
        scan,
        globals.cwd,
      );
    case "diff":
    case "log":
    case "show":
      return diff(
        sub,
        rest.map((w) => pathOperand(w, globals.cwd) ?? w),
        scan,
      );
    case "difftool":
    case "mergetool":
      if (
        rest.some(
          (a) =>
            a.text === "-x" ||
            a.text.startsWith("--extcmd") ||
            a.text.startsWith("--ext") ||
            /^-[a-zA-Z]*x/.test(a.text),
        )
      )
        return f.opaque(`\`git ${sub} -x\` runs a command`);
      return f.writes(`\`git ${sub}\` runs the configured tool`);
    case "lfs":
      if (rest[0]?.text === "push") return f.sends("`git lfs push` uploads objects");
      if (rest[0]?.text === "install") return f.sends("`git lfs install` writes git hooks and global config");
      return f.writes("git lfs");
    case "submodule":
      return submodule(rest, scan);
    case "rebase":
      return rebase(rest, scan);
    case "bisect":
      if (rest[0]?.text === "run") return scan.command(rest.slice(1), { stdinIsData: false });
      return f.writes("git bisect");
    case "filter-branch":
      return f.opaque("git filter-branch runs filter commands");
    case "maintenance":
      if (rest[0]?.text === "start" || rest[0]?.text === "register")
        return f.opaque("git maintenance schedules background jobs");
      return f.writes("git maintenance");
    case "hook":
      if (rest[0]?.text === "run" && rest[1])
        return scan.localCode("git-hooks", "git hook run", [syntheticWord(rest[1].text)]);
      return f.reads();
    case "archive": {
      if (rest.some((t) => t.text.startsWith("--remote"))) f.sends("git archive --remote contacts a remote");
      else {
        const archived = operandsAndPathspecs(rest, ["-o", "--output", "--format", "--prefix", "--add-file"]);
        scan.repositoryRead(
          { what: "tree", operands: archived.operands.slice(0, 1).map((w) => w.text) },
          [...archived.operands.slice(1), ...archived.pathspecs],
          globals.cwd,
        );
      }
      const output = rest.find((t) => t.text.startsWith("--output=") || t.text === "-o");
      if (output)
        scan.path(
          output.text === "-o"
            ? (rest[rest.indexOf(output) + 1] ?? output)
            : syntheticWord(output.text.slice(9), output.literal),
          "write",
        );
      return f.writes("git archive");
    }
    case "clone":
      return clone(rest, scan);
    case "init": {
      const parsed = parseArgs(rest, {
        longWithValue: [
          "template",
          "separate-git-dir",
          "object-format",
          "ref-format",
          "initial-branch",
          "shared",
        ],
        shortWithValue: "b",
        abbreviations: true,
      });
      if (parsed.has("template")) f.sends("git init --template installs hooks from another directory");
      for (const dir of parsed.operands) scan.path(dir, "write");
      return f.writes("git init");
    }
    case "commit":
    case "notes":
    case "tag": {
      const parsed = parseArgs(rest, {
        shortWithValue: "FCcmtu",
        longWithValue: [
          "file",
          "template",
          "reuse-message",
          "reedit-message",
          "message",
          "fixup",
          "squash",
          "author",
          "date",
          "cleanup",
          "trailer",
          "pathspec-from-file",
        ],
        abbreviations: true,
      });
      for (const file of parsed.values("F", "file", "t", "template", "pathspec-from-file"))
        scan.path(file, "read");
      return f.writes(`\`git ${sub}\` changes the repository`);
    }
    case "hash-object": {
      for (const file of parseArgs(rest, { shortWithValue: "t", longWithValue: ["path"] }).operands)
        scan.path(file, "read");
      return rest.some((a) => a.text === "-w") ? f.writes("git hash-object -w writes an object") : f.reads();
    }
  }
  if (!GIT_KNOWN.has(sub))
    return f.sends(`unknown git subcommand \`${sub}\` (may be an alias or a git-${sub} program)`);
  if (GIT_READ_ONLY.has(sub)) {
    for (const operand of rest) {
      const file = pathOperand(operand, globals.cwd);
      if (file) scan.path(file, "read");
    }
    return f.reads();
  }
  f.writes(`\`git ${sub}\` changes the repository`);
  // It may rewrite files in the work tree (a checkout, merge, stash, patch…): local code run after it may differ.
  if (GIT_WORKTREE_WRITERS.has(sub)) f.writesUnnamed();
  // Operands are files for these; for the rest (refs, remotes) only what follows `--` is.
  const dash = rest.findIndex((a) => a.text === "--");
  const files = GIT_FILE_OPERANDS.has(sub) ? rest : dash === -1 ? [] : rest.slice(dash + 1);
  for (const arg of files) if (!arg.text.startsWith("-")) scan.path(arg, "write");
};

/** `GIT_*` assignments (GIT_DIR, GIT_SSH_COMMAND…) go through the shared environment rule (shell-env.ts). */
/** `git-lfs <sub>` (what LFS filters in a repository's config run): the same as `git lfs <sub>`. */
const gitLfs: Analyzer = (call, scan) => {
  const sub = call.args.find((a) => !a.text.startsWith("-"));
  if (!sub) return scan.findings.reads();
  if (!sub.literal) return scan.findings.opaque(`git-lfs subcommand computed at run time (${sub.source})`);
  if (["push", "pre-push"].includes(sub.text)) return scan.findings.sends("`git-lfs push` uploads objects");
  if (["install", "update", "track", "untrack"].includes(sub.text))
    return scan.findings.writesRunsLater(`\`git-lfs ${sub.text}\` writes git hooks, attributes or config`);
  if (
    ["clean", "smudge", "filter-process", "pointer", "ls-files", "status", "env", "version"].includes(
      sub.text,
    )
  )
    return scan.findings.reads();
  scan.findings.writes(`\`git-lfs ${sub.text}\``);
};

export const GIT_ANALYZERS: Readonly<Record<string, Analyzer>> = { git, "git-lfs": gitLfs };
