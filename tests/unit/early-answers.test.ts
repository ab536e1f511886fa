// Early answers (bridge/core/early-answers.ts) on their own: which commands may go to a Pi being probed, and
// what happens to their answers at each verdict, bounded by count and bytes like the held queue.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { CommandLedger } from "../../bridge/core/command-ledger.ts";
import { EarlyAnswers } from "../../bridge/core/early-answers.ts";
import type { Frame } from "../../bridge/core/frames.ts";
import { MAX_HELD_BYTES, MAX_HELD_COMMANDS } from "../../bridge/core/held-queue.ts";

function early(verdict: () => ReturnType<ConstructorParameters<typeof EarlyAnswers>[0]["verdict"]>) {
  const finished: [string | undefined, Frame][] = [];
  const ledger = { finish: (id: string | undefined, frame: Frame) => finished.push([id, frame]) };
  return { answers: new EarlyAnswers({ ledger: ledger as unknown as CommandLedger, verdict }), finished };
}

test("early answers: only read-only commands, at most as many as the held queue", () => {
  const { answers } = early(() => "pending");
  for (const type of ["prompt", "bash", "set_model", "abort", "new_session", "get_policy_x"])
    assert.equal(answers.admit(type), false, type);
  let admitted = 0;
  while (answers.admit("get_state")) admitted++;
  assert.equal(admitted, MAX_HELD_COMMANDS);
  answers.lost();
  assert.equal(answers.admit("get_messages"), true, "a settled one frees its place");
});

test("early answers: kept until the verdict, then delivered in order, or failed with its code", () => {
  let verdict: ReturnType<ConstructorParameters<typeof EarlyAnswers>[0]["verdict"]> = "pending";
  const { answers, finished } = early(() => verdict);
  answers.admit("get_state");
  answers.admit("get_messages");
  answers.answer("a", "get_state", { type: "response", id: "a", success: true });
  answers.answer("b", "get_messages", { type: "response", id: "b", success: true });
  assert.equal(finished.length, 0, "nothing reaches a client before the verdict");
  verdict = "serving";
  answers.deliver();
  assert.deepEqual(
    finished.map(([id, f]) => [id, f.success]),
    [
      ["a", true],
      ["b", true],
    ],
  );
  finished.length = 0;
  verdict = "pending";
  answers.admit("get_state");
  answers.answer("c", "get_state", { type: "response", id: "c", success: true });
  answers.fail("agent_unverified", "refused");
  assert.deepEqual(
    finished.map(([id, f]) => [id, f.success, f.code]),
    [["c", false, "agent_unverified"]],
  );
  finished.length = 0;
  verdict = { code: "agent_exited", message: "gone" };
  answers.answer("d", "get_state", { type: "response", id: "d", success: true });
  assert.deepEqual(
    finished.map(([id, f]) => [id, f.code]),
    [["d", "agent_exited"]],
    "a late answer of a Pi gone",
  );
});

test("early answers: the bytes kept are bounded; beyond, the answer fails agent_starting (ask again)", () => {
  const { answers, finished } = early(() => "pending");
  // Half the bound by the held queue's own measure (two bytes a character): one fits, a second does not.
  const big = "x".repeat(Math.ceil(MAX_HELD_BYTES / 4));
  for (const id of ["a", "b", "c"]) {
    answers.admit("get_messages");
    answers.answer(id, "get_messages", { type: "response", id, success: true, data: big });
  }
  assert.equal(answers.size, 1, "one fits; the second would exceed the bound");
  assert.deepEqual(
    finished.map(([id, f]) => [id, f.code]),
    [
      ["b", "agent_starting"],
      ["c", "agent_starting"],
    ],
  );
});
