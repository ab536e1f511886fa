// What git runs besides the command itself, found as git finds it. Hooks: the repository that contains the
// directory (a `.git` folder or a gitfile, walking up as git does), its common dir for linked worktrees, and
// `core.hooksPath` from the config files git reads (system, global, repository, worktree). Husky and friends set
// `core.hooksPath`, so the hooks a plain `git commit` runs may be ordinary files in the working tree. Config the
// gate cannot follow (include directives, quoting or escapes in the value, files over 64 KB) is unknown.
// Commands in config: `core.fsmonitor` runs on a plain `git status`, pagers, editors, ssh commands, credential
// helpers, filter/diff/merge drivers and `!` aliases run on other commands; each value is a shell command.
import { statSync } from "node:fs";
import path from "node:path";
import { readBounded } from "./bounded-read.ts";
import type { PathContext } from "./path-context.ts";

const MAX_CONFIG_BYTES = 64 * 1024;
const MAX_LEVELS = 64;

export type HooksDir = { dir: string } | { unknown: string } | { repository: false };

/**
 * `find`, answered once per folder and decision: a context is built per tool call, so nothing outlives the
 * decision that looked (a command's many writes into one folder look once).
 */
function oncePerDecision<T>(find: (start: string, ctx: PathContext) => T) {
  const answers = new WeakMap<PathContext, Map<string, T>>();
  return (start: string, ctx: PathContext): T => {
    let known = answers.get(ctx);
    if (!known) {
      known = new Map();
      answers.set(ctx, known);
    }
    if (known.has(start)) return known.get(start) as T;
    const found = find(start, ctx);
    if (known.size < 256) known.set(start, found);
    return found;
  };
}

export const gitHooksDir: (start: string, ctx: PathContext) => HooksDir = oncePerDecision((start, ctx) =>
  findHooksDir(start, ctx),
);

/** The config files git reads, in its order (system, global, repository, worktree); no repository: the first three. */
function configFiles(repo: Repository, ctx: PathContext): string[] {
  return [
    "/etc/gitconfig",
    path.join(ctx.home, ".config", "git", "config"),
    path.join(ctx.home, ".gitconfig"),
    ...("commonDir" in repo
      ? [path.join(repo.commonDir, "config"), path.join(repo.gitDir, "config.worktree")]
      : []),
  ];
}

export interface ConfiguredCommand {
  file: string;
  key: string;
  command: string;
}

/** Keys whose value git runs as a shell command (or as a program: a credential helper path, gpg.program). */
const COMMAND_KEYS =
  /^(?:core\.(?:fsmonitor|pager|editor|sshcommand|askpass|gitproxy)|pager\..+|sequence\.editor|gpg(?:\..+)?\.program|credential(?:\..+)?\.helper|filter\..+\.(?:clean|smudge|process)|diff\..+\.(?:textconv|command)|merge\..+\.driver|alias\..+|remote\..+\.(?:uploadpack|receivepack)|uploadpack\.packobjectshook|core\.hookspath)$/;
const BOOLEAN = /^(?:true|false|yes|no|on|off|1|0|)$/i;
/** Keys git uses only when it talks to a remote (fetch, push, clone…). */
const NETWORK_ONLY_KEYS =
  /^(?:credential(?:\..+)?\.helper|core\.(?:sshcommand|gitproxy)|remote\..+\.(?:uploadpack|receivepack)|uploadpack\.packobjectshook)$/;

/**
 * Every command git may run from its config for a command in `start` (the hooks folder apart): the values of
 * COMMAND_KEYS in every config file git reads. Aliases count only when they run a shell (`!…`); credential
 * helpers without `!` are git's own (`store`, `cache`) or a program git runs by name or path.
 */
export function gitConfiguredCommands(
  start: string,
  ctx: PathContext,
  options: { network: boolean; urls?: readonly string[] } = { network: true },
): { commands: ConfiguredCommand[] } | { unknown: string } {
  const repo = repositoryOf(start, ctx);
  if ("unknown" in repo) return repo;
  const commands: ConfiguredCommand[] = [];
  const parsed: Array<{ file: string; entries: ConfigEntry[] }> = [];
  for (const file of configFiles(repo, ctx)) {
    const text = readSmall(file);
    if (text === undefined) continue;
    if (text === null) return { unknown: `${file} cannot be read or is larger than the gate reads` };
    const entries = configEntries(text);
    if ("unknown" in entries) return { unknown: `${file} ${entries.unknown}` };
    parsed.push({ file, entries: entries.entries });
  }
  // The URLs git may talk to: the command's own, and every remote the config names. A credential helper scoped to
  // a URL (`credential.https://host.helper`) runs only for URLs under that scope.
  const urls = [
    ...(options.urls ?? []),
    ...parsed.flatMap(({ entries }) =>
      entries.filter((e) => /^remote\..+\.(?:url|pushurl)$/.test(e.key)).map((e) => e.value),
    ),
  ];
  for (const { file, entries } of parsed) {
    for (const { key, value } of entries) {
      // A remote through git's `ext::` helper runs a command to talk to it; `fd::` hands git a descriptor.
      if (options.network && /^remote\..+\.(?:url|pushurl)$/.test(key) && /^(?:ext|fd)::/.test(value))
        commands.push({ file, key, command: value.startsWith("ext::") ? value.slice(5) : "false #fd" });
      if (!COMMAND_KEYS.test(key) || key === "core.hookspath" || BOOLEAN.test(value)) continue;
      if (!options.network && NETWORK_ONLY_KEYS.test(key)) continue;
      const scope = /^credential\.(.+)\.helper$/.exec(key)?.[1];
      if (scope && /^[a-z][a-z0-9+.-]*:\/\//i.test(scope) && !urls.some((url) => urlInScope(url, scope)))
        continue;
      if (key.startsWith("alias.") && !value.startsWith("!")) continue;
      const command = value.startsWith("!")
        ? value.slice(1)
        : key.includes("credential")
          ? `git-credential-${value}`
          : value;
      if (
        key.includes("credential") &&
        !value.startsWith("!") &&
        /^(?:store|cache|manager|osxkeychain|libsecret)\b/.test(value)
      )
        continue;
      commands.push({ file, key, command });
    }
  }
  return { commands };
}

/** git's credential URL matching, by prefix of scheme, host and path (case-insensitive scheme and host). */
function urlInScope(url: string, scope: string): boolean {
  const normal = (u: string) =>
    u.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/]*)/i, (m) => m.toLowerCase()).replace(/\/+$/, "");
  const target = normal(url);
  const prefix = normal(scope);
  return target === prefix || target.startsWith(`${prefix}/`);
}

interface ConfigEntry {
  /** `section.subsection.key`, section and key in lower case. */
  key: string;
  /** The value as git reads it (a fully quoted plain value unquoted). */
  value: string;
  /** The value as written in the file. */
  written: string;
}

/** `section.subsection.key = value` entries of a config text (values unquoted only when plain). */
function configEntries(text: string): { entries: ConfigEntry[] } | { unknown: string } {
  const entries: ConfigEntry[] = [];
  let section = "";
  for (const raw of text.split("\n")) {
    let line = raw.trim();
    const header = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"([^"\n]*)")?\s*\]/.exec(line);
    if (header) {
      const name = (header[1] ?? "").toLowerCase();
      if (name === "include" || name === "includeif")
        return { unknown: "includes other config files, which the gate does not follow" };
      section = header[2] !== undefined ? `${name}.${header[2]}` : name;
      line = line.slice(header[0].length).trim();
    } else if (line.startsWith("[")) {
      return { unknown: "has a section header the gate cannot read" };
    }
    if (line === "" || line.startsWith("#") || line.startsWith(";") || !section) continue;
    const entry = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$/.exec(line);
    if (!entry) return { unknown: "has a line the gate cannot read" };
    const written = (entry[2] ?? "").trim();
    let value = written;
    // git joins a line ending in "\\" with the next and unquotes "…": seen as a whole or not at all.
    if (/\\$/.test(value)) return { unknown: "continues a value over several lines" };
    if (/^"[^"\\]*"$/.test(value)) value = value.slice(1, -1);
    if (/["\\]/.test(value)) return { unknown: "quotes or escapes a value in ways the gate does not undo" };
    entries.push({ key: `${section}.${(entry[1] ?? "").toLowerCase()}`, value, written });
  }
  return { entries };
}

function findHooksDir(start: string, ctx: PathContext): HooksDir {
  const repo = repositoryOf(start, ctx);
  if ("unknown" in repo || "repository" in repo) return repo;
  const files = configFiles(repo, ctx);
  let hooksPath: string | undefined;
  for (const file of files) {
    const text = readSmall(file);
    if (text === undefined) continue;
    if (text === null) return { unknown: `${file} cannot be read or is larger than the gate reads` };
    const found = coreHooksPath(text);
    if ("unknown" in found) return { unknown: `${file} ${found.unknown}` };
    if (found.value !== undefined) hooksPath = found.value;
  }
  if (hooksPath === undefined) return { dir: path.join(repo.commonDir, "hooks") };
  const expanded = hooksPath.startsWith("~/") ? path.join(ctx.home, hooksPath.slice(2)) : hooksPath;
  return { dir: path.resolve(repo.worktree, expanded) };
}

type Repository =
  | { worktree: string; gitDir: string; commonDir: string }
  | { unknown: string }
  | { repository: false };

const repositoryOf = oncePerDecision((start) => findRepository(start));

/** The repository git finds from `start` (worktree, git dir, common dir), once per decision. */
export function gitRepository(
  start: string,
  ctx: PathContext,
): { worktree: string; gitDir: string; commonDir: string } | { unknown: string } | { repository: false } {
  return repositoryOf(start, ctx);
}

/** The nearest `.git` at or above `start` (a folder, or a gitfile naming one), as git discovers it. */
function findRepository(start: string): Repository {
  let dir = path.resolve(start);
  for (let level = 0; level < MAX_LEVELS; level++) {
    const dotGit = path.join(dir, ".git");
    const kind = fileKind(dotGit);
    if (kind === "directory") return { worktree: dir, gitDir: dotGit, commonDir: commonDirOf(dotGit) };
    if (kind === "file") {
      const text = readSmall(dotGit);
      const target = text ? /^gitdir:\s*(.+?)\s*$/m.exec(text)?.[1] : undefined;
      if (!target) return { unknown: `${dotGit} is a gitfile the gate cannot read` };
      const gitDir = path.resolve(dir, target);
      return { worktree: dir, gitDir, commonDir: commonDirOf(gitDir) };
    }
    const parent = path.dirname(dir);
    if (parent === dir) return { repository: false };
    dir = parent;
  }
  return { unknown: "the folder is nested too deep to find its repository" };
}

/** A linked worktree's git dir names the shared one in `commondir` (hooks and config live there). */
function commonDirOf(gitDir: string): string {
  const text = readSmall(path.join(gitDir, "commondir"));
  return typeof text === "string" && text.trim() ? path.resolve(gitDir, text.trim()) : gitDir;
}

/** The last `core.hooksPath` a config text sets; one given with quoting or a comment is unknown. */
export function coreHooksPath(text: string): { value?: string } | { unknown: string } {
  const parsed = configEntries(text);
  if ("unknown" in parsed) return parsed;
  let value: string | undefined;
  for (const entry of parsed.entries) {
    if (entry.key !== "core.hookspath") continue;
    if (/["\\#;]/.test(entry.written)) return { unknown: "sets core.hooksPath with quoting or comments" };
    value = entry.value;
  }
  return value === undefined ? {} : { value };
}

function fileKind(file: string): "directory" | "file" | undefined {
  try {
    // No exception for a missing entry: most folders on the way up have no `.git`, and throwing is slow.
    const stat = statSync(file, { throwIfNoEntry: false });
    return stat?.isDirectory() ? "directory" : stat?.isFile() ? "file" : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A small text file; undefined when missing, null when it is not a regular file, cannot be read or is larger than
 * the bound (opened non-blocking: a FIFO planted as a config file never hangs the gate).
 */
function readSmall(file: string): string | null | undefined {
  const read = readBounded(file, MAX_CONFIG_BYTES);
  if (read.ok) return read.bytes.toString("utf8");
  return read.reason === "missing" ? undefined : null;
}
