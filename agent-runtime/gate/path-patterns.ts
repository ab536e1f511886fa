// Path patterns that are the gate's own data (credential files, files other programs run later): ripgrep-style
// globs matched against the components of a canonical path. `*` and `?` stay inside one component; a final `**`
// means everything below a directory. Linear in the path's length times the pattern's: no backtracking blowup.

/** `pattern` (relative, `**` only as its last component) matches the last components of `parts`. */
export function matchesAtAnyDepth(pattern: string, parts: readonly string[]): boolean {
  const pieces = pattern.split("/");
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
  return pieces.every((piece, i) => matchComponent(piece, parts[offset + i] ?? ""));
}

/** An absolute pattern (`/run/secrets/**`, `/var/tmp/chat-ui-agent-*\/**`) anchored at /. */
export function matchesAbsolute(pattern: string, parts: readonly string[]): boolean {
  const pieces = pattern.split("/").filter((p) => p.length > 0);
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
