// Is the installed Pi exactly the one our reviewed patch produces? The health server asks at start and serves
// 503 when not. The manifest is imported (not read at run time) so esbuild embeds it into the bundles.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import manifest from "../patches/manifest.json" with { type: "json" };

export type PatchStatus = { ok: true; sha256: string } | { ok: false; reason: string };

/** The patch set the runtime was built against, e.g. "pi-rpc-patch/v1". */
export const PI_PATCH_SET: string = manifest.patch;

const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Compares the installed `dist/modes/rpc/rpc-mode.js` (and the package version) with the manifest. */
export function checkPatchedPi(packageDir: string): PatchStatus {
  const pinned = (manifest.packages as Record<string, string>)[manifest.target.package];
  let version: unknown;
  try {
    version = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8")).version;
  } catch (error) {
    return { ok: false, reason: `cannot read ${packageDir}/package.json: ${errorMessage(error)}` };
  }
  if (version !== pinned) {
    return {
      ok: false,
      reason: `${manifest.target.package} is ${String(version)}, the patch is for ${pinned}`,
    };
  }
  const file = path.join(packageDir, manifest.target.file);
  let sha256: string;
  try {
    sha256 = createHash("sha256").update(readFileSync(file)).digest("hex");
  } catch (error) {
    return { ok: false, reason: `cannot read ${file}: ${errorMessage(error)}` };
  }
  if (sha256 === manifest.target.patchedSha256) return { ok: true, sha256 };
  const what =
    sha256 === manifest.target.pristineSha256 ? "the unpatched upstream file" : "an unreviewed file";
  return {
    ok: false,
    reason: `${file} is ${what} (sha256 ${sha256}); ${manifest.patch} expects ${manifest.target.patchedSha256}`,
  };
}
