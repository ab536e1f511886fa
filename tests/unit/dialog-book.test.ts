// The dialog lifecycle (bridge/dialog-book.ts) in memory, with a fake clock: a walk-through of each path,
// and a property test over random interleavings. `npm test` runs 2,000 cases; `npm run test:dialogs`
// runs 100,000 (DIALOG_PROPERTY_RUNS sets any number).
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  type AnswerDecision,
  DialogBook,
  type DialogCloseReason,
  type Verdict,
} from "../../bridge/dialog-book.ts";
import type { DialogMethod, PendingDialog } from "../../bridge/protocol.ts";

class FakeClock {
  now = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private next = 1;
  set = (ms: number, fn: () => void): unknown => {
    const id = this.next++;
    this.timers.set(id, { at: this.now + ms, fn });
    return id;
  };
  clear = (handle: unknown): void => {
    if (typeof handle === "number") this.timers.delete(handle);
  };
  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const due = [...this.timers]
        .filter(([, timer]) => timer.at <= until)
        .sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.now = due[1].at;
      due[1].fn();
    }
    this.now = until;
  }
}

interface Harness {
  book: DialogBook;
  clock: FakeClock;
  cancelled: string[];
  closed: { id: string; reason: DialogCloseReason }[];
}

function harness(graceMs = 1_000): Harness {
  const clock = new FakeClock();
  const cancelled: string[] = [];
  const closed: { id: string; reason: DialogCloseReason }[] = [];
  const book = new DialogBook({
    detachedGraceMs: graceMs,
    timers: { set: clock.set, clear: clock.clear },
    effects: {
      cancelInPi: (id) => cancelled.push(id),
      announceClosed: (id, reason) => closed.push({ id, reason }),
      changed: () => {},
      warn: () => {},
    },
  });
  return { book, clock, cancelled, closed };
}

const dialog = (id: string, method: DialogMethod): PendingDialog =>
  method === "select" ? { id, method, options: ["a", "b"], seq: 1 } : { id, method, seq: 1 };

test("dialog book: answered, refused on abort, grace, timeout, exit and shutdown; tombstones say why", () => {
  const { book, clock, cancelled, closed } = harness();
  book.attach();
  book.request(dialog("c1", "confirm"));
  const forward = book.answer("c1", { confirmed: true });
  assert.deepEqual(forward, {
    kind: "forward",
    dialog: dialog("c1", "confirm"),
    answer: { confirmed: true },
    owner: "pi",
  });
  assert.deepEqual(book.pending(), [], "an answered dialog is no longer pending");
  assert.deepEqual(book.answer("c1", { confirmed: true }), { kind: "not_pending", reason: "answered" });
  book.verdict("c1", { kind: "accepted" });
  assert.equal(book.size, 0);
  assert.equal(closed.length, 0, "an accepted answer ends the dialog without dialog_closed");

  book.request(dialog("s1", "select"));
  assert.deepEqual(book.answer("s1", { value: "c" }), {
    kind: "malformed",
    problem: "`value` is not one of the offered options",
    declined: true,
  });
  assert.deepEqual(closed.at(-1), { id: "s1", reason: "malformed_answer" });
  assert.deepEqual(cancelled, ["s1"]);

  book.request(dialog("i1", "input"));
  book.refusePending("cancelled");
  assert.deepEqual(closed.at(-1), { id: "i1", reason: "cancelled" });
  assert.deepEqual(book.answer("i1", { value: "x" }), { kind: "not_pending", reason: "refused" });

  book.request(dialog("t1", "confirm"), 500);
  clock.advance(499);
  assert.equal(book.pending().length, 1);
  clock.advance(1);
  assert.deepEqual(closed.at(-1), { id: "t1", reason: "timed_out" });
  assert.ok(!cancelled.includes("t1"), "Pi resolves its own timeouts");
  assert.deepEqual(book.answer("t1", { confirmed: true }), { kind: "not_pending", reason: "timed_out" });

  book.detach();
  book.request(dialog("g1", "editor"));
  clock.advance(999);
  book.attach(); // a client came back in time
  clock.advance(5_000);
  assert.equal(book.pending().length, 1);
  book.detach();
  clock.advance(1_000);
  assert.deepEqual(closed.at(-1), { id: "g1", reason: "detached_grace" });

  book.attach();
  book.request(dialog("x1", "confirm"));
  book.request(dialog("x2", "confirm"));
  book.answer("x2", { confirmed: true });
  book.agentGone();
  assert.deepEqual(closed.slice(-2), [
    { id: "x1", reason: "agent_exited" },
    { id: "x2", reason: "agent_exited" },
  ]);
  book.verdict("x2", { kind: "accepted" }); // too late: it already ended
  assert.equal(closed.filter((c) => c.id === "x2").length, 1);

  book.request(dialog("z1", "confirm"));
  book.close();
  book.request(dialog("z2", "confirm"));
  assert.deepEqual(closed.slice(-2), [
    { id: "z1", reason: "shutdown" },
    { id: "z2", reason: "shutdown" },
  ]);
  assert.deepEqual(book.answer("", { confirmed: true }), { kind: "not_pending", reason: "unknown" });
  assert.deepEqual(book.answer(undefined, { confirmed: true }), { kind: "not_pending", reason: "unknown" });
});

// ---------------------------------------------------------------- property test

type Form = "valid_yes" | "valid_no" | "cancel" | "wrong_kind" | "not_offered" | "garbage";
type Action =
  | { kind: "request"; method: DialogMethod; timeout: number | undefined }
  | { kind: "answer"; target: number; form: Form }
  | { kind: "verdict"; target: number; verdict: "accepted" | "not_pending" | "rejected" }
  | { kind: "detach" }
  | { kind: "attach" }
  | { kind: "advance"; ms: number }
  | { kind: "abort" }
  | { kind: "pi_exit" };

const GRACE = 1_000;

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("request" as const),
      method: fc.constantFrom<DialogMethod>("confirm", "select", "input", "editor"),
      timeout: fc.option(fc.integer({ min: 1, max: 3_000 }), { nil: undefined }),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("answer" as const),
      target: fc.integer({ min: -2, max: 12 }),
      form: fc.constantFrom<Form>("valid_yes", "valid_no", "cancel", "wrong_kind", "not_offered", "garbage"),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("verdict" as const),
      target: fc.integer({ min: 0, max: 12 }),
      verdict: fc.constantFrom("accepted" as const, "not_pending" as const, "rejected" as const),
    }),
  },
  fc.constant({ kind: "detach" as const }),
  fc.constant({ kind: "attach" as const }),
  fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 2 * GRACE }) }),
  fc.constant({ kind: "abort" as const }),
  fc.constant({ kind: "pi_exit" as const }),
);

/** The frame a client sends for `form`, and whether it is an explicit, matching answer for the dialog. */
function frameFor(method: DialogMethod, form: Form): { frame: Record<string, unknown>; matches: boolean } {
  switch (form) {
    case "cancel":
      return { frame: { cancelled: true }, matches: true };
    case "garbage":
      return { frame: { confirmed: "yes", value: 7 }, matches: false };
    case "not_offered":
      return { frame: { value: "zzz" }, matches: method === "input" || method === "editor" };
    case "wrong_kind":
      return method === "confirm"
        ? { frame: { value: "a" }, matches: false }
        : { frame: { confirmed: true }, matches: false };
    case "valid_yes":
    case "valid_no":
      if (method === "confirm") return { frame: { confirmed: form === "valid_yes" }, matches: true };
      return { frame: { value: form === "valid_yes" ? "a" : "b" }, matches: true };
  }
}

function runActions(actions: Action[]): void {
  const { book, clock, cancelled, closed } = harness(GRACE);
  const methods: DialogMethod[] = [];
  const ends = new Map<string, number>();
  const forwarded = new Map<string, Record<string, unknown>>();
  const end = (id: string) => {
    ends.set(id, (ends.get(id) ?? 0) + 1);
    assert.ok((ends.get(id) ?? 0) <= 1, `${id} ended twice`);
  };
  let seenClosed = 0;
  const collectClosed = () => {
    for (const c of closed.slice(seenClosed)) end(c.id);
    seenClosed = closed.length;
  };
  let attached = false;
  for (const action of actions) {
    switch (action.kind) {
      case "request": {
        const id = `d${methods.length}`;
        methods.push(action.method);
        book.request(dialog(id, action.method), action.timeout);
        break;
      }
      case "answer": {
        const id = action.target === -1 ? "" : action.target === -2 ? undefined : `d${action.target}`;
        const method = action.target >= 0 ? methods[action.target] : undefined;
        const wasPending = id !== undefined && book.pending().some((d) => d.id === id);
        const { frame, matches } = frameFor(method ?? "confirm", action.form);
        const decision: AnswerDecision = book.answer(id, frame);
        if (decision.kind === "forward") {
          assert.ok(id !== undefined && method !== undefined, "a forward names a requested dialog");
          assert.ok(wasPending, "only a pending dialog takes an answer");
          assert.ok(matches, "only an explicit answer that matches the dialog is forwarded");
          assert.ok(!forwarded.has(id), "one answer per dialog");
          assert.deepEqual(decision.answer, frame, "exactly what the client answered");
          forwarded.set(id, frame);
        } else {
          assert.ok(!(wasPending && matches), `a matching answer to pending ${id} was not forwarded`);
        }
        break;
      }
      case "verdict": {
        const id = `d${action.target}`;
        // Pi only ever returns a verdict for an answer it was sent, once.
        if (!forwarded.has(id) || ends.has(id)) break;
        const verdict: Verdict =
          action.verdict === "accepted"
            ? { kind: "accepted" }
            : action.verdict === "not_pending"
              ? { kind: "not_pending", piReason: "aborted" }
              : { kind: "rejected" };
        const before = closed.length;
        book.verdict(id, verdict);
        if (action.verdict === "accepted") {
          assert.equal(closed.length, before, "an accepted answer ends without dialog_closed");
          end(id);
        }
        break;
      }
      case "detach":
        attached = false;
        book.detach();
        break;
      case "attach":
        attached = true;
        book.attach();
        break;
      case "advance":
        clock.advance(action.ms);
        break;
      case "abort":
        book.refusePending("cancelled");
        break;
      case "pi_exit":
        book.agentGone();
        assert.equal(book.size, 0, "nothing stays open after Pi is gone");
        break;
    }
    collectClosed();
    // Pi is told `cancelled` only for dialogs it still holds without an answer from us.
    for (const id of cancelled) assert.ok(!forwarded.has(id) || (ends.get(id) ?? 0) === 1);
    if (!attached) {
      for (const d of book.pending()) assert.ok(ends.get(d.id) === undefined);
    }
  }
  // Shutdown: Pi gone, bridge closing: every dialog has ended exactly once.
  book.close();
  book.agentGone();
  collectClosed();
  for (let i = 0; i < methods.length; i++)
    assert.equal(ends.get(`d${i}`), 1, `d${i} ended ${ends.get(`d${i}`) ?? 0} times`);
  assert.equal(book.size, 0);
}

test("dialog book property: no approval without one matching explicit answer; every dialog ends exactly once", () => {
  const numRuns = Number(process.env.DIALOG_PROPERTY_RUNS ?? 2_000);
  let runs = 0;
  fc.assert(
    fc.property(fc.array(actionArb, { maxLength: 40 }), (actions) => {
      runs++;
      runActions(actions);
    }),
    { numRuns },
  );
  assert.equal(runs, numRuns);
  if (numRuns >= 100_000) process.stderr.write(`dialog book property: ${runs} cases passed\n`);
});
