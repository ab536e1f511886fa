// Helpers every analyzer family shares, and the explicit entry for programs the table does not list.
import type { Analyzer, PathAccess, ProgramCall, Scan } from "../shell-scan.ts";
import { DYNAMIC, type ShellWord, syntheticWord } from "../shell-words.ts";

/** A data list whose entries must be distinct: a repeated entry is a row shadowing another, refused at load. */
export function distinct<T extends string>(what: string, items: readonly T[]): T[] {
  const seen = new Set<T>();
  for (const item of items) {
    if (seen.has(item)) throw new Error(`${what} lists ${JSON.stringify(item)} twice`);
    seen.add(item);
  }
  return [...items];
}

/**
 * Builds one analyzer family: every program name once. A name given twice (two rows, one shadowing the other)
 * is refused at load; table.ts refuses a name claimed by two families.
 */
export class FamilyBuilder {
  private readonly rows = new Map<string, Analyzer>();
  private readonly family: string;

  constructor(family: string) {
    this.family = family;
  }

  add(names: string | readonly string[], analyzer: Analyzer): this {
    for (const name of typeof names === "string" ? [names] : names) {
      if (this.rows.has(name)) throw new Error(`the ${this.family} analyzers list \`${name}\` twice`);
      this.rows.set(name, analyzer);
    }
    return this;
  }

  addAll(rows: Readonly<Record<string, Analyzer>>): this {
    for (const [name, analyzer] of Object.entries(rows)) this.add(name, analyzer);
    return this;
  }

  build(): Readonly<Record<string, Analyzer>> {
    return Object.freeze(Object.fromEntries(this.rows));
  }
}

/** Embedded programs (sed scripts, awk programs, SQL) longer than this are not scanned: opaque. */
export const MAX_PROGRAM_TEXT = 16 * 1024;

export const VERSION_FLAGS = new Set([
  "--version",
  "-V",
  "-v",
  "--help",
  "-h",
  "help",
  "version",
  "-version",
]);

/** `prog --version` / `prog --help` and nothing else. */
export function onlyAsksVersion(args: readonly ShellWord[]): boolean {
  return args.length === 1 && VERSION_FLAGS.has(args[0]?.text ?? "");
}

export function textAt(args: readonly ShellWord[], index: number): string {
  return args[index]?.text ?? "";
}

/** `--file=path` → `path`; other words unchanged. */
export function optionValueWord(word: ShellWord): ShellWord {
  const match = /^--?[\w-]{1,64}=/.exec(word.text);
  if (!match) return word;
  const offset = match[0].length;
  const forms = word.forms.map((form) => form.slice(offset));
  return { ...word, text: forms[0] ?? "", forms };
}

/**
 * Checks every argument as a path the program may use (`access`), options included as `--opt=path`;
 * bare options (`-la`, `--force`) and plain numbers are skipped.
 */
export function checkOperands(args: readonly ShellWord[], scan: Scan, access: PathAccess) {
  for (const arg of args) {
    if (/^-[^=]*$/.test(arg.text) || /^\d+$/.test(arg.text)) continue;
    scan.path(optionValueWord(arg), access);
  }
}

/** A URL, `user@host:path`, or `host:port`: something a network client sends a request to. */
export function looksLikeNetworkTarget(text: string): boolean {
  return (
    /^[a-z][a-z0-9+.-]{0,30}:\/\//i.test(text) ||
    /^[^\s/@]{1,256}@[^\s/]{1,256}:/.test(text) ||
    /^[a-z0-9.-]{1,253}\.[a-z]{2,63}(:\d+)?(\/|$)/i.test(text)
  );
}

/** Class 5: a network client given any computed argument can carry data in the URL, a header or a DNS name. */
export function exitOnComputedArguments(call: ProgramCall, scan: Scan): boolean {
  const computed = call.args.find((arg) => !arg.literal && !isPlainGlobOperand(arg));
  if (!computed) return false;
  scan.findings.sends(
    `\`${call.name}\` is given an argument computed at run time (${computed.source}): data can leave in a URL, header or host name`,
  );
  return true;
}

/** A non-literal word whose only uncertainty is a local glob (`*.txt`): not data from elsewhere. */
function isPlainGlobOperand(word: ShellWord): boolean {
  return word.forms.every((form) => !form.includes(DYNAMIC)) && word.forms.length === 1;
}

/** Subcommand words that ship something somewhere. */
const SHIPPING_VERB = /^(deploy|publish|release|upload|push|ship|promote|rollout)(:|$)/i;

/** Programs the table has no entry for: unmodeled code that may touch its operands. Explicit, never a fall-through. */
export const unlistedProgram: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  scan.findings.unmodeled(
    "program",
    `\`${call.name}\` is not in the gate's table, so what it does is not modeled`,
    call.name,
  );
  checkOperands(call.args, scan, "operand");
  // An unknown tool's subcommand named like shipping (`sometool deploy`) is taken at its word.
  const sub = call.args.find((a) => !a.text.startsWith("-"));
  if (sub?.literal && SHIPPING_VERB.test(sub.text))
    scan.findings.sends(`\`${call.name} ${sub.text}\` may deploy, publish or upload`);
  const computedTarget = call.args.find(
    (arg) =>
      !arg.literal &&
      arg.forms.some(
        (form) => form.includes(DYNAMIC) && looksLikeNetworkTarget(form.replaceAll(DYNAMIC, "x")),
      ),
  );
  if (computedTarget)
    scan.findings.sends(
      `\`${call.name}\` is given a URL or host computed at run time (${computedTarget.source})`,
    );
};

/** The words after `index` joined as one script (how `watch`, `hyperfine`, `su -c` hand text to a shell). */
export function joinedScript(words: readonly ShellWord[]): ShellWord {
  const literal = words.every((w) => w.literal);
  const text = words.map((w) => w.text).join(" ");
  return { ...syntheticWord(text, literal), source: words.map((w) => w.source).join(" ") };
}

/** The unknown argument a program reads from stdin or a file (xargs, parallel): a word that is never literal. */
export function unknownArgument(source = "arguments read at run time"): ShellWord {
  return { text: DYNAMIC, forms: [DYNAMIC], literal: false, source };
}

/** Reports a program that always talks to a remote host or account (unless it only prints its version). */
export function remoteTool(what: string): Analyzer {
  return (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    scan.findings.sends(`\`${call.name}\` ${what}`);
    checkOperands(call.args, scan, "operand");
  };
}

/** Reports a program whose work the gate cannot see (it runs commands later, elsewhere or from stdin). */
export function opaqueProgram(why: string): Analyzer {
  return (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    scan.findings.opaque(`\`${call.name}\` ${why}`);
  };
}
