// The one command-line reader of our binaries (bridge.mjs, chat-ui-agent, chat-ui-agent-policy): node:util's
// parseArgs in strict mode, with every mistake said in our own words (one sentence naming the flag), never
// Node's text about positional arguments. Kept free of heavy imports: the bridge's prestart loads it.
import { type ParseArgsOptionsConfig, parseArgs } from "node:util";

/** A caller's mistake on the command line: the binary prints the message and exits 2. */
export class UsageError extends Error {}

/** One option as given: its name (long), how it was written, and its value if it took one. */
export interface OptionToken {
  name: string;
  rawName: string;
  value: string | undefined;
  inlineValue: boolean | undefined;
}

export interface CommandLine<O extends ParseArgsOptionsConfig> {
  values: ReturnType<typeof parseArgs<{ options: O; strict: true; allowPositionals: true }>>["values"];
  positionals: string[];
  /** The options in the order given (the bridge forwards Pi's flags in that order). */
  options: OptionToken[];
}

/**
 * Parses `args` against `options` (strict). `positionals` bounds how many non-option arguments are allowed.
 * Throws UsageError naming the first unknown flag, a flag missing its value, a value given to a switch or an
 * unexpected argument.
 */
export function readCommandLine<const O extends ParseArgsOptionsConfig>(
  args: readonly string[],
  options: O,
  positionals = 0,
): CommandLine<O> {
  // A lenient pass first, to find and name the first mistake ourselves…
  const { tokens } = parseArgs({
    args: [...args],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  let seenPositionals = 0;
  for (const token of tokens) {
    if (token.kind === "positional") {
      seenPositionals += 1;
      if (seenPositionals > positionals) {
        throw new UsageError(
          positionals === 0
            ? `unexpected argument ${JSON.stringify(token.value)}: this command takes only options`
            : `unexpected argument ${JSON.stringify(token.value)}`,
        );
      }
      continue;
    }
    if (token.kind !== "option") continue;
    const spec = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (!spec) throw new UsageError(`unknown option ${token.rawName}`);
    if (spec.type === "boolean" && token.value !== undefined) {
      throw new UsageError(`${token.rawName} takes no value`);
    }
    // Lenient parsing takes the next argument as the value even when it is another flag: refuse that.
    if (spec.type === "string" && (token.value === undefined || token.value === "")) {
      throw new UsageError(`${token.rawName} needs a value`);
    }
    if (spec.type === "string" && !token.inlineValue && token.value?.startsWith("-")) {
      throw new UsageError(
        `${token.rawName} needs a value (for one that starts with "-", write ${token.rawName}=${token.value})`,
      );
    }
  }
  // …then the strict parse, which now only confirms (and types) what the first pass accepted.
  const strict = parseArgs({ args: [...args], options, strict: true, allowPositionals: true, tokens: true });
  return {
    values: strict.values as CommandLine<O>["values"],
    positionals: strict.positionals,
    options: strict.tokens.flatMap((t) =>
      t.kind === "option"
        ? [{ name: String(t.name), rawName: t.rawName, value: t.value, inlineValue: t.inlineValue }]
        : [],
    ),
  };
}

/** A help table: one line per option, aligned. */
export function optionLines(rows: readonly { usage: string; help: string }[], indent = "  "): string {
  const width = Math.max(...rows.map((r) => r.usage.length)) + 2;
  return rows.map((r) => `${indent}${r.usage.padEnd(width)}${r.help}`).join("\n");
}
