// The engine setup never skips silently: an engine that cannot be reached or started is a clear failure.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, it } from "node:test";
import Docker from "dockerode";
import { ensureEngine } from "../../scripts/docker/ensure-engine.mjs";

const script = path.resolve(import.meta.dirname, "../../scripts/docker/ensure-engine.mjs");
const nowhere = "/nonexistent/docker.sock";

function runScript(env: NodeJS.ProcessEnv) {
  return spawnSync(process.execPath, [script], {
    encoding: "utf8",
    env: { PATH: process.env.PATH, ...env },
    timeout: 60_000,
  });
}

describe("ensure-engine", () => {
  it("without a reachable engine and without root, fails with a message (no silent skip)", async () => {
    await assert.rejects(
      ensureEngine({ docker: new Docker({ socketPath: nowhere }), dockerHost: undefined, isRoot: false }),
      /no Docker engine answers on \/var\/run\/docker\.sock and this is not root.*never skipped/s,
    );
  });

  it("refuses to start its own dockerd for a DOCKER_HOST that does not answer (exit 1, one line)", () => {
    const result = runScript({ DOCKER_HOST: `unix://${nowhere}` });
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, /DOCKER_HOST=unix:\/\/\/nonexistent\/docker\.sock does not answer/);
  });

  it("reports an engine that answers", () => {
    const result = runScript({});
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stderr, /answers/);
  });
});
