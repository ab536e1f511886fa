// Pi's own modules, loaded from the installed (pinned, patched) package by file URL: the package's `exports`
// map hides its internals from bare specifiers, and the same URL Pi itself imports gives the same module
// instance. Nothing here re-implements Pi; it only reaches the functions Pi's tools really call.
import { realpathSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type {
  createBashToolDefinition,
  createEditToolDefinition,
  createFindToolDefinition,
  createGrepToolDefinition,
  createLsToolDefinition,
  createReadToolDefinition,
  createWriteToolDefinition,
} from "@earendil-works/pi-coding-agent";
import { findPiInstall } from "../pi-install.ts";

/** dist/core/tools/path-utils.js: how every built-in tool turns its `path` parameter into a file. */
export interface PiToolPaths {
  resolveToCwd(filePath: string, cwd: string): string;
  resolveReadPath(filePath: string, cwd: string): string;
}

/** dist/utils/paths.js: the general form, with an explicit home for `~`. */
export interface PiPaths {
  resolvePath(
    input: string,
    baseDir?: string,
    options?: { homeDir?: string; stripAtPrefix?: boolean; normalizeUnicodeSpaces?: boolean },
  ): string;
}

/** dist/utils/child-process.js: waits for a shell without hanging on pipes held by detached descendants. */
export interface PiChildProcess {
  waitForChildProcess(child: import("node:child_process").ChildProcess): Promise<number | null>;
}

/** dist/core/tools/index.js: the tool factories alone (the package index loads all of Pi, ~3x slower). */
export interface PiToolFactories {
  createReadToolDefinition: typeof createReadToolDefinition;
  createWriteToolDefinition: typeof createWriteToolDefinition;
  createEditToolDefinition: typeof createEditToolDefinition;
  createBashToolDefinition: typeof createBashToolDefinition;
  createGrepToolDefinition: typeof createGrepToolDefinition;
  createFindToolDefinition: typeof createFindToolDefinition;
  createLsToolDefinition: typeof createLsToolDefinition;
}

const MODULES = {
  toolPaths: "dist/core/tools/path-utils.js",
  paths: "dist/utils/paths.js",
  childProcess: "dist/utils/child-process.js",
  tools: "dist/core/tools/index.js",
} as const;

async function load<T>(fromDir: string, relative: string, names: readonly string[]): Promise<T> {
  const { packageDir } = findPiInstall(fromDir);
  const module = (await import(pathToFileURL(path.join(packageDir, relative)).href)) as Record<
    string,
    unknown
  >;
  for (const name of names) {
    if (typeof module[name] !== "function") {
      // Fail closed: a Pi whose internals moved must not be half-used.
      throw new Error(`Pi's ${relative} has no function ${name} (Pi upgraded without review?)`);
    }
  }
  return module as T;
}

/**
 * Where to look for Pi from inside Pi's own process (the gate bundle): beside the running Pi entry
 * (process.argv[1]), since the bundle may be installed where no node_modules can be found from it. Falls back
 * to `fallback` (the bundle's directory).
 */
export function runningPiDir(fallback: string): string {
  const entry = process.argv[1];
  if (entry) {
    try {
      const dir = path.dirname(realpathSync(entry));
      findPiInstall(dir);
      return dir;
    } catch {
      // not Pi (a test runner, say): use the fallback
    }
  }
  return fallback;
}

/** Pi's package index (the same files the running Pi imports), by file URL. */
export async function loadPiPackage(
  fromDir: string,
): Promise<typeof import("@earendil-works/pi-coding-agent")> {
  const { packageDir } = findPiInstall(fromDir);
  return import(pathToFileURL(path.join(packageDir, "dist", "index.js")).href);
}

export function loadPiToolPaths(fromDir: string): Promise<PiToolPaths> {
  return load(fromDir, MODULES.toolPaths, ["resolveToCwd", "resolveReadPath"]);
}

export function loadPiPaths(fromDir: string): Promise<PiPaths> {
  return load(fromDir, MODULES.paths, ["resolvePath"]);
}

export function loadPiChildProcess(fromDir: string): Promise<PiChildProcess> {
  return load(fromDir, MODULES.childProcess, ["waitForChildProcess"]);
}

export function loadPiToolFactories(fromDir: string): Promise<PiToolFactories> {
  return load(fromDir, MODULES.tools, [
    "createReadToolDefinition",
    "createWriteToolDefinition",
    "createEditToolDefinition",
    "createBashToolDefinition",
    "createGrepToolDefinition",
    "createFindToolDefinition",
    "createLsToolDefinition",
  ]);
}
