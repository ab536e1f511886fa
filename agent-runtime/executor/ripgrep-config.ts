// Where the ripgrep config with the credential-file excludes lives (common decision 5): generated at build
// time beside the bundles. The executor sets RIPGREP_CONFIG_PATH to it, so Pi's grep running there skips
// credential files. The gate-tools branch generates the file; this is the one place that locates it.
import { existsSync } from "node:fs";
import path from "node:path";

export const RIPGREP_CONFIG_NAME = "rg-exclude.conf";

/** The config beside the running bundle, or undefined when the build did not produce one (reported). */
export function ripgrepConfigPath(bundleDir: string): string | undefined {
  const candidate = path.join(bundleDir, RIPGREP_CONFIG_NAME);
  return existsSync(candidate) ? candidate : undefined;
}
