// Command-line option parsing for the analyzers, in the two styles programs use: GNU (short clusters `-xzf v`,
// attached values `-ofile`, long `--name=value` or `--name value`, long names abbreviated to any prefix as
// getopt_long accepts, options mixed with operands until `--`) and POSIX (options stop at the first operand).
// Matching errs on the side of seeing an option: an abbreviation that could stand for a dangerous option counts.
import { type ShellWord, syntheticWord } from "./shell-words.ts";

export interface OptionSpec {
  /** Short option letters that take a value (`-o FILE`, `-oFILE`). */
  shortWithValue?: string;
  /** Short option letters whose value is optional and only attached (`xargs -i` or `-iR`, `perl -l0`). */
  shortWithAttachedValue?: string;
  /** Long options (without `--`) that take a value (`--output FILE`, `--output=FILE`). */
  longWithValue?: readonly string[];
  /** getopt_long accepts unambiguous prefixes of long option names (`--to-comm` for `--to-command`). */
  abbreviations?: boolean;
  /** Options end at the first operand (POSIX, and wrappers whose payload starts there). */
  stopAtOperand?: boolean;
  /** Long options written with one dash (`-exec`, `-name`: find, java, sqlite3). */
  singleDashLong?: boolean;
}

export interface ParsedOption {
  /** The name as written, without dashes (`o`, `output`, `to-comm`). */
  name: string;
  long: boolean;
  value?: ShellWord;
  /** The word the option was written in. */
  word: ShellWord;
  index: number;
}

export class ParsedArgs {
  readonly options: ParsedOption[] = [];
  readonly operands: ShellWord[] = [];
  /** Index of the first operand in the original arguments (args.length when none). */
  firstOperandIndex = -1;
  /** The arguments after `--` (also included in operands). */
  afterDoubleDash: ShellWord[] = [];
  private readonly abbreviations: boolean;

  constructor(abbreviations: boolean) {
    this.abbreviations = abbreviations;
  }

  /** Options matching any of the names: single letters are short options, longer names long ones. */
  all(...names: string[]): ParsedOption[] {
    return this.options.filter((option) => names.some((name) => this.matches(option, name)));
  }

  get(...names: string[]): ParsedOption | undefined {
    return this.options.find((option) => names.some((name) => this.matches(option, name)));
  }

  has(...names: string[]): boolean {
    return this.get(...names) !== undefined;
  }

  /** The values of every option matching the names. */
  values(...names: string[]): ShellWord[] {
    return this.all(...names).flatMap((option) => (option.value ? [option.value] : []));
  }

  private matches(option: ParsedOption, name: string): boolean {
    if (name.length === 1 && !option.long) return option.name === name;
    if (!option.long || name.length === 1) return false;
    if (option.name === name) return true;
    return this.abbreviations && option.name.length > 0 && name.startsWith(option.name);
  }
}

export function parseArgs(args: readonly ShellWord[], spec: OptionSpec = {}): ParsedArgs {
  const parsed = new ParsedArgs(spec.abbreviations ?? false);
  const shortWithValue = spec.shortWithValue ?? "";
  const shortWithAttached = spec.shortWithAttachedValue ?? "";
  const longWithValue = spec.longWithValue ?? [];
  const takesValue = (name: string) =>
    longWithValue.includes(name) ||
    (spec.abbreviations === true && name.length > 0 && longWithValue.some((full) => full.startsWith(name)));
  for (let i = 0; i < args.length; i++) {
    const word = args[i];
    if (!word) break;
    const text = word.text;
    if (text === "--") {
      parsed.afterDoubleDash = args.slice(i + 1);
      if (parsed.firstOperandIndex === -1) parsed.firstOperandIndex = i + 1;
      parsed.operands.push(...parsed.afterDoubleDash);
      break;
    }
    const isLong = text.startsWith("--") || (spec.singleDashLong === true && /^-[A-Za-z]{2}/.test(text));
    if (isLong) {
      const body = text.slice(text.startsWith("--") ? 2 : 1);
      const eq = body.indexOf("=");
      const name = eq === -1 ? body : body.slice(0, eq);
      let value: ShellWord | undefined;
      if (eq !== -1) value = valueWord(word, text.length - body.length + eq + 1);
      else if (takesValue(name) && i + 1 < args.length) value = args[++i];
      parsed.options.push({ name, long: true, value, word, index: i });
      continue;
    }
    if (text.startsWith("-") && text.length > 1) {
      for (let k = 1; k < text.length; k++) {
        const letter = text.charAt(k);
        if (shortWithAttached.includes(letter)) {
          const value = k + 1 < text.length ? valueWord(word, k + 1) : undefined;
          parsed.options.push({ name: letter, long: false, value, word, index: i });
          break;
        }
        if (shortWithValue.includes(letter)) {
          const value = k + 1 < text.length ? valueWord(word, k + 1) : args[++i];
          parsed.options.push({ name: letter, long: false, value, word, index: i });
          break;
        }
        parsed.options.push({ name: letter, long: false, word, index: i });
      }
      continue;
    }
    if (parsed.firstOperandIndex === -1) parsed.firstOperandIndex = i;
    if (spec.stopAtOperand) {
      parsed.operands.push(...args.slice(i));
      break;
    }
    parsed.operands.push(word);
  }
  if (parsed.firstOperandIndex === -1) parsed.firstOperandIndex = args.length;
  return parsed;
}

/** The part of a word from `offset` on, as a word of its own (an attached option value). */
export function valueWord(word: ShellWord, offset: number): ShellWord {
  const forms = word.forms.map((form) => form.slice(offset));
  const text = forms[0] ?? "";
  return { ...syntheticWord(text, word.literal), forms, literal: word.literal, source: word.source };
}
