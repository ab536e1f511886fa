// Could the grep tool's own `glob` select a credential file? Pi passes it to ripgrep as `--glob`, after our
// exclude config, and in ripgrep the last matching glob wins: a positive glob that matches a credential file
// brings it back into the search. This module answers the question exactly enough to be safe and without
// backtracking: each glob becomes a small NFA over characters (ripgrep/gitignore syntax: `*`, `?`, `[…]`,
// `{a,b}`, `**`, `\` escapes), and two globs intersect when their product automaton reaches acceptance
// (a breadth-first walk over pairs of states: time ∝ |glob| × |pattern|, no recursion over input).
// Over-approximations, all towards "could match": a glob with a "/" is matched at any depth (ripgrep anchors it
// at its working directory), `*` stays within one component, a trailing "/" means everything below.

/** Longer globs, or more brace alternatives than this, are not analysed: they count as matching anything. */
export const MAX_GLOB_CHARS = 128;
export const MAX_ALTERNATIVES = 64;

type CharSet =
  | { kind: "lit"; cp: number }
  | { kind: "component" } // any character but "/"
  | { kind: "all" }
  | { kind: "class"; negated: boolean; ranges: Array<[number, number]> };

interface State {
  eps: number[];
  edges: Array<{ set: CharSet; to: number }>;
}

interface Nfa {
  states: State[];
  accept: number;
}

const SLASH = 0x2f;

/**
 * The brace alternatives of a ripgrep glob, each a plain glob (`{a,b}c` → `ac`, `bc`), or undefined when there
 * are too many. Iterative: a work list of partially expanded strings, never recursion over the input.
 */
export function expandBraces(glob: string): string[] | undefined {
  const done: string[] = [];
  const work = [glob];
  while (work.length > 0) {
    const current = work.pop() as string;
    const group = firstBraceGroup(current);
    if (!group) {
      done.push(current);
    } else {
      for (const option of group.options)
        work.push(current.slice(0, group.start) + option + current.slice(group.end + 1));
    }
    if (done.length + work.length > MAX_ALTERNATIVES) return undefined;
  }
  return done;
}

/** The first top-level `{…,…}` (escapes and classes respected), split at its top-level commas. */
function firstBraceGroup(glob: string): { start: number; end: number; options: string[] } | undefined {
  let start = -1;
  let depth = 0;
  let pieceStart = 0;
  const options: string[] = [];
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "\\") {
      i++;
      continue;
    }
    if (c === "[" && depth === 0) {
      const close = classEnd(glob, i);
      if (close !== -1) i = close;
      continue;
    }
    if (c === "{") {
      if (depth === 0) {
        start = i;
        pieceStart = i + 1;
      }
      depth++;
    } else if (c === "," && depth === 1) {
      options.push(glob.slice(pieceStart, i));
      pieceStart = i + 1;
    } else if (c === "}" && depth > 0) {
      depth--;
      if (depth === 0) {
        options.push(glob.slice(pieceStart, i));
        return { start, end: i, options };
      }
    }
  }
  return undefined; // none, or unbalanced (then "{" is literal)
}

/** Index of the "]" closing the class opened at `open`, or -1 (then "[" is literal). */
function classEnd(glob: string, open: number): number {
  let i = open + 1;
  if (glob[i] === "!" || glob[i] === "^") i++;
  if (glob[i] === "]") i++; // a leading "]" is a member
  for (; i < glob.length; i++) {
    if (glob[i] === "\\") i++;
    else if (glob[i] === "]") return i;
  }
  return -1;
}

/** Compiles one brace-free glob, matched at any depth (an implicit leading `**\/`). */
export function compileGlob(glob: string): Nfa {
  const states: State[] = [];
  const add = (): number => states.push({ eps: [], edges: [] }) - 1;
  let current = add();
  // Leading "**/" (implicit, or written, or a leading "/"): zero or more whole components.
  const addDirs = () => {
    const loop = add();
    const next = add();
    states[current]?.eps.push(next);
    states[current]?.edges.push({ set: { kind: "all" }, to: loop });
    states[loop]?.edges.push({ set: { kind: "all" }, to: loop });
    states[loop]?.edges.push({ set: { kind: "lit", cp: SLASH }, to: next });
    current = next;
  };
  let body = glob;
  while (body.startsWith("/")) body = body.slice(1);
  while (body.startsWith("**/")) body = body.slice(3);
  if (body.endsWith("/")) body = `${body}**`; // a directory: everything below it
  addDirs();
  const chars = Array.from(body);
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    const atComponentStart = i === 0 || chars[i - 1] === "/";
    if (
      c === "*" &&
      chars[i + 1] === "*" &&
      atComponentStart &&
      (chars[i + 2] === "/" || i + 2 === chars.length)
    ) {
      if (chars[i + 2] === "/") {
        addDirs(); // "a/**/b": zero or more components between
        i += 2;
      } else {
        const loop = add(); // trailing "**": anything below
        states[current]?.eps.push(loop);
        states[loop]?.edges.push({ set: { kind: "all" }, to: loop });
        current = loop;
        i += 1;
      }
      continue;
    }
    if (c === "*") {
      while (chars[i + 1] === "*") i++; // "a**b" is "a*b"
      const loop = add();
      states[current]?.eps.push(loop);
      states[loop]?.edges.push({ set: { kind: "component" }, to: loop });
      current = loop;
      continue;
    }
    let set: CharSet;
    if (c === "?") set = { kind: "component" };
    else if (c === "\\" && i + 1 < chars.length)
      set = { kind: "lit", cp: (chars[++i] as string).codePointAt(0) ?? 0 };
    else if (c === "[") {
      const parsed = parseClass(chars, i);
      if (parsed) {
        set = parsed.set;
        i = parsed.end;
      } else set = { kind: "lit", cp: 0x5b };
    } else set = { kind: "lit", cp: c.codePointAt(0) ?? 0 };
    const next = add();
    states[current]?.edges.push({ set, to: next });
    current = next;
  }
  return { states, accept: current };
}

function parseClass(chars: string[], open: number): { set: CharSet; end: number } | undefined {
  let i = open + 1;
  let negated = false;
  if (chars[i] === "!" || chars[i] === "^") {
    negated = true;
    i++;
  }
  const ranges: Array<[number, number]> = [];
  let first = true;
  for (; i < chars.length; i++) {
    let c = chars[i] as string;
    if (c === "]" && !first) return { set: { kind: "class", negated, ranges }, end: i };
    first = false;
    if (c === "\\" && i + 1 < chars.length) c = chars[++i] as string;
    const low = c.codePointAt(0) ?? 0;
    if (chars[i + 1] === "-" && chars[i + 2] !== undefined && chars[i + 2] !== "]") {
      let hiChar = chars[i + 2] as string;
      i += 2;
      if (hiChar === "\\" && i + 1 < chars.length) hiChar = chars[++i] as string;
      const high = hiChar.codePointAt(0) ?? 0;
      ranges.push(low <= high ? [low, high] : [high, low]);
    } else {
      ranges.push([low, low]);
    }
  }
  return undefined;
}

function member(set: CharSet, cp: number): boolean {
  switch (set.kind) {
    case "lit":
      return set.cp === cp;
    case "component":
      return cp !== SLASH;
    case "all":
      return true;
    case "class": {
      const inside = set.ranges.some(([lo, hi]) => cp >= lo && cp <= hi);
      return cp !== SLASH && inside !== set.negated;
    }
  }
}

/** Two character sets share a character: only range ends (±1) and a few fixed points need testing. */
function overlap(a: CharSet, b: CharSet): boolean {
  if (a.kind === "lit") return member(b, a.cp);
  if (b.kind === "lit") return member(a, b.cp);
  if (a.kind !== "class" && b.kind !== "class") return true; // "component" and "all" share "a"
  const candidates = [0x41, 0x61, 0x30, 0x2e, 0x10ffff, 0x20];
  for (const set of [a, b]) {
    if (set.kind !== "class") continue;
    for (const [lo, hi] of set.ranges) candidates.push(lo, hi, lo - 1, hi + 1);
  }
  return candidates.some((cp) => cp >= 0 && member(a, cp) && member(b, cp));
}

/** Each state's ε-closure, computed once per NFA (iteratively). */
const closures = new WeakMap<Nfa, number[][]>();
function closureOf(nfa: Nfa, state: number): number[] {
  let all = closures.get(nfa);
  if (!all) {
    all = nfa.states.map((_, start) => {
      const seen = new Set([start]);
      const stack = [start];
      while (stack.length > 0) {
        for (const next of nfa.states[stack.pop() as number]?.eps ?? []) {
          if (!seen.has(next)) {
            seen.add(next);
            stack.push(next);
          }
        }
      }
      return [...seen];
    });
    closures.set(nfa, all);
  }
  return all[state] ?? [];
}

/** Pairs of states explored at most; beyond, the answer is "could match" (the safe side). */
const MAX_PRODUCT_STATES = 200_000;

/** Some path matches both NFAs: a breadth-first walk over pairs of states. */
function intersects(a: Nfa, b: Nfa): boolean {
  const width = b.states.length;
  const seen = new Uint8Array(a.states.length * width);
  const queue: number[] = [];
  const push = (sa: number, sb: number) => {
    for (const ca of closureOf(a, sa)) {
      for (const cb of closureOf(b, sb)) {
        const key = ca * width + cb;
        if (seen[key] === 0) {
          seen[key] = 1;
          queue.push(key);
        }
      }
    }
  };
  push(0, 0);
  for (let head = 0; head < queue.length; head++) {
    if (head > MAX_PRODUCT_STATES) return true;
    const key = queue[head] as number;
    const sa = Math.floor(key / width);
    const sb = key % width;
    if (sa === a.accept && sb === b.accept) return true;
    for (const ea of a.states[sa]?.edges ?? []) {
      for (const eb of b.states[sb]?.edges ?? []) {
        if (overlap(ea.set, eb.set)) push(ea.to, eb.to);
      }
    }
  }
  return false;
}

/**
 * The literal text every match of a brace-free glob ends with (after the last wildcard of its last component),
 * and whether that component is literal throughout.
 */
function literalTail(glob: string): { tail: string; wholeComponent: boolean } {
  const chars = Array.from(glob.slice(glob.lastIndexOf("/") + 1));
  let tail = "";
  let wholeComponent = true;
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (c === "\\" && i + 1 < chars.length) {
      tail += chars[++i] as string;
    } else if (c === "*" || c === "?") {
      tail = "";
      wholeComponent = false;
    } else if (c === "[" && parseClass(chars, i)) {
      i = (parseClass(chars, i) as { end: number }).end;
      tail = "";
      wholeComponent = false;
    } else {
      tail += c;
    }
  }
  return { tail, wholeComponent };
}

/**
 * A cheap necessary condition before the product walk: both globs constrain the last path component. If the
 * model glob's last component is literal, the rule's last component must match it; otherwise their literal
 * endings must agree (one a suffix of the other). A rule ending in `**` constrains nothing here.
 */
function lastComponentsCompatible(
  tail: string,
  wholeComponent: boolean,
  rulePattern: string,
  matchComponent: (pattern: string, text: string) => boolean,
): boolean {
  const last = rulePattern.slice(rulePattern.lastIndexOf("/") + 1);
  if (last === "**") return true;
  if (wholeComponent) return matchComponent(last, tail);
  const ruleTail = last.slice(Math.max(last.lastIndexOf("*"), last.lastIndexOf("?")) + 1);
  return tail.endsWith(ruleTail) || ruleTail.endsWith(tail);
}

export interface SearchRulePattern {
  /** A rule pattern (rg glob, at any depth) or an absolute one (`/run/secrets/**`). */
  pattern: string;
  /** Basename patterns the rule spares (component globs with `*` and `?`). */
  except: readonly string[];
}

const compiled = new Map<string, Nfa>();
function compiledRulePattern(pattern: string): Nfa {
  let nfa = compiled.get(pattern);
  if (!nfa) {
    nfa = compileGlob(pattern);
    compiled.set(pattern, nfa);
  }
  return nfa;
}

export type GlobVerdict = { could: false } | { could: true; pattern?: string; reason: string };

/**
 * Could ripgrep, given `--glob <glob>` after our excludes, search a file one of `rules` covers? A glob that
 * starts with "!" only excludes more. `matchComponent` tests a rule's except patterns.
 */
export function globCouldSelect(
  glob: string,
  rules: readonly SearchRulePattern[],
  matchComponent: (pattern: string, text: string) => boolean,
): GlobVerdict {
  if (glob.startsWith("!")) return { could: false };
  if (glob.length > MAX_GLOB_CHARS)
    return { could: true, reason: "is too long to analyse, so it could select any file" };
  const alternatives = expandBraces(glob);
  if (!alternatives)
    return { could: true, reason: "has too many {…} alternatives to analyse, so it could select any file" };
  for (const alternative of alternatives) {
    const nfa = compileGlob(alternative);
    const { tail, wholeComponent } = literalTail(alternative);
    for (const rule of rules) {
      // Every match of this alternative ends with `tail`: spared if that tail alone is spared (`*.ts` vs `*.ts`).
      const spared = rule.except.some((except) =>
        wholeComponent
          ? matchComponent(except, tail)
          : except.startsWith("*") && matchComponent(except, tail),
      );
      if (spared) continue;
      if (!lastComponentsCompatible(tail, wholeComponent, rule.pattern, matchComponent)) continue;
      if (intersects(nfa, compiledRulePattern(rule.pattern)))
        return { could: true, pattern: rule.pattern, reason: `could select ${rule.pattern}` };
    }
  }
  return { could: false };
}
