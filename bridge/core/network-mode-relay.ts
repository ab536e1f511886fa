// The tools' network mode as the core relays it: `get_network_mode`, `set_network_mode`, and
// `network_mode_changed` to clients whenever the mode changes (by a client, or in the file under the bridge).
// Applying the mode (the tools' supervisor, the isolation report) is the composition's job (bridge/run.ts).
import type { Logger } from "../../agent-runtime/log.ts";
import type { NetworkModeChange, SetNetworkModeResult } from "../network-mode.ts";
import type { NetworkModeName, NetworkModeReport } from "../protocol.ts";
import { type Frame, type FrameSink, failure } from "./frames.ts";

export interface NetworkModeAccess {
  report(): NetworkModeReport;
  set(mode: NetworkModeName): Promise<SetNetworkModeResult>;
  onChange(listener: (change: NetworkModeChange) => void): () => void;
}

export class NetworkModeRelay {
  private readonly access: NetworkModeAccess | undefined;
  private readonly log: Logger;

  constructor(options: { access: NetworkModeAccess | undefined; sink: FrameSink; log: Logger }) {
    this.access = options.access;
    this.log = options.log;
    options.access?.onChange((change) => options.sink.publish({ type: "network_mode_changed", ...change }));
  }

  get(id: string | undefined): Frame {
    if (!this.access) return unavailable(id, "get_network_mode");
    return { type: "response", id, command: "get_network_mode", success: true, data: this.access.report() };
  }

  async set(id: string | undefined, mode: NetworkModeName): Promise<Frame> {
    if (!this.access) return unavailable(id, "set_network_mode");
    let result: SetNetworkModeResult;
    try {
      result = await this.access.set(mode);
    } catch (err) {
      result = { ok: false, error: "io_error", message: (err as Error).message };
    }
    if (!result.ok) return failure(id, "set_network_mode", result.error, result.message);
    this.log.info({ mode, previous: result.previous.mode }, "network mode set by the client");
    return {
      type: "response",
      id,
      command: "set_network_mode",
      success: true,
      data: { previous: result.previous, current: result.current },
    };
  }
}

function unavailable(id: string | undefined, command: string): Frame {
  return failure(id, command, "network_mode_unavailable", "this bridge keeps no network mode");
}
