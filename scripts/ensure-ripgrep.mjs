// Makes ripgrep (`rg`) answer for the tests, so `npm test` works on a fresh machine: Pi's grep tool runs it, and
// the gate's search tests prove against the real binary that the exclude config keeps credential files out.
// The image installs Debian's ripgrep; here, as root, the same package is installed. Without it and without
// root this fails with one clear message, never a silent skip.
import { spawnSync } from "node:child_process";
import { aptInstall } from "./docker/ensure-engine.mjs";

function say(message) {
  process.stderr.write(`ensure-ripgrep: ${message}\n`);
}

const answers = () => spawnSync("rg", ["--version"], { stdio: "ignore" }).status === 0;

if (!answers()) {
  if (process.getuid?.() !== 0) {
    say("ripgrep (rg) is not on PATH and this is not root: install it (Debian: apt-get install ripgrep)");
    process.exit(1);
  }
  say("ripgrep is missing: installing Debian's ripgrep");
  aptInstall(["ripgrep"]);
  if (!answers()) {
    say("ripgrep was installed but `rg --version` still fails");
    process.exit(1);
  }
}
