// Issue 22: "a command retried across a reconnect takes effect once" once saw a conflicting payload answered
// with success. The cause: the client resends a command after a resume before it reads the replay, the bridge
// answers that resend with the recorded response again (an echo), and the echo, still in flight, was taken as
// the answer to the next command the caller sent with the same id. A relay forces that interleaving every
// time, with the real bridge and real Pi: the first send reaches the bridge and the client is cut off; the
// resend goes on once the first answer reached the client (so the bridge answers it from its record); the echo
// is held until the client sends its next frame, and then arrives before that frame's answer.
import assert from "node:assert/strict";
import path from "node:path";
import { type TestContext, test } from "node:test";
import { say } from "../../agent-runtime/dev/scripted-model.ts";
import { BridgeClient, type BridgeFrame, type BridgeResponse } from "../../bridge/client.ts";
import { type NetworkBridge, startNetworkBridge, TEST_TOKEN } from "../support/bridge.ts";
import { startFrameRelay } from "../support/frame-relay.ts";

const gate = path.join(import.meta.dirname, "..", "..", "build", "opt", "chat-ui-agent", "approval-gate.mjs");
const ID = "prompt-once";

interface EchoInFlight {
  bridge: NetworkBridge;
  client: BridgeClient;
  /** The echo's seq (it reaches the client just before its next frame goes to the bridge). */
  echoSeq: number;
  /** Seqs of the responses to `ID` the bridge sent after the client's next use of `ID` went on. */
  answersToReuse: number[];
  idle: Promise<void>;
}

/** Runs `ID` through a drop and a resend, and returns once the resend's echo is held in the relay. */
async function retriedWithEchoInFlight(t: TestContext): Promise<EchoInFlight> {
  const bridge = await startNetworkBridge(t, { model: { script: [say("only once")] }, gate });
  let sends = 0;
  let answered = false;
  let forwardResend: (() => void) | undefined;
  let echo: { text: string; deliver: () => void } | undefined;
  let echoState: "expected" | "held" | "released" | "none" = "none";
  let reused = false;
  const answersToReuse: number[] = [];
  let onEchoHeld: (seq: number) => void = () => {};
  const echoHeld = new Promise<number>((resolve) => {
    onEchoHeld = resolve;
  });
  const url = await startFrameRelay(t, bridge.url, {
    fromClient: (frame, text, leg) => {
      if (frame?.id === ID) sends++;
      if (frame?.id === ID && sends === 1) {
        // The client is cut off before any answer, and its first send reaches the bridge.
        leg.drop();
        void leg.toBridge(text);
        return;
      }
      if (frame?.id === ID && sends === 2) {
        // The resend goes on once the first answer reached the client: the bridge answers it from its record.
        forwardResend = () => {
          echoState = "expected";
          void leg.toBridge(text);
        };
        if (answered) forwardResend();
        return;
      }
      // Any later frame: the echo still in flight reaches the client first, as it can on the network.
      if (echo) {
        echo.deliver();
        echo = undefined;
        echoState = "released";
      }
      if (frame?.id === ID) reused = true;
      void leg.toBridge(text);
    },
    fromBridge: (frame, text, leg) => {
      if (frame?.type === "response" && frame.id === ID) {
        if (!answered) {
          answered = leg.toClient(text);
          if (answered) forwardResend?.();
          return;
        }
        if (echoState === "expected") {
          echoState = "held";
          echo = { text, deliver: () => leg.toClient(text) };
          onEchoHeld(Number(frame.seq));
          return;
        }
        if (reused) answersToReuse.push(Number(frame.seq));
      }
      leg.toClient(text);
    },
  });

  const client = new BridgeClient({ url, token: TEST_TOKEN, backoff: { initialMs: 20, maxMs: 200 } });
  await client.connect();
  t.after(() => client.close());
  const idle = new Promise<void>((resolve) => {
    const onFrame = (frame: BridgeFrame) => {
      if (frame.type !== "agent_settled") return;
      client.off("frame", onFrame);
      resolve();
    };
    client.on("frame", onFrame);
  });
  const first = await client.command({ type: "prompt", id: ID, message: "hello" });
  assert.equal(first.success, true);
  const echoSeq = await echoHeld;
  assert.equal(sends, 2, "sent once before the drop, resent once after it");
  assert.ok(echoSeq > first.seq, "the bridge answered the resend with its recorded response again");
  return { bridge, client, echoSeq, answersToReuse, idle };
}

function assertConflict(response: BridgeResponse): void {
  assert.equal(response.success, false, `answered with ${JSON.stringify(response)}`);
  assert.equal(response.code, "idempotency_conflict");
  assert.match(String(response.error), /^idempotency_conflict: /);
}

test("an echo in flight is not taken as the answer to a conflicting command with the same id", async (t) => {
  const { bridge, client, idle } = await retriedWithEchoInFlight(t);
  assertConflict(await client.command({ type: "prompt", id: ID, message: "different" }));
  await idle;
  assert.equal(bridge.model?.requests.length, 1, "the model was asked once");
});

test("a reused id is answered by the response to its own send, not by an echo of an earlier one", async (t) => {
  const { client, echoSeq, answersToReuse, idle } = await retriedWithEchoInFlight(t);
  const again = await client.command({ type: "prompt", id: ID, message: "hello" });
  assert.equal(again.success, true);
  assert.notEqual(again.seq, echoSeq, "answered by the echo of the resend");
  assert.deepEqual(answersToReuse, [again.seq]);
  assertConflict(await client.command({ type: "prompt", id: ID, message: "different" }));
  await idle;
});
