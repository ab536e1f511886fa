// The journal (bridge/journal.ts) on a temp directory: frames written before they may be sent, read back
// contiguous, a torn tail cut, a gap reported, old segments dropped with the ring.
import assert from "node:assert/strict";
import { appendFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { Journal } from "../../bridge/journal.ts";
import { ReplayRing } from "../../bridge/replay-ring.ts";
import { RingSink } from "../../bridge/ring-sink.ts";
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
