// Gate log lines are scrubbed of secret-looking values. (The extension's contract, through approvalGate(pi),
// is in agent-runtime/approval-gate.test.mjs; behaviour inside real Pi in tests/integration/approval-gate.test.ts.)
import assert from "node:assert/strict";
import { test } from "node:test";
import { redactForLog } from "../../agent-runtime/gate/log-redact.ts";

test("log reasons are scrubbed of secret-looking values", () => {
  // Token-shaped values are assembled at run time so no credential-looking literal is ever committed.
  const fakeToken = (seed: string) => `ghp_${seed.repeat(30).slice(0, 36)}`;
  const scrubbed = redactForLog(
    `\`git -c http.extraheader=Authorization: Bearer ${fakeToken("abc")}\` ... GITHUB_TOKEN=${fakeToken("123")} https://user:hunter2@example.com/x`,
  );
  assert.equal(scrubbed.includes("ghp_"), false, scrubbed);
  assert.equal(scrubbed.includes("hunter2"), false, scrubbed);
  assert.match(scrubbed, /git -c http\.extraheader/);
});
