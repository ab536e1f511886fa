// Path patterns that are the gate's own data (credential files, files other programs run later): ripgrep-style
// globs matched against the components of a canonical path. `*` and `?` stay inside one component; a final `**`
// means everything below a directory. Linear in the path's length times the pattern's: no backtracking blowup.

/**
 * A pattern's components, split once: the patterns are the rules' own data (a fixed set), matched against many
 * paths on every tool call. Bounded all the same, should a caller pass patterns of its own.
 */
const piecesCache = new Map<string, readonly string[]>();
function piecesOf(pattern: string, absolute = false): readonly string[] {
  const key = absolute ? `\0${pattern}` : pattern;
  let pieces = piecesCache.get(key);
  if (pieces === undefined) {
    if (piecesCache.size >= 4096) piecesCache.clear();
    const split = pattern.split("/");
    pieces = absolute ? split.filter((piece) => piece.length > 0) : split;
    piecesCache.set(key, pieces);
  }
  return pieces;
}

/** `pattern` (relative, `**` only as its last component) matches the last components of `parts`. */
export function matchesAtAnyDepth(pattern: string, parts: readonly string[]): boolean {
  const pieces = piecesOf(pattern);
  if (pieces.at(-1) === "**") {
    // Everything strictly below a directory matching the leading pieces, at any depth.
    const dirPieces = pieces.slice(0, -1);
    for (let start = 0; start + dirPieces.length < parts.length; start++) {
      if (dirPieces.every((piece, i) => matchComponent(piece, parts[start + i] ?? ""))) return true;
    }
    return false;
  }
  if (pieces.length > parts.length) return false;
  const offset = parts.length - pieces.length;
  // From the last component back: the file name is where most patterns already fail.
  for (let i = pieces.length - 1; i >= 0; i--) {
    if (!matchComponent(pieces[i] ?? "", parts[offset + i] ?? "")) return false;
  }
  return true;
}

/** An absolute pattern (`/run/secrets/**`, `/var/tmp/chat-ui-agent-*\/**`) anchored at /. */
export function matchesAbsolute(pattern: string, parts: readonly string[]): boolean {
  const pieces = piecesOf(pattern, true);
  if (pieces.at(-1) === "**") {
    const dirPieces = pieces.slice(0, -1);
    return (
      parts.length > dirPieces.length && dirPieces.every((piece, i) => matchComponent(piece, parts[i] ?? ""))
    );
  }
  return pieces.length === parts.length && pieces.every((piece, i) => matchComponent(piece, parts[i] ?? ""));
}

export function matchesAnyComponent(patterns: readonly string[], name: string): boolean {
  return patterns.some((pattern) => matchComponent(pattern, name));
}

/**
 * One path component against a pattern with `*` and `?` (no "/"), greedy with one backtrack point: O(n·m) at
 * worst, never exponential. Patterns here are the rules' own data, not input.
 */
export function matchComponent(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    const c = pattern[p];
    if (c === "?" || (c !== undefined && c !== "*" && c === text[t])) {
      p++;
      t++;
    } else if (c === "*") {
      star = p++;
      mark = t;
    } else if (star !== -1) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (pattern[p] === "*") p++;
  return p === pattern.length;
}
