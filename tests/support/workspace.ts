// Temp workspaces for tests, removed by the test's cleanup.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestContext } from "node:test";

export async function tempDir(t: TestContext, prefix = "chat-ui-test-"): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A temp dir outside /tmp, which the tools' Landlock domain grants: for what the bridge must trust (an agent
 * dir it seeds Pi from, a policy file), so that it does not refuse them as writable by the tools.
 */
export async function privateTempDir(t: TestContext, prefix = "chat-ui-private-"): Promise<string> {
  const dir = await mkdtemp(path.join("/var/tmp", prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
