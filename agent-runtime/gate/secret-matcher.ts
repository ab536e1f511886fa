// One pass over a tool's output for every known credential value and its common encodings (issue 19, point 4):
// an Aho–Corasick automaton compiled to a dense table over a compressed alphabet, so each character costs a couple
// of array reads whatever the number of values. Case is folded (ASCII): a value printed in upper-case hex still
// matches. Bounded: at most MAX_PATTERN_CHARS of patterns (their states), the rest reported as not covered.

/** What the table may hold: states are bounded by the total length of the patterns. */
export const MAX_PATTERN_CHARS = 60 * 1024;
/** Patterns shorter than this are not matched (too many false positives); values are at least this long. */
export const MIN_PATTERN_CHARS = 8;

export interface SecretValue {
  value: string;
  /** Where it came from, for people: a file path or `$NAME`. Never the value. */
  source: string;
}

export interface Match {
  start: number;
  end: number;
  source: string;
}

/** The encodings a value is matched in: as is, base64 (standard and URL-safe) at all three alignments, hex, URL. */
export function encodings(value: string): string[] {
  const bytes = Buffer.from(value, "utf8");
  const out = new Set<string>([value]);
  for (let shift = 0; shift < 3; shift++) {
    const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString("base64");
    // Characters that depend on the value's bytes alone: after the filler's, before the padding's.
    const first = Math.ceil((shift * 8) / 6);
    const last = Math.floor(((shift + bytes.length) * 8) / 6);
    const stable = encoded.slice(first, last);
    out.add(stable);
    out.add(stable.replaceAll("+", "-").replaceAll("/", "_"));
  }
  out.add(bytes.toString("hex"));
  out.add(encodeURIComponent(value));
  return [...out].filter((pattern) => pattern.length >= MIN_PATTERN_CHARS);
}

function fold(code: number): number {
  return code >= 65 && code <= 90 ? code + 32 : code;
}

export class SecretMatcher {
  /** Sources whose every encoding fits in the table. */
  readonly covered: number;
  /** Sources left out (the table's bound). */
  readonly dropped: number;
  private readonly classOf = new Uint8Array(128);
  private readonly wideClass = new Map<number, number>();
  private readonly classes: number;
  private readonly table: Uint16Array;
  /** For each state: the length of the longest pattern ending there (0: none), and its source. */
  private readonly outLength: Uint32Array;
  private readonly outSource: Int32Array;
  private readonly sources: string[];

  constructor(values: readonly SecretValue[]) {
    const patterns: Array<{ text: string; source: number }> = [];
    this.sources = [];
    let chars = 0;
    let dropped = 0;
    for (const { value, source } of values) {
      const list = encodings(value);
      const size = list.reduce((sum, p) => sum + p.length, 0);
      if (list.length === 0) continue;
      if (chars + size > MAX_PATTERN_CHARS) {
        dropped++;
        continue;
      }
      chars += size;
      let index = this.sources.indexOf(source);
      if (index === -1) index = this.sources.push(source) - 1;
      for (const text of list) patterns.push({ text, source: index });
    }
    this.covered = values.length - dropped;
    this.dropped = dropped;
    // The alphabet: every (folded) code unit the patterns use; anything else is class 0.
    let next = 1;
    for (const { text } of patterns)
      for (let i = 0; i < text.length; i++) {
        const code = fold(text.charCodeAt(i));
        if (code < 128) {
          if (this.classOf[code] === 0) this.classOf[code] = next++;
        } else if (!this.wideClass.has(code)) this.wideClass.set(code, next++);
      }
    this.classes = next;
    // The trie.
    const children: Array<Map<number, number>> = [new Map()];
    const ownLength: number[] = [0];
    const ownSource: number[] = [-1];
    for (const { text, source } of patterns) {
      let state = 0;
      for (let i = 0; i < text.length; i++) {
        const cls = this.classFor(fold(text.charCodeAt(i)));
        let child = children[state]?.get(cls);
        if (child === undefined) {
          child = children.push(new Map()) - 1;
          ownLength.push(0);
          ownSource.push(-1);
          children[state]?.set(cls, child);
        }
        state = child;
      }
      if ((ownLength[state] ?? 0) < text.length) {
        ownLength[state] = text.length;
        ownSource[state] = source;
      }
    }
    // Failure links, breadth first, filled into a dense transition table.
    const states = children.length;
    const K = this.classes;
    // States are bounded by MAX_PATTERN_CHARS (< 65,536), so 16 bits hold any of them.
    this.table = new Uint16Array(states * K);
    this.outLength = new Uint32Array(states);
    this.outSource = new Int32Array(states).fill(-1);
    const fail = new Uint32Array(states);
    const queue: number[] = [];
    for (let cls = 0; cls < K; cls++) {
      const child = children[0]?.get(cls);
      if (child !== undefined) {
        this.table[cls] = child;
        queue.push(child);
      }
    }
    this.outLength[0] = 0;
    for (let head = 0; head < queue.length; head++) {
      const state = queue[head] as number;
      const f = fail[state] as number;
      const inherited = this.outLength[f] as number;
      const own = ownLength[state] ?? 0;
      this.outLength[state] = Math.max(own, inherited);
      this.outSource[state] = own >= inherited ? (ownSource[state] ?? -1) : (this.outSource[f] as number);
      for (let cls = 0; cls < K; cls++) {
        const child = children[state]?.get(cls);
        if (child !== undefined) {
          fail[child] = this.table[f * K + cls] as number;
          this.table[state * K + cls] = child;
          queue.push(child);
        } else this.table[state * K + cls] = this.table[f * K + cls] as number;
      }
    }
  }

  get empty(): boolean {
    return this.sources.length === 0;
  }

  private classFor(code: number): number {
    return code < 128 ? (this.classOf[code] as number) : (this.wideClass.get(code) ?? 0);
  }

  /** Every match in `text`, in one pass (overlapping matches merged by the caller). */
  scan(text: string): Match[] {
    const matches: Match[] = [];
    if (this.sources.length === 0) return matches;
    const K = this.classes;
    const table = this.table;
    const classOf = this.classOf;
    let state = 0;
    for (let i = 0; i < text.length; i++) {
      let code = text.charCodeAt(i);
      if (code >= 65 && code <= 90) code += 32;
      const cls = code < 128 ? (classOf[code] as number) : (this.wideClass.get(code) ?? 0);
      state = table[state * K + cls] as number;
      const length = this.outLength[state] as number;
      if (length > 0)
        matches.push({
          start: i + 1 - length,
          end: i + 1,
          source: this.sources[this.outSource[state] as number] ?? "?",
        });
    }
    return matches;
  }
}

/** `text` with every match replaced by a marker naming its source; the sources found. */
export function redact(
  text: string,
  matcher: SecretMatcher,
): { text: string; sources: string[]; count: number } {
  const matches = matcher.scan(text);
  if (matches.length === 0) return { text, sources: [], count: 0 };
  let count = 0;
  matches.sort((a, b) => a.start - b.start || b.end - a.end);
  const sources = new Set<string>();
  let out = "";
  let at = 0;
  for (let i = 0; i < matches.length; ) {
    const first = matches[i] as Match;
    let end = first.end;
    const names = new Set([first.source]);
    let j = i + 1;
    for (; j < matches.length && (matches[j] as Match).start < end; j++) {
      end = Math.max(end, (matches[j] as Match).end);
      names.add((matches[j] as Match).source);
    }
    const start = Math.max(first.start, at);
    out += text.slice(at, start);
    out += `[withheld: credential value from ${[...names].join(", ")}]`;
    count++;
    for (const name of names) sources.add(name);
    at = Math.max(at, end);
    i = j;
  }
  return { text: out + text.slice(at), sources: [...sources], count };
}
