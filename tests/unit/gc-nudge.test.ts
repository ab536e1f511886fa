// Reads of dropped connections are garbage V8 frees late: past a budget of dropped bytes, one collection is asked
// for, after the reads in hand are handled; below it, none.
import assert from "node:assert/strict";
import { test } from "node:test";
import { setImmediate as tick } from "node:timers/promises";
import { GarbageNudge } from "../../bridge/gc-nudge.ts";

test("one collection per budget of dropped bytes, never inside the read that crossed it", async () => {
  let collections = 0;
  const nudge = new GarbageNudge(1000, () => {
    collections += 1;
  });
  nudge.dropped(600);
  await tick();
  assert.equal(collections, 0, "below the budget");
  nudge.dropped(600);
  nudge.dropped(600);
  assert.equal(collections, 0, "not inside the read");
  await tick();
  assert.equal(collections, 1, "one collection for a burst");
  nudge.dropped(999);
  await tick();
  assert.equal(collections, 1, "the count starts over after a collection");
});

test("the real collector can be made and run", async () => {
  const nudge = new GarbageNudge(1);
  nudge.dropped(2);
  await tick();
  await tick();
});
