// A shell command's shape: what an "Allow for this session" grant covers. Two commands have the same shape when
// the gate's own parse of each gives the same structure (lists, pipelines, redirections and their operators) and
// the same argument lists word for word after the shell's quote removal (`'npm' test` is `npm test`), run from
// the same directory, and every local script they run (the bytes the dialog showed) is byte for byte the same.
// Conservative on purpose: no prefixes, no patterns. Anything whose words the gate cannot know exactly (variables,
// command substitution, globs, brace expansion, `~`), environment prefixes, background jobs, subshells, functions,
// loops, here-documents, a parse error or a long command has no shape, so it is never granted (it always asks).
import type { Node, Parser } from "web-tree-sitter";
import type { ShownScript } from "./local-code.ts";
import { DYNAMIC, decodeWords } from "./shell-words.ts";

/** Longer commands are not grantable (a grant key is at most 4096 characters, and people read the label). */
export const MAX_SHAPED_COMMAND = 2048;
const MAX_KEY = 4096;
const MAX_LABEL = 512;

/** Nodes that only group what they contain: the shape keeps their kind and order. */
const STRUCTURE = new Set(["program", "list", "pipeline", "redirected_statement"]);
/** Operators between commands that keep one fixed meaning (`&` backgrounds a job: not grantable). */
const OPERATORS = new Set(["&&", "||", "|", "|&"]);
/** Plain sequencing (`;` or a newline, which the parse may not even show): implied by the order. */
const SEQUENCE = new Set([";", "\n"]);
/** Redirection operators to a named file or descriptor (here-documents and here-strings are not grantable). */
const REDIRECTS = new Set([">", ">>", "<", ">&", "&>", "&>>", "<&", ">|"]);
/** What an argument may be made of: text the gate decodes exactly, or not at all (then: no shape). */
const ARGUMENT = new Set(["word", "string", "raw_string", "concatenation", "number"]);

export interface CommandShape {
  /** The grant key: equal keys are the same shape. */
  key: string;
  /** What the person saw, for grant lists. */
  label: string;
}

/** The shape of `command`, or undefined when it has none (it is then never granted). */
export function commandShape(
  command: string,
  parser: Parser,
  cwd: string,
  scripts: readonly ShownScript[] = [],
): CommandShape | undefined {
  if (command.length === 0 || command.length > MAX_SHAPED_COMMAND) return undefined;
  const tree = parser.parse(command);
  if (!tree) return undefined;
  try {
    if (tree.rootNode.hasError) return undefined;
    const tokens = shapeTokens(tree.rootNode, command);
    if (!tokens) return undefined;
    const key = JSON.stringify({
      v: 1,
      cwd,
      shape: tokens,
      scripts: scripts.map((script) => [script.file.path, script.file.sha256]),
    });
    if (key.length > MAX_KEY) return undefined;
    const shown = command.trim().replace(/\s+/g, " ");
    return {
      key,
      label: `bash: ${shown.length > 200 ? `${shown.slice(0, 200)}…` : shown}`.slice(0, MAX_LABEL),
    };
  } finally {
    tree.delete();
  }
}

type Token = string | string[];

/** A flat token list (pre-order with close markers) of the parse: iterative, linear in the tree. */
function shapeTokens(root: Node, source: string): Token[] | undefined {
  const tokens: Token[] = [];
  const stack: Array<Node | ")"> = [root];
  while (stack.length > 0) {
    const node = stack.pop() as Node | ")";
    if (node === ")") {
      tokens.push(")");
      continue;
    }
    if (node.type === "comment") continue;
    if (STRUCTURE.has(node.type)) {
      tokens.push(`(${node.type}`);
      stack.push(")");
      for (let i = node.childCount - 1; i >= 0; i--) {
        const child = node.child(i);
        if (child) stack.push(child);
      }
      continue;
    }
    if (!node.isNamed) {
      if (SEQUENCE.has(node.type)) continue;
      if (!OPERATORS.has(node.type)) return undefined;
      tokens.push(node.type);
      continue;
    }
    if (node.type === "command") {
      const argv = commandWords(node, source);
      if (!argv) return undefined;
      tokens.push(["cmd", ...argv]);
      continue;
    }
    if (node.type === "file_redirect") {
      const redirect = redirectWords(node, source);
      if (!redirect) return undefined;
      tokens.push(["redirect", ...redirect]);
      continue;
    }
    return undefined;
  }
  return tokens;
}

/** The argument list exactly as the shell passes it, or undefined when any word is not known exactly. */
function commandWords(node: Node, source: string): string[] | undefined {
  const parts: Node[] = [];
  for (const child of node.children) {
    if (!child) return undefined;
    if (child.type === "command_name") {
      const name = child.firstNamedChild;
      if (!name || child.namedChildCount !== 1 || !ARGUMENT.has(name.type)) return undefined;
      parts.push(name);
    } else if (ARGUMENT.has(child.type)) {
      parts.push(child);
    } else {
      // variable assignments, redirects inside the command, substitutions…: not an exact shape
      return undefined;
    }
  }
  return exactWords(parts, source);
}

function redirectWords(node: Node, source: string): string[] | undefined {
  const out: string[] = [];
  const targets: Node[] = [];
  for (const child of node.children) {
    if (!child) return undefined;
    if (child.type === "file_descriptor") out.push(`fd${child.text}`);
    else if (!child.isNamed && REDIRECTS.has(child.type)) out.push(child.type);
    else if (ARGUMENT.has(child.type)) targets.push(child);
    else return undefined;
  }
  const target = exactWords(targets, source);
  if (target?.length !== 1) return undefined;
  return [...out, ...target];
}

function exactWords(nodes: Node[], source: string): string[] | undefined {
  if (nodes.length === 0) return undefined;
  const words = decodeWords(nodes, new Map(), { braces: true, ifsChanged: false, source });
  if (words.some((word) => !word.literal || word.text.includes(DYNAMIC) || word.text.startsWith("~")))
    return undefined;
  return words.map((word) => word.text);
}
