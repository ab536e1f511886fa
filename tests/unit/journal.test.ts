// The journal (bridge/journal.ts) on a temp directory: frames written before they may be sent, read back
// contiguous, a torn tail cut, a gap reported, old segments dropped with the ring; a failing disk (an
// injected write) degrades durability without stopping delivery, and the journal comes back from memory.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync, writevSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import pino from "pino";
import { openDurableState } from "../../bridge/durable-state.ts";
import { Journal, type Writev } from "../../bridge/journal.ts";
import { ReplayRing } from "../../bridge/replay-ring.ts";
import { RingSink } from "../../bridge/ring-sink.ts";
import { openStateDir, type SessionRecord, saveSession } from "../../bridge/state-dir.ts";
import { FakeClock } from "../support/core-harness.ts";
import { tempDir } from "../support/workspace.ts";

const limits = { maxFrames: 100, maxBytes: 64 * 1024 };

test("journal: written before a frame may be sent; read back across segments; old segments dropped", async (t) => {
  const dir = await tempDir(t, "journal-");
  const sink = new RingSink(new ReplayRing(limits.maxFrames, limits.maxBytes), {
    journal: new Journal(dir, limits, 0),
  });
  for (let i = 1; i <= 250; i++) {
    sink.publish({ type: "message_update", i });
    assert.equal(sink.sendableSeq, i - 1, "not sendable before it is journaled");
    sink.flush();
    assert.equal(sink.sendableSeq, i);
  }
  sink.journal?.close();
  const segments = readdirSync(dir);
  assert.ok(segments.length > 1 && segments.length <= 10, `${segments.length} segments`);
  const recovered = Journal.recover(dir, limits);
  assert.equal(recovered.problem, undefined);
  assert.equal(recovered.headSeq, 250);
  assert.ok(recovered.frames.length >= 100, "at least what the ring holds");
  assert.ok((recovered.frames[0]?.seq ?? 0) <= 151);
  const ring = new ReplayRing(limits.maxFrames, limits.maxBytes);
  for (const f of recovered.frames) ring.restore(f.seq, f.data);
  assert.equal(ring.headSeq, 250);
  assert.equal(ring.firstSeq, 151);
  assert.deepEqual(JSON.parse(ring.get(200)?.data.toString() ?? "{}"), {
    seq: 200,
    type: "message_update",
    i: 200,
  });
  // Appending continues the seq in a new segment.
  const again = new RingSink(ring, { journal: new Journal(dir, limits, recovered.headSeq) });
  again.publish({ type: "after" });
  again.flush();
  again.journal?.close();
  assert.equal(Journal.recover(dir, limits).headSeq, 251);
});

test("journal: a torn last line is cut; a gap or a foreign line is a problem and empties the journal", async (t) => {
  const dir = await tempDir(t, "journal-torn-");
  const sink = new RingSink(new ReplayRing(limits.maxFrames, limits.maxBytes), {
    journal: new Journal(dir, limits, 0),
  });
  for (let i = 1; i <= 5; i++) sink.publish({ type: "x", i });
  sink.flush();
  sink.journal?.close();
  const [segment] = readdirSync(dir);
  appendFileSync(path.join(dir, segment as string), '{"seq":6,"type":"x","i"');
  const torn = Journal.recover(dir, limits);
  assert.equal(torn.problem, undefined);
  assert.equal(torn.headSeq, 5);

  appendFileSync(path.join(dir, segment as string), '{"seq":9,"type":"x"}\n');
  const gap = Journal.recover(dir, limits);
  assert.match(gap.problem ?? "", /jumps from 5 to 9/);
  assert.deepEqual(readdirSync(dir), []);

  writeFileSync(path.join(dir, `${"1".padStart(20, "0")}.ndjson`), "not a frame\n");
  assert.match(Journal.recover(dir, limits).problem ?? "", /not a frame/);
});

test("journal: a failed write (ENOSPC) degrades durability but never delivery; rewrites from memory bring it back", async (t) => {
  const root = await tempDir(t, "durable-");
  mkdirSync(path.join(root, "workspace"));
  const state = await openStateDir(path.join(root, "state"), { workspace: path.join(root, "workspace") });
  t.after(() => state.lock.release());
  const clock = new FakeClock();
  let full = false;
  const writev: Writev = (fd, buffers) => {
    if (full) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    return writevSync(fd, buffers);
  };
  const durable = openDurableState(state, limits, pino({ level: "silent" }), { clock, writev });
  const sink = new RingSink(durable.ring, { journal: durable.journal, now: clock.now });
  const identity = () => JSON.parse(readFileSync(path.join(state.paths.bridgeDir, "identity.json"), "utf8"));
  for (let i = 1; i <= 10; i++) sink.publish({ type: "x", i });
  sink.flush();
  assert.equal(sink.sendableSeq, 10);
  assert.equal(identity().epoch, durable.epoch);

  full = true;
  for (let i = 11; i <= 20; i++) sink.publish({ type: "x", i });
  durable.idempotency.begin("cmd-during", { type: "prompt" }, "prompt");
  assert.equal(sink.sendableSeq, 10, "not sendable before the journal tried");
  sink.flush();
  assert.equal(sink.sendableSeq, 20, "sent from memory once the journal failed");
  assert.equal(sink.stalledMs(), 0);
  assert.deepEqual(durable.status().journal, "degraded");
  assert.match(durable.status().problem ?? "", /ENOSPC/);
  assert.notEqual(identity().epoch, durable.epoch, "the epoch is retired while frames are not on disk");
  for (let i = 21; i <= 30; i++) sink.publish({ type: "x", i });
  sink.flush();
  assert.equal(sink.sendableSeq, 30);
  await clock.advance(1_000);
  await clock.advance(2_000);
  assert.equal(durable.status().journal, "degraded", "still full: still retrying");

  full = false;
  await clock.advance(4_000);
  assert.equal(durable.status().journal, "ok");
  assert.equal(identity().epoch, durable.epoch, "the epoch is back once every file is written again");
  sink.publish({ type: "x", i: 31 });
  sink.flush();
  assert.equal(sink.sendableSeq, 31);
  durable.close();
  const recovered = Journal.recover(state.paths.journalDir, limits);
  assert.equal(recovered.problem, undefined);
  assert.deepEqual(
    recovered.frames.map((f) => f.seq),
    Array.from({ length: 31 }, (_, i) => i + 1),
    "contiguous: the frames sent from memory were written at recovery",
  );
  const records = readFileSync(state.paths.commandsFile, "utf8");
  assert.match(records, /cmd-during/, "the command records written while degraded were rewritten");
});

test("journal: a session change the full disk refused degrades durability and is on disk after recovery", async (t) => {
  const root = await tempDir(t, "durable-session-");
  mkdirSync(path.join(root, "workspace"));
  const state = await openStateDir(path.join(root, "state"), { workspace: path.join(root, "workspace") });
  t.after(() => state.lock.release());
  const clock = new FakeClock();
  let full = false;
  const enospc = () => Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
  const writev: Writev = (fd, buffers) => {
    if (full) throw enospc();
    return writevSync(fd, buffers);
  };
  const writeSession = (record: SessionRecord) => {
    if (full) throw enospc();
    saveSession(state.paths, record);
  };
  const durable = openDurableState(state, limits, pino({ level: "silent" }), { clock, writev, writeSession });
  const sessionFile = path.join(state.paths.bridgeDir, "session.json");
  const onDisk = () => JSON.parse(readFileSync(sessionFile, "utf8")) as SessionRecord;
  const before = onDisk();
  const next: SessionRecord = {
    sessionId: randomUUID(),
    sessionFile: path.join(root, "sessions", "next.jsonl"),
  };

  // Pi moves to another session (new_session) while the disk is full: the write fails, durability says so.
  full = true;
  durable.saveSession(next);
  assert.equal(durable.status().journal, "degraded");
  assert.match(durable.status().problem ?? "", /session record write failed: ENOSPC/);
  assert.deepEqual(onDisk(), before, "nothing was written while full");
  await clock.advance(1_000);
  assert.equal(durable.status().journal, "degraded", "still full: still retrying");

  // Space is back: the rewrite from memory includes the session, so the next bridge resumes the right one.
  full = false;
  await clock.advance(2_000);
  assert.equal(durable.status().journal, "ok");
  assert.deepEqual(onDisk(), next);
  durable.close();
});

test("journal: a short write is completed, never left torn", async (t) => {
  const dir = await tempDir(t, "journal-short-");
  const writev: Writev = (fd, buffers) => writevSync(fd, [(buffers[0] as Buffer).subarray(0, 3)]);
  const sink = new RingSink(new ReplayRing(limits.maxFrames, limits.maxBytes), {
    journal: new Journal(dir, limits, 0, { writev }),
  });
  for (let i = 1; i <= 5; i++) sink.publish({ type: "x", i });
  sink.flush();
  sink.journal?.close();
  const recovered = Journal.recover(dir, limits);
  assert.equal(recovered.problem, undefined);
  assert.deepEqual(
    recovered.frames.map((f) => JSON.parse(f.data.toString()).i),
    [1, 2, 3, 4, 5],
  );
});
