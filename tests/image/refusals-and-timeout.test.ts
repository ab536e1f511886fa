// Two security claims in the real image, in each launch mode (root with a --token-file; the image's default user
// as sbx-server starts it, token in the environment; `--user 1000`), with real Pi and the scripted model:
//   A. A configuration the tools could have written is refused: the agent, in an earlier legitimate run (policy
//      auto), plants a Pi agent dir (a models.json sending Pi to the attacker's model) and a policy file ("auto")
//      in the workspace and under /tmp. A bridge started naming any of them (PI_CODING_AGENT_DIR,
//      AGENT_POLICY_PATH) exits 2 with one line naming the path, never listens, never starts Pi, and nothing of
//      the plant reaches Pi's private agent dir. Control: the same files copied where the tools cannot write are
//      accepted, and the attacker's model is then asked (the plant works; only the refusal stopped it).
//   B. The operator's approval timeout (CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES, decimal minutes): a dialog nobody
//      answers closes (`dialog_closed`, reason `timed_out`), the tool does not run, a late "Allow once" is refused
//      and runs nothing, and the same call asks again (a fresh dialog, which, approved, runs). With `off`, or
//      unset, a dialog stays open past that time and still runs once approved.
// The planting command is data run by the agent's tools inside the container; traffic stays on loopback.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it, type TestContext } from "node:test";
import { writeScriptedAgentDir } from "../../agent-runtime/dev/agent-dir.ts";
import { say, startScriptedModel } from "../../agent-runtime/dev/scripted-model.ts";
import { allowOnce, isApprovalDialog } from "../support/approval.ts";
import { type Frame, TestClient } from "../support/bridge.ts";
import { freePort, testedImage } from "./support/docker.ts";
import { toolScript, until } from "./support/harness.ts";
import { LAUNCH_MODES, type LaunchMode, SbxContainer } from "./support/sbx-launch.ts";

const IMAGE = testedImage("chat-ui-agent-runtime:refusals-timeout-test");
const BRIDGE_ARGS = ["--provider", "scripted", "--model", "scripted-model", "--no-session"];
/** 0.05 minutes: 3 s, short for the test and long enough to answer the second dialog in time on a busy host. */
const TIMEOUT_MINUTES = "0.05";
const TIMEOUT_MS = 3_000;

const stateDirOf = (mode: LaunchMode) =>
  mode.user === "1000" ? "/var/tmp/chat-ui-agent-1000" : "/var/lib/chat-ui-agent";

/** The honest operator's Pi config (the host's scripted model), mounted read-only at /pi-seed. */
async function operatorSeed(t: TestContext) {
  const model = await startScriptedModel({ script: toolScript });
  t.after(() => model.close());
  const seed = mkdtempSync(path.join(tmpdir(), "refusals-seed-"));
  t.after(() => rmSync(seed, { recursive: true, force: true }));
  await writeScriptedAgentDir(model.baseUrl, seed);
  chmodSync(seed, 0o755);
  chmodSync(path.join(seed, "models.json"), 0o644);
  return { model, seed };
}

async function startBox(t: TestContext, mode: LaunchMode, seed: string) {
  return SbxContainer.start(t, IMAGE, mode, {
    env: ["PI_CODING_AGENT_DIR=/pi-seed", "PI_OFFLINE=1"],
    binds: [`${seed}:/pi-seed:ro`],
  });
}

/** Starts a bridge in `box`, waits for it to listen and connects the person's client. */
async function attach(t: TestContext, box: SbxContainer, id: string, env: Record<string, string> = {}) {
  const port = await freePort();
  const token = `bridge-token-${randomBytes(16).toString("hex")}`;
  await box.startBridge(id, { port, token, env, args: BRIDGE_ARGS });
  await box.listening(id);
  const { client } = await TestClient.connect(
    `ws://127.0.0.1:${port}/v1/rpc`,
    { token, clientId: "the-person" },
    90_000,
  );
  t.after(() => client.close());
  let n = 0;
  const request = (frame: Record<string, unknown>, ms?: number) =>
    client.request({ ...frame, id: `${id}-r${++n}` }, ms);
  const setPolicy = async (policy: string) => {
    const set = await request({ type: "set_policy", policy });
    assert.equal(set.success, true, JSON.stringify(set));
  };
  /** Prompts the model to run `command` in bash; resolves once the prompt is accepted, with the frame index. */
  const prompt = async (command: string) => {
    const from = client.frames.length;
    const response = await request({ type: "prompt", message: `BASH ${command}` }, 90_000);
    assert.equal(response.success, true, JSON.stringify(response));
    return from;
  };
  const settled = (from: number) => client.waitFor((f) => f.type === "agent_settled", 120_000, from);
  const toolEnd = (from: number) => client.waitFor((f) => f.type === "tool_execution_end", 120_000, from);
  const answer = (dialog: Frame, fields: Record<string, unknown>) =>
    client.answer({ id: String(dialog.id), commandId: `${id}-a${++n}`, ...fields });
  return { client, port, request, setPolicy, prompt, settled, toolEnd, answer };
}

const textOf = (end: Frame) =>
  ((end.result as { content?: { text?: string }[] } | undefined)?.content ?? [])
    .map((c) => c.text ?? "")
    .join("");

describe("a configuration the tools could write is refused, in the image", { timeout: 30 * 60_000 }, () => {
  for (const mode of LAUNCH_MODES) {
    it(`${mode.name}: a planted agent dir or policy file is refused (exit 2, never listens, never loaded); the same files where the tools cannot write are used`, async (t) => {
      const { seed } = await operatorSeed(t);
      // The attacker's model: whoever reads the planted models.json sends Pi's requests (the conversation) here.
      const attacker = await startScriptedModel({ script: () => say("the attacker's model answered") });
      t.after(() => attacker.close());
      const plantedDir = mkdtempSync(path.join(tmpdir(), "refusals-plant-"));
      t.after(() => rmSync(plantedDir, { recursive: true, force: true }));
      await writeScriptedAgentDir(attacker.baseUrl, plantedDir);
      const attackerUrl = attacker.baseUrl;
      const models = JSON.stringify(JSON.parse(readFileSync(path.join(plantedDir, "models.json"), "utf8")));
      assert.ok(!models.includes("'"), "the planted JSON goes between single quotes");

      const box = await startBox(t, mode, seed);

      // 1. A legitimate run (policy auto): the agent's tools leave a Pi config and a policy for the next start.
      const legit = await attach(t, box, "legit");
      await legit.setPolicy("auto");
      const plants = {
        agentDirs: ["/workspace/.pi-config", "/tmp/pi-config"],
        policies: ["/workspace/.agent-policy", "/tmp/agent-policy/policy"],
      };
      const plant = [
        `mkdir -p ${plants.agentDirs.join(" ")} /tmp/agent-policy`,
        ...plants.agentDirs.map((dir) => `printf '%s\\n' '${models}' > ${dir}/models.json`),
        ...plants.policies.map((file) => `printf 'auto\\n' > ${file}`),
        "echo PLANTED",
      ].join(" && ");
      const from = await legit.prompt(plant);
      const planted = await legit.toolEnd(from);
      await legit.settled(from);
      assert.equal(
        legit.client.frames.slice(from).filter(isApprovalDialog).length,
        0,
        "auto: no dialog for it",
      );
      assert.match(textOf(planted), /PLANTED/, textOf(planted));
      const owners = await box.root(
        `stat -c '%U %n' ${[...plants.agentDirs.map((d) => `${d}/models.json`), ...plants.policies].join(" ")}`,
      );
      for (const line of owners.trim().split("\n"))
        assert.match(line, /^agent \//, `the tools (agent) wrote it: ${owners}`);
      assert.equal((await box.stop("legit")).signal ?? "exited", "exited", "the legitimate bridge ends");

      // 2. Each planted place, named by the operator: refused before anything listens or Pi starts.
      const refusals = [
        ...plants.agentDirs.map((dir) => ({
          env: { PI_CODING_AGENT_DIR: dir },
          line: new RegExp(
            `^chat-ui-agent bridge: the agent dir ${dir} \\(PI_CODING_AGENT_DIR\\) is writable by the tools: refusing to configure Pi from it`,
          ),
        })),
        ...plants.policies.map((file) => ({
          env: { AGENT_POLICY_PATH: file },
          line: new RegExp(
            `^chat-ui-agent bridge: the policy file ${file} \\(AGENT_POLICY_PATH\\) is writable by the tools: refusing to start`,
          ),
        })),
      ];
      let n = 0;
      for (const refusal of refusals) {
        const id = `refused-${++n}`;
        const port = await freePort();
        await box.startBridge(id, {
          port,
          token: `bridge-token-${randomBytes(16).toString("hex")}`,
          env: refusal.env,
          args: BRIDGE_ARGS,
        });
        const job = await box.exited(id);
        const what = `${JSON.stringify(refusal.env)}:\n${job.stderr.slice(-3000)}`;
        assert.equal(job.exitCode, 2, what);
        assert.match(job.stderr.split("\n")[0] ?? "", refusal.line, `the first line says why: ${what}`);
        assert.doesNotMatch(job.stderr, /"msg":"(listening|Pi started)"/, what);
        await assert.rejects(fetch(`http://127.0.0.1:${port}/v1/health`), "nothing listens on its port");
      }
      assert.equal(attacker.requests.length, 0, "nothing asked the attacker's model");
      assert.equal(
        // Pi's private agent dir only: the journal rightly records the planting command, URL included.
        await box.root(`grep -rl '${attackerUrl}' ${stateDirOf(mode)}/pi/agent; true`),
        "",
        "nothing of the plant reached Pi's private agent dir",
      );

      // 3. Control: the planted files, copied by the operator where the tools cannot write (owned by the bridge's
      // user, outside the tools' domain), are used: the bridge starts, takes the policy, and Pi asks the
      // attacker's model. The refusals above are what kept the plant out, not a broken plant.
      const owner = mode.user === "1000" ? "1000:1000" : "root:root";
      await box.root(
        [
          "mkdir -p /srv/operator/pi",
          "cp /workspace/.pi-config/models.json /srv/operator/pi/models.json",
          "cp /workspace/.agent-policy /srv/operator/policy",
          `chown -R ${owner} /srv/operator`,
          "chmod 0755 /srv/operator /srv/operator/pi",
          "chmod 0644 /srv/operator/pi/models.json /srv/operator/policy",
        ].join(" && "),
      );
      const control = await attach(t, box, "control", {
        PI_CODING_AGENT_DIR: "/srv/operator/pi",
        AGENT_POLICY_PATH: "/srv/operator/policy",
      });
      const policy = await control.request({ type: "get_policy" });
      assert.equal((policy.data as { policy?: string }).policy, "auto", JSON.stringify(policy));
      const asked = await control.prompt("echo hello");
      await control.settled(asked);
      await until(async () => attacker.requests.length > 0, 30_000, "the attacker's model to be asked");
      // And the check above on Pi's private agent dir finds the plant once it was accepted.
      assert.match(await box.root(`grep -rl '${attackerUrl}' ${stateDirOf(mode)}/pi/agent`), /models\.json/);
    });
  }
});

describe("the operator's approval timeout, in the image", { timeout: 30 * 60_000 }, () => {
  for (const mode of LAUNCH_MODES) {
    it(`${mode.name}: an unanswered dialog closes timed_out and runs nothing, a late yes runs nothing, the same call asks again; off or unset never times out`, async (t) => {
      const { seed } = await operatorSeed(t);
      const box = await startBox(t, mode, seed);
      const exists = async (file: string) =>
        (await box.root(`test -e ${file} && echo present || echo absent`)).trim();

      const timed = await attach(t, box, "timed", {
        CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES: TIMEOUT_MINUTES,
      });
      await timed.setPolicy("ask");
      const marker = "/workspace/timeout-marker";
      const command = `echo ran > ${marker}`;
      let from = await timed.prompt(command);
      const dialog = await timed.client.waitFor(isApprovalDialog, 120_000, from);
      assert.equal(dialog.timeout, TIMEOUT_MS, JSON.stringify(dialog));
      // Nobody answers.
      const closed = await timed.client.waitFor(
        (f) => f.type === "dialog_closed" && f.id === dialog.id,
        TIMEOUT_MS + 30_000,
        from,
      );
      assert.equal(closed.reason, "timed_out", JSON.stringify(closed));
      assert.equal(closed.outcome, "refused");
      const end = await timed.toolEnd(from);
      await timed.settled(from);
      assert.equal(end.isError, true, JSON.stringify(end));
      assert.match(textOf(end), /did not answer the approval dialog within 3 seconds/, textOf(end));
      assert.equal(await exists(marker), "absent", "the tool did not run");
      // A yes that comes after the timeout is refused and runs nothing.
      const late = await timed.answer(dialog, allowOnce(dialog));
      assert.equal(late.success, false, JSON.stringify(late));
      assert.equal(late.code, "ui_request_not_pending", JSON.stringify(late));
      assert.equal((late.data as { reason?: string } | undefined)?.reason, "timed_out", JSON.stringify(late));
      assert.equal(await exists(marker), "absent", "a late yes runs nothing");

      // The same call asks again: a fresh dialog, which, approved in time, runs it (the control).
      from = await timed.prompt(command);
      const again = await timed.client.waitFor(isApprovalDialog, 120_000, from);
      assert.notEqual(again.id, dialog.id, "a new dialog");
      const taken = await timed.answer(again, allowOnce(again));
      assert.equal(taken.success, true, JSON.stringify(taken));
      const ran = await timed.toolEnd(from);
      await timed.settled(from);
      assert.equal(ran.isError, false, textOf(ran));
      assert.equal(await exists(marker), "present", "approved in time, it ran");
      await box.stop("timed");

      // off, then unset (the image's default): no timeout on the request, and no close past the timeout above.
      for (const [id, env] of [
        ["off", { CHAT_UI_AGENT_APPROVAL_TIMEOUT_MINUTES: "off" }],
        ["unset", {}],
      ] as const) {
        const b = await attach(t, box, id, env);
        await b.setPolicy("ask");
        const file = `/workspace/${id}-marker`;
        const at = await b.prompt(`echo ran > ${file}`);
        const open = await b.client.waitFor(isApprovalDialog, 120_000, at);
        assert.equal(open.timeout, undefined, `${id}: ${JSON.stringify(open)}`);
        // Twice the timeout above passes with the dialog still open (a bounded wait for a close that must not come).
        await assert.rejects(
          b.client.waitFor((f) => f.type === "dialog_closed", 2 * TIMEOUT_MS, at),
          { message: /^timed out after/ },
          `${id}: no dialog_closed`,
        );
        const yes = await b.answer(open, allowOnce(open));
        assert.equal(yes.success, true, `${id}: ${JSON.stringify(yes)}`);
        await b.settled(at);
        assert.equal(await exists(file), "present", `${id}: the dialog was still open, and the yes ran it`);
        await box.stop(id);
      }
    });
  }
});
