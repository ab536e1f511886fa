// The image's `pi` stage: turns a patched, verified full install into the node_modules the runtime needs, i.e.
// only the packages the bundles leave external (RUNTIME_EXTERNALS: Pi) and their dependencies, exactly as the
// lockfile resolved them. Everything else the sources import (fastify, pino, ws, zod, web-tree-sitter…) is
// inlined into the bundles, and tree-sitter's wasm files are copied beside them, so none of it is installed.
//
//   node scripts/prune-runtime-modules.mjs [--root DIR]
//
// 1. package.json keeps only the runtime externals in `dependencies` (no dev dependencies, no scripts), and
//    `npm prune --omit=dev --offline` removes everything else (npm decides, from the lockfile).
// 2. Source maps everywhere, and TypeScript files (declarations, and sources shipped for the maps) outside
//    Pi's own packages, are deleted: nothing reads them at run time (Node reads maps only with
//    --enable-source-maps, and tolerates a missing one; it never runs TypeScript from node_modules); Pi's
//    own declarations stay for anyone writing a Pi extension in the sandbox.
// 3. The patch post-check runs again on the pruned tree (scripts/pi-patches.mjs check): pruning must leave
//    Pi exactly as verified. Any failure exits non-zero and fails the image build.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { RUNTIME_EXTERNALS } from "./build.mjs";

const say = (message) => process.stderr.write(`prune-runtime-modules: ${message}\n`);

/** `@scope/*` or an exact name, as esbuild's `external` takes them. */
export function matchesExternal(name, patterns = RUNTIME_EXTERNALS) {
  return patterns.some((pattern) =>
    pattern.endsWith("/*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern,
  );
}

/** The runtime manifest: the external dependencies only; overrides stay so npm keeps the lockfile's pins. */
export function runtimeManifest(pkg, patterns = RUNTIME_EXTERNALS) {
  const dependencies = Object.fromEntries(
    Object.entries(pkg.dependencies ?? {}).filter(([name]) => matchesExternal(name, patterns)),
  );
  if (Object.keys(dependencies).length === 0) throw new Error("no runtime external is a dependency");
  const { devDependencies: _dev, scripts: _scripts, bin: _bin, exports: _exports, ...rest } = pkg;
  return { ...rest, dependencies };
}

/** Files nothing loads at run time; Pi's own TypeScript declarations excepted (see the header). */
export function isStrippable(relativePath) {
  if (relativePath.endsWith(".map")) return true;
  if (!/\.[cm]?ts$/.test(relativePath)) return false;
  return !relativePath.split(path.sep).includes("@earendil-works");
}

/** Sum of file sizes under `dir` (iterative, bounded by the tree itself; symlinks are not followed). */
export function treeBytes(dir) {
  let bytes = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) bytes += statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return bytes;
}

function strip(modulesDir) {
  let files = 0;
  let bytes = 0;
  for (const entry of readdirSync(modulesDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    if (!isStrippable(path.relative(modulesDir, file))) continue;
    bytes += statSync(file).size;
    rmSync(file);
    files += 1;
  }
  return { files, bytes };
}

/** Scope folders npm prune emptied (`@biomejs/`…): removed so the tree lists only what is installed. */
function removeEmptyScopes(modulesDir) {
  for (const entry of readdirSync(modulesDir, { withFileTypes: true })) {
    const dir = path.join(modulesDir, entry.name);
    if (entry.isDirectory() && entry.name.startsWith("@") && readdirSync(dir).length === 0) rmdirSync(dir);
  }
}

function run(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, stdio: ["ignore", "inherit", "inherit"] });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status ?? result.signal})`);
}

function main() {
  const rootArg = process.argv.indexOf("--root");
  const root = path.resolve(rootArg === -1 ? "." : (process.argv[rootArg + 1] ?? "."));
  const modulesDir = path.join(root, "node_modules");
  const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
  const before = treeBytes(modulesDir);

  const manifestFile = path.join(root, "package.json");
  const manifest = runtimeManifest(JSON.parse(readFileSync(manifestFile, "utf8")));
  writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
  say(`runtime dependencies: ${Object.keys(manifest.dependencies).join(", ")}`);
  run("npm", ["prune", "--omit=dev", "--ignore-scripts", "--offline", "--no-audit", "--no-fund"], root);
  const pruned = treeBytes(modulesDir);
  removeEmptyScopes(modulesDir);
  const stripped = strip(modulesDir);
  say(
    `node_modules ${mb(before)} -> ${mb(pruned)} (prune) -> ${mb(pruned - stripped.bytes)} (${stripped.files} maps and TypeScript files)`,
  );
  run(process.execPath, [path.join(import.meta.dirname, "pi-patches.mjs"), "check", "--root", root], root);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    main();
  } catch (error) {
    say(`FAILED: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
