// The runtime patch probe (issue 13 item 4): the bridge proves that the Pi it started answers like the
// patched one before serving. Here Pi's rpc-mode.js is the pristine upstream file, in a copy of the install
// (tests/support/fixtures/patch-tree.ts), run through symlinks kept as they are.
import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { WelcomeFrame } from "../../bridge/protocol.ts";
import { fixture, StdioDriver, spawnBridge, startNetworkBridge, TestClient } from "../support/bridge.ts";
import { bridgeScript } from "../support/bridge-script.ts";
import { makePatchTree } from "../support/fixtures/patch-tree.ts";

/** The pristine copy only runs if Node keeps the tree's symlinked paths instead of resolving them. */
const KEEP_SYMLINKS = { NODE_OPTIONS: "--preserve-symlinks --preserve-symlinks-main" };

async function pristinePi(t: Parameters<typeof makePatchTree>[0]): Promise<string> {
  const root = await makePatchTree(t, "pristine");
  return path.join(root, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "cli.js");
}

test("network mode over an unpatched Pi: refused, fail closed, and says why", async (t) => {
  const bridge = await startNetworkBridge(t, {
    model: { script: bridgeScript },
    piCommand: await pristinePi(t),
    env: KEEP_SYMLINKS,
    args: ["--linger", "2s"],
  });
  const { client, welcome } = await TestClient.connect(bridge.url);
  const snapshot = WelcomeFrame.parse(welcome).snapshot;
  assert.equal(snapshot.pi.state, "refused");
  assert.equal(snapshot.pi.patched, false);
  assert.match(snapshot.pi.problem ?? "", /replace_queue: expected code invalid_request/);
  assert.match(snapshot.pi.problem ?? "", /correlated_ui_response: Pi did not answer/);
  const prompt = await client.request({ type: "prompt", id: "p-refused", message: "hello" });
  assert.equal(prompt.success, false);
  assert.equal(prompt.code, "agent_unverified");
  const health = await fetch(`http://127.0.0.1:${bridge.port}/v1/health`);
  assert.equal(health.status, 503);
  assert.deepEqual(await health.json(), { status: "unavailable" }, "only ok or not ok without the token");
  assert.ok(bridge.logs.some((l) => l.msg === "Pi failed the patch probe: refusing to serve"));
  assert.equal(bridge.model?.requests.length, 0, "nothing reached the model");
  assert.deepEqual(await bridge.exited, { code: 1, signal: null });
});

test("stdio mode over an unpatched Pi: the command is refused and the bridge exits 1", async (t) => {
  const bridge = spawnBridge(t, {
    args: [
      "--mode",
      "rpc",
      "--gate",
      fixture("fake-pi-gate.mjs"),
      "--pi-command",
      await pristinePi(t),
      "--no-session",
    ],
    env: { ...KEEP_SYMLINKS, HOME: "/nonexistent" },
  });
  const pi = new StdioDriver(bridge);
  const refused = await pi.request({ id: "s1", type: "get_state" }, 60_000);
  assert.equal(refused.success, false);
  assert.equal(refused.code, "agent_unverified");
  assert.equal((await bridge.exited).code, 1);
  assert.match(bridge.stderr(), /Pi failed the patch probe/);
});
