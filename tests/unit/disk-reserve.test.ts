// The bridge's disk reserve (bridge/disk-reserve.ts) and how the durable state reports a disk without room for
// it: a start on a full disk frees the reserve and goes on degraded; the reserve is made again once there is room.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import pino from "pino";
import {
  ensureReserve,
  RESERVE_BYTES,
  releaseReserveIfFull,
  reserveFileOf,
} from "../../bridge/disk-reserve.ts";
import { openDurableState } from "../../bridge/durable-state.ts";
import { openStateDir } from "../../bridge/state-dir.ts";
import { FakeClock } from "../support/core-harness.ts";
import { tempDir } from "../support/workspace.ts";

test("disk reserve: made in full once, kept while the disk has room, freed when it has less than it holds", async (t) => {
  const dir = await tempDir(t, "reserve-");
  const file = reserveFileOf(dir);
  ensureReserve(dir);
  assert.equal(statSync(file).size, RESERVE_BYTES);
  assert.equal(statSync(file).blocks * 512 >= RESERVE_BYTES, true, "written, not sparse");
  ensureReserve(dir);
  assert.equal(releaseReserveIfFull(dir, RESERVE_BYTES), false, "room enough: kept");
  assert.equal(existsSync(file), true);
  assert.equal(releaseReserveIfFull(dir, 4096), true, "full: freed");
  assert.equal(existsSync(file), false);
  assert.equal(releaseReserveIfFull(dir, 0), false, "nothing left to free");
});

test("durable state: no room for the reserve at start is reported degraded, and recovers with the disk", async (t) => {
  const root = await tempDir(t, "reserve-durable-");
  mkdirSync(path.join(root, "workspace"));
  const state = await openStateDir(path.join(root, "state"), { workspace: path.join(root, "workspace") });
  t.after(() => state.lock.release());
  const clock = new FakeClock();
  let full = true;
  const reserve = () => {
    if (full) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    ensureReserve(state.paths.bridgeDir);
  };
  const durable = openDurableState(
    state,
    { maxFrames: 100, maxBytes: 64 * 1024 },
    pino({ level: "silent" }),
    {
      clock,
      ensureReserve: reserve,
    },
  );
  assert.equal(durable.status().journal, "degraded");
  assert.match(durable.status().problem ?? "", /the disk is full: no room for the bridge's reserve \(ENOSPC/);
  await clock.advance(1_000);
  assert.equal(durable.status().journal, "degraded", "still full");
  full = false;
  await clock.advance(2_000);
  assert.equal(durable.status().journal, "ok");
  assert.equal(statSync(reserveFileOf(state.paths.bridgeDir)).size, RESERVE_BYTES, "the reserve is back");
  durable.close();
});
