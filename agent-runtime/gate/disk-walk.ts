// What a pattern or a recursive read will really reach, read from the file system the command runs on, bounded.
// A rule's example locations (HOME, the working directory) cannot say whether `app/.??*` names `app/.env`, or
// whether `grep -r . .` meets `config/credentials.json` three folders down: the directories can. Both walks are
// iterative (a work list, never recursion), count every entry they read, and give up, as "incomplete", past their
// bounds or at a folder they cannot list: the caller then treats the read as one it cannot vouch for.
import { type Dirent, opendirSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { compileGlob, globMatchCompiled, hasGlob } from "./glob-match.ts";
import { expandBraces } from "./search-glob.ts";

/** Directory entries one walk may read (about 2–5 ms of system calls here). */
export const MAX_WALK_ENTRIES = 5_000;
/** Paths one pattern may expand to. */
export const MAX_EXPANSION_PATHS = 1_024;

export type Expansion = { paths: string[] } | { incomplete: string };

/**
 * The existing paths an absolute, normalised shell pattern can name, as bash expands it: one directory read per
 * globbed component. Over-matches on purpose (the safe side): `*` and `?` also match a leading dot, and `.` and
 * `..` are offered to any component pattern that matches them.
 */
export function expandOnDisk(pattern: string, tick: () => void): Expansion {
  const parts = pattern.split("/").filter((p) => p.length > 0);
  let current = ["/"];
  let entries = 0;
  for (const part of parts) {
    if (!hasGlob(part)) {
      current = current.map((dir) => path.join(dir, part));
      continue;
    }
    const glob = compileGlob(part);
    const next: string[] = [];
    for (const dir of current) {
      const listed = listDirectory(dir, MAX_WALK_ENTRIES - entries);
      if ("incomplete" in listed) return listed;
      entries += listed.entries.length;
      for (const name of [".", "..", ...listed.entries.map((e) => e.name)]) {
        tick();
        if (!globMatchCompiled(glob, name)) continue;
        next.push(path.join(dir, name));
        if (next.length > MAX_EXPANSION_PATHS) return { incomplete: "names too many files to check" };
      }
    }
    current = next;
  }
  return { paths: current };
}

export interface WalkOptions {
  /** Whether the reader enters hidden files and folders (`rg` and `ag` skip them by default). */
  hidden: boolean;
  /** The files the reader picks (ripgrep's own globs); others are never read, whatever they hold. */
  selects?: (file: string) => boolean;
}

export type WalkResult = { found: { file: string; why: string } } | { incomplete: string } | { clean: true };

/**
 * Every file below `root` (breadth first, at most MAX_WALK_ENTRIES entries), tested with `classify` until one is
 * sensitive. A symbolic link is tested by its target; a link to a folder is not followed, and counts as
 * incomplete, since some readers follow it (`grep -R`, `tar -h`, `cp -L`).
 */
export function findSensitiveBelow(
  root: string,
  options: WalkOptions,
  classify: (file: string) => string | undefined,
  tick: () => void,
): WalkResult {
  const queue = [root];
  let entries = 0;
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const listed = listDirectory(next, MAX_WALK_ENTRIES - entries);
    if ("incomplete" in listed) return listed;
    entries += listed.entries.length;
    for (const entry of listed.entries) {
      tick();
      if (!options.hidden && entry.name.startsWith(".")) continue;
      // A repository's own store holds no file a rule names (objects are compressed) and is large: skipped.
      if (entry.name === ".git" && entry.isDirectory()) continue;
      const file = path.join(next, entry.name);
      if (entry.isDirectory()) {
        queue.push(file);
        continue;
      }
      if (options.selects && !options.selects(file)) continue;
      const why = classify(file);
      if (why) return { found: { file, why } };
      if (entry.isSymbolicLink()) {
        const target = resolvedLink(file);
        if (target === undefined) continue; // dangling: nothing to read
        const targetWhy = classify(target.file);
        if (targetWhy) return { found: { file, why: targetWhy } };
        if (target.directory) return { incomplete: `${file} links to a folder (${target.file})` };
      }
    }
  }
  return { clean: true };
}

export type Listing = { entries: Dirent[] } | { incomplete: string };

/**
 * Every entry below `root` (files and folders, as paths relative to it; links not followed), breadth first, at
 * most MAX_WALK_ENTRIES, or why not: what a copy of that tree writes.
 */
export function listTree(root: string, tick: () => void): { entries: string[] } | { incomplete: string } {
  const out: string[] = [];
  const queue = [""];
  for (let relative = queue.shift(); relative !== undefined; relative = queue.shift()) {
    const listed = listDirectory(path.join(root, relative), MAX_WALK_ENTRIES - out.length);
    if ("incomplete" in listed) return listed;
    for (const entry of listed.entries) {
      tick();
      const child = relative ? `${relative}/${entry.name}` : entry.name;
      out.push(child);
      if (out.length > MAX_WALK_ENTRIES) return { incomplete: "holds more files than the gate can check" };
      if (entry.isDirectory()) queue.push(child);
    }
  }
  return { entries: out };
}

/** One directory's entries, or why not (unreadable, or more than `limit`). A missing directory lists nothing. */
export function listDirectory(dir: string, limit: number): Listing {
  const entries: Dirent[] = [];
  let handle: ReturnType<typeof opendirSync> | undefined;
  try {
    handle = opendirSync(dir);
    for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) {
      if (entries.length >= limit) return { incomplete: "holds more files than the gate can check" };
      entries.push(entry);
    }
    return { entries };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { entries: [] };
    return { incomplete: `cannot list ${dir} (${code ?? "error"})` };
  } finally {
    try {
      handle?.closeSync();
    } catch {
      // already closed
    }
  }
}

function resolvedLink(file: string): { file: string; directory: boolean } | undefined {
  try {
    const target = realpathSync(file);
    return { file: target, directory: statSync(target).isDirectory() };
  } catch {
    return undefined;
  }
}

/**
 * The files ripgrep's positive globs pick below `root`, over-matched (the safe side): a glob is tried on the
 * file's name, on its path from the root (with and without a leading "/"), and on its full path; `*` also
 * crosses "/". Undefined when the globs cannot be analysed (too many `{…}` alternatives): every file counts.
 */
export function globSelector(
  globs: readonly string[],
  caseInsensitive: boolean,
  root: string,
): ((file: string) => boolean) | undefined {
  const alternatives: string[] = [];
  for (const glob of globs) {
    const expanded = expandBraces(caseInsensitive ? glob.toLowerCase() : glob);
    if (!expanded) return undefined;
    alternatives.push(...expanded);
  }
  const compiled = alternatives.map((glob) => compileGlob(glob));
  return (file) => {
    const name = caseInsensitive ? file.toLowerCase() : file;
    const relative = path.relative(caseInsensitive ? root.toLowerCase() : root, name);
    const forms = [path.basename(name), relative, `/${relative}`, name];
    return compiled.some((glob) => forms.some((form) => globMatchCompiled(glob, form)));
  };
}
