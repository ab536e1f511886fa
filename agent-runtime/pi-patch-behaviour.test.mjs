// The behavioural patch check on its own: the probe exchange judged line by line, and the one-shot probe of a
// "Pi" that is not one (exits at once, never answers, writes garbage). Real patched and pristine Pis are probed
// in health-server.test.mjs.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { tempDir } from "../tests/support/workspace.ts";
import { createProbeExchange, probeInstalledPi } from "./pi-patch-behaviour.ts";
import { PATCH_PROBES } from "./pi-patch-probe.ts";

/** What a patched Pi answers to each line of the exchange. */
function patchedAnswer(line) {
  const probe = PATCH_PROBES.find((p) => p.frame(String(line.commandId ?? line.id)).type === line.type);
  if (line.type === "get_state")
    return { type: "response", id: line.id, command: "get_state", success: true };
  const id = line.type === "extension_ui_response" ? line.commandId : line.id;
  return { type: "response", id, command: line.type, success: false, code: probe?.expectedCode };
}

test("the exchange: probes first, a sentinel last; complete only once the sentinel is answered", () => {
  const exchange = createProbeExchange();
  assert.equal(exchange.lines.length, PATCH_PROBES.length + 1);
  assert.equal(exchange.lines.at(-1)?.type, "get_state");
  assert.equal(exchange.complete, false);
  assert.equal(exchange.verdict().ok, false, "nothing answered yet: silent, so failed");
  for (const line of exchange.lines.slice(0, -1)) assert.equal(exchange.accept(patchedAnswer(line)), false);
  // Events, strangers' responses and garbage change nothing.
  for (const noise of [null, "x", 42, { type: "queue_update" }, { type: "response", id: "someone-else" }]) {
    assert.equal(exchange.accept(noise), false);
  }
  assert.equal(exchange.accept(patchedAnswer(exchange.lines.at(-1))), true);
  assert.deepEqual(exchange.verdict(), { ok: true });
});

test("the exchange: a probe unanswered when the sentinel comes back is silence, and a late answer is ignored", () => {
  const exchange = createProbeExchange();
  const [first, second, sentinel] = exchange.lines;
  exchange.accept({
    type: "response",
    id: first.id,
    command: "replace_queue",
    success: false,
    error: "Unknown command: replace_queue",
  });
  assert.equal(exchange.accept(patchedAnswer(sentinel)), true);
  exchange.accept(patchedAnswer(second)); // too late: it must not turn the verdict into a pass
  const verdict = exchange.verdict();
  assert.equal(verdict.ok, false);
  assert.match(
    verdict.reason,
    /replace_queue: expected code invalid_request, got none \(Unknown command: replace_queue\)/,
  );
  assert.match(verdict.reason, /correlated_ui_response: Pi did not answer/);
});

test("the exchange with the caller's ids (the bridge's): answers are matched by them, and the state is kept", () => {
  let next = 0;
  const exchange = createProbeExchange(() => `b${next++}`);
  assert.deepEqual(exchange.answerIds, ["b0", "b1", "b2"]);
  assert.deepEqual(
    exchange.lines.map((line) => line.commandId ?? line.id),
    exchange.answerIds,
    "each line is answered under its own id, the sentinel's last",
  );
  for (const line of exchange.lines.slice(0, -1)) exchange.accept(patchedAnswer(line));
  assert.equal(exchange.sentinelAnswer, undefined);
  const state = { ...patchedAnswer(exchange.lines.at(-1)), data: { sessionId: "s-1" } };
  assert.equal(exchange.accept(state), true);
  assert.deepEqual(exchange.sentinelAnswer, state);
  assert.deepEqual(exchange.verdict(), { ok: true });
  // A second answer under the sentinel's id changes nothing.
  exchange.accept({ ...state, data: { sessionId: "s-2" } });
  assert.deepEqual(exchange.sentinelAnswer, state);

  // The default ids are not this exchange's: a patched answer under one is a stranger's, so the probe was silent.
  const other = createProbeExchange(() => `c${next++}`);
  const [first, second, sentinel] = other.lines;
  other.accept({ ...patchedAnswer(first), id: "patch-probe-0" });
  other.accept(patchedAnswer(second));
  assert.equal(other.accept(patchedAnswer(sentinel)), true);
  assert.match(other.verdict().reason ?? "", /^replace_queue: Pi did not answer/);
});

/** A stand-in install whose `bin.pi` is `script` (run with this Node). */
async function fakePi(t, script) {
  const dir = await tempDir(t, "fake-pi-");
  const cliPath = path.join(dir, "cli.mjs");
  await writeFile(cliPath, script);
  return { packageDir: dir, cliPath, version: "0.84.2" };
}

test("a Pi that exits, never answers or writes garbage fails the probe with a reason; it never passes", async (t) => {
  const exits = await probeInstalledPi(
    await fakePi(t, "process.stderr.write('boom: no model\\n'); process.exit(3);"),
  );
  assert.equal(exits.ok, false);
  assert.match(
    exits.reason,
    /Pi exited \(code 3, signal null\) before answering the patch probes: boom: no model/,
  );

  const silent = await probeInstalledPi(await fakePi(t, "process.stdin.resume();"), { timeoutMs: 1_000 });
  assert.equal(silent.ok, false);
  assert.match(silent.reason, /did not answer the patch probes within 1000 ms/);

  // Answers every line with success and no code, then the sentinel: the probes fail on their codes.
  const agreeable = await probeInstalledPi(
    await fakePi(
      t,
      "let b='';process.stdin.on('data',(c)=>{b+=c;let i;while((i=b.indexOf('\\n'))>=0){const l=JSON.parse(b.slice(0,i));b=b.slice(i+1);" +
        "console.log('not json');console.log(JSON.stringify({type:'response',id:l.commandId??l.id,command:l.type,success:true}));}});",
    ),
  );
  assert.equal(agreeable.ok, false);
  assert.match(agreeable.reason, /replace_queue: expected code invalid_request, got none/);

  const missing = await probeInstalledPi({
    packageDir: "/nonexistent",
    cliPath: "/nonexistent/cli.js",
    version: "0",
  });
  assert.equal(missing.ok, false, "a missing entry point is a failure, not a pass");
});
