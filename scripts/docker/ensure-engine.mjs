// Makes a Docker engine answer for the image tests, so `npm test` works on a fresh machine:
// use a running engine if one answers; otherwise, as root, install Debian's docker.io and start
// dockerd with no bridge and no iptables (all test traffic stays on loopback via host networking).
// Without an engine and without root it fails with one clear message, never a silent skip.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Docker from "dockerode";

const ENGINE_START_TIMEOUT_MS = 90_000;

function say(message) {
  process.stderr.write(`ensure-engine: ${message}\n`);
}

/** True when the engine named by DOCKER_HOST (or the default socket) answers a ping. */
export async function engineAnswers(docker = new Docker()) {
  try {
    await docker.ping();
    return true;
  } catch {
    return false;
  }
}

function onPath(command) {
  return spawnSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" }).status === 0;
}

function run(command, args) {
  const result = spawnSync(command, args, { stdio: ["ignore", "inherit", "inherit"] });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status ?? result.signal})`);
  }
}

/** Installs Debian packages without letting their maintainer scripts start services. */
export function aptInstall(packages) {
  const policyPath = "/usr/sbin/policy-rc.d";
  const addedPolicy = !existsSync(policyPath);
  // A docker.io postinst that starts dockerd itself would create docker0 with a 172.17 address.
  if (addedPolicy) writeFileSync(policyPath, "#!/bin/sh\nexit 101\n", { mode: 0o755 });
  try {
    run("apt-get", ["update", "-qq"]);
    run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...packages]);
  } finally {
    if (addedPolicy) rmSync(policyPath, { force: true });
  }
}

async function startDockerd(docker) {
  const logDir = mkdtempSync(path.join(os.tmpdir(), "chat-ui-dockerd-"));
  const logPath = path.join(logDir, "dockerd.log");
  const logFd = openSync(logPath, "a");
  // --bridge=none: no docker0 and no private-range addresses; builds and runs use host networking.
  const child = spawn("dockerd", ["--bridge=none", "--iptables=false", "--ip6tables=false"], {
    detached: true,
    stdio: ["ignore", logFd, logFd],
  });
  let exited = null;
  child.once("exit", (code, signal) => {
    exited = code ?? signal;
  });
  child.unref();
  say(`started dockerd (pid ${child.pid}), log: ${logPath}`);
  const deadline = Date.now() + ENGINE_START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (await engineAnswers(docker)) return;
    if (exited !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const tail = readFileSync(logPath, "utf8").split("\n").slice(-30).join("\n");
  throw new Error(
    `dockerd did not answer within ${ENGINE_START_TIMEOUT_MS / 1000}s` +
      `${exited !== null ? ` (it exited: ${exited})` : ""}; last lines of ${logPath}:\n${tail}`,
  );
}

/**
 * @param {{ docker?: Docker, dockerHost?: string, isRoot?: boolean }} [options] the engine client and the
 *   facts it acts on (tests pass their own)
 */
export async function ensureEngine(options = {}) {
  const docker = options.docker ?? new Docker();
  const dockerHost = "dockerHost" in options ? options.dockerHost : process.env.DOCKER_HOST;
  const isRoot = options.isRoot ?? process.getuid?.() === 0;
  if (await engineAnswers(docker)) {
    say("a Docker engine answers; using it");
    return;
  }
  if (dockerHost) {
    // A dockerd started here would listen on the default socket, not on the address asked for.
    throw new Error(`DOCKER_HOST=${dockerHost} does not answer; start that engine or unset DOCKER_HOST`);
  }
  if (!isRoot) {
    throw new Error(
      "no Docker engine answers on /var/run/docker.sock and this is not root, so one " +
        "cannot be installed and started. Start a Docker engine (or run as root) and rerun; the image " +
        "tests are part of the test suite and are never skipped.",
    );
  }
  if (!onPath("dockerd")) {
    say("installing docker.io from Debian");
    aptInstall(["docker.io"]);
  }
  await startDockerd(docker);
  say("dockerd answers");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = Date.now();
  ensureEngine().then(
    () => say(`ready in ${((Date.now() - started) / 1000).toFixed(1)}s`),
    (error) => {
      say(error instanceof Error ? error.message : String(error));
      process.exit(1);
    },
  );
}
