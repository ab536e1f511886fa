// Compiles the tools' boundary helper (agent-runtime/sandbox/*.c: Landlock, the seccomp egress filter, the
// tool supervisor and the per-call subreaper) beside the bundles with the system's C compiler. The image's
// build stage installs gcc and sets CHAT_UI_AGENT_REQUIRE_LANDLOCK_HELPER=1, so a missing compiler fails the
// image build; elsewhere (a dev machine without gcc) the bundles build without it and the bridge reports
// Landlock, the supervisor and the egress guard as unavailable.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
export const LANDLOCK_HELPER_NAME = "landlock-exec";
const sourceDir = path.join(root, "agent-runtime", "sandbox");

export function buildLandlockHelper(outDir) {
  const output = path.join(outDir, LANDLOCK_HELPER_NAME);
  const cc = process.env.CC || "gcc";
  const sources = readdirSync(sourceDir)
    .filter((name) => name.endsWith(".c"))
    .sort()
    .map((name) => path.join(sourceDir, name));
  const result = spawnSync(cc, ["-O2", "-Wall", "-Wextra", "-Werror", "-o", output, ...sources], {
    encoding: "utf8",
  });
  if (result.status === 0) return output;
  const why = result.error ? result.error.message : (result.stderr || "").trim().slice(0, 2000);
  if (process.env.CHAT_UI_AGENT_REQUIRE_LANDLOCK_HELPER === "1") {
    throw new Error(`cannot compile the Landlock helper with ${cc}: ${why}`);
  }
  process.stderr.write(
    `warning: Landlock helper not built (${cc}: ${why}); the bridge will report Landlock unavailable\n`,
  );
  return undefined;
}
