// The network side of the bridge over a stand-in core, in memory: the real NetworkServer (handshake, pre-auth
// limits, health) without Pi. The core's answers are fixed and valid (the typed client parses the welcome).
import type { AddressInfo } from "node:net";
import type { TestContext } from "node:test";
import pino from "pino";
import { decidePrincipals, isolationReport } from "../../bridge/isolation.ts";
import { type NetworkCore, type NetworkOptions, NetworkServer } from "../../bridge/network.ts";
import type { Snapshot } from "../../bridge/protocol.ts";
import { ReplayRing } from "../../bridge/replay-ring.ts";
import { RingSink } from "../../bridge/ring-sink.ts";
import { TEST_TOKEN } from "./bridge.ts";

export const FAKE_EPOCH = "e".repeat(32);

export function validSnapshot(): Snapshot {
  const passwd =
    "root:x:0:0::/root:/bin/sh\nagent:x:1000:1000::/home/agent:/bin/sh\npi:x:999:999::/x:/bin/false\n";
  const isolation = isolationReport({
    principals: decidePrincipals({
      euid: 0,
      egid: 0,
      agentUser: "agent",
      piUser: undefined,
      passwd: () => passwd,
      env: {},
    }),
    landlock: {
      requested: true,
      probe: {
        abi: 7,
        helper: "/x",
        features: {
          landlockAbi: 7,
          landlockNet: true,
          seccompFilter: true,
          seccompNotify: true,
          notifyAddfd: true,
          waitKillable: true,
        },
        budget: { containerMax: 512, source: "/sys/fs/cgroup/pids.max", toolsNproc: 384, reserve: 128 },
      },
      failure: undefined,
    },
    toolEnv: { passThrough: [] },
    token: { scrubbed: true, detail: "test" },
    executor: { running: true, detail: "test" },
    placement: [],
    notes: [],
  });
  return {
    state: null,
    queue: { steering: [], followUp: [] },
    pendingDialogs: [],
    policy: null,
    pi: { pid: null, state: "running", exit: null, patched: true, problem: null, restarts: 0 },
    agentBusy: false,
    isolation,
    grants: [],
  };
}

export interface FakeCore {
  /** Texts the core received from the attached client. */
  received: string[];
  attached: string[];
  health: { ok: boolean };
}

export interface FakeBridge {
  url: string;
  port: number;
  server: NetworkServer;
  core: FakeCore;
  logs: Record<string, unknown>[];
}

/** A NetworkServer on 127.0.0.1:0 over a stand-in core; closed at test end. */
export async function startFakeBridge(
  t: TestContext,
  options: Partial<NetworkOptions> = {},
): Promise<FakeBridge> {
  const core: FakeCore = { received: [], attached: [], health: { ok: true } };
  const stand: NetworkCore = {
    epoch: FAKE_EPOCH,
    health: () =>
      core.health.ok
        ? { ok: true, reason: null, detail: null }
        : { ok: false, reason: "shutting_down", detail: null },
    attach: (clientId: string) => {
      core.attached.push(clientId);
    },
    detach: () => {},
    agentSettled: async () => {},
    refreshState: async () => {},
    snapshot: () => validSnapshot(),
    handleClientText: (text: string) => {
      core.received.push(text);
    },
    rejectOversized: () => {},
    publishError: () => {},
  } as unknown as NetworkCore;
  const logs: Record<string, unknown>[] = [];
  const log = pino(
    { level: "debug" },
    { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const server = new NetworkServer(
    stand,
    new RingSink(new ReplayRing(100, 1024 * 1024)),
    {
      host: "127.0.0.1",
      port: 0,
      token: TEST_TOKEN,
      helloTimeoutMs: 2_000,
      authFailureDelayMs: 20,
      maxFrameBytes: 1024 * 1024,
      maxSendQueueBytes: 8 * 1024 * 1024,
      ...options,
    },
    log,
  );
  const address: AddressInfo = await server.listen();
  t.after(() => server.close());
  return { url: `ws://127.0.0.1:${address.port}/v1/rpc`, port: address.port, server, core, logs };
}
