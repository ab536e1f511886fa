// Locates the installed (patched) Pi so it can be spawned with an explicit Node, argv only.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

export const PI_PACKAGE = "@earendil-works/pi-coding-agent";
export const PI_VERSION = "0.84.2";

export interface PiInstall {
  packageDir: string;
  cliPath: string;
  version: string;
}

/** Finds Pi by walking node_modules upward from `fromDir` (Pi's exports hide package.json). */
export function findPiInstall(fromDir: string): PiInstall {
  const require = createRequire(path.join(fromDir, "noop.js"));
  const searchPaths = require.resolve.paths(PI_PACKAGE) ?? [];
  for (const base of searchPaths) {
    const packageDir = path.join(base, PI_PACKAGE);
    let manifest: { version?: unknown; bin?: unknown };
    try {
      manifest = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8"));
    } catch {
      continue;
    }
    const bin = manifest.bin as Record<string, string> | undefined;
    if (typeof manifest.version !== "string" || typeof bin?.pi !== "string") {
      throw new Error(`${packageDir}/package.json does not describe Pi (no version or bin.pi)`);
    }
    return { packageDir, cliPath: path.join(packageDir, bin.pi), version: manifest.version };
  }
  throw new Error(`${PI_PACKAGE} is not installed (searched from ${fromDir})`);
}
