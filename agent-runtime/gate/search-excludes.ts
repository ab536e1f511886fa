// Searches must not read credential files. Pi's grep runs `rg --hidden` over whatever folder the model names,
// so the gate sets RIPGREP_CONFIG_PATH (in its own process, which Pi's grep and local bash inherit) to a config
// of `--glob=!…` lines generated from the sensitive-path rules: ripgrep then skips those files wherever the
// search is rooted. The build ships the same text beside the bundles (rg-exclude.conf); from sources, or if the
// shipped copy differs, the gate writes one into a private temp dir. Then, per grep call, it confirms what the
// excludes cannot cover: a root that is or lies inside a secret folder, a model `glob` that could select a
// credential file (later globs win in ripgrep), runtime-located secrets, and excludes that are not active.
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { readBoundedText } from "./bounded-read.ts";
import { isWithin, type PathContext } from "./path-context.ts";
import { matchComponent, matchesAbsolute, matchesAtAnyDepth } from "./path-patterns.ts";
import { globCouldSelect, type SearchRulePattern } from "./search-glob.ts";
import {
  probesFor,
  SENSITIVE_RULES,
  type SensitiveRule,
  secretDirectoryRuleFor,
  sensitiveRuleByPattern,
  sensitiveRuleFor,
} from "./sensitive-paths.ts";

export const RG_EXCLUDE_FILE = "rg-exclude.conf";
export const RG_CONFIG_ENV = "RIPGREP_CONFIG_PATH";
const MAX_CONFIG_BYTES = 64 * 1024;

/** The exclude globs for one rule pattern, in ripgrep's syntax (no "/" → any depth; otherwise `**\/` first). */
function excludeGlobs(pattern: string, absolute: boolean): string[] {
  if (absolute) {
    // ripgrep matches globs against paths relative to its working directory, or as given when outside it:
    // an absolute glob never matches, so an absolute location is excluded wherever it appears.
    return [`**${pattern}`];
  }
  return [pattern.includes("/") ? `**/${pattern}` : pattern];
}

/** /proc entries searches must skip (every process's environ, mem, cmdline…: see sensitive-paths.ts). */
const PROC_EXCLUDES = ["**/proc/[0-9]*/**", "**/proc/self/**", "**/proc/thread-self/**"];

/** Every exclude glob, in rule order (deterministic: the shipped file is compared byte for byte). */
export function searchExcludeGlobs(): string[] {
  const globs = SENSITIVE_RULES.flatMap((rule) => [
    ...rule.patterns.flatMap((p) => excludeGlobs(p, false)),
    ...(rule.absolute ?? []).flatMap((p) => excludeGlobs(p, true)),
  ]);
  return [...new Set([...globs, ...PROC_EXCLUDES])];
}

/** The text of rg-exclude.conf: one `--glob=!<glob>` per line (ripgrep's config format), with a header. */
export function searchExcludeConfig(): string {
  return [
    "# Generated from agent-runtime/gate/sensitive-paths.ts by the approval gate's build: do not edit.",
    "# Set as RIPGREP_CONFIG_PATH so ripgrep skips credential files wherever a search is rooted.",
    ...searchExcludeGlobs().map((glob) => `--glob=!${glob}`),
    "",
  ].join("\n");
}

export interface SearchExcludeState {
  /** The config file ripgrep is told to read, or undefined when none could be installed. */
  path: string | undefined;
  /** Why searches are not (fully) protected, reported loudly by the gate. */
  problem?: string;
  /** ripgrep's working directory (Pi's process cwd): globs with a "/" are matched relative to it. */
  searchCwd: string;
  /** The explain CLI assumes the excludes are active, as they are in the gate: nothing is checked. */
  assumed?: boolean;
}

/**
 * At gate load: find the shipped config beside the bundle (checked byte for byte against the rules) or write a
 * private copy, then point RIPGREP_CONFIG_PATH at it in `env` (the gate's own process: Pi's grep inherits it).
 */
export function installSearchExcludes(
  bundleDir: string,
  env: NodeJS.ProcessEnv = process.env,
  searchCwd: string = process.cwd(),
): SearchExcludeState {
  const expected = searchExcludeConfig();
  const shipped = path.join(bundleDir, RG_EXCLUDE_FILE);
  let problem: string | undefined;
  const current = readBoundedText(shipped, MAX_CONFIG_BYTES);
  let configPath: string | undefined;
  if (current === expected) {
    configPath = shipped;
  } else {
    if (current !== undefined)
      problem = `${shipped} does not match the sensitive-path rules: using a generated copy`;
    try {
      const dir = mkdtempSync(path.join(tmpdir(), "chat-ui-agent-rg-"));
      const generated = path.join(dir, RG_EXCLUDE_FILE);
      writeFileSync(generated, expected, { mode: 0o400, flag: "wx" });
      configPath = generated;
    } catch (error) {
      problem = `cannot write the search exclude config (${error instanceof Error ? error.message : String(error)})`;
    }
  }
  if (configPath) env[RG_CONFIG_ENV] = configPath;
  return { path: configPath, searchCwd, ...(problem ? { problem } : {}) };
}

/** Per call: is the config still what ripgrep will read, with the expected content? Undefined when active. */
export function searchExcludeProblem(state: SearchExcludeState, env: NodeJS.ProcessEnv): string | undefined {
  if (state.assumed) return undefined;
  if (!state.path) return state.problem ?? "no search exclude config is installed";
  if (env[RG_CONFIG_ENV] !== state.path) return `${RG_CONFIG_ENV} no longer points at ${state.path}`;
  if (readBoundedText(state.path, MAX_CONFIG_BYTES) !== searchExcludeConfig())
    return `${state.path} was changed or removed`;
  return undefined;
}

/** Rule patterns (with their except lists) as search-glob.ts compares them with a model glob. */
const RULE_PATTERNS: SearchRulePattern[] = SENSITIVE_RULES.flatMap((rule) => [
  ...rule.patterns.map((pattern) => ({ pattern, except: rule.except ?? [] })),
  ...(rule.absolute ?? []).map((pattern) => ({ pattern, except: rule.except ?? [] })),
]);

/** Directory names (one or more components) that the `…/**` and multi-component patterns pass through. */
const PATTERN_DIR_CHAINS: string[][] = [
  ...RULE_PATTERNS.map((r) =>
    r.pattern
      .split("/")
      .filter((p) => p.length > 0 && p !== "**")
      .slice(0, -1),
  ),
  ...RULE_PATTERNS.filter((r) => r.pattern.endsWith("/**")).map((r) =>
    r.pattern.split("/").filter((p) => p.length > 0 && p !== "**"),
  ),
].filter((chain) => chain.length > 0);

/**
 * ripgrep strips its working directory from a path before matching globs, so a cwd inside one of the
 * patterns' directories (e.g. ~/.aws, ~/.config/git) turns `**\/.aws/credentials` into `credentials`, which no
 * longer matches. Such a cwd makes the excludes unreliable.
 */
export function cwdDefeatsExcludes(searchCwd: string): string | undefined {
  const parts = searchCwd.split("/").filter((p) => p.length > 0);
  for (const chain of PATTERN_DIR_CHAINS) {
    for (let k = 1; k <= chain.length && k <= parts.length; k++) {
      const tail = parts.slice(parts.length - k);
      if (chain.slice(0, k).every((piece, i) => matchComponent(piece, tail[i] ?? "")))
        return `the search runs from ${searchCwd}, inside ${chain.slice(0, k).join("/")}, where the excludes cannot match`;
    }
  }
  return undefined;
}

export interface GrepSecret {
  rule?: SensitiveRule;
  reason: string;
}

/**
 * Why a grep over `root` (canonical, as the tool will open it) with the model's `glob` could read credential
 * files despite the excludes, or undefined when the excludes (and the result filter) cover it.
 */
export function grepSecretReason(
  root: string,
  glob: unknown,
  ctx: PathContext,
  search: SearchExcludeState | undefined,
  env: NodeJS.ProcessEnv,
): GrepSecret | undefined {
  // An explicit file is searched even when a glob excludes it; a secret folder's files have any names.
  const direct = sensitiveRuleFor(root, ctx) ?? secretDirectoryRuleFor(root, ctx);
  if (direct) return { rule: direct, reason: `searches ${direct.why}` };
  const inside = probesFor(ctx).filter(({ probe }) => probe !== root && isWithin(probe, root));
  const problem = search
    ? (searchExcludeProblem(search, env) ?? cwdDefeatsExcludes(search.searchCwd))
    : "no search exclude config is installed";
  if (problem && inside.length > 0) {
    const first = inside[0] as { rule: SensitiveRule };
    return { rule: first.rule, reason: `searches a folder holding ${first.rule.why}, and ${problem}` };
  }
  // Secrets found where the session runs (Pi's agent dir) that no static exclude names.
  for (const { rule, probe } of inside) {
    if (!sensitiveRuleByPattern(probe) && existsSync(probe))
      return {
        rule,
        reason: `searches a folder holding ${rule.why} (${probe}), which the excludes cannot name`,
      };
  }
  if (typeof glob === "string" && glob.length > 0) {
    // Names that can be anywhere count always; a pattern with folders (~/.docker/config.json) only when one of
    // its rule's known locations lies under the root (elsewhere the result filter is the backstop).
    const insideParts = inside.map(({ probe }) => probe.split("/").filter((p) => p.length > 0));
    const relevant = RULE_PATTERNS.filter(
      (r) =>
        !r.pattern.includes("/") ||
        insideParts.some((parts) =>
          r.pattern.startsWith("/") ? matchesAbsolute(r.pattern, parts) : matchesAtAnyDepth(r.pattern, parts),
        ),
    );
    const verdict = globCouldSelect(glob, relevant, matchComponent);
    if (verdict.could)
      return {
        reason: `its glob ${JSON.stringify(clip(glob))} overrides the search excludes and ${verdict.reason} (credential files)`,
      };
  }
  return undefined;
}

/** RULE_PATTERNS in lower case, for ripgrep's case-insensitive globs (`--iglob`, `--glob-case-insensitive`). */
let lowerCasePatterns: SearchRulePattern[] | undefined;

/**
 * Could a glob given to `rg` on a command line (after our excludes, so it wins) select a credential file
 * anywhere? The shell's rg, unlike Pi's grep, has no result filter behind it, so every rule counts.
 */
export function commandLineGlobOverrides(glob: string, caseInsensitive: boolean): boolean {
  if (!caseInsensitive) return globCouldSelect(glob, RULE_PATTERNS, matchComponent).could;
  lowerCasePatterns ??= RULE_PATTERNS.map((r) => ({
    pattern: r.pattern.toLowerCase(),
    except: r.except.map((e) => e.toLowerCase()),
  }));
  return globCouldSelect(glob.toLowerCase(), lowerCasePatterns, matchComponent).could;
}

/** Reasons quote inputs: never more than a line of them. */
function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
