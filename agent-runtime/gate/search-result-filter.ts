// The backstop behind the search excludes: before a grep result reaches the model, every line that comes from a
// file the sensitive-path rules cover (by name, by location, or as a hard link to a known credential file) is
// withheld. It catches what the excludes and the glob check could miss (a file renamed into place between the
// decision and the search, an unforeseen glob). Pi's grep prints `path:line: text` (matches) and `path-line- text`
// (context), with paths relative to the searched folder; a path can itself contain ":12: ", so every split
// point is tried and a line is withheld if any reading of it names a credential file.
import { statSync } from "node:fs";
import path from "node:path";
import type { PathContext } from "./path-context.ts";
import { sensitiveRuleFor } from "./sensitive-paths.ts";

/** More candidate split points than this in one line: withhold it (a real path has a few at most). */
const MAX_SPLITS_PER_LINE = 16;
const SPLIT = /(?::\d+: |-\d+- )/g;

export interface FilteredText {
  text: string;
  withheld: number;
}

/**
 * Filters the text of one grep result. `root` is the canonical path the search ran on (the gate rewrote the
 * call's input.path to it). Lines that name no file (notices, "No matches found") pass.
 */
export function filterGrepText(text: string, root: string, ctx: PathContext): FilteredText {
  let rootIsDir: boolean;
  try {
    rootIsDir = statSync(root).isDirectory();
  } catch {
    rootIsDir = true; // gone: judge every reading as a path below it
  }
  const verdicts = new Map<string, boolean>();
  const sensitive = (relative: string): boolean => {
    let verdict = verdicts.get(relative);
    if (verdict === undefined) {
      const candidates = rootIsDir
        ? [path.resolve(root, relative)]
        : // A file search prints the file's basename: the file is the root itself.
          [root];
      verdict = candidates.some((file) => sensitiveRuleFor(file, ctx) !== undefined);
      verdicts.set(relative, verdict);
    }
    return verdict;
  };
  let withheld = 0;
  const kept: string[] = [];
  for (const line of text.split("\n")) {
    let splits = 0;
    let drop = false;
    for (const match of line.matchAll(SPLIT)) {
      if (++splits > MAX_SPLITS_PER_LINE || sensitive(line.slice(0, match.index))) {
        drop = true;
        break;
      }
    }
    if (drop) withheld++;
    else kept.push(line);
  }
  if (withheld === 0) return { text, withheld };
  kept.push(
    "",
    `[The approval gate withheld ${withheld} line(s) from credential files. Ask the person if you need them.]`,
  );
  return { text: kept.join("\n"), withheld };
}

type ContentPart = { type: string; text?: unknown };

/** Filters a tool result's content parts (text parts only; grep returns no others). */
export function filterGrepContent(
  content: readonly ContentPart[],
  root: string,
  ctx: PathContext,
): { content: ContentPart[]; withheld: number } {
  let withheld = 0;
  const filtered = content.map((part) => {
    if (part.type !== "text" || typeof part.text !== "string") return part;
    const result = filterGrepText(part.text, root, ctx);
    withheld += result.withheld;
    return result.withheld === 0 ? part : { ...part, text: result.text };
  });
  return { content: filtered, withheld };
}
