// Turns tree-sitter-bash word nodes into the strings the shell would see, after quote and escape removal.
// A word built from anything dynamic (expansions, substitutions, brace expansion) is marked non-literal.
import type { Node } from "web-tree-sitter";

export interface ShellWord {
  /** The decoded text; dynamic parts are replaced by known variable values or "\u0000". */
  text: string;
  /** True when the shell would see exactly `text` (no expansion of unknown values). */
  literal: boolean;
  node: Node;
}

/** Variables whose values the classifier knows (HOME, PWD, and literal assignments earlier in the script). */
export type KnownVariables = Map<string, string>;

export const DYNAMIC = "\u0000";

export function decodeWord(node: Node, vars: KnownVariables): ShellWord {
  const out = { text: "", literal: true };
  appendNode(node, vars, out);
  return { text: out.text, literal: out.literal, node };
}

function appendNode(node: Node, vars: KnownVariables, out: { text: string; literal: boolean }): void {
  switch (node.type) {
    case "word":
    case "number":
      if (/[{][^}]*(,|\.\.)[^}]*[}]/.test(node.text)) out.literal = false; // brace expansion
      out.text += unescapeBare(node.text);
      return;
    case "raw_string":
      out.text += node.text.slice(1, -1);
      return;
    case "ansi_c_string":
      out.text += decodeAnsiC(node.text.slice(2, -1));
      return;
    case "string":
    case "translated_string":
      for (const child of node.namedChildren) {
        if (!child) continue;
        if (child.type === "string_content") out.text += unescapeDoubleQuoted(child.text);
        else appendNode(child, vars, out);
      }
      return;
    case "command_name":
    case "concatenation":
      for (const child of node.children) if (child) appendNode(child, vars, out);
      return;
    case "simple_expansion":
    case "expansion": {
      const name = expansionVariable(node);
      const known = name !== undefined && isPlainExpansion(node) ? vars.get(name) : undefined;
      if (known !== undefined) out.text += known;
      else {
        out.text += DYNAMIC;
        out.literal = false;
      }
      return;
    }
    default:
      // command/process substitution, arithmetic, brace expressions, anything new: dynamic.
      if (node.namedChildCount === 0 && /^[\w./:@%+,=~-]*$/.test(node.text)) {
        out.text += node.text;
        return;
      }
      out.text += DYNAMIC;
      out.literal = false;
  }
}

/** `$NAME` or `${NAME}` (no operators such as ${NAME:-x} or ${!NAME}). */
function isPlainExpansion(node: Node): boolean {
  return /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$/.test(node.text);
}

export function expansionVariable(node: Node): string | undefined {
  for (const child of node.namedChildren) {
    if (child?.type === "variable_name") return child.text;
  }
  const match = /^\$\{?[!#]?([A-Za-z_][A-Za-z0-9_]*)/.exec(node.text);
  return match?.[1];
}

function unescapeBare(text: string): string {
  return text.replace(/\\\n/g, "").replace(/\\(.)/gs, "$1");
}

function unescapeDoubleQuoted(text: string): string {
  return text.replace(/\\\n/g, "").replace(/\\([$`"\\])/g, "$1");
}

function decodeAnsiC(body: string): string {
  return body.replace(
    /\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs,
    (_m, esc: string) => {
      const c = esc.charAt(0);
      if (c === "x" || c === "u" || c === "U") return String.fromCodePoint(Number.parseInt(esc.slice(1), 16));
      if (/[0-7]/.test(c)) return String.fromCharCode(Number.parseInt(esc, 8));
      const simple: Record<string, string> = {
        n: "\n",
        t: "\t",
        r: "\r",
        a: "\x07",
        b: "\b",
        e: "\x1b",
        E: "\x1b",
      };
      return simple[c] ?? esc;
    },
  );
}

/**
 * Argument nodes that touch (no whitespace between) form one shell word; tree-sitter-bash sometimes splits
 * them (e.g. `'a'\ b`), so we join them back before decoding.
 */
export function joinAdjacent(nodes: Node[], vars: KnownVariables): ShellWord[] {
  const words: ShellWord[] = [];
  let previousEnd = -1;
  for (const node of nodes) {
    const word = decodeWord(node, vars);
    const last = words.at(-1);
    if (last && node.startIndex === previousEnd) {
      last.text += word.text;
      last.literal &&= word.literal;
    } else {
      words.push(word);
    }
    previousEnd = node.endIndex;
  }
  return words;
}
