// The Space health endpoint in-process (fastify inject): fail-closed status, presence-only diagnostics.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import {
  buildHealthServer,
  CREDENTIAL_NAMES,
  currentPatchStatus,
  parseHost,
  parsePort,
} from "./health-server.ts";
import { PI_VERSION } from "./pi-install.ts";

const silent = pino({ level: "silent" });
const verified = { ok: true, sha256: "a".repeat(64) };
const FAKE_SECRET = `hf_${"Zq".repeat(17)}`;

async function get(status, url, env = {}, method = "GET") {
  const app = buildHealthServer({ patchStatus: status, env, logger: silent });
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
