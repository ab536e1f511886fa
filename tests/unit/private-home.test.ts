// The bridge's module search path holds no folder a launcher pointed it at: after withPrivateHome and
// recomputeModulePaths, a module that only the launcher's HOME or NODE_PATH holds is not found any more, and Pi's
// configuration keeps meaning the launcher's.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { privateTempDir } from "../support/workspace.ts";

const privateHome = path.resolve(import.meta.dirname, "..", "..", "bridge", "private-home.ts");

test("a module in the launcher's HOME or NODE_PATH is found before, and not after", async (t) => {
  const launcherHome = await privateTempDir(t, "launcher-home-");
  const nodePath = await privateTempDir(t, "node-path-");
  const state = await privateTempDir(t, "state-");
  for (const [dir, name] of [
    [path.join(launcherHome, ".node_modules"), "probe-from-home"],
    [nodePath, "probe-from-node-path"],
  ] as const) {
    mkdirSync(path.join(dir, name), { recursive: true });
    writeFileSync(path.join(dir, name, "index.js"), `module.exports = ${JSON.stringify(name)};`);
  }
  const script = `
    import { createRequire } from "node:module";
    import { withPrivateHome, recomputeModulePaths, modulePathsArePrivate, privateHomeOf } from ${JSON.stringify(privateHome)};
    const require = createRequire(import.meta.url);
    const found = (name) => { try { return require.resolve(name).includes(name); } catch { return false; } };
    const before = [found("probe-from-home"), found("probe-from-node-path")];
    const problem = withPrivateHome(process.env, ${JSON.stringify(path.join(state, "bridge"))});
    const paths = recomputeModulePaths();
    const home = privateHomeOf(${JSON.stringify(path.join(state, "bridge"))});
    console.log(JSON.stringify({
      before, problem, home: process.env.HOME === home, nodePath: process.env.NODE_PATH ?? null,
      agentDir: process.env.PI_CODING_AGENT_DIR,
      private: modulePathsArePrivate(paths, home, process.execPath),
      after: [found("probe-from-home"), found("probe-from-node-path")],
    }));
  `;
  const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    env: { PATH: process.env.PATH, HOME: launcherHome, NODE_PATH: nodePath },
    encoding: "utf8",
    cwd: path.resolve(import.meta.dirname, "..", ".."),
  });
  assert.equal(run.status, 0, run.stderr);
  const result = JSON.parse(run.stdout);
  assert.deepEqual(result.before, [true, true], "the probes are found where Node looks at start");
  assert.equal(result.problem, undefined);
  assert.equal(result.home, true);
  assert.equal(result.nodePath, null);
  assert.equal(
    result.agentDir,
    path.join(launcherHome, ".pi", "agent"),
    "Pi's configuration keeps its meaning",
  );
  assert.equal(result.private, true);
  assert.deepEqual(result.after, [false, false], "found after the bridge took its private HOME");
});

test("the launcher's HOME is remembered across the bridge's re-execution, and a uid without a passwd entry gets it as the tools' HOME, never the bridge's private one", async (t) => {
  const { LAUNCHER_HOME_ENV, privateHomeOf, withPrivateHome } = await import("../../bridge/private-home.ts");
  const { decidePrincipals } = await import("../../bridge/isolation.ts");
  const state = await privateTempDir(t, "state-");
  const bridgeDir = path.join(state, "bridge");
  const env: NodeJS.ProcessEnv = { HOME: "/home/launcher" };
  assert.equal(withPrivateHome(env, bridgeDir), undefined);
  assert.equal(env.HOME, privateHomeOf(bridgeDir));
  assert.equal(env[LAUNCHER_HOME_ENV], "/home/launcher");
  // The re-executed bridge starts with the private HOME already: the launcher's is kept, not overwritten.
  const again: NodeJS.ProcessEnv = { ...env };
  assert.equal(withPrivateHome(again, bridgeDir), undefined);
  assert.equal(again[LAUNCHER_HOME_ENV], "/home/launcher");
  const principals = decidePrincipals({
    euid: 4242,
    egid: 4242,
    agentUser: undefined,
    piUser: undefined,
    passwd: () => "root:x:0:0::/root:/bin/sh\n",
    env: { HOME: again[LAUNCHER_HOME_ENV] },
  });
  assert.equal(principals.tools.home, "/home/launcher");
});
