// Builds the typed client: build/lib/client.mjs (ESM; its npm imports stay dependencies), its declarations under
// build/lib/types, and build/lib/package.json, a manifest of its own, so the client installs on its own
// (`npm pack build/lib`): no install script, no Pi, only the packages client.mjs imports. Inside this repository
// chat-ui can still import it as `chat-ui-agent-runtime/client`.
import { execFileSync } from "node:child_process";
import { copyFile, readFile, rm, writeFile } from "node:fs/promises";
import { builtinModules } from "node:module";
import path from "node:path";
import { build } from "esbuild";

const root = path.resolve(import.meta.dirname, "..");
export const libDir = path.join(root, "build", "lib");
/** The client's package name when installed on its own. */
export const CLIENT_PACKAGE = "chat-ui-agent-client";

/** The package name of a bare import ("ws", "zod/v4" → "zod", "@scope/x/y" → "@scope/x"); null for a builtin. */
function packageOf(specifier) {
  if (specifier.startsWith("node:") || builtinModules.includes(specifier)) return null;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** The manifest: its dependencies are exactly what the bundle imports, at the versions the runtime pins. */
export function clientManifest(rootManifest, imported) {
  const dependencies = {};
  for (const name of [...imported].sort()) {
    const version = rootManifest.dependencies?.[name];
    if (!version)
      throw new Error(`the client imports ${name}, which package.json does not pin as a dependency`);
    dependencies[name] = version;
  }
  return {
    name: CLIENT_PACKAGE,
    version: rootManifest.version,
    description:
      "Typed client for chat-ui-agent-runtime's bridge: authenticated, resumable, idempotent, typed Pi events.",
    license: rootManifest.license,
    type: "module",
    engines: rootManifest.engines,
    exports: { ".": { types: "./types/bridge/client.d.ts", import: "./client.mjs" } },
    types: "./types/bridge/client.d.ts",
    files: ["client.mjs", "types/", "LICENSE"],
    dependencies,
  };
}

async function buildClient() {
  await rm(libDir, { recursive: true, force: true });
  const result = await build({
    entryPoints: [path.join(root, "bridge", "client.ts")],
    outfile: path.join(libDir, "client.mjs"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    packages: "external",
    metafile: true,
    logLevel: "warning",
  });
  const imported = new Set(
    Object.values(result.metafile.outputs)
      .flatMap((output) => output.imports)
      .filter((i) => i.external)
      .map((i) => packageOf(i.path))
      .filter((name) => name !== null),
  );
  execFileSync(
    process.execPath,
    [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.client.json"],
    { cwd: root, stdio: "inherit" },
  );
  const rootManifest = JSON.parse(await readFile(path.join(root, "package.json"), "utf8"));
  await writeFile(
    path.join(libDir, "package.json"),
    `${JSON.stringify(clientManifest(rootManifest, imported), null, 2)}\n`,
  );
  await copyFile(path.join(root, "LICENSE"), path.join(libDir, "LICENSE"));
  process.stderr.write("built the client library into build/lib\n");
}

if (import.meta.url === `file://${process.argv[1]}`) await buildClient();
