// The auth-failure gate, on a fake clock: the delay doubles with each recent failure up to its ceiling, the
// gate stays closed for it, and failures older than the window stop counting.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AuthThrottle } from "../../bridge/auth-throttle.ts";

function throttle() {
  let now = 1_000_000;
  const gate = new AuthThrottle({ baseDelayMs: 200, maxDelayMs: 10_000, windowMs: 60_000, now: () => now });
  return { gate, advance: (ms: number) => (now += ms) };
}

test("open until a failure; each failure doubles the delay up to the ceiling", () => {
  const { gate, advance } = throttle();
  assert.equal(gate.waitMs(), 0);
  const delays: number[] = [];
  for (let i = 0; i < 8; i++) {
    const delay = gate.recordFailure();
    delays.push(delay);
    assert.equal(gate.waitMs(), delay, "the gate is closed for the delay");
    advance(delay);
    assert.equal(gate.waitMs(), 0, "and open after it");
  }
  assert.deepEqual(delays, [200, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000]);
  assert.equal(gate.recentFailures(), 8);
});

test("failures older than the window stop counting: the delay falls back", () => {
  const { gate, advance } = throttle();
  for (let i = 0; i < 5; i++) gate.recordFailure();
  advance(60_001);
  assert.equal(gate.recentFailures(), 0);
  assert.equal(gate.waitMs(), 0);
  assert.equal(gate.recordFailure(), 200);
});

test("a burst of failures at once keeps the gate closed for the longest delay", () => {
  const { gate, advance } = throttle();
  for (let i = 0; i < 40; i++) gate.recordFailure();
  assert.equal(gate.waitMs(), 10_000);
  advance(9_999);
  assert.equal(gate.waitMs(), 1);
});
