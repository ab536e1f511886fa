// Turns tree-sitter-bash word nodes into the argument strings the shell would pass, after quote removal,
// escapes, known variables and brace expansion. What the gate cannot know (command output, unknown variables,
// globbing against the file system, word splitting) makes a word non-literal, and unknown parts become
// DYNAMIC, which path checks read as `*` (could be anything).
//
// Every step is linear in the word's length: no regular expression with nested quantifiers, no recursion over
// the input (string nodes are at most two levels deep), brace expansion capped in forms and characters.
import type { Node } from "web-tree-sitter";

/** Stands for a part of a word whose value the gate cannot know. */
export const DYNAMIC = "\u0000";

export interface ShellWord {
  /** The decoded text (the first form when brace expansion or a variable gives several). */
  text: string;
  /** Every text the word can become (at least one; bounded). Dynamic parts are DYNAMIC. */
  forms: readonly string[];
  /** The shell passes exactly `text`, as one argument: nothing computed, no glob, no brace expansion, no splitting. */
  literal: boolean;
  /** The source text, for reasons (truncated). */
  source: string;
}

/** Variables whose possible values the classifier knows (HOME, PWD, literal assignments, loop words). */
export type KnownVariables = Map<string, readonly string[]>;

export interface DecodeOptions {
  /** Brace expansion applies (command words: yes; assignment values, `[[ ]]`, case patterns: no). */
  braces: boolean;
  /** IFS was reassigned: unquoted expansions split in ways the gate does not model. */
  ifsChanged: boolean;
  /**
   * The script the nodes come from. tree-sitter-bash treats a backslash-newline as a word break, but bash
   * removes it first (`g\<newline>it` is `git`): with the source, nodes separated only by continuations join.
   */
  source?: string;
}

/** At most this many forms per word; more collapses the brace groups to DYNAMIC. */
export const MAX_FORMS = 64;
/** Brace expansion is only attempted on words up to this length (longer: groups collapse to DYNAMIC). */
const MAX_BRACE_WORD = 4096;
const MAX_SOURCE = 160;

/** A word built from text the gate chose (e.g. an appended unknown argument, a split `env -S` string). */
export function syntheticWord(text: string, literal = !text.includes(DYNAMIC)): ShellWord {
  return { text, forms: [text], literal, source: text.replaceAll(DYNAMIC, "…").slice(0, MAX_SOURCE) };
}

/** An argument the gate cannot see at all (stdin for xargs, a computed value). */
export const UNKNOWN_WORD: ShellWord = { text: DYNAMIC, forms: [DYNAMIC], literal: false, source: "…" };

/**
 * Text plus a parallel mask: "u" unquoted source text (brace expansion and globbing apply), "v" an unquoted
 * variable's value (globbing and splitting apply, brace expansion does not: it runs before expansions),
 * "q" quoted or escaped, "d" dynamic (DYNAMIC placeholder), "s" dynamic and subject to splitting/globbing.
 */
class Builder {
  text = "";
  mask = "";
  /** Word splitting or globbing of a value makes the result uncertain. */
  uncertain = false;
  /** A value with several forms (a known variable with alternatives) spliced in: product of forms. */
  alternatives: Array<{ at: number; forms: readonly string[]; quoted: boolean }> = [];

  push(text: string, kind: "u" | "q" | "v"): void {
    this.text += text;
    this.mask += kind.repeat(text.length);
  }

  dynamic(unquoted: boolean): void {
    this.text += DYNAMIC;
    this.mask += unquoted ? "s" : "d";
  }

  append(other: Builder): void {
    const offset = this.text.length;
    this.text += other.text;
    this.mask += other.mask;
    this.uncertain ||= other.uncertain;
    for (const alt of other.alternatives) this.alternatives.push({ ...alt, at: alt.at + offset });
  }
}

export function decodeWord(node: Node, vars: KnownVariables, options: DecodeOptions): ShellWord {
  return decodeWords([node], vars, options)[0] ?? UNKNOWN_WORD;
}

/**
 * Decodes argument nodes; nodes that touch (no whitespace between) form one shell word, as tree-sitter-bash
 * sometimes splits them (`'a'\ b`, `.en{v,}`).
 */
export function decodeWords(nodes: Node[], vars: KnownVariables, options: DecodeOptions): ShellWord[] {
  const words: ShellWord[] = [];
  let current: Builder | undefined;
  let end = -1;
  let source = "";
  const flush = () => {
    if (current) words.push(finish(current, source, options));
  };
  for (const node of nodes) {
    let builder = new Builder();
    appendNode(node, vars, options, builder);
    const gap =
      current && options.source !== undefined ? gapBetween(options.source, end, node.startIndex) : undefined;
    if (current && gap && !gap.join && gap.kept) {
      // Escaped blanks tree-sitter dropped at the start of this word.
      const prefixed = new Builder();
      prefixed.push(gap.kept, "q");
      prefixed.append(builder);
      builder = prefixed;
    }
    if (current && (node.startIndex === end || gap?.join)) {
      if (gap?.kept) current.push(gap.kept, "q");
      current.append(builder);
      if (source.length < MAX_SOURCE) source += node.text.slice(0, MAX_SOURCE);
    } else {
      flush();
      current = builder;
      source = node.text.slice(0, MAX_SOURCE);
    }
    end = node.endIndex;
  }
  flush();
  return words;
}

/**
 * tree-sitter-bash drops some escapes that bash keeps or removes: a backslash-newline (a line continuation,
 * removed by bash, so `g\<newline>it` is `git`) and a backslash before a blank after a quoted string or at a
 * word's start (`'a'\ b` is the one word "a b", `\ a` is " a"). This reads the source between two nodes:
 * `join` when no real blank separates them, `kept` the escaped blanks the next word starts with. Undefined
 * when the gap holds something else.
 */
function gapBetween(source: string, from: number, to: number): { join: boolean; kept: string } | undefined {
  if (to - from > 4096) return undefined;
  const gap = source.slice(from, to).replace(/\\\n/g, "");
  let i = gap.length;
  let kept = "";
  while (i >= 2 && gap.charAt(i - 2) === "\\" && (gap.charAt(i - 1) === " " || gap.charAt(i - 1) === "\t")) {
    kept = gap.charAt(i - 1) + kept;
    i -= 2;
  }
  for (let k = 0; k < i; k++) {
    const c = gap.charAt(k);
    if (c !== " " && c !== "\t") return undefined;
  }
  return { join: i === 0, kept };
}

function appendNode(node: Node, vars: KnownVariables, options: DecodeOptions, out: Builder): void {
  switch (node.type) {
    case "word":
    case "number":
    case "brace_expression":
      appendBare(node.text, out);
      return;
    case "raw_string":
      out.push(node.text.slice(1, -1), "q");
      return;
    case "ansi_c_string":
      out.push(decodeAnsiC(node.text.slice(2, -1)), "q");
      return;
    case "string":
    case "translated_string":
      appendDoubleQuoted(node, vars, options, out);
      return;
    case "command_name":
    case "concatenation":
      for (const child of node.children) if (child) appendNode(child, vars, options, out);
      return;
    case "simple_expansion":
    case "expansion":
    case "command_substitution":
    case "arithmetic_expansion":
      appendExpansion(node, vars, options, out, false);
      return;
    case "process_substitution":
      // Bash passes a pipe's path; its content is the inner command's output, which the walk inspects.
      out.push("/dev/fd/63", "q");
      out.uncertain = true;
      return;
    default:
      if (node.namedChildCount === 0 && isPlainToken(node.text)) {
        appendBare(node.text, out);
        return;
      }
      out.dynamic(true);
  }
}

/**
 * A double-quoted string: content, expansions, and the literal tokens tree-sitter keeps as anonymous children
 * (a `$` not followed by a name: `"a$"` is `a$`). Source text between children that no child covers is content.
 */
function appendDoubleQuoted(node: Node, vars: KnownVariables, options: DecodeOptions, out: Builder): void {
  const text = node.text;
  const base = node.startIndex;
  const open = node.type === "translated_string" ? 2 : 1;
  if (!text.startsWith(open === 2 ? '$"' : '"') || !text.endsWith('"') || text.length < open + 1) {
    // A shape tree-sitter produces around line continuations (`$\<newline>""`): not trusted.
    out.dynamic(false);
    return;
  }
  const close = node.endIndex - 1;
  let position = base + open;
  for (const child of node.children) {
    if (!child || child.startIndex < base + open || child.endIndex > close) continue; // the quotes
    if (child.startIndex > position)
      out.push(unescapeDoubleQuoted(text.slice(position - base, child.startIndex - base)), "q");
    if (child.type === "string_content") out.push(unescapeDoubleQuoted(child.text), "q");
    else if (child.isNamed) appendExpansion(child, vars, options, out, true);
    else out.push(child.text, "q");
    position = child.endIndex;
  }
  if (close > position) out.push(unescapeDoubleQuoted(text.slice(position - base, close - base)), "q");
}

/** Leaf tokens tree-sitter may emit inside a word (`$`, `=`, `:`) that stand for themselves. */
function isPlainToken(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (!/[\w./:@%+,=~-]/.test(c)) return false;
  }
  return true;
}

function appendExpansion(
  node: Node,
  vars: KnownVariables,
  options: DecodeOptions,
  out: Builder,
  quoted: boolean,
): void {
  if (node.type === "simple_expansion" || node.type === "expansion") {
    const name = plainExpansionName(node);
    const known = name === undefined ? undefined : vars.get(name);
    if (known !== undefined) {
      const splits = !quoted && (options.ifsChanged || known.some(splitsOrGlobs));
      if (splits) out.uncertain = true;
      if (known.length === 1) out.push(known[0] ?? "", quoted ? "q" : "v");
      else {
        out.alternatives.push({ at: out.text.length, forms: known, quoted });
        out.dynamic(!quoted); // placeholder, replaced by each alternative in finish()
      }
      return;
    }
  }
  out.dynamic(!quoted);
}

function splitsOrGlobs(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charAt(i);
    if (c === " " || c === "\t" || c === "\n" || c === "*" || c === "?" || c === "[" || c === DYNAMIC)
      return true;
  }
  return false;
}

/** `$NAME` or `${NAME}`: no operators (${NAME:-x}, ${!NAME}, ${NAME%/}), no subscripts, no special parameters. */
export function plainExpansionName(node: Node): string | undefined {
  const text = node.text;
  const match = /^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$/.exec(text.length <= 258 ? text : "");
  if (!match) return undefined;
  if (text.startsWith("${") !== text.endsWith("}")) return undefined;
  return match[1];
}

/** The variable an expansion reads (also through operators: `${TOKEN:-x}`, `${#TOKEN}`, `${!TOKEN}`). */
export function expansionVariable(node: Node): string | undefined {
  for (const child of node.namedChildren) {
    if (child?.type === "variable_name") return child.text;
  }
  const match = /^\$\{?[!#]?([A-Za-z_][A-Za-z0-9_]{0,255})/.exec(node.text.slice(0, 260));
  return match?.[1];
}

/**
 * A bare word: backslash escapes quote the next character; a backslash-newline disappears. Unescaped blanks
 * inside one token mean tree-sitter joined what bash splits (it reads `} }` as one word): not literal.
 */
function appendBare(text: string, out: Builder): void {
  if (/(^|[^\\])[ \t\n]/.test(text)) out.uncertain = true;
  let from = 0;
  for (;;) {
    const slash = text.indexOf("\\", from);
    if (slash === -1 || slash + 1 >= text.length) {
      if (from < text.length) out.push(text.slice(from), "u");
      return;
    }
    if (slash > from) out.push(text.slice(from, slash), "u");
    const next = text.charAt(slash + 1);
    if (next !== "\n") out.push(next, "q");
    from = slash + 2;
  }
}

function unescapeDoubleQuoted(text: string): string {
  return text.replace(/\\\n/g, "").replace(/\\([$`"\\])/g, "$1");
}

function decodeAnsiC(body: string): string {
  return body.replace(
    /\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs,
    (_m, esc: string) => {
      const c = esc.charAt(0);
      if (c === "x" || c === "u" || c === "U") {
        const code = Number.parseInt(esc.slice(1), 16);
        return code <= 0x10ffff ? String.fromCodePoint(code) : DYNAMIC;
      }
      if (/[0-7]/.test(c)) return String.fromCharCode(Number.parseInt(esc, 8) & 0xff);
      if (c === "c") return String.fromCharCode(esc.charCodeAt(1) & 0x1f);
      const simple: Record<string, string> = {
        n: "\n",
        t: "\t",
        r: "\r",
        a: "\x07",
        b: "\b",
        e: "\x1b",
        E: "\x1b",
        f: "\f",
        v: "\v",
        "\\": "\\",
        "'": "'",
        '"': '"',
        "?": "?",
      };
      return simple[c] ?? `\\${esc}`; // bash keeps the backslash of an escape it does not know
    },
  );
}

function finish(builder: Builder, source: string, options: DecodeOptions): ShellWord {
  let literal = !builder.uncertain;
  const { mask } = builder;
  for (let i = 0; i < mask.length; i++) {
    const m = mask.charAt(i);
    if (m === "d" || m === "s") literal = false;
  }
  if (hasUnquotedGlob(builder.text, mask)) literal = false;

  // Alternatives from variables (loop words): one form per alternative, bounded.
  let bases: Array<{ text: string; mask: string }> = [{ text: builder.text, mask }];
  if (builder.alternatives.length > 0) {
    literal = false;
    bases = spliceAlternatives(builder);
  }
  let forms: string[] = [];
  let braced = false;
  for (const base of bases) {
    const expanded = options.braces ? expandBraces(base.text, base.mask) : undefined;
    if (expanded) {
      braced ||= expanded.length !== 1 || expanded[0] !== base.text;
      forms.push(...expanded);
    } else forms.push(base.text);
    if (forms.length > MAX_FORMS) {
      forms = [collapseBraces(builder.text, mask)];
      braced = true;
      break;
    }
  }
  if (braced) literal = false;
  return { text: forms[0] ?? "", forms, literal, source };
}

function spliceAlternatives(builder: Builder): Array<{ text: string; mask: string }> {
  let results = [{ text: "", mask: "" }];
  let cursor = 0;
  for (const alt of builder.alternatives) {
    const before = { text: builder.text.slice(cursor, alt.at), mask: builder.mask.slice(cursor, alt.at) };
    const next: Array<{ text: string; mask: string }> = [];
    for (const r of results) {
      for (const form of alt.forms) {
        next.push({
          text: r.text + before.text + form,
          mask: r.mask + before.mask + (alt.quoted ? "q" : "v").repeat(form.length),
        });
        if (next.length > MAX_FORMS) return [{ text: builder.text, mask: builder.mask }];
      }
    }
    results = next;
    cursor = alt.at + 1; // skip the placeholder
  }
  const tail = { text: builder.text.slice(cursor), mask: builder.mask.slice(cursor) };
  return results.map((r) => ({ text: r.text + tail.text, mask: r.mask + tail.mask }));
}

/** An unquoted `*` or `?`, or an unquoted `[` with an unquoted `]` after it: pathname expansion applies. */
function hasUnquotedGlob(text: string, mask: string): boolean {
  let open = false;
  for (let i = 0; i < text.length; i++) {
    const m = mask.charAt(i);
    if (m === "s") return true; // an unquoted unknown value may contain glob characters
    if (m !== "u" && m !== "v") continue;
    const c = text.charAt(i);
    if (c === "*" || c === "?") return true;
    if (c === "[") open = true;
    else if (c === "]" && open) return true;
  }
  return false;
}

interface BraceGroup {
  open: number;
  close: number;
  commas: number[];
}

/** Unquoted brace groups `{…}` with their matching close and top-level commas, in one pass. */
function braceGroups(text: string, mask: string): BraceGroup[] {
  const groups: BraceGroup[] = [];
  const stack: BraceGroup[] = [];
  for (let i = 0; i < text.length; i++) {
    if (mask.charAt(i) !== "u") continue;
    const c = text.charAt(i);
    if (c === "{") stack.push({ open: i, close: -1, commas: [] });
    else if (c === "," && stack.length > 0) stack.at(-1)?.commas.push(i);
    else if (c === "}" && stack.length > 0) {
      const group = stack.pop();
      if (group) {
        group.close = i;
        groups.push(group);
      }
    }
  }
  return groups;
}

const SEQUENCE = /^(?:(-?\d{1,18})\.\.(-?\d{1,18})|([A-Za-z])\.\.([A-Za-z]))(?:\.\.(-?\d{1,18}))?$/;

/** The alternatives a group expands to, or undefined when bash leaves it literal. */
function groupAlternatives(text: string, group: BraceGroup): string[] | "too-many" | undefined {
  if (group.commas.length > 0) {
    const parts: string[] = [];
    let from = group.open + 1;
    for (const comma of group.commas) {
      parts.push(text.slice(from, comma));
      from = comma + 1;
    }
    parts.push(text.slice(from, group.close));
    return parts;
  }
  const inner = text.slice(group.open + 1, group.close);
  if (inner.length > 60) return undefined;
  const seq = SEQUENCE.exec(inner);
  if (!seq) return undefined;
  const step = Math.abs(Number(seq[5] ?? 1)) || 1;
  const [from, to] =
    seq[1] !== undefined
      ? [Number(seq[1]), Number(seq[2])]
      : [seq[3]?.charCodeAt(0) ?? 0, seq[4]?.charCodeAt(0) ?? 0];
  const count = Math.floor(Math.abs(to - from) / step) + 1;
  if (count > MAX_FORMS) return "too-many";
  const out: string[] = [];
  for (let k = 0; k < count; k++) {
    const v = from <= to ? from + k * step : from - k * step;
    out.push(seq[1] !== undefined ? String(v) : String.fromCharCode(v));
  }
  return out;
}

/**
 * Bash brace expansion, leftmost group first, bounded: undefined when nothing expands; an array with the
 * single collapsed form when the expansion would exceed MAX_FORMS or the word is too long to expand.
 */
function expandBraces(text: string, mask: string): string[] | undefined {
  if (!text.includes("{")) return undefined;
  if (text.length > MAX_BRACE_WORD) {
    const collapsed = collapseBraces(text, mask);
    return collapsed === text ? undefined : [collapsed];
  }
  const done: string[] = [];
  const queue: Array<{ text: string; mask: string }> = [{ text, mask }];
  let expandedAny = false;
  let budget = MAX_FORMS * 4;
  while (queue.length > 0) {
    const item = queue.shift();
    if (!item) break;
    if (--budget < 0) return [collapseBraces(text, mask)];
    const group = firstExpandingGroup(item.text, item.mask);
    if (!group) {
      done.push(item.text);
      if (done.length > MAX_FORMS) return [collapseBraces(text, mask)];
      continue;
    }
    if (group.alternatives === "too-many") return [collapseBraces(text, mask)];
    expandedAny = true;
    const prefix = item.text.slice(0, group.group.open);
    const prefixMask = item.mask.slice(0, group.group.open);
    const suffix = item.text.slice(group.group.close + 1);
    const suffixMask = item.mask.slice(group.group.close + 1);
    let offset = group.group.open + 1;
    const commaEnds = [...group.group.commas, group.group.close];
    for (const [k, alternative] of group.alternatives.entries()) {
      // Comma alternatives keep their own mask (quoted parts stay quoted); sequence items are unquoted.
      const end = commaEnds[k] ?? group.group.close;
      const altMask =
        group.group.commas.length > 0 ? item.mask.slice(offset, end) : "u".repeat(alternative.length);
      offset = end + 1;
      queue.push({ text: prefix + alternative + suffix, mask: prefixMask + altMask + suffixMask });
    }
    if (queue.length + done.length > MAX_FORMS) return [collapseBraces(text, mask)];
  }
  return expandedAny ? done : undefined;
}

function firstExpandingGroup(
  text: string,
  mask: string,
): { group: BraceGroup; alternatives: string[] | "too-many" } | undefined {
  const groups = braceGroups(text, mask).sort((a, b) => a.open - b.open);
  for (const group of groups) {
    const alternatives = groupAlternatives(text, group);
    if (alternatives) return { group, alternatives };
  }
  return undefined;
}

/** Every outermost brace group that would expand becomes DYNAMIC (matches any alternative): linear. */
function collapseBraces(text: string, mask: string): string {
  const groups = braceGroups(text, mask)
    .filter((g) => groupAlternatives(text, g) !== undefined)
    .sort((a, b) => a.open - b.open);
  let out = "";
  let cursor = 0;
  for (const group of groups) {
    if (group.open < cursor) continue; // nested inside a collapsed group
    out += text.slice(cursor, group.open) + DYNAMIC;
    cursor = group.close + 1;
  }
  return out + text.slice(cursor);
}
