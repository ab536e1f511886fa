// What a git command reads or writes through the repository rather than the work tree (issue 19): history, the
// index, stashes and revisions count as reads of the files inside them, and a checkout, reset, merge or stash pop
// writes the files of a revision. Both are judged by paths, read from the repository's objects (git-objects.ts),
// within the decision's budget; whatever cannot be read within bounds is "unknown".
import path from "node:path";
import { gitRepository } from "./git-hooks.ts";
import {
  allRefs,
  changesOf,
  GitObjects,
  GitReadLimit,
  history,
  indexPaths,
  resolveRevision,
} from "./git-objects.ts";
import { isWithin, type PathContext } from "./path-context.ts";
import { tamperReasonFor } from "./protected-paths.ts";
import { sensitiveRuleByName } from "./sensitive-paths.ts";
import type { ContentRequest } from "./shell-scan.ts";

export type ContentVerdict = { found: string } | { clean: true } | { unknown: string };

/**
 * A credential file among the paths the request reaches (limited to `pathspecs`, when given), as `found`: "the
 * repository's history holds .env (environment file with secrets)".
 */
export function repositorySecret(
  start: string,
  ctx: PathContext,
  request: ContentRequest,
  pathspecs: readonly string[],
  tick: () => void,
): ContentVerdict {
  const repo = gitRepository(start, ctx);
  if ("unknown" in repo) return { unknown: repo.unknown };
  if ("repository" in repo) return { clean: true };
  if (request.what === "all-objects")
    return { found: "every object in the repository, reachable or not (deleted files' contents included)" };
  const root = repo.worktree;
  const limit = pathspecFilter(root, start, pathspecs);
  // A path limit that names only plain files (not folders): nothing else is printed, whatever history holds.
  if (limit.files?.every((file) => !secretAt(root, file, ctx))) return { clean: true };
  const objects = new GitObjects(repo.commonDir, tick);
  try {
    const refs = allRefs(repo.gitDir, repo.commonDir);
    const resolve = (name: string) => resolveRevision(objects, repo.gitDir, name, refs);
    const revision = (name: string) => {
      const id = resolve(name);
      if (!id) throw new GitReadLimit(`the gate cannot resolve the revision ${JSON.stringify(name)}`);
      return id;
    };
    // Operands that name a revision (or a range's ends) are revisions; the others are paths, as git reads them.
    const revisions: string[] = [];
    const extraPaths: string[] = [];
    for (const operand of request.operands) {
      const ends = operand.split(/\.{2,3}/);
      if (ends.length > 1) revisions.push(...ends.map((end) => (end === "" ? "HEAD" : end)));
      else if (resolve(operand.replace(/^\^/, ""))) revisions.push(operand.replace(/^\^/, ""));
      else extraPaths.push(operand);
    }
    const scope = extraPaths.length > 0 ? pathspecFilter(root, start, [...pathspecs, ...extraPaths]) : limit;
    const paths = new Set<string>();
    const addAll = (list: Iterable<string>) => {
      for (const file of list) paths.add(file);
    };
    const headTree = () => (refs.has("HEAD") ? objects.commit(revision("HEAD")).tree : undefined);
    switch (request.what) {
      case "history": {
        const tips = request.all
          ? [...new Set(refs.values())]
          : (revisions.length ? revisions : ["HEAD"]).map(revision);
        if (tips.length > 0) for (const commit of history(objects, tips)) addAll(changesOf(objects, commit));
        break;
      }
      case "commits":
        for (const name of revisions.length ? revisions : ["HEAD"])
          addAll(changesOf(objects, revision(name)));
        break;
      case "diff": {
        if (revisions.length >= 2) {
          const [from, to] = revisions as [string, string];
          objects.changed(objects.commit(revision(from)).tree, objects.commit(revision(to)).tree, paths);
        } else {
          // The index against the work tree or HEAD, and against the revision when one is given.
          addAll(indexPaths(repo.gitDir));
          if (revisions[0] !== undefined)
            objects.changed(objects.commit(revision(revisions[0])).tree, headTree(), paths);
        }
        break;
      }
      case "tree":
        addAll(objects.paths(objects.commit(revision(revisions[0] ?? "HEAD")).tree));
        break;
      case "stash": {
        const stash = revision(revisions[0] ?? "stash@{0}");
        addAll(changesOf(objects, stash));
        const untracked = objects.commit(stash).parents[2];
        if (request.untracked && untracked) addAll(objects.paths(objects.commit(untracked).tree));
        break;
      }
    }
    for (const file of paths) {
      tick();
      if (!scope.covers(file)) continue;
      const why = secretAt(root, file, ctx);
      if (why) return { found: `${file} (${why})` };
    }
    return { clean: true };
  } catch (error) {
    if (error instanceof GitReadLimit) return { unknown: error.message };
    throw error;
  } finally {
    objects.close();
  }
}

/**
 * The gate's own files among the paths a revision's checkout writes into the work tree (a project's `.pi/`, or
 * the policy, Pi's agent dir or the gate's install dir if the work tree holds them), limited to `pathspecs`.
 * `stash`: the stash's tree and its untracked files.
 */
export function revisionWritesGate(
  start: string,
  ctx: PathContext,
  revisions: readonly string[],
  pathspecs: readonly string[],
  tick: () => void,
): { tamper: string } | { clean: true } | { unknown: string } {
  const repo = gitRepository(start, ctx);
  if ("unknown" in repo) return { unknown: repo.unknown };
  if ("repository" in repo) return { clean: true };
  const root = repo.worktree;
  const protectedPaths = [
    path.join(ctx.cwd, ".pi"),
    path.join(root, ".pi"),
    ctx.policyPath,
    ctx.agentDir,
    ...ctx.gateDirs,
  ]
    .filter((file) => isWithin(file, root) && file !== root)
    .map((file) => path.relative(root, file));
  if (protectedPaths.length === 0) return { clean: true };
  const limit = pathspecFilter(root, start, pathspecs);
  const objects = new GitObjects(repo.commonDir, tick);
  try {
    const refs = allRefs(repo.gitDir, repo.commonDir);
    for (const name of revisions) {
      const id = resolveRevision(objects, repo.gitDir, name, refs);
      // Not a revision (a path, a new branch's name, a stash that does not exist): git takes nothing from it.
      if (!id) continue;
      const commit = objects.commit(id);
      // A stash also restores untracked files from its third parent.
      const trees = [
        commit.tree,
        ...(name.startsWith("stash") && commit.parents[2] ? [objects.commit(commit.parents[2]).tree] : []),
      ];
      for (const tree of trees) {
        for (const relative of protectedPaths) {
          if (!limit.covers(relative) && !limit.coversAncestorOf(relative)) continue;
          if (objects.lookup(tree, relative)) {
            const why = tamperReasonFor(path.join(root, relative), ctx) ?? "writes the gate's own files";
            return { tamper: `${name} holds ${relative}: ${why}` };
          }
        }
      }
    }
    return { clean: true };
  } catch (error) {
    if (error instanceof GitReadLimit) return { unknown: error.message };
    throw error;
  } finally {
    objects.close();
  }
}

/** The credential rule a repository path falls under (by name, where it would be in the work tree). */
function secretAt(root: string, file: string, ctx: PathContext): string | undefined {
  return sensitiveRuleByName(path.join(root, file), ctx)?.why;
}

interface PathLimit {
  /** Whether a repository path is inside the limit. */
  covers(file: string): boolean;
  /** Whether a folder above the path is inside the limit (a checkout of `dir` writes `dir/.pi/x`). */
  coversAncestorOf(file: string): boolean;
  /** When every pathspec names a plain file (no folder, no pattern): those files. */
  files?: string[];
}

/** Pathspecs (relative to where git runs) as a filter over repository paths; patterns or magic cover everything. */
function pathspecFilter(root: string, start: string, pathspecs: readonly string[]): PathLimit {
  const all: PathLimit = { covers: () => true, coversAncestorOf: () => true };
  if (pathspecs.length === 0) return all;
  const prefixes: string[] = [];
  for (const spec of pathspecs) {
    if (/[*?[]|^:/.test(spec)) return all;
    const absolute = path.resolve(start, spec);
    if (!isWithin(absolute, root)) continue;
    prefixes.push(path.relative(root, absolute));
  }
  const within = (file: string, prefix: string) =>
    prefix === "" || file === prefix || file.startsWith(`${prefix}/`);
  const limit: PathLimit = {
    covers: (file) => prefixes.some((prefix) => within(file, prefix)),
    coversAncestorOf: (file) => prefixes.some((prefix) => within(prefix, file) || within(file, prefix)),
  };
  // Plain files only when none is a folder (a trailing slash, ".", or an existing folder).
  if (prefixes.every((p) => p !== "" && !pathspecs.some((s) => s.endsWith("/")) && !looksLikeFolder(p)))
    limit.files = prefixes;
  return limit;
}

function looksLikeFolder(relative: string): boolean {
  return path.extname(relative) === "" || relative.endsWith("/");
}
