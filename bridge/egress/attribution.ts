// Which tool call opened a connection to the egress proxy, best effort. The tools' supervisor performs every
// connect a tool makes and reports it (pid, call label, destination) on its control channel; it does not report
// the local port, so the proxy cannot match its accepted socket to a report exactly. What holds: connections the
// proxy accepted and the supervisor's reports of connects to the proxy's own port are paired in the order each
// arrives (both follow the order of the connects), within a short window. Connects made at the same moment by
// two calls can swap their names. The name is shown to the person and logged; no decision depends on it (the
// destination decides).
import { constants } from "node:os";
import type { EgressEvent } from "../../agent-runtime/sandbox/supervisor.ts";

export interface Attribution {
  pid: number;
  /** The call label the executor gave the tool's processes (null: a process outside any call). */
  call: string | null;
}

/** A report or a connection unpaired for this long is not paired any more. */
const WINDOW_MS = 5_000;
const MAX_PENDING = 256;
const MAX_CONNECTIONS = 1024;

export class ConnectAttribution {
  private readonly proxyPort: () => number | undefined;
  private readonly now: () => number;
  /** Reports no accepted connection took yet, and accepted connections no report named yet; oldest first. */
  private readonly reports: { at: number; who: Attribution }[] = [];
  private readonly unnamed: { at: number; clientPort: number }[] = [];
  /** Accepted connection (the tool's port) → who made it (null: no report came). */
  private readonly named = new Map<number, Attribution | null>();
  private readonly waiting = new Set<() => void>();

  constructor(options: { proxyPort: () => number | undefined; now?: () => number }) {
    this.proxyPort = options.proxyPort;
    this.now = options.now ?? (() => performance.now());
  }

  /** A supervisor report (AgentPair.onEgress). */
  note(event: EgressEvent): void {
    if (event.type !== "connect" || event.verdict !== "performed") return;
    // A non-blocking tool's connect is reported under way (EINPROGRESS); it reaches the proxy all the same.
    if (event.errno !== 0 && event.errno !== constants.errno.EINPROGRESS) return;
    if (event.port !== this.proxyPort() || !isLoopback(event.address)) return;
    this.reports.push({ at: this.now(), who: { pid: event.pid, call: event.call } });
    if (this.reports.length > MAX_PENDING) this.reports.shift();
    this.pair();
  }

  /** The proxy accepted a connection from `clientPort`. */
  accepted(clientPort: number): void {
    this.unnamed.push({ at: this.now(), clientPort });
    if (this.unnamed.length > MAX_PENDING) this.unnamed.shift();
    this.pair();
  }

  /** The connection from `clientPort` closed: its port may be used again. */
  closed(clientPort: number): void {
    this.named.delete(clientPort);
    const at = this.unnamed.findIndex((entry) => entry.clientPort === clientPort);
    if (at >= 0) this.unnamed.splice(at, 1);
  }

  /** Who made the connection from `clientPort`, waiting up to `waitMs` for the supervisor's report. */
  async of(clientPort: number, waitMs = 0): Promise<Attribution | undefined> {
    if (!this.named.has(clientPort) && waitMs > 0 && this.unnamed.some((e) => e.clientPort === clientPort)) {
      await new Promise<void>((resolve) => {
        const finish = () => {
          clearTimeout(timer);
          this.waiting.delete(check);
          resolve();
        };
        const check = () => {
          if (this.named.has(clientPort)) finish();
        };
        const timer = setTimeout(finish, waitMs);
        this.waiting.add(check);
      });
    }
    return this.named.get(clientPort) ?? undefined;
  }

  private pair(): void {
    const since = this.now() - WINDOW_MS;
    const stale = (entry: { at: number }) => entry.at < since;
    while (this.reports[0] && stale(this.reports[0])) this.reports.shift();
    while (this.unnamed[0] && stale(this.unnamed[0])) {
      const gone = this.unnamed.shift();
      if (gone) this.remember(gone.clientPort, null);
    }
    while (this.reports.length > 0 && this.unnamed.length > 0) {
      const report = this.reports.shift();
      const connection = this.unnamed.shift();
      if (report && connection) this.remember(connection.clientPort, report.who);
    }
    for (const wake of [...this.waiting]) wake();
  }

  private remember(clientPort: number, who: Attribution | null): void {
    this.named.set(clientPort, who);
    if (this.named.size > MAX_CONNECTIONS) {
      const oldest = this.named.keys().next().value;
      if (oldest !== undefined) this.named.delete(oldest);
    }
  }
}

function isLoopback(address: string): boolean {
  return address.startsWith("127.") || address === "::1" || address === "::ffff:127.0.0.1";
}
