// The Space health endpoint in-process (fastify inject): fail-closed status (the handler file check and the
// behavioural probe of the installed Pi), presence-only diagnostics.
import assert from "node:assert/strict";
import { cp, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import pino from "pino";
import { makeRunnablePiTree, readManifest, repoRoot } from "../tests/support/fixtures/patch-tree.ts";
import {
  buildHealthServer,
  CREDENTIAL_NAMES,
  currentPatchStatus,
  parseHost,
  parsePort,
  startPatchChecks,
} from "./health-server.ts";
import { findPiInstall, PI_VERSION } from "./pi-install.ts";
import { probeInstalledPi } from "./pi-patch-behaviour.ts";

const silent = pino({ level: "silent" });
const verified = { ok: true, sha256: "a".repeat(64) };
const probed = () => ({ state: "passed", elapsedMs: 5 });
const FAKE_SECRET = `hf_${"Zq".repeat(17)}`;

async function get(status, url, env = {}, method = "GET", probe = probed) {
  const app = buildHealthServer({ patchStatus: status, probe, env, logger: silent });
  try {
    return await app.inject({ method, url });
  } finally {
    await app.close();
  }
}

describe("health server", () => {
  it("answers 200 with versions and patches: verified on / and /health when the handler is verified", async () => {
    for (const url of ["/", "/health"]) {
      const response = await get(verified, url, { AGENT_POLICY: "ask" });
      assert.equal(response.statusCode, 200, url);
      const body = response.json();
      assert.equal(body.status, "ok");
      assert.equal(body.patches, "verified");
      assert.equal(body.pi, PI_VERSION);
      assert.equal(body.node, process.versions.node);
      assert.match(body.version, /^\d+\.\d+\.\d+/);
      assert.equal(body.handlerSha256, "a".repeat(64));
      assert.equal(body.patchProbe, "passed");
      assert.equal(body.config.AGENT_POLICY, "ask");
      assert.equal(response.headers["cache-control"], "no-store");
    }
  });

  it("answers HEAD with the same status and no body", async () => {
    const ok = await get(verified, "/health", {}, "HEAD");
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.body, "");
    const bad = await get({ ok: false, reason: "hash mismatch" }, "/", {}, "HEAD");
    assert.equal(bad.statusCode, 503);
  });

  it("fails closed: 503 with the reason when the handler is not the verified patched one", async () => {
    const response = await get(
      { ok: false, reason: "rpc-mode.js sha256 differs from the manifest" },
      "/health",
    );
    assert.equal(response.statusCode, 503);
    const body = response.json();
    assert.equal(body.status, "unhealthy");
    assert.equal(body.patches, "unverified");
    assert.equal(body.reason, "rpc-mode.js sha256 differs from the manifest");
  });

  it("reports credentials as present or absent, never their values", async () => {
    const env = { HF_TOKEN: FAKE_SECRET, OPENAI_API_KEY: "", ANTHROPIC_API_KEY: FAKE_SECRET };
    const response = await get(verified, "/health", env);
    assert.ok(!response.body.includes(FAKE_SECRET), "a credential value leaked into the response");
    const { credentials } = response.json().config;
    assert.deepEqual(Object.keys(credentials).sort(), [...CREDENTIAL_NAMES].sort());
    assert.equal(credentials.HF_TOKEN, "present");
    assert.equal(credentials.ANTHROPIC_API_KEY, "present");
    assert.equal(credentials.OPENAI_API_KEY, "absent", "an empty variable is absent");
    assert.equal(credentials.SANDBOX_TOKEN, "absent");
  });

  it("has no other routes", async () => {
    assert.equal((await get(verified, "/env")).statusCode, 404);
    assert.equal((await get(verified, "/health/../env")).statusCode, 404);
  });

  it("treats a check that cannot find Pi as a failed check", () => {
    const status = currentPatchStatus("/");
    assert.equal(status.ok, false);
    if (!status.ok) assert.match(status.reason, /not installed/);
  });

  it("answers 503 while the probe runs and after it failed; 200 only once both checks passed", async () => {
    const pending = await get(verified, "/health", {}, "GET", () => ({ state: "pending" }));
    assert.equal(pending.statusCode, 503);
    assert.equal(pending.json().status, "starting");
    assert.equal(pending.json().patches, "probing");
    const failed = await get(verified, "/health", {}, "GET", () => ({
      state: "failed",
      reason: "X went silent",
    }));
    assert.equal(failed.statusCode, 503);
    assert.equal(failed.json().patches, "unverified");
    assert.equal(failed.json().patchProbe, "failed");
    assert.match(failed.json().reason, /does not behave as patched: X went silent/);
    // A failed file check wins whatever the probe says.
    const file = await get({ ok: false, reason: "hash" }, "/health", {}, "GET", probed);
    assert.equal(file.statusCode, 503);
    const skipped = await get(verified, "/health", {}, "GET", () => ({ state: "skipped" }));
    assert.equal(skipped.statusCode, 503, "a verified file without a probe is not healthy");
  });

  it("never starts a Pi whose handler file failed the check; a probe that throws is a failure", async () => {
    let started = 0;
    const unverified = startPatchChecks("/", async () => {
      started += 1;
      return { ok: true, elapsedMs: 1 };
    });
    assert.equal(unverified.patchStatus.ok, false);
    assert.deepEqual(await unverified.settled, { state: "skipped" });
    assert.equal(started, 0);

    const throwing = startPatchChecks(repoRoot, async () => {
      throw new Error("spawn EACCES");
    });
    assert.equal(throwing.patchStatus.ok, true);
    assert.deepEqual(throwing.probe(), { state: "pending" });
    assert.deepEqual(await throwing.settled, { state: "failed", reason: "spawn EACCES" });
    assert.deepEqual(throwing.probe(), { state: "failed", reason: "spawn EACCES" });
  });

  it("probes the installed (patched) Pi for real and turns healthy", async () => {
    const checks = startPatchChecks(repoRoot);
    const settled = await checks.settled;
    assert.equal(settled.state, "passed", JSON.stringify(settled));
    const response = await get(checks.patchStatus, "/health", {}, "GET", checks.probe);
    assert.equal(response.statusCode, 200);
  });

  it("fails closed with a real Pi whose rpc-mode.js is the pristine one (a copy)", async (t) => {
    const root = await makeRunnablePiTree(t, "pristine");
    const verdict = await probeInstalledPi(findPiInstall(root));
    assert.equal(verdict.ok, false);
    assert.match(
      verdict.reason,
      /replace_queue: expected code invalid_request, got none \(Unknown command: replace_queue\)/,
    );
    assert.match(verdict.reason, /correlated_ui_response: Pi did not answer/);
  });

  it("the 0.84.3 trap: a reviewed rpc-mode.js on disk but `bin.pi` running another copy of the handler → 503", async (t) => {
    // As from Pi 0.84.3: bin runs a bundle that carries its own copy of the RPC handler. Simulated with a full
    // copy of dist/ (pristine handler) that bin.pi points at, while dist/modes/rpc/rpc-mode.js is the patched file.
    const manifest = await readManifest();
    const root = await makeRunnablePiTree(t, "pristine");
    const piDir = path.join(root, "node_modules", manifest.target.package);
    await cp(path.join(piDir, "dist"), path.join(piDir, "bundle"), { recursive: true });
    const pkgFile = path.join(piDir, "package.json");
    const pkg = JSON.parse(await readFile(pkgFile, "utf8"));
    await writeFile(pkgFile, JSON.stringify({ ...pkg, bin: { pi: "bundle/cli.js" } }));
    await cp(
      path.join(repoRoot, "node_modules", manifest.target.package, manifest.target.file),
      path.join(piDir, manifest.target.file),
    );

    const checks = startPatchChecks(root);
    assert.equal(checks.patchStatus.ok, true, "the file on disk is the reviewed patched one");
    const settled = await checks.settled;
    assert.equal(settled.state, "failed");
    const response = await get(checks.patchStatus, "/health", {}, "GET", checks.probe);
    assert.equal(response.statusCode, 503);
    assert.match(response.json().reason, /does not behave as patched: replace_queue: .*Unknown command/);
  });

  it("validates PORT and HOST", () => {
    assert.equal(parsePort(undefined), 7860);
    assert.equal(parsePort(""), 7860);
    assert.equal(parsePort("8080"), 8080);
    for (const bad of ["0", "65536", "80.5", "-1", "0x50", " 80", "eighty"]) {
      assert.throws(() => parsePort(bad), /PORT must be an integer/, bad);
    }
    assert.equal(parseHost(undefined), "0.0.0.0");
    assert.equal(parseHost("127.0.0.1"), "127.0.0.1");
    assert.equal(parseHost("::1"), "::1");
    assert.throws(() => parseHost("example.com"), /HOST must be an IP address/);
  });
});

describe("health server logs", () => {
  it("logs each probe as one debug line, and nothing at the default info level", async () => {
    for (const [level, expected] of [
      ["info", 0],
      ["debug", 1],
    ]) {
      const lines = [];
      const logger = pino({ level }, { write: (line) => lines.push(JSON.parse(line)) });
      const app = buildHealthServer({ patchStatus: verified, probe: probed, env: {}, logger });
      try {
        await app.inject({ method: "GET", url: "/health" });
      } finally {
        await app.close();
      }
      const probes = lines.filter((line) => line.msg === "health probe");
      assert.equal(probes.length, expected, `${level}: ${JSON.stringify(lines)}`);
      assert.equal(lines.length, expected, `${level}: nothing else per request: ${JSON.stringify(lines)}`);
      if (expected) assert.equal(probes[0].level, 20);
    }
  });
});
