// Build-time facts the runtime reports (esbuild inlines package.json).
import packageJson from "../package.json" with { type: "json" };
import { PI_VERSION } from "./pi-install.ts";

export const RUNTIME_VERSION: string = packageJson.version;
export { PI_VERSION };

/** What every binary's --version prints. */
export function versionLine(program: string): string {
  return `${program} ${RUNTIME_VERSION} (${packageJson.name}, Pi ${PI_VERSION})`;
}
