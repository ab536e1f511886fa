// Builds the typed client that chat-ui imports as `chat-ui-agent-runtime/client`:
// build/lib/client.mjs (ESM; ws and zod stay dependencies) and its declarations under build/lib/types.
import { execFileSync } from "node:child_process";
import { rm } from "node:fs/promises";
import path from "node:path";
import { build } from "esbuild";

const root = path.resolve(import.meta.dirname, "..");
const libDir = path.join(root, "build", "lib");

await rm(libDir, { recursive: true, force: true });
await build({
  entryPoints: [path.join(root, "bridge", "client.ts")],
  outfile: path.join(libDir, "client.mjs"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  packages: "external",
  logLevel: "warning",
});
execFileSync(
  process.execPath,
  [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.client.json"],
  {
    cwd: root,
    stdio: "inherit",
  },
);
process.stderr.write("built the client library into build/lib\n");
