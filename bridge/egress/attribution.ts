// Which tool call opened a connection to the egress proxy. The tools' supervisor performs every connect a tool
// makes and reports it: pid, call label, destination, and the local port of the socket it handed the tool. The
// proxy sees that port as its accepted connection's remote port, so a report and a connection pair exactly.
// The name is shown to the person and logged; no decision depends on it (the destination decides).
import { constants } from "node:os";
import type { EgressEvent } from "../../agent-runtime/sandbox/supervisor.ts";

export interface Attribution {
  pid: number;
  /** The call label the executor gave the tool's processes (null: a process outside any call). */
  call: string | null;
}

/** Reports of connections the proxy has not closed yet, oldest dropped first beyond this. */
const MAX_REPORTS = 1024;

export class ConnectAttribution {
  private readonly proxyPort: () => number | undefined;
  /** The tool's local port → who connected from it. */
  private readonly reports = new Map<number, Attribution>();
  private readonly waiting = new Map<number, Set<() => void>>();

  constructor(options: { proxyPort: () => number | undefined }) {
    this.proxyPort = options.proxyPort;
  }

  /** A supervisor report (AgentPair.onEgress). */
  note(event: EgressEvent): void {
    if (event.type !== "connect" || event.verdict !== "performed" || event.localPort === 0) return;
    // A non-blocking tool's connect is reported under way (EINPROGRESS); it reaches the proxy all the same.
    if (event.errno !== 0 && event.errno !== constants.errno.EINPROGRESS) return;
    if (event.port !== this.proxyPort() || !isLoopback(event.address)) return;
    this.reports.delete(event.localPort); // a reused port: the newest report, at the end of the order
    this.reports.set(event.localPort, { pid: event.pid, call: event.call });
    if (this.reports.size > MAX_REPORTS) {
      const oldest = this.reports.keys().next().value;
      if (oldest !== undefined) this.reports.delete(oldest);
    }
    for (const wake of this.waiting.get(event.localPort) ?? []) wake();
  }

  /** The connection from `clientPort` closed: its port may be used again. */
  closed(clientPort: number): void {
    this.reports.delete(clientPort);
  }

  /** Who made the connection from `clientPort`, waiting up to `waitMs` for the supervisor's report. */
  async of(clientPort: number, waitMs = 0): Promise<Attribution | undefined> {
    if (!this.reports.has(clientPort) && waitMs > 0) {
      await new Promise<void>((resolve) => {
        const waiters = this.waiting.get(clientPort) ?? new Set<() => void>();
        this.waiting.set(clientPort, waiters);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(finish);
          if (waiters.size === 0) this.waiting.delete(clientPort);
          resolve();
        };
        const timer = setTimeout(finish, waitMs);
        waiters.add(finish);
      });
    }
    return this.reports.get(clientPort);
  }
}

function isLoopback(address: string): boolean {
  return address.startsWith("127.") || address === "::1" || address === "::ffff:127.0.0.1";
}
