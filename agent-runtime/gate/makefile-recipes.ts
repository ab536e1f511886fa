// The recipes `make [goals]` would run, read from a Makefile's text, best effort (class 7: write, then run).
// Rules, prerequisites (followed transitively, bounded), simple variables (expanded, bounded), GNU make's
// built-in defaults, automatic variables; both branches of conditionals. What cannot be read statically
// ($(eval), $(call), $(value), custom .RECIPEPREFIX or SHELL, deep nesting) is reported as opaque, and any
// other expansion becomes a shell variable, so the shell classifier treats it as computed at run time.

/** References expanded per Makefile, at most: `A = $(B)$(B)…` chains would otherwise grow exponentially. */
const MAX_REFERENCES = 20_000;

export interface MakefileRecipes {
  /** One shell script per rule whose recipe would run (its lines, make syntax expanded), with its target. */
  scripts: Array<{ target: string; script: string }>;
  /** Commands make runs while reading the file ($(shell …), `VAR != …`), to be classified too. */
  parseTime: string[];
  /** Makefiles it includes (as written, expanded). */
  includes: string[];
  /** Why part of it cannot be read statically (the call is then confirmed). */
  opaque: string[];
  /** Variable references expanded so far (bounded by MAX_REFERENCES). */
  references: number;
  /** Reading stopped early: the file is larger than the gate reads (nothing else is reported). */
  tooLarge?: boolean;
}

const MAX_RULES = 128;
const MAX_EXPANSION_DEPTH = 8;
const MAX_EXPANDED_CHARS = 64 * 1024;
/** An expansion the gate cannot know: a shell variable, so it is a computed word to the shell classifier. */
export const MAKE_UNKNOWN = "$" + "{MAKE_EXPANSION}";
const UNKNOWN = MAKE_UNKNOWN;

/** GNU make's built-in variables a recipe commonly uses. */
const DEFAULTS: Record<string, string> = {
  CC: "cc",
  CXX: "g++",
  CPP: "cc -E",
  FC: "f77",
  LD: "ld",
  AR: "ar",
  AS: "as",
  RM: "rm -f",
  MAKE: "make",
  SHELL: "/bin/sh",
  INSTALL: "install",
  ECHO: "echo",
};
/** Text functions whose result is data, never a command on its own. */
const PURE_FUNCTIONS = new Set([
  "subst",
  "patsubst",
  "strip",
  "findstring",
  "filter",
  "filter-out",
  "sort",
  "word",
  "wordlist",
  "words",
  "firstword",
  "lastword",
  "dir",
  "notdir",
  "suffix",
  "basename",
  "addsuffix",
  "addprefix",
  "join",
  "wildcard",
  "realpath",
  "abspath",
  "info",
  "warning",
  "error",
  "origin",
  "flavor",
]);
const OPAQUE_FUNCTIONS = new Set([
  "eval",
  "call",
  "value",
  "file",
  "guile",
  "foreach",
  "if",
  "or",
  "and",
  "let",
]);

interface Rule {
  targets: string[];
  prerequisites: string[];
  recipe: string[];
  pattern: boolean;
}

export function makefileRecipes(text: string, goals: readonly string[]): MakefileRecipes {
  const result: MakefileRecipes = { scripts: [], parseTime: [], includes: [], opaque: [], references: 0 };
  const variables = new Map<string, string>();
  const rules: Rule[] = [];
  let current: Rule[] = [];
  let defining: string | undefined;
  const opaque = (why: string) => {
    if (!result.opaque.includes(why) && result.opaque.length < 8) result.opaque.push(why);
  };
  const expand = (value: string) => expandMake(value, variables, result, opaque);

  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    let line = (lines[i] as string).replace(/\r$/, "");
    if (defining !== undefined) {
      if (/^\s*endef\b/.test(line)) defining = undefined;
      continue;
    }
    if (line.startsWith("\t") && current.length > 0) {
      // A recipe line: backslash-newline goes to the shell as written.
      let recipe = line.slice(1);
      while (recipe.endsWith("\\") && i + 1 < lines.length)
        recipe += `\n${(lines[++i] as string).replace(/^\t/, "")}`;
      for (const rule of current) rule.recipe.push(recipe);
      continue;
    }
    while (line.endsWith("\\") && i + 1 < lines.length) line = `${line.slice(0, -1)} ${lines[++i] as string}`;
    const stripped = line.replace(/(^|[^\\])#.*$/, "$1").trim();
    if (stripped === "") continue;
    if (/^(?:ifeq|ifneq|ifdef|ifndef|else|endif)\b/.test(stripped)) continue; // both branches count
    const define = /^(?:override\s+|export\s+)*define\s+(\S+)/.exec(stripped);
    if (define) {
      defining = define[1];
      variables.set(define[1] as string, UNKNOWN);
      continue;
    }
    const include = /^(?:-include|sinclude|include)\s+(.+)$/.exec(stripped);
    if (include) {
      current = [];
      for (const name of expand(include[1] as string).split(/\s+/)) if (name) result.includes.push(name);
      continue;
    }
    if (/^\.RECIPEPREFIX\b/.test(stripped)) opaque("it changes .RECIPEPREFIX");
    const assignment =
      statementKind(stripped) === "assignment"
        ? /^(?:(?:override|export|private|unexport)\s+)*([^\s:#=!?+]+)\s*(:::=|::=|:=|\?=|\+=|!=|=)\s*(.*)$/.exec(
            stripped,
          )
        : null;
    if (assignment) {
      const [, name, operator, value = ""] = assignment as unknown as [string, string, string, string];
      if (name === "SHELL" || name === ".SHELLFLAGS") opaque(`it sets ${name} (recipes may not run in sh)`);
      if (operator === "!=") {
        result.parseTime.push(expand(value));
        variables.set(name, UNKNOWN);
      } else if (operator === "+=") {
        const before = variables.get(name);
        variables.set(name, before ? `${before} ${value}` : value);
      } else if (operator === "?=") {
        if (!variables.has(name)) variables.set(name, value);
      } else {
        variables.set(name, operator.startsWith(":") ? expand(value) : value);
      }
      current = [];
      continue;
    }
    const rule =
      statementKind(stripped) === "rule" ? /^([^:;]*?)\s*(::?)\s*([^;]*)(?:;(.*))?$/.exec(stripped) : null;
    if (rule) {
      const targets = expand(rule[1] as string)
        .split(/\s+/)
        .filter((t) => t.length > 0);
      const rest = rule[3] as string;
      // `target: VAR = value` is a target-specific variable, not a prerequisite list.
      if (/^\s*[^\s=]+\s*(?:::?=|\?=|\+=|=)/.test(rest)) continue;
      const prerequisites = expand(rest.replace(/\|/g, " "))
        .split(/\s+/)
        .filter((p) => p.length > 0);
      current = targets.map((target) => {
        const entry: Rule = {
          targets: [target],
          prerequisites,
          recipe: rule[4] !== undefined ? [rule[4].trim()] : [],
          pattern: target.includes("%"),
        };
        rules.push(entry);
        return entry;
      });
      if (rules.length > MAX_RULES) {
        opaque(`it has more than ${MAX_RULES} rules, more than the gate reads`);
        result.tooLarge = true;
        return result;
      }
      continue;
    }
    // Top-level function calls ($(eval …), $(call …)) can define anything.
    expand(stripped);
    current = [];
  }

  // The goals: as given, else .DEFAULT_GOAL, else the first target that is not special or a pattern.
  let wanted = [...goals];
  if (wanted.length === 0) {
    const fallback =
      variables.get(".DEFAULT_GOAL") ??
      rules.find((r) => !r.pattern && !r.targets[0]?.startsWith("."))?.targets[0];
    if (fallback) wanted = [expand(fallback).trim()];
  }
  const byTarget = new Map<string, Rule[]>();
  for (const r of rules) {
    if (r.pattern) continue;
    const target = r.targets[0] as string;
    const list = byTarget.get(target);
    if (list) list.push(r);
    else byTarget.set(target, [r]);
  }
  const seen = new Set<string>();
  const used = new Set<Rule>();
  let usePatterns = false;
  for (let i = 0; i < wanted.length && seen.size < MAX_RULES; i++) {
    const target = wanted[i] as string;
    if (seen.has(target)) continue;
    seen.add(target);
    const explicit = byTarget.get(target) ?? [];
    if (!explicit.some((r) => r.recipe.length > 0)) usePatterns = true;
    for (const r of explicit) {
      used.add(r);
      for (const prerequisite of r.prerequisites) if (!seen.has(prerequisite)) wanted.push(prerequisite);
    }
  }
  if (usePatterns) for (const r of rules) if (r.pattern) used.add(r);
  for (const r of used) {
    if (r.recipe.length === 0) continue;
    const script = r.recipe
      .map((line) => expand(line.replace(/^[\s@+-]+/, "")))
      .filter((line) => line.trim().length > 0)
      .join("\n");
    if (script) result.scripts.push({ target: r.targets[0] as string, script });
  }
  return result;
}

/**
 * Whether a logical line assigns a variable or states a rule: the first "=" or ":" outside $(…) decides
 * (`A := b` and `A = b:c` assign; `a: b` and `a: B = c`, a target-specific variable, are rules).
 */
function statementKind(line: string): "assignment" | "rule" | "other" {
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "$" && (line[i + 1] === "(" || line[i + 1] === "{")) {
      depth++;
      i++;
    } else if ((c === ")" || c === "}") && depth > 0) depth--;
    else if (depth === 0 && c === "=") return "assignment";
    else if (depth === 0 && c === ":") return /^:{1,3}=/.test(line.slice(i)) ? "assignment" : "rule";
  }
  return "other";
}

/** Expands make's `$(…)`, `${…}`, `$X` and `$$`; bounded in depth, size and number of references. */
function expandMake(
  value: string,
  variables: ReadonlyMap<string, string>,
  result: MakefileRecipes,
  opaque: (why: string) => void,
  depth = 0,
): string {
  if (depth > MAX_EXPANSION_DEPTH) {
    opaque("its variables nest too deeply to read");
    return UNKNOWN;
  }
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c !== "$") {
      out += c;
      continue;
    }
    const next = value[i + 1];
    if (next === "$") {
      out += "$";
      i++;
      continue;
    }
    let inner: string;
    if (next === "(" || next === "{") {
      const close = matchingClose(value, i + 1);
      if (close === -1) {
        opaque("it has an unbalanced $( in a recipe");
        return out + UNKNOWN;
      }
      inner = value.slice(i + 2, close);
      i = close;
    } else if (next !== undefined) {
      inner = next;
      i++;
    } else {
      out += "$";
      continue;
    }
    if (++result.references > MAX_REFERENCES) {
      opaque("its variables expand too many times to read");
      return out + UNKNOWN;
    }
    out += expandReference(inner, variables, result, opaque, depth);
    if (out.length > MAX_EXPANDED_CHARS) {
      opaque("its recipes expand to too much text to read");
      return out.slice(0, MAX_EXPANDED_CHARS);
    }
  }
  return out;
}

function expandReference(
  inner: string,
  variables: ReadonlyMap<string, string>,
  result: MakefileRecipes,
  opaque: (why: string) => void,
  depth: number,
): string {
  const fn = /^([a-z-]+)\s+([\s\S]*)$/.exec(inner);
  if (fn) {
    const [, name, args = ""] = fn as unknown as [string, string, string];
    if (name === "shell") {
      result.parseTime.push(expandMake(args, variables, result, opaque, depth + 1));
      return UNKNOWN;
    }
    if (OPAQUE_FUNCTIONS.has(name)) {
      opaque(`it uses $(${name} …), which can build commands the gate cannot see`);
      return UNKNOWN;
    }
    if (PURE_FUNCTIONS.has(name)) {
      expandMake(args, variables, result, opaque, depth + 1); // for $(shell) inside
      return "make-value";
    }
  }
  if (/^[@<^?*+|%](?:[DF])?$/.test(inner)) return "make-target";
  const name = inner.split(":")[0] as string; // $(VAR:a=b): the substitution keeps VAR's kind of value
  const defined = variables.get(name);
  if (defined !== undefined) return expandMake(defined, variables, result, opaque, depth + 1);
  if (name in DEFAULTS) return DEFAULTS[name] as string;
  if (/FLAGS$|^LDLIBS$|^LOADLIBES$/.test(name)) return "";
  return UNKNOWN;
}

/** Index of the ")" or "}" closing the one at `open`, counting nesting of the same kind; -1 if none. */
function matchingClose(text: string, open: number): number {
  const opener = text[open];
  const closer = opener === "(" ? ")" : "}";
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === opener) depth++;
    else if (text[i] === closer && --depth === 0) return i;
  }
  return -1;
}
