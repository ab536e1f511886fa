// The egress proxy as the bridge runs it: on the loopback listener prestart bound before Pi, deciding with the
// rules, the registries, the one grant store and the person's dialogs, attributing connections to tool calls from
// the supervisor's reports, logging every decision (the proxy's audit line names the rule or grant).
import type { Logger } from "../../agent-runtime/log.ts";
import type { PolicyMode } from "../../agent-runtime/policy/policy-modes.ts";
import type { EgressEvent } from "../../agent-runtime/sandbox/supervisor.ts";
import type { BridgeAnswer, BridgeQuestion } from "../core/dialog-relay.ts";
import type { GrantStore } from "../grants/grant-store.ts";
import { ConnectAttribution } from "./attribution.ts";
import { EgressDecider } from "./decider.ts";
import type { EgressListener } from "./egress-listener.ts";
import { EgressProxy, type EgressProxyOptions } from "./proxy.ts";
import type { Registry } from "./registries.ts";
import type { NetworkMode } from "./rules.ts";

/** How long a dialog waits for the supervisor's report of who connected (a name for the person). */
const ATTRIBUTION_WAIT_MS = 250;

export interface EgressServiceOptions {
  listener: EgressListener;
  networkMode: () => NetworkMode;
  policy: () => PolicyMode;
  registries: readonly Registry[];
  grants: GrantStore;
  ask: (question: BridgeQuestion, signal?: AbortSignal) => Promise<BridgeAnswer>;
  log: Logger;
  /** Test hooks of the proxy (name resolution, internal addresses, each decision). */
  proxy?: Pick<EgressProxyOptions, "resolve" | "allowInternal" | "onDecision">;
}

export class EgressService {
  readonly proxy: EgressProxy;
  readonly attribution: ConnectAttribution;
  readonly port: number;

  constructor(options: EgressServiceOptions) {
    const port = options.listener.address.port;
    this.port = port;
    this.attribution = new ConnectAttribution({ proxyPort: () => port });
    const attribute = (clientPort: number) => this.attribution.of(clientPort, ATTRIBUTION_WAIT_MS);
    const decider = new EgressDecider({
      networkMode: options.networkMode,
      policy: options.policy,
      registries: options.registries,
      grants: options.grants,
      ask: options.ask,
      attribute,
      log: options.log,
    });
    this.proxy = new EgressProxy({
      decide: decider.decide,
      attribute,
      log: options.log,
      onConnectionClosed: (clientPort) => this.attribution.closed(clientPort),
      ...options.proxy,
    });
    this.proxy.adopt(options.listener);
  }

  /** Follows a pair's supervisor reports (each pair the bridge starts). */
  watch(pair: { onEgress(listener: (event: EgressEvent) => void): () => void }): () => void {
    return pair.onEgress((event) => this.attribution.note(event));
  }

  close(): Promise<void> {
    return this.proxy.close();
  }
}
