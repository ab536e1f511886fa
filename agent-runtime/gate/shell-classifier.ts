// Classifies a bash command on its tree-sitter-bash parse tree, never on raw text. Every command node is
// visited (substitutions, subshells, pipelines, lists, functions, bodies); wrappers and `sh -c` scripts
// are unwrapped and parsed again. Whatever cannot be seen statically counts as a possible exit and secret.
import path from "node:path";
import type { Node, Parser } from "web-tree-sitter";
import { CREDENTIAL_VARIABLE } from "./credential-variables.ts";
import { Findings } from "./gate-classes.ts";
import { canonicalIn, expandTilde, type PathContext } from "./path-context.ts";
import { laterExecReasonFor, tamperReasonFor } from "./protected-paths.ts";
import { hasGlob, sensitiveContainerFor, sensitiveRuleFor, sensitiveRuleForGlob } from "./sensitive-paths.ts";
import { analyzeProgram } from "./shell-programs.ts";
import {
  DYNAMIC,
  decodeWord,
  expansionVariable,
  joinAdjacent,
  type KnownVariables,
  type ShellWord,
} from "./shell-words.ts";

/** Nested scripts (`bash -c "bash -c …"`) deeper than this are not followed: opaque. */
const MAX_DEPTH = 6;
/** Commands longer than this are not parsed: opaque. */
export const MAX_COMMAND_CHARS = 64 * 1024;

/** Variables that make later programs run other commands or load code. */
const EXEC_VARIABLE =
  /^(GIT_(SSH|SSH_COMMAND|PAGER|EDITOR|EXTERNAL_DIFF|ASKPASS|PROXY_COMMAND|EXEC_PATH|CONFIG.*|TEMPLATE_DIR)|PAGER|EDITOR|VISUAL|LD_PRELOAD|LD_LIBRARY_PATH|BASH_ENV|ENV|PROMPT_COMMAND|NODE_OPTIONS|PYTHONSTARTUP|PERL5OPT|SSH_ASKPASS)$/;

export interface ShellScan {
  parser: Parser;
  ctx: PathContext;
  findings: Findings;
  vars: KnownVariables;
  /** Directories relative paths may be resolved against (the session cwd plus every literal `cd`). */
  cwds: string[];
  depth: number;
}

export function classifyShell(command: string, parser: Parser, ctx: PathContext): Findings {
  const findings = new Findings();
  const vars: KnownVariables = new Map([
    ["HOME", ctx.home],
    ["PWD", ctx.cwd],
  ]);
  scanScript(command, { parser, ctx, findings, vars, cwds: [ctx.cwd], depth: 0 });
  return findings;
}

/** Parses and walks one script (the top-level command or a nested `sh -c` string). */
export function scanScript(script: string, scan: ShellScan) {
  if (scan.depth > MAX_DEPTH) return scan.findings.opaque("shell nesting too deep to inspect");
  if (script.length > MAX_COMMAND_CHARS) return scan.findings.opaque("command too long to inspect");
  const tree = scan.parser.parse(script);
  if (!tree) return scan.findings.opaque("shell parser failed");
  try {
    if (tree.rootNode.hasError) scan.findings.opaque("shell syntax the parser cannot read");
    walk(tree.rootNode, scan);
  } finally {
    tree.delete();
  }
}

function walk(node: Node, scan: ShellScan) {
  switch (node.type) {
    case "command":
      visitCommand(node, scan);
      break;
    case "declaration_command":
      visitDeclaration(node, scan);
      break;
    case "variable_assignment":
      visitAssignment(node, scan);
      break;
    case "file_redirect":
      visitFileRedirect(node, scan);
      break;
    case "simple_expansion":
    case "expansion":
      visitExpansion(node, scan);
      break;
  }
  for (const child of node.namedChildren) if (child) walk(child, scan);
}

function visitExpansion(node: Node, scan: ShellScan) {
  const name = expansionVariable(node);
  if (/^\$\{!/.test(node.text)) scan.findings.opaque(`indirect variable expansion ${node.text}`);
  else if (name && CREDENTIAL_VARIABLE.test(name))
    scan.findings.add("SECRET", `reads credential-like variable $${name}`);
}

function visitAssignment(node: Node, scan: ShellScan) {
  const name = node.childForFieldName("name")?.text;
  const value = node.childForFieldName("value");
  if (!name) return;
  if (EXEC_VARIABLE.test(name))
    scan.findings.opaque(`sets ${name}, which can make programs run other commands`);
  if (!value) {
    scan.vars.set(name, "");
    return;
  }
  const word = decodeWord(value, scan.vars);
  if (word.literal) scan.vars.set(name, word.text);
  else scan.vars.delete(name);
  checkPathWord(word, scan, { writer: false });
}

function visitDeclaration(node: Node, scan: ShellScan) {
  const keyword = node.child(0)?.text ?? "";
  const words = node.namedChildren
    .filter((c): c is Node => c !== null && c.type === "word")
    .map((c) => c.text);
  const names = node.namedChildren.filter(
    (c) => c && (c.type === "variable_name" || c.type === "variable_assignment"),
  );
  const printing =
    (keyword === "export" && names.length === 0) ||
    words.includes("-p") ||
    ((keyword === "declare" || keyword === "typeset" || keyword === "local" || keyword === "readonly") &&
      names.length === 0);
  if (words.includes("-p")) {
    for (const name of names) {
      const text = name?.type === "variable_name" ? name.text : name?.childForFieldName("name")?.text;
      if (text && CREDENTIAL_VARIABLE.test(text))
        scan.findings.add("SECRET", `prints credential-like variable ${text}`);
    }
  }
  if (printing)
    scan.findings.add(
      "SECRET",
      `\`${keyword}${words.length ? ` ${words.join(" ")}` : ""}\` prints variables`,
    );
}

const NULL_DEVICES = new Set(["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"]);

function visitFileRedirect(node: Node, scan: ShellScan) {
  const operator = node.children.find((c) => c && !c.isNamed)?.text ?? ">";
  const destination = node.childForFieldName("destination");
  if (!destination) return;
  const word = decodeWord(destination, scan.vars);
  const isInput = operator === "<" || operator === "<&";
  if (/&$/.test(operator) && /^\d+-?$|^-$/.test(word.text)) return; // fd duplication: 2>&1
  if (word.literal && /^\/dev\/(tcp|udp)\//.test(word.text)) {
    scan.findings.add("EXIT", `redirects to a network socket ${word.text}`);
    return;
  }
  if (isInput) {
    checkPathWord(word, scan, { writer: false });
    return;
  }
  if (word.literal && NULL_DEVICES.has(word.text)) return;
  scan.findings.add("WRITE", `redirection writes ${word.literal ? word.text : "a computed path"}`);
  if (!word.literal) {
    scan.findings.add("UNKNOWN", "redirection target is not a literal path");
    return;
  }
  checkPathWord(word, scan, { writer: true });
}

function visitCommand(node: Node, scan: ShellScan) {
  const nameNode = node.childForFieldName("name");
  if (!nameNode) return; // assignments only (`A=1`): handled as variable_assignment
  const argumentNodes = node.childrenForFieldName("argument").filter((c): c is Node => c !== null);
  const words = joinAdjacent([nameNode, ...argumentNodes], scan.vars);
  const redirectedInput = node.namedChildren.some(
    (c) => c && (c.type === "herestring_redirect" || c.type === "heredoc_redirect"),
  );
  const parent = node.parent;
  const piped = parent?.type === "pipeline" && parent.namedChildren[0]?.id !== node.id;
  const heredocParent =
    parent?.type === "redirected_statement" &&
    parent.namedChildren.some(
      (c) => c && (c.type === "heredoc_redirect" || c.type === "herestring_redirect"),
    );
  analyzeCommand(words, scan, { stdinIsData: redirectedInput || piped || heredocParent });
}

export interface CommandContext {
  /** stdin carries data or code from a pipe, heredoc or here-string. */
  stdinIsData: boolean;
}

/** Classifies one simple command given as decoded words (the first is the program). */
export function analyzeCommand(words: ShellWord[], scan: ShellScan, command: CommandContext) {
  const first = words[0];
  if (!first) return;
  if (!first.literal || first.text.includes(DYNAMIC)) {
    scan.findings.opaque(`command name is computed at run time (${first.node.text.slice(0, 80)})`);
    return;
  }
  const program = path.basename(first.text);
  const args = words.slice(1);
  analyzeProgram(program, first.text, args, scan, command);
}

/** Parses and scans a literal script string (`sh -c '…'`), one level deeper. */
export function scanNested(word: ShellWord | undefined, scan: ShellScan, what: string) {
  if (!word) return scan.findings.opaque(`${what} without a script`);
  if (!word.literal) return scan.findings.opaque(`${what} runs a script computed at run time`);
  scanScript(word.text, { ...scan, vars: new Map(scan.vars), cwds: [...scan.cwds], depth: scan.depth + 1 });
}

/** Re-runs classification on words that form a command (wrappers such as sudo, xargs, find -exec). */
export function analyzeNested(words: ShellWord[], scan: ShellScan, command: CommandContext) {
  if (scan.depth >= MAX_DEPTH) return scan.findings.opaque("command wrappers nested too deep to inspect");
  analyzeCommand(words, { ...scan, depth: scan.depth + 1 }, command);
}

/**
 * Checks one argument as a path: credential files (SECRET), gate files (TAMPER, when the command may write),
 * git hooks/config (EXIT, when written). Relative paths resolve against every directory the script cd'd to.
 */
export function checkPathWord(
  word: ShellWord,
  scan: ShellScan,
  options: { writer: boolean; ancestors?: boolean },
) {
  // Options (`-la`, `--force`) and numbers are not paths; `--file=path` is checked as `path`.
  if (/^-[^=]*$|^\d+$/.test(word.text)) return;
  let raw = optionValue(word.text);
  if (raw.length === 0 || raw.includes("\n") || /^[a-z][\w+.-]*:\/\//i.test(raw)) return;
  if (raw.includes(DYNAMIC)) {
    // A partly computed path (`/proc/$$/environ`, `~/.ssh/$KEY`): match it as a glob. A fully computed one
    // (`"$f"`) says nothing and is skipped.
    if (raw.replaceAll(DYNAMIC, "").replaceAll("/", "").length === 0) return;
    raw = raw.replaceAll(DYNAMIC, "*");
  }
  const expanded = expandTilde(raw, scan.ctx.home);
  const bases = path.isAbsolute(expanded) ? [""] : scan.cwds;
  for (const base of bases) {
    const absolute = base ? path.resolve(base, expanded) : path.resolve(expanded);
    if (hasGlob(absolute)) {
      const rule = sensitiveRuleForGlob(absolute, scan.ctx);
      if (rule) scan.findings.add("SECRET", `may read ${rule.why}: ${raw}`);
      const prefix = absolute.slice(0, absolute.search(/[*?[]/));
      const tamper = options.writer
        ? tamperReasonFor(canonicalIn(scan.ctx, path.dirname(`${prefix}x`)), scan.ctx)
        : undefined;
      if (tamper) scan.findings.add("TAMPER", tamper);
      continue;
    }
    const file = canonicalIn(scan.ctx, absolute);
    const rule = sensitiveRuleFor(file, scan.ctx) ?? sensitiveContainerFor(file, scan.ctx);
    if (rule) scan.findings.add("SECRET", `touches ${rule.why}: ${raw}`);
    if (options.writer) {
      const tamper = tamperReasonFor(file, scan.ctx, { ancestors: options.ancestors ?? false });
      if (tamper) scan.findings.add("TAMPER", tamper);
      const gitExec = laterExecReasonFor(file, scan.ctx);
      if (gitExec) scan.findings.add("EXIT", gitExec);
    }
  }
}

/** `--file=path` → `path`; other words unchanged. */
function optionValue(text: string): string {
  const match = /^--?[\w-]+=(.*)$/s.exec(text);
  return match ? (match[1] ?? "") : text;
}
