// Classifies a bash command on its tree-sitter-bash parse tree, never on raw text. Every node is visited
// (substitutions, subshells, pipelines, lists, functions, heredoc bodies) by an iterative walk; each simple
// command is decoded into words and handed to the analyzer its program name maps to (analyzers/table.ts),
// through the Scan interface (shell-scan.ts). Whatever cannot be seen statically, or exceeds the bounds in
// shell-limits.ts, counts as UNKNOWN (a possible exit and secret read).
import { existsSync, lstatSync, opendirSync } from "node:fs";
import path from "node:path";
import type { Parser, Tree } from "web-tree-sitter";
import { checkOperands, unlistedProgram } from "./analyzers/common.ts";
import { analyzerFor, isListedProgram } from "./analyzers/table.ts";
import { archiveMembers, memberDestination, patchTargets, substitution } from "./archive-members.ts";
import { readBounded, readBoundedText } from "./bounded-read.ts";
import { credentialContentRule } from "./credential-content.ts";
import { isCredentialVariable } from "./credential-variables.ts";
import { expandOnDisk, findSensitiveBelow, globSelector, listTree } from "./disk-walk.ts";
import { Findings, type LocalCodeHook, type LocalCodeKind, type LocalCodeRun } from "./effects.ts";
import { compileGlob, globMatchCompiled, hasGlob } from "./glob-match.ts";
import { canonicalIn, expandTilde, isWithin, type PathContext } from "./path-context.ts";
import { laterExecReasonFor, POLICY_DIR, tamperReasonFor } from "./protected-paths.ts";
import { repositorySecret, revisionWritesGate } from "./repository-content.ts";
import { commandLineGlobOverrides } from "./search-excludes.ts";
import {
  sensitiveContainerFor,
  sensitiveRuleByName,
  sensitiveRuleFor,
  sensitiveRuleForGlob,
} from "./sensitive-paths.ts";
import { assignmentEffect, PROTECTIVE_VARIABLES } from "./shell-env.ts";
import {
  Budget,
  InspectionLimit,
  MAX_COMMAND_CHARS,
  MAX_PIPELINE_STAGES,
  MAX_SCRIPT_DEPTH,
  MAX_TREE_DEPTH,
  MAX_WRAPPER_DEPTH,
  pipeOperators,
} from "./shell-limits.ts";
import { parseWithDeadline } from "./shell-parser.ts";
import type {
  ContentRequest,
  ExtractOptions,
  NestedCommand,
  PathAccess,
  ProgramCall,
  Scan,
} from "./shell-scan.ts";
import {
  DYNAMIC,
  decodeWord,
  decodeWords,
  expansionVariable,
  type KnownVariables,
  MAX_FORMS,
  type ShellWord,
} from "./shell-words.ts";

export { MAX_COMMAND_CHARS } from "./shell-limits.ts";

export interface ClassifyOptions {
  /** Class 7: called for every "runs local code" finding, to inspect (and classify) what will run. */
  localCode?: LocalCodeHook;
  /** Test hook: a tighter or looser budget than the default. */
  budget?: Budget;
}

/** Directories whose programs the image installs (root-owned); anything else invoked by path is local code. */
const SYSTEM_BIN_DIRS = ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/local/sbin"];
/** Files one decision looks into for credential content (each a bounded, non-blocking read of 64 KB). */
const MAX_SNIFFED = 16;
/** Config files a program's analyzer reads (an .npmrc, a requirements file): larger ones are unreadable. */
const MAX_CONFIG_BYTES = 256 * 1024;
/** Entries of a directory read to see whether a recursive read would reach a credential file. */
const MAX_DIR_ENTRIES = 512;

/** Per-script state: what the shell knows at this point of the script. */
interface Frame {
  vars: KnownVariables;
  /** Every directory relative paths may resolve against (the session cwd plus each literal `cd`). */
  cwds: string[];
  /** Where the next command runs (the last literal `cd`). */
  cwd: string;
  depth: number;
  wrapperDepth: number;
  ifsChanged: boolean;
  /** The script text the current tree was parsed from (for word joins tree-sitter misses). */
  script: string;
  /**
   * Variables this script set to values the gate does not know, or to text with `$(`, a backquote or `[`:
   * arithmetic evaluates a variable's value as an expression, and `a[$(cmd)]` there runs cmd.
   */
  tainted: Set<string>;
  /** A protective variable was removed (`unset RIPGREP_CONFIG_PATH`, `env -i`): searches run without excludes. */
  searchExcludesOff: boolean;
  /**
   * Inside a branch, loop, function body, subshell, pipeline or `&&`/`||` list: an assignment here may or may not
   * take effect where the variable is read later, so the variable may hold its old value or the new one.
   */
  maybe: number;
  /** A name reference exists (`declare -n`): an assignment to one name changes another, so values are not tracked. */
  namerefs: boolean;
}

/** Walk state for the children of one node. */
interface Level {
  type: string;
  namedIndex: number;
  /** Every child command's stdin is data (a pipeline fed by a heredoc command). */
  stdinToAll: boolean;
  /** The body (first named child) reads stdin from a redirection, heredoc or here-string. */
  stdinToBody: boolean;
  /** The body's stdin is this file (`cmd < file`). */
  stdinFile?: import("web-tree-sitter").Node;
  /** Inside an arithmetic context (`$(( ))`, `(( ))`, `[[ a -eq b ]]`, a subscript, a C-style for header). */
  arithmetic: boolean;
  /** Runs when the walk leaves this node (after its children). */
  onExit?: () => void;
}

export function classifyShell(
  command: string,
  parser: Parser,
  ctx: PathContext,
  options: ClassifyOptions = {},
): Findings {
  const findings = new Findings();
  const classifier = new ShellClassifier(parser, ctx, findings, options);
  classifier.run(command);
  return findings;
}

class ShellClassifier {
  private readonly parser: Parser;
  private readonly ctx: PathContext;
  private readonly findings: Findings;
  private readonly budget: Budget;
  private readonly hook: LocalCodeHook | undefined;
  private protectedProbes: string[] | undefined;
  private reportedDepth = false;

  constructor(parser: Parser, ctx: PathContext, findings: Findings, options: ClassifyOptions) {
    this.parser = parser;
    this.ctx = ctx;
    this.findings = findings;
    this.budget = options.budget ?? new Budget();
    this.hook = options.localCode;
  }

  run(command: string): void {
    const frame: Frame = {
      vars: new Map([
        ["HOME", [this.ctx.home]],
        ["PWD", [this.ctx.cwd]],
      ]),
      cwds: [this.ctx.cwd],
      cwd: this.ctx.cwd,
      depth: 0,
      wrapperDepth: 0,
      ifsChanged: false,
      script: command,
      tainted: new Set(),
      searchExcludesOff: false,
      maybe: 0,
      namerefs: false,
    };
    if (command.includes(DYNAMIC)) {
      // A NUL byte: no shell receives this text as written (and the gate uses NUL for "computed").
      this.findings.undecidable("the command contains a NUL byte");
      return;
    }
    try {
      this.scanScript(command, frame);
    } catch (error) {
      if (!(error instanceof InspectionLimit)) throw error;
      this.findings.undecidable(error.message);
    }
  }

  // ---- scripts and the walk ----

  private scanScript(script: string, frame: Frame) {
    if (frame.depth > MAX_SCRIPT_DEPTH) return this.findings.undecidable("shell nesting too deep to inspect");
    if (script.length > MAX_COMMAND_CHARS) return this.findings.undecidable("command too long to inspect");
    if (pipeOperators(script, MAX_PIPELINE_STAGES) > MAX_PIPELINE_STAGES)
      return this.findings.undecidable(
        `more than ${MAX_PIPELINE_STAGES} pipeline stages, more than the gate parses`,
      );
    this.budget.tick(1 + (script.length >> 10));
    frame.script = script;
    const tree = parseWithDeadline(this.parser, script, () => this.budget.expired());
    if (!tree) throw new InspectionLimit("command too complex to parse in time");
    try {
      if (tree.rootNode.hasError) this.findings.undecidable("shell syntax the parser cannot read");
      this.walk(tree, frame);
    } finally {
      tree.delete();
    }
  }

  private walk(tree: Tree, frame: Frame): void {
    const cursor = tree.walk();
    const levels: Level[] = [];
    try {
      for (;;) {
        this.budget.tick();
        const type = cursor.nodeType;
        const level = levels.at(-1);
        const index = level && cursor.nodeIsNamed ? level.namedIndex++ : -1;
        let childLevel: Level = {
          type,
          namedIndex: 0,
          stdinToAll: false,
          stdinToBody: false,
          arithmetic: this.arithmeticChildren(type, level, cursor),
        };
        if (level?.arithmetic) this.arithmeticReference(type, cursor, frame);
        switch (type) {
          case "command": {
            const stdin =
              level !== undefined &&
              (level.stdinToAll ||
                (level.type === "pipeline" && index > 0) ||
                (level.stdinToBody && index === 0));
            const stdinFile =
              level?.type === "redirected_statement" && index === 0 ? level.stdinFile : undefined;
            this.visitCommand(cursor.currentNode, frame, stdin, stdinFile);
            break;
          }
          case "pipeline":
            childLevel = { ...childLevel, stdinToAll: level?.stdinToAll ?? false };
            this.maybe(childLevel, frame);
            break;
          case "heredoc_redirect":
            childLevel = { ...childLevel, stdinToAll: true };
            break;
          case "redirected_statement": {
            const input = this.inputRedirect(cursor.currentNode);
            childLevel = {
              ...childLevel,
              stdinToBody: input.any,
              ...(input.file ? { stdinFile: input.file } : {}),
            };
            break;
          }
          case "declaration_command":
            this.visitDeclaration(cursor.currentNode, frame);
            break;
          case "variable_assignment": {
            // Applied after its value is walked: the right-hand side reads the old values.
            const node = cursor.currentNode;
            const prefix = level?.type === "command";
            childLevel.onExit = () => this.visitAssignment(node, frame, prefix);
            break;
          }
          case "unset_command":
            for (const child of cursor.currentNode.namedChildren) {
              if (!child) continue;
              // `unset 'a[$(cmd)]'` evaluates the subscript as arithmetic.
              if (/\[.*[$`]/.test(child.text.slice(0, 4096)))
                this.findings.opaque("`unset` evaluates a subscript that runs commands");
              frame.vars.delete(child.text);
              if (PROTECTIVE_VARIABLES.has(child.text) || child.type !== "variable_name")
                frame.searchExcludesOff = true;
            }
            break;
          case "file_redirect":
            this.visitRedirect(cursor.currentNode, frame);
            break;
          case "simple_expansion":
          case "expansion":
            this.visitExpansion(cursor.currentNode, frame);
            break;
          case "test_command":
            // `[[ -v a[$(cmd)] ]]` evaluates the subscript as arithmetic: the substitution runs.
            if (/-v\s+["']?[\w]+\[[^\]]*[$`]/.test(cursor.currentNode.text.slice(0, 4096)))
              this.findings.opaque("`[[ -v name[…] ]]` evaluates a subscript that runs commands");
            break;
          case "for_statement":
            this.visitFor(cursor.currentNode, frame);
            this.unordered(childLevel);
            this.maybe(childLevel, frame);
            break;
          case "while_statement":
          case "c_style_for_statement":
          case "function_definition":
            this.unordered(childLevel);
            this.maybe(childLevel, frame);
            break;
          case "if_statement":
          case "case_statement":
          case "subshell":
          case "list":
          case "command_substitution":
          case "process_substitution":
            this.maybe(childLevel, frame);
            break;
          case "comment":
            // After a line continuation bash keeps reading the word (`a\<newline>#b` is "a#b"); tree-sitter
            // starts a comment there. The two disagree about the words: do not trust either.
            if (!startsComment(frame.script, cursor.startIndex))
              this.findings.undecidable(
                "a `#` inside a word: the parser reads a comment where bash reads the word",
              );
            break;
        }
        if (levels.length > MAX_TREE_DEPTH && !this.reportedDepth) {
          this.reportedDepth = true;
          this.findings.undecidable("syntax nested too deeply to inspect");
        }
        if (cursor.gotoFirstChild()) {
          levels.push(childLevel);
          continue;
        }
        childLevel.onExit?.();
        for (;;) {
          if (cursor.gotoNextSibling()) break;
          if (!cursor.gotoParent()) return;
          levels.pop()?.onExit?.();
        }
      }
    } finally {
      cursor.delete();
    }
  }

  /** Writes and runs inside a loop or function body happen in an order (and a number of times) the text does not give. */
  private unordered(level: Level): void {
    this.findings.unordered++;
    this.onExit(level, () => {
      this.findings.unordered--;
    });
  }

  /** Assignments below this node may or may not take effect afterwards (Frame.maybe). */
  private maybe(level: Level, frame: Frame): void {
    frame.maybe++;
    this.onExit(level, () => {
      frame.maybe--;
    });
  }

  /** Runs `fn` too when the walk leaves this node. */
  private onExit(level: Level, fn: () => void): void {
    const before = level.onExit;
    level.onExit = () => {
      before?.();
      fn();
    };
  }

  /** Whether a node's children are evaluated as arithmetic. */
  private arithmeticChildren(
    type: string,
    level: Level | undefined,
    cursor: import("web-tree-sitter").TreeCursor,
  ): boolean {
    switch (type) {
      case "arithmetic_expansion":
      case "subscript":
      case "c_style_for_statement":
        return true;
      case "command_substitution":
      case "process_substitution":
      case "do_group":
        return false;
      case "compound_statement":
        return cursor.currentNode.child(0)?.type === "((";
      case "binary_expression": {
        if (level?.arithmetic) return true;
        if (
          level?.type !== "test_command" &&
          level?.type !== "binary_expression" &&
          level?.type !== "parenthesized_expression"
        )
          return false;
        const operator = cursor.currentNode.childForFieldName("operator")?.text ?? "";
        return ARITHMETIC_TEST_OPERATORS.has(operator);
      }
      default:
        return level?.arithmetic ?? false;
    }
  }

  /** A variable read inside arithmetic: its value is evaluated as an expression (and `a[$(cmd)]` runs cmd). */
  private arithmeticReference(
    type: string,
    cursor: import("web-tree-sitter").TreeCursor,
    frame: Frame,
  ): void {
    let name: string | undefined;
    if (type === "variable_name") name = cursor.nodeText;
    else if (type === "word" && cursor.endIndex - cursor.startIndex <= 256) name = cursor.nodeText;
    else if (type === "simple_expansion" || type === "expansion")
      name =
        expansionVariable(cursor.currentNode) ?? /^\$\{?([0-9@*])/.exec(cursor.nodeText.slice(0, 8))?.[1];
    if (name && frame.tainted.has(name))
      this.findings.opaque(
        `arithmetic evaluates $${name}, whose value this command set and may run commands`,
      );
  }

  /** Arithmetic on words (`let`, `declare -i`): every name in them is a variable reference. */
  private arithmeticWords(texts: readonly string[], frame: Frame): void {
    for (const text of texts) {
      for (const match of text.slice(0, 4096).matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)) {
        if (frame.tainted.has(match[0]))
          this.findings.opaque(
            `arithmetic evaluates $${match[0]}, whose value this command set and may run commands`,
          );
      }
    }
  }

  private decodeOptions(frame: Frame, braces = true) {
    return { braces, ifsChanged: frame.ifsChanged, source: frame.script };
  }

  private visitCommand(
    node: import("web-tree-sitter").Node,
    frame: Frame,
    stdinIsData: boolean,
    stdinFile: import("web-tree-sitter").Node | undefined,
  ): void {
    const nameNode = node.childForFieldName("name");
    if (!nameNode) return; // assignments only (`A=1`): visited as variable_assignment
    const argumentNodes = node.childrenForFieldName("argument").filter((c) => c !== null);
    // Decoding reads every word's text: count it, so nested commands over the same long text stay bounded.
    this.budget.tick(argumentNodes.length + ((node.endIndex - node.startIndex) >> 8));
    const words = decodeWords([nameNode, ...argumentNodes], frame.vars, this.decodeOptions(frame));
    const ownStdin = node.namedChildren.some((c) => c?.type === "herestring_redirect");
    const input = stdinFile?.childForFieldName("destination");
    this.analyze(
      words,
      frame,
      stdinIsData || ownStdin,
      input ? decodeWord(input, frame.vars, this.decodeOptions(frame)) : undefined,
    );
  }

  /**
   * Whether a redirected statement's body reads stdin (a `<` file, heredoc or here-string), and the `<` file.
   * Walked with a cursor, one tick per redirection: a statement can carry thousands.
   */
  private inputRedirect(node: import("web-tree-sitter").Node): {
    any: boolean;
    file?: import("web-tree-sitter").Node;
  } {
    const cursor = node.walk();
    let any = false;
    let file: import("web-tree-sitter").Node | undefined;
    try {
      if (!cursor.gotoFirstChild()) return { any };
      do {
        this.budget.tick();
        const type = cursor.nodeType;
        if (type === "heredoc_redirect" || type === "herestring_redirect") any = true;
        else if (type === "file_redirect") {
          const redirect = cursor.currentNode;
          const head = redirect.text.slice(0, 16);
          if (/^\d*<(?!<)/.test(head)) {
            any = true;
            if (/^<(?![<&>])/.test(head)) file ??= redirect;
          }
        }
      } while (cursor.gotoNextSibling());
      return file ? { any, file } : { any };
    } finally {
      cursor.delete();
    }
  }

  private visitAssignment(node: import("web-tree-sitter").Node, frame: Frame, commandPrefix: boolean): void {
    const nameNode = node.childForFieldName("name");
    const name = nameNode?.type === "variable_name" ? nameNode.text : undefined;
    const valueNode = node.childForFieldName("value");
    if (!name) return;
    if (valueNode) this.budget.tick(1 + ((valueNode.endIndex - valueNode.startIndex) >> 8));
    const value = valueNode ? decodeWord(valueNode, frame.vars, this.decodeOptions(frame, false)) : undefined;
    const appends = node.text.charAt(name.length) === "+";
    this.assign(frame, name, valueNode?.type === "array" ? "array" : value, {
      persists: !commandPrefix,
      appends,
      numeric: valueNode?.type === "arithmetic_expansion" || valueNode?.type === "number",
    });
  }

  /**
   * The one place an assignment takes effect: the environment rule (shell-env.ts) for every spelling, and, when
   * it persists in this shell (not `VAR=x cmd`), what the variable now holds and whether IFS changed.
   */
  private assign(
    frame: Frame,
    name: string,
    value: ShellWord | "array" | undefined,
    options: { persists: boolean; appends?: boolean; numeric?: boolean },
  ): void {
    const effect = assignmentEffect(name, value === "array" ? undefined : value);
    if (effect?.kind === "runs-code") this.findings.unmodeled("config", effect.reason);
    else if (effect?.kind === "network") this.findings.sends(effect.reason);
    else if (effect?.kind === "word-splitting" && options.persists) frame.ifsChanged = true;
    if (!options.persists) return; // `VAR=x cmd`: only that command's environment
    // A value the gate cannot read, or one holding `$(`, a backquote or `[`, can run commands under arithmetic;
    // the result of an arithmetic expansion is a number.
    const unreadable =
      value === "array" ||
      value === undefined ||
      value.forms.some((f) => f.includes(DYNAMIC) || /[$`[]/.test(f));
    if (unreadable && !options.numeric) frame.tainted.add(name);
    else if (frame.maybe === 0) frame.tainted.delete(name);
    this.setVariable(frame, name, this.assignedForms(frame, name, value, options.appends ?? false));
  }

  /** What a variable holds after an assignment (undefined: a value the gate cannot know). */
  private assignedForms(
    frame: Frame,
    name: string,
    value: ShellWord | "array" | undefined,
    appends: boolean,
  ): string[] | undefined {
    const before = frame.vars.get(name);
    if (value === "array") return undefined;
    if (!value) return appends ? (before ? [...before] : undefined) : [""];
    const forms = value.forms.map((form) => tildeInAssignment(form, this.ctx.home));
    if (
      forms.some((form) => form.includes(DYNAMIC)) ||
      (!value.literal && forms.length === 1 && /[*?[]/.test(forms[0] ?? ""))
    )
      return undefined;
    if (!appends) return forms;
    if (!before) return undefined;
    const joined = before.flatMap((b) => forms.map((f) => b + f));
    return joined.length > MAX_FORMS ? undefined : joined;
  }

  /**
   * The one place a variable's known value changes. Where the assignment may not take effect (a branch, a loop, a
   * subshell…), the variable holds either value afterwards: the union, or unknown when either is.
   */
  private setVariable(frame: Frame, name: string, forms: string[] | undefined): void {
    if (frame.namerefs) {
      frame.vars.delete(name);
      frame.tainted.add(name);
      return;
    }
    if (frame.maybe > 0) {
      const before = frame.vars.get(name);
      const union = before && forms ? [...new Set([...before, ...forms])] : undefined;
      if (union && union.length <= MAX_FORMS) frame.vars.set(name, union);
      else frame.vars.delete(name);
      return;
    }
    if (forms) frame.vars.set(name, forms);
    else frame.vars.delete(name);
  }

  private visitDeclaration(node: import("web-tree-sitter").Node, frame: Frame): void {
    const keyword = node.child(0)?.text ?? "";
    const children = node.namedChildren.filter((c) => c !== null);
    const flags = children.filter((c) => c.type === "word" && c.text.startsWith("-")).map((c) => c.text);
    // A name reference makes every later assignment through it change another variable: stop trusting values.
    if (flags.some((f) => /^-[a-zA-Z]*n/.test(f))) {
      for (const name of frame.vars.keys()) frame.tainted.add(name);
      frame.vars.clear();
      frame.namerefs = true;
    }
    // `declare -a x='( … )'` evaluates the string as a compound assignment: expansions in it run.
    if (flags.some((f) => /^-[a-zA-Z]*[aA]/.test(f)))
      for (const child of children) {
        const value = child.type === "variable_assignment" ? child.childForFieldName("value") : null;
        if (value && value.type !== "array" && /^["']\s*\(/.test(value.text) && /[$`]/.test(value.text))
          this.findings.opaque(
            `\`${keyword}\` evaluates a string as an array assignment that expands commands`,
          );
      }
    if (flags.some((f) => /^-[a-zA-Z]*i/.test(f))) {
      // `declare -i x=expr` evaluates expr as arithmetic.
      const values = children
        .filter((c) => c.type === "variable_assignment")
        .map((c) => c.childForFieldName("value")?.text ?? "");
      this.arithmeticWords(values, frame);
    }
    const names = children.filter((c) => c.type === "variable_name" || c.type === "variable_assignment");
    const printsAll =
      names.length === 0 &&
      ["export", "declare", "typeset", "local", "readonly"].includes(keyword) &&
      !flags.some((f) => /^-[a-zA-Z]*f/.test(f));
    if (flags.some((f) => f.includes("p"))) {
      for (const child of names) {
        const text = child.type === "variable_name" ? child.text : child.childForFieldName("name")?.text;
        if (text && isCredentialVariable(text))
          this.findings.readsSecret(`prints credential-like variable ${text}`);
      }
    }
    if (printsAll)
      this.findings.readsSecret(
        `\`${keyword}${flags.length ? ` ${flags.join(" ")}` : ""}\` prints variables`,
      );
  }

  private visitExpansion(node: import("web-tree-sitter").Node, frame: Frame): void {
    const text = node.text;
    if (text.startsWith("${!")) {
      this.findings.opaque(`indirect variable expansion ${text.slice(0, 80)}`);
      return;
    }
    const name = expansionVariable(node);
    // `${x@P}` expands the value as a prompt string: command substitutions in it run.
    if (/@P\}$/.test(text)) {
      const forms = name ? frame.vars.get(name) : undefined;
      if (!forms || forms.some((form) => /[$`]/.test(form)))
        this.findings.opaque(
          `\`${text.slice(0, 80)}\` expands a value as a prompt, which runs the commands in it`,
        );
    }
    // `${x:offset:length}`: offset and length are arithmetic, so a value this command set can run commands.
    const substring = /^\$\{[\w@*#?$!-]+:(?![-=?+])([^}]{0,1024})\}$/.exec(text);
    if (substring?.[1]) this.arithmeticWords([substring[1]], frame);
    if (name && isCredentialVariable(name))
      this.findings.readsSecret(`reads credential-like variable $${name}`);
  }

  private visitFor(node: import("web-tree-sitter").Node, frame: Frame): void {
    const variable = node.childForFieldName("variable")?.text;
    if (!variable) return;
    const values = node.childrenForFieldName("value").filter((c) => c !== null);
    if (values.length === 0) {
      frame.vars.delete(variable); // `for x; do` iterates over "$@"
      return;
    }
    const words = decodeWords(values, frame.vars, this.decodeOptions(frame));
    const forms = words.flatMap((w) => w.forms);
    if (forms.some((f) => f.includes(DYNAMIC) || /[$`[]/.test(f))) frame.tainted.add(variable);
    else frame.tainted.delete(variable);
    if (forms.length > MAX_FORMS || forms.some((f) => f.includes(DYNAMIC))) frame.vars.delete(variable);
    else frame.vars.set(variable, forms);
  }

  private visitRedirect(node: import("web-tree-sitter").Node, frame: Frame): void {
    const operator = node.children.find((c) => c && !c.isNamed)?.text ?? ">";
    const destination = node.childForFieldName("destination");
    if (!destination) return;
    this.budget.tick(1 + ((destination.endIndex - destination.startIndex) >> 8));
    const word = decodeWord(destination, frame.vars, this.decodeOptions(frame));
    if (/&$/.test(operator) && /^\d+-?$|^-$/.test(word.text)) return; // fd duplication: 2>&1, >&-
    const scan = this.scanFor(frame);
    if (word.forms.some((form) => /^\/dev\/(tcp|udp)\//.test(form))) {
      this.findings.sends(`redirects to a network socket ${word.source}`);
      return;
    }
    if (operator === "<" || operator === "<&" || operator === "<<<") {
      scan.path(word, "read");
      return;
    }
    if (word.literal && NULL_DEVICES.has(word.text)) return;
    this.findings.writes(`redirection writes ${word.literal ? word.text : "a computed path"}`);
    scan.path(word, "write");
  }

  // ---- commands ----

  private analyze(
    words: readonly ShellWord[],
    frame: Frame,
    stdinIsData: boolean,
    stdinFile?: ShellWord,
  ): void {
    const first = words[0];
    if (!first) return;
    this.budget.tick(words.length);
    if (!first.literal) {
      const why =
        first.forms.length > 1 ? "brace expansion" : first.text.includes(DYNAMIC) ? "a value" : "a glob";
      this.findings.opaque(`command name is computed at run time (${why}: ${first.source})`);
      return;
    }
    const invokedAs = first.text;
    if (invokedAs === "") return;
    const name = invokedAs.includes("/") ? path.basename(invokedAs) : invokedAs;
    const scan = this.scanFor(frame);
    let localFile = false;
    if (invokedAs.includes("/")) {
      const resolved = scan.resolve(first);
      if (resolved && !SYSTEM_BIN_DIRS.some((dir) => path.dirname(resolved) === dir)) {
        scan.localCode("executable", invokedAs, [first]);
        localFile = true;
      }
    }
    if (name === "let")
      this.arithmeticWords(
        words.slice(1).map((w) => w.text),
        frame,
      );
    const call: ProgramCall = {
      name,
      invokedAs,
      args: words.slice(1),
      stdinIsData,
      ...(stdinFile ? { stdinFile } : {}),
    };
    const analyzer = analyzerFor(name);
    if (analyzer === unlistedProgram && localFile) {
      // A local file run by path: the inspection of that file decides; its operands are still paths.
      checkOperands(call.args, scan, "operand");
      this.embeddedCommand(call, scan);
      return;
    }
    analyzer(call, scan);
    if (analyzer === unlistedProgram) this.embeddedCommand(call, scan);
  }

  /**
   * An unlisted program may run its arguments as a command (`perf stat curl …`, `gosu root git push`, a dynamic
   * loader given a program). When an argument names a program the table knows, the words from there are
   * classified as a command too, so an unknown runner cannot hide what it runs.
   */
  private embeddedCommand(call: ProgramCall, scan: Scan): void {
    const start = call.args.findIndex((arg) => {
      if (!arg.literal || arg.text.startsWith("-")) return false;
      const base = path.basename(arg.text);
      return isListedProgram(base) && !INERT_PROGRAM_WORDS.has(base);
    });
    if (start !== -1) scan.command(call.args.slice(start), { stdinIsData: call.stdinIsData });
  }

  /** The interface analyzers see, bound to one frame. */
  private scanFor(frame: Frame): Scan {
    const self = this;
    return {
      findings: this.findings,
      home: this.ctx.home,
      cwd: frame.cwd,
      command(words: readonly ShellWord[], options: NestedCommand = {}) {
        if (frame.wrapperDepth >= MAX_WRAPPER_DEPTH)
          return self.findings.undecidable("command wrappers nested too deep to inspect");
        if (options.sameShell) {
          // `time cd x`, `command cd x`, `! cd x`: the builtin runs in this shell, so its effects persist.
          frame.wrapperDepth++;
          try {
            self.analyze(words, frame, options.stdinIsData ?? false);
          } finally {
            frame.wrapperDepth--;
          }
          return;
        }
        const nested = self.nestedFrame(frame, options, false);
        nested.wrapperDepth = frame.wrapperDepth + 1;
        const environment = options.environment;
        if (
          environment?.cleared ||
          environment?.unset?.some((name) => !name.literal || PROTECTIVE_VARIABLES.has(name.text))
        )
          nested.searchExcludesOff = true;
        self.analyze(words, nested, options.stdinIsData ?? false);
      },
      script(word: ShellWord | undefined, what: string, options: NestedCommand = {}) {
        if (!word) return self.findings.opaque(`${what} without a script`);
        if (!word.literal) return self.findings.opaque(`${what} runs a script computed at run time`);
        self.scanScript(word.text, self.nestedFrame(frame, options, true));
      },
      assignment(name: string, value: ShellWord | undefined, options: { persists?: boolean } = {}) {
        self.assign(frame, name, value, { persists: options.persists ?? false });
      },
      path: (word, access) => this.checkPath(word, access, frame),
      recursiveRead: (word, program, options) => {
        // Our excludes hold unless removed, or undone by a glob of the search's own that could select a
        // credential file (or is computed at run time): such a glob also brings hidden files back.
        const globs = options?.excludes;
        const overriding =
          globs?.globs.some(
            (glob) => !glob.literal || commandLineGlobOverrides(glob.text, globs.caseInsensitive),
          ) ?? false;
        const excludes = globs !== undefined && !overriding && !frame.searchExcludesOff;
        // With globs of its own, ripgrep reads only the files they pick: the walk looks at those alone.
        const positive = globs?.globs.filter((glob) => !glob.literal || !glob.text.startsWith("!")) ?? [];
        const picked =
          globs && positive.length > 0 && positive.every((glob) => glob.literal)
            ? { globs: positive.map((glob) => glob.text), caseInsensitive: globs.caseInsensitive }
            : undefined;
        this.recursiveRead(word, program, frame, (options?.hidden ?? true) || overriding, excludes, picked);
      },
      treeWrite: (dir, program) => this.treeWrite(dir, program, frame),
      treeCopy: (source, destination, program) => this.treeCopy(source, destination, program, frame),
      localCode: (kind, program, files, targets, options) =>
        this.localCode(kind, program, files, targets, options?.optional ?? false, frame),
      chdir: (word) => this.chdir(word, frame),
      forget: (variable) => {
        frame.vars.delete(variable);
        frame.tainted.add(variable);
        if (PROTECTIVE_VARIABLES.has(variable) || variable.includes(DYNAMIC)) frame.searchExcludesOff = true;
      },
      resolve: (word) => this.resolveLiteral(word, frame),
      exists: (relative) => existsSync(path.resolve(frame.cwd, relative)),
      config: (file) => {
        const absolute = file.startsWith("~/")
          ? path.join(this.ctx.home, file.slice(2))
          : path.resolve(frame.cwd, file);
        this.budget.tick();
        const read = readBounded(absolute, MAX_CONFIG_BYTES);
        if (read.ok) return read.bytes.toString("utf8");
        return read.reason === "missing" ? undefined : null;
      },
      repositoryRead: (request, pathspecs, where) => this.repositoryRead(request, pathspecs, where, frame),
      extractArchive: (archive, into, program, options) =>
        this.extractArchive(archive, into, program, options ?? {}, frame),
      printArchive: (archive, program) => this.printArchive(archive, program, frame),
      applyPatch: (patch, into, program, strip) => this.applyPatch(patch, into, program, strip, frame),
      repositoryCheckout: (revisions, pathspecs, where) =>
        this.repositoryCheckout(revisions, pathspecs, where, frame),
    };
  }

  /** A frame for a nested command or script: its own copy of what the shell knows. */
  private nestedFrame(frame: Frame, options: NestedCommand, script: boolean): Frame {
    const nested: Frame = {
      ...frame,
      vars: script ? new Map(frame.vars) : frame.vars,
      tainted: script ? new Set(frame.tainted) : frame.tainted,
      cwds: [...frame.cwds],
      depth: script ? frame.depth + 1 : frame.depth,
    };
    if (options.cwd) this.chdir(options.cwd, nested);
    return nested;
  }

  private chdir(word: ShellWord | undefined, frame: Frame): void {
    if (!word) {
      frame.cwd = this.ctx.home; // `cd` alone goes home
      if (!frame.cwds.includes(frame.cwd)) frame.cwds.push(frame.cwd);
      return;
    }
    this.checkPath(word, "stat", frame);
    const dir = this.resolveLiteral(word, frame);
    if (dir === undefined) {
      this.findings.writesUnlisted(
        `changes to a directory computed at run time (${word.source}): later relative paths may name any file`,
      );
      return;
    }
    frame.cwd = dir;
    frame.vars.set("PWD", [dir]);
    if (!frame.cwds.includes(dir)) frame.cwds.push(dir);
  }

  private resolveLiteral(word: ShellWord, frame: Frame): string | undefined {
    if (!word.literal || word.text.includes(DYNAMIC)) return undefined;
    const text = this.dirStackTilde(word.text, frame);
    if (text.includes(DYNAMIC)) return undefined;
    return path.resolve(frame.cwd, expandTilde(expandUserHome(text), this.ctx.home));
  }

  /** `~+` is $PWD and `~-` $OLDPWD (unknown here), `~+N`/`~-N` the directory stack (unknown). */
  private dirStackTilde(form: string, frame: Frame): string {
    const match = /^~([+-])(\d*)(?=\/|$)/.exec(form);
    if (!match) return form;
    const rest = form.slice(match[0].length);
    return match[1] === "+" && match[2] === "" ? frame.cwd + rest : DYNAMIC + rest;
  }

  // ---- paths ----

  /**
   * Checks one path operand for credential files (SECRET), the gate's own files (TAMPER; a pattern that could
   * name them is UNKNOWN), and files other programs run later (EXIT). Relative paths resolve against every
   * directory the script may be in; computed parts match as `*`.
   */
  private checkPath(word: ShellWord, access: PathAccess, frame: Frame): void {
    for (const rawForm of word.forms) {
      this.budget.tick();
      let form = rawForm;
      // "/dev/fd/63" is the pipe a process substitution passes (its content is the inner command's output).
      if (form === "" || form === "-" || form.includes("\n") || form === PROCESS_SUBSTITUTION_PATH) continue;
      if (/^file:\/\//i.test(form)) form = fileUrlPath(form);
      else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(form)) continue; // other URLs are not local paths
      form = expandUserHome(this.dirStackTilde(form, frame));
      // A computed part can hold "/" and "..": `app/$(cat f)` can name any file, so it reads like `$(cat f)`.
      if (isFullyDynamic(form) || ((access === "read" || access === "operand") && form.includes(DYNAMIC))) {
        this.computedPath(word, access);
        continue;
      }
      const pattern = collapseStars(expandTilde(form, this.ctx.home).replaceAll(DYNAMIC, "*"));
      const candidates = pattern.startsWith("*")
        ? [pattern]
        : path.isAbsolute(pattern)
          ? [path.normalize(pattern)]
          : frame.cwds.map((dir) => path.resolve(dir, pattern));
      for (const candidate of candidates) {
        if (hasGlob(candidate)) this.patternPath(candidate, access, word, rawForm.includes(DYNAMIC));
        else this.literalPath(canonicalIn(this.ctx, candidate), access, word);
      }
    }
  }

  private computedPath(word: ShellWord, access: PathAccess): void {
    if (access === "read")
      this.findings.readsSecret(`reads a file whose name is computed at run time (${word.source})`);
    else if (access === "write") {
      this.findings.writesUnlisted(`writes to a path computed at run time (${word.source})`);
    } else if (access === "operand") this.findings.writesUnnamed();
  }

  private patternPath(pattern: string, access: PathAccess, word: ShellWord, computed: boolean): void {
    const glob = compileGlob(pattern);
    if (access !== "stat" && access !== "delete") {
      const rule =
        sensitiveRuleForGlob(pattern, this.ctx) ?? sensitiveRuleFor(this.instantiate(pattern), this.ctx);
      if (rule)
        this.findings.readsSecret(`may ${access === "write" ? "write" : "read"} ${rule.why}: ${word.source}`);
      else if (access !== "write") this.patternOnDisk(pattern, word);
    }
    // A glob (not a computed part) names the files that exist now: judged by each of them.
    if (access === "write" && (computed || !this.writesMatches(pattern)))
      this.findings.writesUnlisted(`writes to paths chosen at run time (${word.source})`);
    if (access === "write" || access === "delete" || access === "operand") {
      const probes = this.gateProbes(access === "delete");
      if (probes.some((probe) => globMatchCompiled(glob, probe)))
        this.findings.writesUnlisted(`may change the approval gate's files (${word.source})`);
    }
  }

  /**
   * The files a write pattern names now, each checked as a written path (`**`, which the program expands itself,
   * stands for everything below the folder before it). False when they cannot all be listed.
   */
  private writesMatches(pattern: string): boolean {
    if (!path.isAbsolute(pattern)) return false;
    const parts = pattern.split("/");
    const globAt = parts.findIndex((part) => hasGlob(part));
    if (parts.slice(globAt).includes("**")) {
      const root = parts.slice(0, globAt).join("/") || "/";
      const listed = listTree(root, () => this.budget.tick());
      if ("incomplete" in listed) return false;
      this.findings.wrote(root);
      for (const entry of listed.entries)
        if (!this.checkWritten(path.join(root, entry), "a pattern")) return true;
      return true;
    }
    const expansion = expandOnDisk(pattern, () => this.budget.tick());
    if ("incomplete" in expansion) return false;
    for (const match of expansion.paths) {
      if (path.basename(match) === "." || path.basename(match) === "..") continue;
      if (!this.checkWritten(canonicalIn(this.ctx, match), "a pattern")) return true;
    }
    return true;
  }

  /** The files a read pattern names now (bash expands it against the same tree): any credential among them. */
  private patternOnDisk(pattern: string, word: ShellWord): void {
    if (!path.isAbsolute(pattern)) return; // a computed prefix: the rules' example paths decided above
    const expansion = expandOnDisk(pattern, () => this.budget.tick());
    if ("incomplete" in expansion) {
      this.findings.readsSecret(
        `reads files a pattern names that the gate cannot check (${word.source}: ${expansion.incomplete})`,
      );
      return;
    }
    for (const match of expansion.paths) {
      const file = canonicalIn(this.ctx, match);
      const rule = sensitiveRuleFor(file, this.ctx) ?? sensitiveContainerFor(file, this.ctx);
      if (rule) {
        this.findings.readsSecret(`may read ${rule.why}: ${word.source} names ${match}`);
        return;
      }
    }
  }

  private literalPath(file: string, access: PathAccess, word: ShellWord): void {
    const shown = word.source;
    if (access === "read" || access === "operand") {
      const rule = sensitiveRuleFor(file, this.ctx) ?? sensitiveContainerFor(file, this.ctx);
      if (rule) this.findings.readsSecret(`touches ${rule.why}: ${shown}`);
      else if (access === "read") {
        // A file the name rules do not know can still hold credentials: looked at by content (bounded).
        const content = this.sniff(file);
        if (content) this.findings.readsSecret(`reads ${shown}, which holds ${content}`);
      }
    }
    if (access === "write" || access === "operand") {
      this.findings.wrote(file);
      const tamper = tamperReasonFor(file, this.ctx);
      if (tamper) this.findings.changesGate(tamper);
      const later = laterExecReasonFor(file, this.ctx);
      if (later) this.findings.writesRunsLater(later, file);
      if (access === "write") {
        const rule = sensitiveRuleFor(file, this.ctx);
        if (rule) this.findings.readsSecret(`writes ${rule.why}: ${shown}`);
      }
    }
    if (access === "delete") {
      const tamper = tamperReasonFor(file, this.ctx, { ancestors: true });
      if (tamper) this.findings.changesGate(tamper);
    }
  }

  /**
   * One concrete path a pattern can name, to test against the rules directly (the rules' example paths cannot
   * cover every spelling): a leading `*` becomes HOME (the likeliest prefix of a credential path), other `*`
   * nothing, `?` and classes one letter.
   */
  private instantiate(pattern: string): string {
    const withHome = pattern.startsWith("*") ? this.ctx.home + pattern.slice(1) : pattern;
    // A loop, not a regular expression: `[` runs without a `]` would make /\[[^\]]*\]/ quadratic.
    let out = "";
    let closing = true; // once no `]` follows, none follows any later `[` either: one failed search at most
    for (let i = 0; i < withHome.length; i++) {
      const c = withHome.charAt(i);
      if (c === "*") continue;
      if (c === "?") out += "x";
      else if (c === "[") {
        const close = closing ? withHome.indexOf("]", i + 2) : -1;
        out += "x";
        if (close === -1) closing = false;
        else i = close;
      } else out += c;
    }
    return path.normalize(out);
  }

  /** Example paths of the gate's own files (policy, install dir, Pi's agent dir, the project's .pi). */
  private gateProbes(withDirectories: boolean): string[] {
    this.protectedProbes ??= [
      this.ctx.policyPath,
      ...this.ctx.gateDirs.map((dir) => path.join(dir, "approval-gate.mjs")),
      path.join(this.ctx.agentDir, "settings.json"),
      path.join(this.ctx.agentDir, "extensions", "x.ts"),
      path.join(this.ctx.cwd, ".pi", "settings.json"),
    ];
    if (!withDirectories) return this.protectedProbes;
    return [
      ...this.protectedProbes,
      POLICY_DIR,
      ...this.ctx.gateDirs,
      this.ctx.agentDir,
      path.join(this.ctx.cwd, ".pi"),
    ];
  }

  private recursiveRead(
    word: ShellWord,
    program: string,
    frame: Frame,
    hidden: boolean,
    excludes: boolean,
    picked?: { globs: string[]; caseInsensitive: boolean },
  ): void {
    for (const form of word.forms) {
      this.budget.tick();
      if (form.startsWith("-")) continue;
      if (isFullyDynamic(form) || form.includes(DYNAMIC)) {
        this.findings.readsSecret(`\`${program}\` reads recursively a directory computed at run time`);
        continue;
      }
      const pattern = collapseStars(
        expandTilde(expandUserHome(this.dirStackTilde(form, frame)), this.ctx.home),
      );
      const candidates = path.isAbsolute(pattern)
        ? [path.normalize(pattern)]
        : frame.cwds.map((dir) => path.resolve(dir, pattern));
      for (const candidate of candidates) {
        if (!hasGlob(candidate)) {
          this.recursiveReadDir(canonicalIn(this.ctx, candidate), word, program, hidden, excludes, picked);
          continue;
        }
        const glob = compileGlob(candidate);
        const home = this.ctx.home;
        const reachesHome = [home, ...ancestors(home)].some((dir) => globMatchCompiled(glob, dir));
        const rule =
          sensitiveRuleForGlob(`${candidate}/*`, this.ctx) ?? sensitiveRuleForGlob(candidate, this.ctx);
        if (reachesHome || rule) {
          this.findings.readsSecret(
            `\`${program}\` reads ${word.source} recursively, which may include ${rule?.why ?? "credential files in HOME"}`,
          );
          continue;
        }
        // What the pattern names now, each read like a folder named literally.
        const expansion = expandOnDisk(candidate, () => this.budget.tick());
        if ("incomplete" in expansion) {
          this.findings.readsSecret(
            `\`${program}\` reads ${word.source} recursively, and the gate cannot check it (${expansion.incomplete})`,
          );
          continue;
        }
        for (const match of expansion.paths)
          this.recursiveReadDir(canonicalIn(this.ctx, match), word, program, hidden, excludes, picked);
      }
    }
  }

  /**
   * One folder read recursively. With the search excludes active (ripgrep with our config), only what they
   * cannot cover counts: HOME's hidden folders, a secret folder itself, a credential file at the top. Without
   * them (grep -r, tar, cp -r, zip, git grep…), every file below counts: a bounded walk looks for one.
   */
  private recursiveReadDir(
    dir: string,
    word: ShellWord,
    program: string,
    hidden: boolean,
    excludes: boolean,
    picked: { globs: string[]; caseInsensitive: boolean } | undefined,
  ): void {
    const home = this.ctx.home;
    const inHome = dir === home || isWithin(home, dir);
    if (inHome && hidden) {
      this.findings.readsSecret(
        `\`${program}\` reads ${word.source} recursively, including credential files in HOME`,
      );
      return;
    }
    // Example paths tell whether a credential location lies under `dir`; the folder's own entries tell
    // whether a credential file sits in it (a `.env` in the working directory).
    const why =
      (sensitiveRuleFor(dir, this.ctx) ?? sensitiveContainerFor(dir, this.ctx))?.why ??
      (excludes
        ? inHome
          ? undefined
          : this.sensitiveEntry(dir, hidden)
        : this.sensitiveBelow(
            dir,
            hidden,
            picked && globSelector(picked.globs, picked.caseInsensitive, dir),
          ));
    if (why) this.findings.readsSecret(`\`${program}\` reads ${word.source} recursively, including ${why}`);
  }

  /**
   * A write whose file names the gate cannot list (archive extraction, a patch, a server-named download): it can
   * carry git hooks, git config or other files later commands run, so it is a possible exit.
   */
  private treeWrite(dir: ShellWord | undefined, program: string, frame: Frame): void {
    this.findings.writesUnnamed();
    const target = dir ? this.resolveLiteral(dir, frame) : frame.cwd;
    if (target === undefined) {
      this.findings.writesUnlisted(`\`${program}\` writes files into a directory computed at run time`);
      return;
    }
    const canonical = canonicalIn(this.ctx, target);
    const tamper = tamperReasonFor(canonical, this.ctx, { ancestors: true });
    if (tamper) this.findings.changesGate(tamper);
    this.findings.sends(
      `\`${program}\` writes files the gate cannot list into ${dir?.source ?? "the working directory"} (they may include git hooks or config that later commands run)`,
    );
  }

  /**
   * A directory tree copied or moved to `destination` (cp -r, mv, rsync): decided by the paths it writes. Each
   * entry of the source (a bounded walk) lands at a destination path, checked like any written path: the gate's
   * own files (blocked), files other programs run later, and the command's written set (code run afterwards).
   */
  private treeCopy(source: ShellWord, destination: ShellWord, program: string, frame: Frame) {
    const from = this.resolveLiteral(source, frame);
    const to = this.resolveLiteral(destination, frame);
    if (from === undefined || to === undefined) return this.treeWrite(destination, program, frame);
    const sourceDir = canonicalIn(this.ctx, from);
    if (!isDirectory(sourceDir)) return;
    // `cp -r src/. dst` and `rsync src/ dst` copy the contents; otherwise an existing folder receives src itself.
    const contents = /\/\.$/.test(source.text) || (program === "rsync" && source.text.endsWith("/"));
    const landing =
      !contents && isDirectory(canonicalIn(this.ctx, to)) ? path.join(to, path.basename(from)) : to;
    const copyTo = canonicalIn(this.ctx, landing);
    const listed = listTree(sourceDir, () => this.budget.tick());
    if ("incomplete" in listed) {
      this.findings.writesUnlisted(
        `\`${program}\` copies ${source.source}, which the gate cannot list (${listed.incomplete})`,
        copyTo,
      );
      return;
    }
    this.checkWritten(copyTo, program);
    for (const entry of listed.entries) {
      if (!this.checkWritten(path.join(copyTo, entry), program)) return;
    }
  }

  /** The archive's members, or why the gate cannot list them. */
  private membersOf(
    archive: ShellWord | undefined,
    frame: Frame,
  ): { members: string[] } | { unknown: string } {
    if (!archive) return { unknown: "it reads the archive from stdin" };
    const file = this.resolveLiteral(archive, frame);
    if (file === undefined) return { unknown: "the archive is named at run time" };
    return archiveMembers(canonicalIn(this.ctx, file), () => this.budget.tick());
  }

  /** Extraction, decided by where each member lands (the gate's files: blocked; files run later: asked). */
  private extractArchive(
    archive: ShellWord | undefined,
    into: ShellWord | undefined,
    program: string,
    options: ExtractOptions,
    frame: Frame,
  ): void {
    const listed = this.membersOf(archive, frame);
    const target = into ? this.resolveLiteral(into, frame) : frame.cwd;
    const transforms = (options.transforms ?? []).map((word) =>
      word.literal ? substitution(word.text) : undefined,
    );
    if ("unknown" in listed || target === undefined || transforms.some((t) => t === undefined)) {
      if ("unknown" in listed) this.findings.writes(`\`${program}\` cannot be listed: ${listed.unknown}`);
      this.treeWrite(into, program, frame);
      return;
    }
    this.findings.writesUnnamed();
    const root = canonicalIn(this.ctx, target);
    const transform = (name: string) => transforms.reduce((current, t) => (t ? t(current) : current), name);
    for (const member of listed.members) {
      const landing = memberDestination(member, root, { ...options, transform });
      if (landing !== undefined && !this.checkWritten(canonicalIn(this.ctx, landing), program)) return;
    }
  }

  /** Members printed to stdout: a read of the files inside (credential names among them ask). */
  private printArchive(archive: ShellWord | undefined, program: string, frame: Frame): void {
    const listed = this.membersOf(archive, frame);
    if ("unknown" in listed) {
      this.findings.readsSecret(`\`${program}\` prints an archive the gate cannot list (${listed.unknown})`);
      return;
    }
    for (const member of listed.members) {
      const rule = sensitiveRuleByName(path.resolve(frame.cwd, member.replace(/^\/+/, "")), this.ctx);
      if (rule) {
        this.findings.readsSecret(`\`${program}\` prints ${member} from the archive (${rule.why})`);
        return;
      }
    }
    this.findings.reads();
  }

  /** A patch, decided by the files it names (relative to `into`). */
  private applyPatch(
    patch: ShellWord | undefined,
    into: ShellWord | undefined,
    program: string,
    strip: number | undefined,
    frame: Frame,
  ): void {
    const file = patch ? this.resolveLiteral(patch, frame) : undefined;
    const target = into ? this.resolveLiteral(into, frame) : frame.cwd;
    const read = file === undefined ? undefined : readBounded(canonicalIn(this.ctx, file), 8 * 1024 * 1024);
    if (!read?.ok || target === undefined) {
      this.treeWrite(into, program, frame);
      return;
    }
    this.findings.writesUnnamed();
    for (const name of patchTargets(read.bytes.toString("utf8"), strip)) {
      const landing = canonicalIn(this.ctx, path.resolve(target, name));
      if (!this.checkWritten(landing, program)) return;
    }
  }

  /** History, the index, a stash or a revision printed or copied: a read of the files inside (repository-content.ts). */
  private repositoryRead(
    request: ContentRequest,
    pathspecs: readonly ShellWord[],
    where: ShellWord | undefined,
    frame: Frame,
  ): void {
    const start = where ? this.resolveLiteral(where, frame) : frame.cwd;
    const computed = pathspecs.find((word) => !word.literal);
    if (start === undefined || computed) {
      this.findings.readsSecret("git prints repository content chosen at run time");
      return;
    }
    const verdict = repositorySecret(
      canonicalIn(this.ctx, start),
      this.ctx,
      request,
      pathspecs.map((word) => word.text),
      () => this.budget.tick(),
    );
    if ("found" in verdict)
      this.findings.readsSecret(
        `git prints files from the repository (${request.what}) that include ${verdict.found}`,
      );
    else if ("unknown" in verdict)
      this.findings.readsSecret(
        `git prints files from the repository (${request.what}) that the gate cannot list (${verdict.unknown})`,
      );
    else this.findings.reads();
  }

  /** A checkout, reset, merge or stash pop: decided by the paths the revisions hold (the gate's own files). */
  private repositoryCheckout(
    revisions: readonly ShellWord[],
    pathspecs: readonly ShellWord[],
    where: ShellWord | undefined,
    frame: Frame,
  ): void {
    const start = where ? this.resolveLiteral(where, frame) : frame.cwd;
    if (start === undefined || revisions.some((w) => !w.literal) || pathspecs.some((w) => !w.literal)) {
      this.findings.writesUnlisted("git writes a revision chosen at run time into the work tree");
      return;
    }
    this.findings.writesUnnamed();
    const verdict = revisionWritesGate(
      canonicalIn(this.ctx, start),
      this.ctx,
      revisions.map((word) => word.text),
      pathspecs.map((word) => word.text),
      () => this.budget.tick(),
    );
    if ("tamper" in verdict) this.findings.changesGate(`git writes ${verdict.tamper}`);
    else if ("unknown" in verdict)
      this.findings.writesUnlisted(
        `git writes files from ${revisions.map((w) => w.text).join(", ")} that the gate cannot list (${verdict.unknown})`,
      );
  }

  /** Credential content of a file read by a command (the first MAX_SNIFFED files a decision reads). */
  private sniffed = 0;
  private sniff(file: string): string | undefined {
    if (this.sniffed >= MAX_SNIFFED) return undefined;
    this.sniffed++;
    this.budget.tick(8);
    return credentialContentRule(file);
  }

  /** One path a copy, extraction or patch writes; false once something decisive (the gate's files) is found. */
  private checkWritten(file: string, program: string): boolean {
    this.findings.wrote(file);
    const tamper = tamperReasonFor(file, this.ctx);
    if (tamper) {
      this.findings.changesGate(`\`${program}\` ${tamper}`, file);
      return false;
    }
    const later = laterExecReasonFor(file, this.ctx);
    if (later) this.findings.writesRunsLater(`\`${program}\` ${later}`, file);
    return true;
  }

  /** Class 7: the command runs code from local files. Recorded for the inspection; plain local work until then. */
  private localCode(
    kind: LocalCodeKind,
    program: string,
    files: readonly ShellWord[],
    targets: readonly string[] | undefined,
    optional: boolean,
    frame: Frame,
  ): void {
    const paths: string[] = [];
    for (const file of files) {
      const resolved = this.resolveLiteral(file, frame);
      if (resolved === undefined) {
        this.findings.opaque(
          `\`${program}\` runs a file whose path is computed at run time (${file.source})`,
        );
        return;
      }
      paths.push(resolved);
      // Hooks git runs only if present are the gate's to inspect, not operands of the command: no path checks.
      if (optional) continue;
      this.checkPath(file, "read", frame);
      if (/^\/(dev|proc)\//.test(resolved)) {
        this.findings.opaque(`\`${program}\` runs code from a pipe or device (${file.source})`);
        return;
      }
      const canonical = canonicalIn(this.ctx, resolved);
      if (this.ctx.gateDirs.some((dir) => isWithin(canonical, dir)) && program !== "chat-ui-agent-policy")
        this.findings.changesGate(`runs the approval gate's own programs (${file.source})`);
    }
    const run: LocalCodeRun = {
      kind,
      program,
      paths,
      cwd: frame.cwd,
      ...(targets?.length ? { targets: [...targets] } : {}),
      ...(optional ? { optional } : {}),
    };
    const shown = [...files.map((f) => f.source), ...(targets ?? [])].join(" ");
    this.findings.runsLocalCode(run, `runs local code: ${kind} ${shown || program}`.trim());
    if (!this.hook) return;
    this.hook(run, {
      findings: this.findings,
      classifyScript: (script, cwd, what) => {
        const nested = this.nestedFrame(frame, {}, true);
        nested.cwd = cwd;
        if (!nested.cwds.includes(cwd)) nested.cwds.push(cwd);
        if (nested.depth > MAX_SCRIPT_DEPTH)
          return this.findings.undecidable(`${what}: nested too deep to inspect`);
        this.scanScript(script, nested);
      },
    });
  }

  /** A credential file anywhere below `dir` (a bounded walk), or what kept the walk from vouching for it. */
  private sensitiveBelow(
    dir: string,
    hidden: boolean,
    selects?: (file: string) => boolean,
  ): string | undefined {
    const result = findSensitiveBelow(
      dir,
      { hidden, ...(selects ? { selects } : {}) },
      (file) => sensitiveRuleByName(file, this.ctx)?.why,
      () => this.budget.tick(),
    );
    if ("found" in result)
      return `${result.found.why} (${path.relative(dir, result.found.file) || result.found.file})`;
    if ("incomplete" in result) return `files the gate cannot check (${result.incomplete})`;
    return undefined;
  }

  /** A credential file directly inside `dir` (one bounded directory read), as a reason. */
  private sensitiveEntry(dir: string, hidden: boolean): string | undefined {
    for (const name of directoryNames(dir, MAX_DIR_ENTRIES)) {
      if (!hidden && name.startsWith(".")) continue;
      const rule = sensitiveRuleFor(path.join(dir, name), this.ctx);
      if (rule) return `${rule.why} (${name})`;
    }
    return undefined;
  }
}

/** Program names that are also ordinary words in arguments (`tool --mode test`): not taken as commands. */
const INERT_PROGRAM_WORDS = new Set([
  "test",
  "true",
  "false",
  "time",
  "sleep",
  "echo",
  "printf",
  "yes",
  "read",
  "set",
  "type",
  "which",
  "help",
  "info",
  "date",
  "id",
  "w",
  "who",
  "users",
  "groups",
  "arch",
  "file",
  "link",
  "install",
  "patch",
  "find",
  "sort",
  "split",
  "join",
  "expand",
  "look",
  "tree",
  "diff",
  "make",
  "task",
  "serve",
  "open",
  "host",
  "mail",
  "pass",
  "op",
  "wait",
  "kill",
  "exit",
  "return",
  "shift",
  "let",
  "local",
  "export",
  "declare",
  "unset",
  "alias",
  "source",
  "cd",
  "pwd",
  "[",
  ":",
  "!",
  ".",
  "in",
  "do",
  "done",
  "if",
  "then",
  "else",
  "fi",
  "for",
  "while",
  "case",
  "esac",
  "select",
]);

const ARITHMETIC_TEST_OPERATORS = new Set(["-eq", "-ne", "-lt", "-le", "-gt", "-ge"]);

const PROCESS_SUBSTITUTION_PATH = "/dev/fd/63";

const NULL_DEVICES = new Set(["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"]);

/** A word with nothing known but slashes: it could name any file. */
function isFullyDynamic(form: string): boolean {
  for (let i = 0; i < form.length; i++) {
    const c = form.charAt(i);
    if (c !== DYNAMIC && c !== "/" && c !== "*") return false;
  }
  return true;
}

/** Bash expands `~` at the start of an assignment's value and after each `:` (PATH-style lists). */
function tildeInAssignment(value: string, home: string): string {
  return value
    .split(":")
    .map((part) => expandTilde(part, home))
    .join(":");
}

/** `file:///a%20b` → `/a b` (what curl and Pi open); a malformed URL is matched as a computed path. */
function fileUrlPath(url: string): string {
  const rest = url.replace(/^file:\/\/[^/]*/i, "");
  try {
    return decodeURIComponent(rest) || "/";
  } catch {
    return rest.replace(/%[0-9a-f]{0,2}/gi, DYNAMIC);
  }
}

function ancestors(dir: string): string[] {
  const out: string[] = [];
  let current = dir;
  for (;;) {
    const parent = path.dirname(current);
    if (parent === current) return out;
    out.push(parent);
    current = parent;
  }
}

/** Up to `limit` entry names of a directory (none when it is missing or unreadable). */
function directoryNames(dir: string, limit: number): string[] {
  const names: string[] = [];
  let handle: ReturnType<typeof opendirSync> | undefined;
  try {
    handle = opendirSync(dir);
    for (let i = 0; i < limit; i++) {
      const entry = handle.readSync();
      if (!entry) break;
      names.push(entry.name);
    }
  } catch {
    // missing or unreadable: nothing to list
  } finally {
    try {
      handle?.closeSync();
    } catch {
      // already closed
    }
  }
  return names;
}

function isDirectory(file: string): boolean {
  try {
    return lstatSync(file).isDirectory();
  } catch {
    return false;
  }
}

let passwdHomes: Map<string, string> | undefined;

/** Home directories by user name, from /etc/passwd (read once, bounded), as bash's `~user` resolves them. */
function userHomes(): Map<string, string> {
  if (passwdHomes) return passwdHomes;
  passwdHomes = new Map();
  try {
    const text = readBoundedText("/etc/passwd", 1 << 20) ?? "";
    for (const line of text.split("\n")) {
      const fields = line.split(":");
      if (fields.length >= 6 && fields[0] && fields[5]) passwdHomes.set(fields[0], fields[5]);
    }
  } catch {
    // no passwd: `~user` stays literal, as bash leaves an unknown user
  }
  return passwdHomes;
}

/** `~user/x` → that user's home + `/x` (unknown users stay literal, as in bash); `~/` and others unchanged. */
function expandUserHome(form: string): string {
  const match = /^~([A-Za-z_][A-Za-z0-9_.-]{0,31}\$?)(?=\/|$)/.exec(form);
  if (!match?.[1]) return form;
  const home = userHomes().get(match[1]);
  return home === undefined ? form : home + form.slice(match[0].length);
}

/** Runs of `*` match what one `*` matches; collapsing them keeps later steps short. */
function collapseStars(pattern: string): string {
  return pattern.includes("**") ? pattern.replace(/\*+/g, "*") : pattern;
}

/** Would bash start a comment at `index` (a `#` at the start of a word)? */
export function startsComment(script: string, index: number): boolean {
  if (index === 0) return true;
  const before = script.charAt(index - 1);
  if (!/[ \t\n;&|()<>]/.test(before)) return false;
  return !(/[ \t\n]/.test(before) && script.charAt(index - 2) === "\\");
}
