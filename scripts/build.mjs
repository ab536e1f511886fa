// Bundles the runtime entry points into self-contained ESM files laid out as in the image:
// build/opt/chat-ui-agent/<name>.mjs. Pi stays external (RUNTIME_EXTERNALS: resolved from the install's node_modules).
import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { build } from "esbuild";
import { buildLandlockHelper } from "./build-landlock.mjs";
import { guardSource } from "./node-guard.mjs";

const root = path.resolve(import.meta.dirname, "..");
export const outDir = path.join(root, "build", "opt", "chat-ui-agent");

/** Every runtime entry point. A missing source fails the build (no silent omissions). */
export const entries = [
  { source: "agent-runtime/health-server.ts", output: "health-server.mjs" },
  { source: "agent-runtime/approval-gate.ts", output: "approval-gate.mjs" },
  { source: "agent-runtime/policy-cli.ts", output: "policy-cli.mjs" },
  // Split: bridge.mjs itself holds only the launcher that starts Pi; the rest loads while Pi boots.
  { source: "bridge/main.ts", output: "bridge.mjs", split: true },
  { source: "bridge/attach/main.ts", output: "chat-ui-agent.mjs" },
  // Runs the agent's tools as their own principal (started by the bridge, channel on fd 3).
  { source: "agent-runtime/executor/main.ts", output: "tool-executor.mjs" },
  // The image's HEALTHCHECK: asks every service of ours running in the container.
  { source: "bridge/healthcheck.ts", output: "healthcheck.mjs" },
  // Builds Pi's compile cache beside the bundles (npm run build and the image build run it once).
  { source: "agent-runtime/warm-compile-cache.ts", output: "warm-compile-cache.mjs" },
];

/**
 * Packages the bundles leave external: resolved at run time from the install's node_modules, so these (and
 * their dependencies) are all the image installs. Everything else the sources import is inlined.
 */
export const RUNTIME_EXTERNALS = ["@earendil-works/*"];

/** Files copied beside the bundles: the approval gate loads its shell parser from its own directory. */
export const assets = [
  { module: "web-tree-sitter/tree-sitter.wasm", output: "tree-sitter.wasm" },
  { module: "tree-sitter-bash/tree-sitter-bash.wasm", output: "tree-sitter-bash.wasm" },
];

/**
 * Optional native addons a bundled dependency `require`s when installed (ws: bufferutil, utf-8-validate). None
 * is installed, so at run time Node would search every folder it knows for them, including $HOME/.node_modules,
 * $HOME/.node_libraries and NODE_PATH, which the tools may write. Settled here instead: the code paths are
 * switched off (ws's own variables, defined as constants) and the names resolve to a module that throws.
 */
export const SETTLED_OPTIONAL_MODULES = ["bufferutil", "utf-8-validate"];
const SETTLED_DEFINES = {
  "process.env.WS_NO_BUFFER_UTIL": '"1"',
  "process.env.WS_NO_UTF_8_VALIDATE": '"1"',
};

const settleOptionalModules = {
  name: "settle-optional-modules",
  setup(build) {
    const filter = new RegExp(`^(${SETTLED_OPTIONAL_MODULES.join("|")})$`);
    build.onResolve({ filter }, (args) => ({ path: args.path, namespace: "settled-optional" }));
    build.onLoad({ filter: /.*/, namespace: "settled-optional" }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`${args.path}: settled at build time, never loaded`)});`,
      loader: "js",
    }));
  },
};

/**
 * bridge.mjs's static part (the prestart, which starts Pi) parses with zod/mini; the rest of the bridge, loaded
 * after, uses the full zod. esbuild splits by file: a file both parts import goes into the chunk bridge.mjs loads
 * first with all the code either part uses, and zod/mini imports all of zod's core and locales, which the full zod
 * uses. So the split bundle gets zod/mini (and the English locale the registries file's errors use) as a copy of
 * its own: only what the prestart uses loads before Pi starts (about 60 KB of zod rather than 700 KB). Both copies
 * keep zod's settings and registry in one place (globalThis).
 */
const ZOD_MINI_COPY = "zod-mini-copy";
const ownZodMini = {
  name: "own-zod-mini",
  setup(build) {
    const resolveInCopy = async (args) => {
      if (args.pluginData === ZOD_MINI_COPY) return undefined;
      const resolved = await build.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        pluginData: ZOD_MINI_COPY,
      });
      if (resolved.errors.length > 0) return { errors: resolved.errors };
      // Relative to the checkout, as esbuild names every other input (the bundles do not depend on where it is).
      return {
        path: path.relative(root, resolved.path),
        namespace: ZOD_MINI_COPY,
        sideEffects: resolved.sideEffects,
      };
    };
    build.onResolve({ filter: /^zod\/(mini|v4\/locales\/en\.js)$/ }, resolveInCopy);
    build.onResolve({ filter: /.*/, namespace: ZOD_MINI_COPY }, resolveInCopy);
    build.onLoad({ filter: /.*/, namespace: ZOD_MINI_COPY }, async (args) => {
      const file = path.resolve(root, args.path);
      return { contents: await readFile(file, "utf8"), resolveDir: path.dirname(file), loader: "js" };
    });
  },
};

/**
 * A module a dependency imports, settled at build time: `specifier`, imported from a file `importer` matches,
 * becomes `contents`, whose own imports resolve from `resolveDir(importer)`.
 */
function substitute({ name, specifier, importer, resolveDir, contents }) {
  return {
    name,
    setup(build) {
      build.onResolve({ filter: specifier, namespace: "file" }, (args) =>
        importer.test(args.importer) ? { path: resolveDir(args.importer), namespace: name } : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: name }, (args) => ({
        contents,
        resolveDir: args.path,
        loader: "js",
      }));
    },
  };
}

/**
 * pino-roll (the bounded log file) takes five functions from date-fns through its CommonJS index, which loads all of
 * date-fns (370 KB, hundreds of modules) when the logger starts: in the bridge, while Pi boots on the same CPUs.
 * Settled here: for pino-roll, `date-fns` is a module that loads just those five from their own files.
 */
export const DATE_FNS_FOR_PINO_ROLL = ["format", "addDays", "addHours", "parse", "isValid"];
const dateFnsForPinoRoll = substitute({
  name: "date-fns-for-pino-roll",
  specifier: /^date-fns$/,
  importer: /[\\/]node_modules[\\/]pino-roll[\\/]/,
  resolveDir: (importer) => path.dirname(importer),
  contents: DATE_FNS_FOR_PINO_ROLL.map(
    (name) => `exports.${name} = require("date-fns/${name}").${name};`,
  ).join("\n"),
});

/**
 * zod re-exports every locale it has (`z.locales`, 250 KB of the bundles), and nothing here uses one but English,
 * which zod loads by itself: settled here, the locales index holds `en` alone.
 */
const zodEnglishOnly = substitute({
  name: "zod-english-only",
  specifier: /^\.\.\/locales\/index\.js$/,
  importer: /[\\/]node_modules[\\/]zod[\\/]v4[\\/]/,
  resolveDir: (importer) => path.join(path.dirname(importer), "..", "locales"),
  contents: 'export { default as en } from "./en.js";',
});

function banner(program) {
  // Some bundled CommonJS dependencies call require(); give the ESM bundle one.
  const requireShim =
    'import { createRequire as __chatUiCreateRequire } from "node:module";' +
    "const require = __chatUiCreateRequire(import.meta.url);";
  // The guard runs before any bundled module: a too-old Node gets one line, not a stack trace.
  return `${requireShim}\n${guardSource(program)}`;
}

export async function buildAll() {
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  for (const entry of entries) {
    const placement = entry.split
      ? {
          entryPoints: { [entry.output.replace(/\.mjs$/, "")]: path.join(root, entry.source) },
          outdir: outDir,
          outExtension: { ".js": ".mjs" },
          splitting: true,
          chunkNames: "chunks/[name]-[hash]",
        }
      : { entryPoints: [path.join(root, entry.source)], outfile: path.join(outDir, entry.output) };
    await build({
      ...placement,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node22",
      external: RUNTIME_EXTERNALS,
      define: SETTLED_DEFINES,
      plugins: entry.split
        ? [settleOptionalModules, dateFnsForPinoRoll, zodEnglishOnly, ownZodMini]
        : [settleOptionalModules, dateFnsForPinoRoll, zodEnglishOnly],
      banner: { js: banner(entry.output) },
      legalComments: "none",
      logLevel: "warning",
    });
  }
  const requireFromRoot = createRequire(path.join(root, "package.json"));
  for (const asset of assets) {
    await copyFile(requireFromRoot.resolve(asset.module), path.join(outDir, asset.output));
  }
  // The search excludes, generated from the sensitive-path rules (Node runs the .ts source by type stripping):
  // the gate checks this file byte for byte against its own rules at load.
  const { searchExcludeConfig, RG_EXCLUDE_FILE } = await import("../agent-runtime/gate/search-excludes.ts");
  await writeFile(path.join(outDir, RG_EXCLUDE_FILE), searchExcludeConfig(), { mode: 0o444 });
  buildLandlockHelper(outDir);
  return entries.map((e) => path.join(outDir, e.output));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const files = await buildAll();
  process.stderr.write(`built ${files.length} bundles into ${path.relative(root, outDir)}\n`);
}
