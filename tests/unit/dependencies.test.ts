// Ship no dependency that nothing uses. A runtime dependency (package.json `dependencies`) must be imported
// by a shipped entry point or by the typed client (read off esbuild's own import graph, the way the bundles
// are really built), copied as a build asset, resolved by an install script, or be Pi itself (located and
// spawned, agent-runtime/pi-install.ts); a package the bundles leave
// external must be a runtime dependency (the image installs only those). A dev dependency must be imported,
// loaded (`--import`, `--test-reporter`), or run by its bin somewhere in the repository, or type a package
// that is.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { test } from "node:test";
import { build, type Metafile } from "esbuild";
import { PI_PACKAGE } from "../../agent-runtime/pi-install.ts";
import { assets, entries, RUNTIME_EXTERNALS } from "../../scripts/build.mjs";

const root = path.resolve(import.meta.dirname, "..", "..");
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const CLIENT_ENTRY = "bridge/client.ts";
/** Run by `npm ci` (postinstall) wherever the package is installed, the image's patch stage included. */
const INSTALL_SCRIPTS = ["scripts/node-guard.mjs", "scripts/pi-patches.mjs"];

const builtins = new Set([...builtinModules, ...builtinModules.map((name) => `node:${name}`)]);
/** "@scope/name/sub/path" → "@scope/name"; "name/sub" → "name". */
const packageOf = (specifier: string) =>
  specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");

/** Bare specifiers every input of a build imports, with whether the build left each external. */
async function importsOf(entryPoints: string[], external: { packages: "external" } | { external: string[] }) {
  const result = await build({
    entryPoints: entryPoints.map((entry) => path.join(root, entry)),
    bundle: true,
    write: false,
    metafile: true,
    outdir: "/nonexistent-out",
    platform: "node",
    format: "esm",
    target: "node22",
    logLevel: "silent",
    // The build copies wasm beside the bundles; here the graph is all that matters.
    loader: { ".wasm": "empty" },
    ...external,
  });
  const metafile = result.metafile as Metafile;
  const imported = new Map<string, boolean>();
  const note = (name: string, external: boolean) =>
    imported.set(name, (imported.get(name) ?? false) || external);
  const inNodeModules = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//;
  for (const [file, input] of Object.entries(metafile.inputs)) {
    const bundledPackage = inNodeModules.exec(file)?.[1];
    if (bundledPackage) {
      // Inlined into the bundle. Its own optional requires (ws's bufferutil…) are not ours to install.
      note(bundledPackage, false);
      continue;
    }
    for (const edge of input.imports) {
      if (edge.external && !builtins.has(edge.path) && !edge.path.startsWith("<"))
        note(packageOf(edge.path), true);
    }
  }
  return imported;
}

const entrySources = entries.map((entry: { source: string }) => entry.source);

test("every runtime dependency is used by what ships or installs, and every bundle external is one", async () => {
  // What our sources import, bundled or not (packages external: each edge names the package).
  const sourceImports = await importsOf([...entrySources, CLIENT_ENTRY, ...INSTALL_SCRIPTS], {
    packages: "external",
  });
  const used = new Set(sourceImports.keys());
  // Pi is located by name in node_modules and spawned (agent-runtime/pi-install.ts), not imported.
  used.add(PI_PACKAGE);
  for (const asset of assets as { module: string }[]) used.add(packageOf(asset.module));
  for (const script of INSTALL_SCRIPTS) {
    const text = readFileSync(path.join(root, script), "utf8");
    for (const match of text.matchAll(/\.resolve\(\s*["']([^"'./][^"']*)["']/g))
      used.add(packageOf(match[1] ?? ""));
  }
  const unused = Object.keys(pkg.dependencies).filter((name) => !used.has(name));
  assert.deepEqual(
    unused,
    [],
    `runtime dependencies nothing imports (remove them, or make them dev): ${unused}`,
  );

  // The shipped bundles, built as scripts/build.mjs builds them: whatever stays external must be installed.
  const bundleImports = await importsOf(entrySources, { external: RUNTIME_EXTERNALS });
  const bundleExternals = [...bundleImports].filter(([, external]) => external).map(([name]) => name);
  // The typed client keeps every package external: its consumers install them through `dependencies`.
  const clientImports = await importsOf([CLIENT_ENTRY], { packages: "external" });
  const notInstalled = [...bundleExternals, ...clientImports.keys()].filter(
    (name) => !pkg.dependencies[name],
  );
  assert.deepEqual(notInstalled, [], `imported at run time but not in dependencies: ${notInstalled}`);
});

/** Every text file of the repository that could use a dev tool (sources, tests, scripts, configs, workflows). */
function repositoryText(): string {
  const skip = new Set(["node_modules", "build", ".git"]);
  const texts: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (skip.has(entry.name)) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (
        /\.(ts|mts|mjs|js|json|ya?ml|sh)$|^run$/.test(entry.name) &&
        entry.name !== "package-lock.json"
      ) {
        texts.push(readFileSync(full, "utf8"));
      }
    }
  };
  walk(root);
  return texts.join("\n");
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

test("every dev dependency is imported, loaded, typed or run by its bin somewhere", () => {
  const text = repositoryText();
  const scripts = Object.values(pkg.scripts).join("\n");
  const all = { ...pkg.dependencies, ...pkg.devDependencies };
  const isUsed = (name: string): boolean => {
    const spec = escapeRegExp(name);
    // import/from/require/import(), `--import x`, `--test-reporter=x`: the package or a subpath of it.
    const asModule = new RegExp(
      `(?:from\\s*|import\\s*\\(\\s*|require\\(\\s*|--import[= ]|--test-reporter[= ])["']?${spec}(?:/[^"'\\s]*)?(?:["'\\s]|$)`,
      "m",
    );
    if (asModule.test(text) || asModule.test(scripts)) return true;
    // @types/x types x (or Node itself).
    if (name.startsWith("@types/")) {
      const typed = name.slice("@types/".length).replace(/^(.+)__(.+)$/, "@$1/$2");
      return typed === "node" || (typed in all && typed !== name && isUsed(typed));
    }
    // A tool run by its bin name from an npm script, a workflow or a test.
    const manifest = JSON.parse(readFileSync(path.join(root, "node_modules", name, "package.json"), "utf8"));
    const bins =
      typeof manifest.bin === "string" ? [name.split("/").at(-1) ?? name] : Object.keys(manifest.bin ?? {});
    return bins.some((bin) =>
      new RegExp(`(?:^|[\\s"'/])${escapeRegExp(bin)}(?:[\\s"']|$)`, "m").test(`${scripts}\n${text}`),
    );
  };
  const unused = Object.keys(pkg.devDependencies).filter((name) => !isUsed(name));
  assert.deepEqual(unused, [], `dev dependencies nothing uses: ${unused}`);
});
