// Loads tree-sitter-bash (WASM) once. In the image the two .wasm files sit beside the bundle
// (/opt/chat-ui-agent/); from source they come from node_modules.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Language, Parser, type Tree } from "web-tree-sitter";

export const RUNTIME_WASM = "tree-sitter.wasm";
export const BASH_WASM = "tree-sitter-bash.wasm";
const PACKAGE_WASM: Record<string, string> = {
  [RUNTIME_WASM]: "web-tree-sitter/tree-sitter.wasm",
  [BASH_WASM]: "tree-sitter-bash/tree-sitter-bash.wasm",
};

/** Beside this module first (the shipped layout), then the installed package. */
export function locateWasm(name: string, moduleUrl: string = import.meta.url): string {
  const beside = path.join(path.dirname(fileURLToPath(moduleUrl)), name);
  if (existsSync(beside)) return beside;
  const specifier = PACKAGE_WASM[name];
  if (!specifier) throw new Error(`unknown wasm file ${name}`);
  try {
    return createRequire(moduleUrl).resolve(specifier);
  } catch {
    throw new Error(`shell parser: ${name} not found beside ${beside} nor as ${specifier}`);
  }
}

let loading: Promise<Parser> | undefined;

/** One parser per process; a failed load is retried on the next call (and every call until then fails closed). */
export function loadBashParser(): Promise<Parser> {
  loading ??= (async () => {
    const runtimeWasm = locateWasm(RUNTIME_WASM);
    await Parser.init({ locateFile: () => runtimeWasm });
    const language = await Language.load(locateWasm(BASH_WASM));
    const parser = new Parser();
    parser.setLanguage(language);
    return parser;
  })();
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}

/** Reads the input in chunks (the default string input re-slices the whole remainder on every read). */
const CHUNK = 8192;

/**
 * Parses `script`, giving up (undefined) once `expired()` says so (asked at every progress report). A
 * cancelled parse leaves state in the parser, so it is reset before returning.
 */
export function parseWithDeadline(parser: Parser, script: string, expired: () => boolean): Tree | undefined {
  const tree = parser.parse((index: number) => script.slice(index, index + CHUNK), null, {
    // Declared as returning void, but tree-sitter cancels the parse when it returns true.
    progressCallback: expired as () => void,
  });
  if (!tree) {
    parser.reset();
    return undefined;
  }
  return tree;
}

export type { Parser, Tree };
