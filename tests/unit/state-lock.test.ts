// The single-instance lock of a state dir: a file in the private <state>/bridge/, taken over at once when its
// holder is gone or its pid is now another process, refused while its holder lives.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { currentHolder, LOCK_NAME, LockHeldError, takeStateLock } from "../../bridge/state-lock.ts";
import { privateTempDir } from "../support/workspace.ts";

test("taken, refused while held (naming the holder), released, and taken again", async (t) => {
  const dir = await privateTempDir(t, "lock-");
  const lock = takeStateLock(dir);
  assert.deepEqual(JSON.parse(readFileSync(path.join(dir, LOCK_NAME), "utf8")), currentHolder());
  assert.throws(
    () => takeStateLock(dir),
    (err: Error) => {
      assert.ok(err instanceof LockHeldError);
      assert.match(err.message, new RegExp(`another bridge is using this state dir \\(pid ${process.pid}`));
      return true;
    },
  );
  lock.release();
  assert.equal(existsSync(path.join(dir, LOCK_NAME)), false);
  takeStateLock(dir).release();
  assert.deepEqual(readdirSync(dir), [], "no temp or stale file is left behind");
});

test("a live holder in another process keeps the lock", async (t) => {
  const dir = await privateTempDir(t, "lock-");
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  t.after(() => child.kill("SIGKILL"));
  const pid = child.pid as number;
  await new Promise((r) => child.once("spawn", r));
  writeFileSync(path.join(dir, LOCK_NAME), JSON.stringify(currentHolder(pid)));
  assert.throws(() => takeStateLock(dir), new RegExp(`pid ${pid}`));
});

test("a stale lock is taken over at once: a dead holder, a reused pid, another boot, garbage", async (t) => {
  const self = currentHolder();
  const dead = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((r) => dead.once("exit", r));
  const cases: [string, string][] = [
    ["a holder that exited", JSON.stringify(currentHolder(dead.pid as number))],
    // This very pid, but another process started it (its start time differs): pid reuse after a crash.
    ["a reused pid", JSON.stringify({ ...self, start: "1" })],
    ["another boot", JSON.stringify({ ...self, boot: "another-boot" })],
    ["another pid namespace (a container restarted)", JSON.stringify({ ...self, pidns: "pid:[1]" })],
    ["an unreadable record", "{torn"],
  ];
  for (const [name, record] of cases) {
    const dir = await privateTempDir(t, "lock-");
    writeFileSync(path.join(dir, LOCK_NAME), record);
    const lock = takeStateLock(dir);
    assert.deepEqual(JSON.parse(readFileSync(lock.file, "utf8")), self, name);
    assert.deepEqual(readdirSync(dir), [LOCK_NAME], `${name}: the stale lock was moved away and removed`);
    lock.release();
  }
});

test("release leaves a lock that is no longer this one alone", async (t) => {
  const dir = await privateTempDir(t, "lock-");
  const lock = takeStateLock(dir);
  // Someone (an operator) removed it and another bridge took it: releasing the first must not remove theirs.
  const file = path.join(dir, LOCK_NAME);
  const { unlinkSync } = await import("node:fs");
  unlinkSync(file);
  const other = takeStateLock(dir, { ...currentHolder(), start: "other" });
  lock.release();
  assert.equal(existsSync(file), true);
  other.release();
  assert.equal(existsSync(file), false);
});
