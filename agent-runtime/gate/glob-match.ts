// Shell-style glob matching with a bounded worst case, for deciding whether a pattern (a shell word with `*`,
// `?`, `[...]`, or parts computed at run time) could name a protected or credential path.
//
// Semantics, chosen to over-match (the safe side for the gate): `*` matches any run of characters, `/` and a
// leading dot included; `?` any one character; `[...]` a class (`!` or `^` negates, `a-z` ranges; a class
// never matched is still one character). There is no escaping: the shell has already removed quotes, and a
// quoted `*` that stays literal can only make us match more.
//
// Why it cannot blow up: the pattern is compiled once into tokens (runs of `*` collapse into one). Matching
// walks text and pattern forwards and remembers only the most recent `*` (one restart point, as in
// https://research.swtch.com/glob). A mismatch resumes just after that star with the text one character
// further, so every restart moves the restart point right: at most |text| restarts, each re-reading at most
// the tokens after the star. Worst case O(|tokens| × |text|), with no recursion and no regular expressions.
// Patterns whose fixed tokens outnumber the text's characters are rejected before any walk, so a 1 MB pattern
// against a 100-character path costs one linear compile.

type Token =
  | { kind: "star" }
  | { kind: "one" }
  | { kind: "char"; char: string }
  | { kind: "class"; negated: boolean; ranges: Array<[string, string]> };

export interface CompiledGlob {
  tokens: Token[];
  /** Tokens that consume exactly one character (everything but stars). */
  fixed: number;
}

export function hasGlob(word: string): boolean {
  for (let i = 0; i < word.length; i++) {
    const c = word.charCodeAt(i);
    if (c === 42 /* * */ || c === 63 /* ? */ || c === 91 /* [ */) return true;
  }
  return false;
}

/** Linear in the pattern's length (a class is scanned once; an unclosed `[` ends all class scanning). */
export function compileGlob(pattern: string): CompiledGlob {
  const tokens: Token[] = [];
  let fixed = 0;
  let i = 0;
  // Once a `[` finds no closing `]`, no later one can: at most one failed scan, so compiling stays linear.
  let classesPossible = true;
  while (i < pattern.length) {
    const c = pattern.charAt(i);
    if (c === "*") {
      if (tokens.at(-1)?.kind !== "star") tokens.push({ kind: "star" });
      i++;
      continue;
    }
    fixed++;
    if (c === "?") {
      tokens.push({ kind: "one" });
      i++;
      continue;
    }
    if (c === "[" && classesPossible) {
      const parsed = parseClass(pattern, i);
      if (parsed) {
        tokens.push(parsed.token);
        i = parsed.next;
        continue;
      }
      classesPossible = false;
    }
    tokens.push({ kind: "char", char: c });
    i++;
  }
  return { tokens, fixed };
}

/** `[` at `start`: the class up to its closing `]` (a `]` right after `[` or `[!` is a member), or undefined. */
function parseClass(
  pattern: string,
  start: number,
): { token: Token & { kind: "class" }; next: number } | undefined {
  let i = start + 1;
  let negated = false;
  if (pattern.charAt(i) === "!" || pattern.charAt(i) === "^") {
    negated = true;
    i++;
  }
  const ranges: Array<[string, string]> = [];
  let first = true;
  while (i < pattern.length) {
    const c = pattern.charAt(i);
    if (c === "]" && !first) return { token: { kind: "class", negated, ranges }, next: i + 1 };
    first = false;
    if (pattern.charAt(i + 1) === "-" && i + 2 < pattern.length && pattern.charAt(i + 2) !== "]") {
      ranges.push([c, pattern.charAt(i + 2)]);
      i += 3;
    } else {
      ranges.push([c, c]);
      i++;
    }
  }
  return undefined; // no closing bracket: a literal "["
}

function matchesOne(token: Token, c: string): boolean {
  switch (token.kind) {
    case "one":
      return true;
    case "char":
      return token.char === c;
    case "class": {
      let inside = false;
      for (const [low, high] of token.ranges) {
        if (c >= low && c <= high) {
          inside = true;
          break;
        }
      }
      return inside !== token.negated;
    }
    default:
      return false;
  }
}

export function globMatchCompiled(glob: CompiledGlob, text: string): boolean {
  if (glob.fixed > text.length) return false;
  const { tokens } = glob;
  let p = 0;
  let t = 0;
  let starP = -1;
  let starT = -1;
  while (t < text.length || p < tokens.length) {
    const token = tokens[p];
    if (token) {
      if (token.kind === "star") {
        starP = p;
        starT = t;
        p++;
        continue;
      }
      if (t < text.length && matchesOne(token, text.charAt(t))) {
        p++;
        t++;
        continue;
      }
    }
    // Mismatch: let the last star swallow one more character, or fail.
    if (starP !== -1 && starT < text.length) {
      starT++;
      p = starP + 1;
      t = starT;
      continue;
    }
    return false;
  }
  return true;
}

/** Does `pattern` match the whole of `text`? */
export function globMatch(pattern: string, text: string): boolean {
  return globMatchCompiled(compileGlob(pattern), text);
}
