// Tool paths resolved by Pi's own code: the installed Pi's path functions (file:// URLs, %xx escapes, "@",
// unicode spaces, "~", read's macOS name variants), loaded from the Pi package by file URL so they are the very
// module Pi's tools import. Never a re-implementation: the gate must decide on the file Pi will really open.
import { realpathSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { findPiInstall, PI_PACKAGE, PI_VERSION } from "../pi-install.ts";
import { pathTool } from "../tools/tool-table.ts";
import { readBoundedText } from "./bounded-read.ts";

/** A package.json larger than this is not Pi's. */
const MAX_MANIFEST = 256 * 1024;

interface NormalizeOptions {
  normalizeUnicodeSpaces?: boolean;
  stripAtPrefix?: boolean;
  homeDir?: string;
}

/** The three functions of Pi 0.84.2 the gate uses (dist/utils/paths.js, dist/core/tools/path-utils.js). */
export interface PiPaths {
  /** Pi's resolvePath: normalise (unicode spaces, "@", "~" with homeDir, file:// URL) then path.resolve. */
  resolvePath(input: string, baseDir: string, options: NormalizeOptions): string;
  /** What write, edit, grep, find and ls call on their path (Pi's HOME for "~"). */
  resolveToCwd(filePath: string, cwd: string): string;
  /** What read calls: resolveToCwd, then macOS screenshot / NFD / curly-quote variants that exist. */
  resolveReadPath(filePath: string, cwd: string): string;
  /** Where they were loaded from (for logs and errors). */
  packageDir: string;
}

export type ResolvedToolPath = { ok: true; path: string; lexical: string } | { ok: false; reason: string };

/**
 * The absolute path a built-in tool will open for `raw`, resolved exactly as that tool does, except that "~" is
 * the tools' HOME (`toolHome`), then canonicalised by `canonical` (symlinks). The result is only accepted when
 * it is a fixpoint: running the tool's own resolution on it yields it again. The gate writes it back into the
 * call's input, so the tool cannot resolve it differently later.
 */
export function resolveToolInputPath(
  paths: PiPaths,
  toolName: string,
  raw: string | undefined,
  where: { cwd: string; toolHome: string },
  canonical: (absolute: string) => string,
): ResolvedToolPath {
  const spec = pathTool(toolName);
  if (!spec) return { ok: false, reason: `${toolName} takes no path` };
  // grep/find/ls: `resolveToCwd(searchDir || ".", cwd)`; read/write/edit take the string as given.
  const input = spec.optional ? raw || "." : raw;
  if (typeof input !== "string") return { ok: false, reason: `${toolName} without a path` };
  // No real path is this long; deciding on megabytes of escapes or "a/../" would only cost time. Refused.
  if (input.length > MAX_INPUT_CHARS) return { ok: false, reason: "the path is too long to decide on" };
  let lexical: string;
  let opened: string;
  try {
    lexical = paths.resolvePath(input, where.cwd, {
      normalizeUnicodeSpaces: true,
      stripAtPrefix: true,
      homeDir: where.toolHome,
    });
    opened = toolName === "read" ? paths.resolveReadPath(lexical, where.cwd) : lexical;
  } catch (error) {
    // e.g. fileURLToPath refusing "file://host/x" or an encoded "/": the tool would fail the same way.
    return { ok: false, reason: `Pi cannot resolve the path (${errorText(error)})` };
  }
  // The kernel refuses longer paths and names (ENAMETOOLONG): nothing would be opened, and matching rules
  // against megabytes of one name would only cost time.
  if (opened.length >= PATH_MAX || opened.split("/").some((part) => Buffer.byteLength(part) > NAME_MAX))
    return { ok: false, reason: "the path is longer than the file system allows" };
  const decided = canonical(opened);
  let again: string;
  try {
    again =
      toolName === "read"
        ? paths.resolveReadPath(decided, where.cwd)
        : paths.resolveToCwd(decided, where.cwd);
  } catch (error) {
    return { ok: false, reason: `Pi cannot resolve the path it would open (${errorText(error)})` };
  }
  if (again !== decided) {
    // e.g. "file:///a%C2%A0b" decodes to a no-break space that Pi would turn into a space on a second pass.
    return {
      ok: false,
      reason: `the path does not resolve to itself under Pi's rules (${JSON.stringify(decided)} → ${JSON.stringify(again)})`,
    };
  }
  return { ok: true, path: decided, lexical };
}

/** Linux limits: a path and one name (ext4, xfs, btrfs, tmpfs). */
const PATH_MAX = 4096;
const NAME_MAX = 255;
/** A path input longer than this is refused before resolution (4 × PATH_MAX leaves room for %xx escapes). */
const MAX_INPUT_CHARS = 4 * PATH_MAX;

let loading: Promise<PiPaths> | undefined;
let loaded: PiPaths | undefined;
let syncFailure: string | undefined;

/**
 * Pi's path functions without waiting: the instance loadPiPaths() loaded, else the same files loaded through
 * require() (Node ≥ 22.12 loads ES modules that way; the functions are pure, so the instance does not matter).
 * Undefined when they cannot be loaded: every path tool is then blocked.
 */
export function piPathsSync(): PiPaths | undefined {
  if (loaded || syncFailure) return loaded;
  try {
    const packageDir = locatePiPackage();
    if (readVersion(packageDir) !== PI_VERSION) throw new Error(`Pi at ${packageDir} is not ${PI_VERSION}`);
    const require = createRequire(import.meta.url);
    const utils = require(path.join(packageDir, "dist", "utils", "paths.js")) as Record<string, unknown>;
    const tools = require(path.join(packageDir, "dist", "core", "tools", "path-utils.js")) as Record<
      string,
      unknown
    >;
    loaded = checked(packageDir, utils, tools);
  } catch (error) {
    syncFailure = errorText(error);
  }
  return loaded;
}

function checked(
  packageDir: string,
  utils: Record<string, unknown>,
  tools: Record<string, unknown>,
): PiPaths {
  const { resolvePath } = utils;
  const { resolveToCwd, resolveReadPath } = tools;
  if (
    typeof resolvePath !== "function" ||
    typeof resolveToCwd !== "function" ||
    typeof resolveReadPath !== "function"
  ) {
    throw new Error(`Pi at ${packageDir} does not export resolvePath/resolveToCwd/resolveReadPath`);
  }
  return {
    resolvePath: resolvePath as PiPaths["resolvePath"],
    resolveToCwd: resolveToCwd as PiPaths["resolveToCwd"],
    resolveReadPath: resolveReadPath as PiPaths["resolveReadPath"],
    packageDir,
  };
}

/**
 * Loads Pi's path functions once per process (a failed load is retried on the next call; until then every
 * path tool is blocked). The Pi package is the one running this process when there is one (Pi's own
 * argv[1]), otherwise the installation beside this module. Never the workspace's.
 */
export function loadPiPaths(): Promise<PiPaths> {
  loading ??= (async () => {
    const packageDir = locatePiPackage();
    const version = readVersion(packageDir);
    if (version !== PI_VERSION)
      throw new Error(
        `Pi at ${packageDir} is ${version}; the gate's path rules were reviewed for ${PI_VERSION}`,
      );
    const importDist = (file: string) =>
      import(pathToFileURL(path.join(packageDir, "dist", file)).href) as Promise<Record<string, unknown>>;
    const [utils, tools] = await Promise.all([
      importDist("utils/paths.js"),
      importDist("core/tools/path-utils.js"),
    ]);
    loaded = checked(packageDir, utils, tools);
    return loaded;
  })();
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}

/** The Pi package running this process (argv[1] is Pi's cli.js inside it), else the one installed beside us. */
export function locatePiPackage(argv1: string | undefined = process.argv[1]): string {
  const running = argv1 ? packageAbove(argv1) : undefined;
  if (running) return running;
  return realpathSync(findPiInstall(import.meta.dirname).packageDir);
}

function packageAbove(file: string): string | undefined {
  let dir: string;
  try {
    dir = path.dirname(realpathSync(file));
  } catch {
    return undefined;
  }
  for (let depth = 0; depth < 8; depth++) {
    try {
      const manifest = JSON.parse(readBoundedText(path.join(dir, "package.json"), MAX_MANIFEST) ?? "") as {
        name?: unknown;
      };
      if (manifest.name === PI_PACKAGE) return dir;
    } catch {
      // no package.json here: keep walking up
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
  return undefined;
}

function readVersion(packageDir: string): string {
  const manifest = JSON.parse(readBoundedText(path.join(packageDir, "package.json"), MAX_MANIFEST) ?? "") as {
    version?: unknown;
  };
  return typeof manifest.version === "string" ? manifest.version : "unknown";
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
