// The chaos run (scripts/chaos.ts, `npm run chaos` does 1,000 drops and 3 restarts) in a shorter form:
// forced drops and a kill -9 restart of the bridge under load, with real Pi and the real approval gate.
import assert from "node:assert/strict";
import { test } from "node:test";
import { runChaos } from "../../scripts/chaos.ts";

test("chaos (short): drops and a kill -9 restart under load lose nothing, repeat nothing, run nothing twice", async () => {
  const report = await runChaos({ drops: 60, restarts: 1 });
  assert.equal(report.drops, 60);
  assert.equal(report.restarts, 1);
  assert.equal(report.epochs, 1, "the restart kept the epoch");
  assert.ok(report.frames > 100, `${report.frames} frames`);
  assert.equal(report.gaps, 0);
  assert.equal(report.duplicates, 0);
  assert.equal(report.executions.moreThanOnce, 0);
  assert.equal(report.modelAsks.moreThanOnce, 0);
  assert.ok(report.streams.completed > 0);
  assert.equal(report.streams.intact, report.streams.completed);
  assert.equal(report.resumeMs.count, 60);
});
