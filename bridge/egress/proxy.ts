// The egress proxy: the one way from the tools to anything beyond loopback (the sandbox's supervisor refuses every
// other route). It speaks HTTP CONNECT (TLS and anything else, one tunnel per decision) and plain HTTP in
// absolute form (one decision per request, since a kept-alive proxy connection may name another host each
// time). It decides on the canonical destination (destination.ts), resolves names itself, never connects to an
// internal address (address-class.ts), and connects to exactly what was decided on. An internal IP literal is
// refused before any decision: no answer could let it through, so a dialog about it would only teach the person
// to click "allow". A name is resolved only once it is allowed (resolving first would send a query for any name a
// tool makes up, a way out by DNS), so a name that resolves only to internal addresses is refused after the
// decision. What to do with a destination is the caller's `decide` (rules, grants, the person's dialog): a
// verdict that never comes is a request that waits, never one that passes.
import { lookup } from "node:dns/promises";
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from "node:http";
import { type AddressInfo, connect, isIP, type Server as NetServer, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Logger } from "../../agent-runtime/log.ts";
import { http } from "../node-http.ts";
import { isInternalAddress } from "./address-class.ts";
import type { Attribution } from "./attribution.ts";
import {
  type Destination,
  type DestinationResult,
  formatDestination,
  parseAuthority,
  parseHttpUrl,
} from "./destination.ts";

export interface EgressRequest {
  destination: Destination;
  via: "connect" | "http";
  /** The tool's end of the connection to the proxy (the supervisor's reports attribute it to a call). */
  clientPort: number;
  /** Aborted when the tool's connection closes before the decision (a dialog about it is withdrawn). */
  signal?: AbortSignal;
}

export interface EgressVerdict {
  allow: boolean;
  /** The rule or grant that decided (audit log, the refusal's text). */
  rule: string;
  reason: string;
  /** The grant that allowed it, the dialog the person answered, the tool call that asked (audit log). */
  grant?: string;
  dialog?: string;
  call?: string | null;
  pid?: number;
}

export interface EgressRecord extends EgressVerdict {
  destination: string;
  via: EgressRequest["via"];
  clientPort: number;
  /** Set when the verdict allowed it but the proxy could not or would not connect. */
  failure?: string;
}

export interface EgressProxyOptions {
  decide: (request: EgressRequest) => Promise<EgressVerdict>;
  log: Logger;
  /** Every decision, allowed or not (the audit log). */
  onDecision?: (record: EgressRecord) => void;
  /** Name resolution (default: the system resolver, every address). */
  resolve?: (host: string) => Promise<string[]>;
  /** Whether an internal address may be connected to (tests with loopback origins); default never. */
  allowInternal?: (address: string) => boolean;
  /** Who made a connection (best effort), for the audit line of a refusal made before any decision. */
  attribute?: (clientPort: number) => Promise<Attribution | undefined>;
  /** Decisions waiting at once (each may be a dialog); more are refused with 503. */
  maxPendingDecisions?: number;
  /** Open connections to the proxy. */
  maxConnections?: number;
  connectTimeoutMs?: number;
  /** A tunnel or request with no traffic for this long is closed. */
  idleTimeoutMs?: number;
  /** A tool connected to the proxy, and that connection closed (by the tool's port: attribution). */
  onConnection?: (clientPort: number) => void;
  onConnectionClosed?: (clientPort: number) => void;
}

/** Headers that belong to one hop (RFC 9110 7.6.1), plus the proxy's own. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function endToEnd(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const listed = new Set(
    String(headers.connection ?? "")
      .split(",")
      .map((name) => name.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name)) continue;
    out[name] = value;
  }
  return out;
}

async function systemResolve(host: string): Promise<string[]> {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
}

export class EgressProxy {
  private readonly server: Server;
  private readonly options: EgressProxyOptions;
  private pending = 0;
  private readonly sockets = new Set<Socket | Duplex>();
  private adopted: NetServer | undefined;

  constructor(options: EgressProxyOptions) {
    this.options = options;
    this.server = http.createServer((req, res) => void this.onRequest(req, res));
    this.server.maxConnections = options.maxConnections ?? 512;
    this.server.on("connect", (req, socket, head) => void this.onConnect(req, socket, head));
    this.server.on("upgrade", (_req, socket) => {
      socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    });
    this.server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      const clientPort = socket.remotePort ?? 0;
      options.onConnection?.(clientPort);
      socket.once("close", () => {
        this.sockets.delete(socket);
        options.onConnectionClosed?.(clientPort);
      });
    });
  }

  /**
   * Serves the connections of a listener bound elsewhere (prestart binds it before Pi starts, so the tools'
   * environment can name its port); connections it queued before are served too.
   */
  adopt(listener: {
    server: NetServer;
    handOver(onConnection: (socket: Socket) => void): void;
  }): AddressInfo {
    this.adopted = listener.server;
    listener.server.maxConnections = this.server.maxConnections;
    listener.handOver((socket) => this.server.emit("connection", socket));
    return listener.server.address() as AddressInfo;
  }

  /** Listens on loopback (the tools reach the proxy through the supervisor's loopback rule). */
  async listen(port = 0, host = "127.0.0.1"): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve();
      });
    });
    return this.server.address() as AddressInfo;
  }

  get address(): AddressInfo | null {
    return (this.adopted ?? this.server).address() as AddressInfo | null;
  }

  async close(): Promise<void> {
    // Stop accepting first, then end every open connection: a server's close waits for its connections.
    const servers = [this.adopted, this.server.listening ? this.server : undefined].filter(
      (server): server is NetServer => server !== undefined,
    );
    const closed = servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(closed);
  }

  /** Asks the caller, bounded: too many decisions waiting at once is a refusal, never a pass. */
  private async decide(request: EgressRequest): Promise<EgressVerdict> {
    if (this.pending >= (this.options.maxPendingDecisions ?? 32)) {
      return { allow: false, rule: "busy", reason: "too many destinations are waiting for a decision" };
    }
    this.pending += 1;
    try {
      return await this.options.decide(request);
    } catch (error) {
      // A failing decision is a refusal.
      return { allow: false, rule: "error", reason: `the decision failed: ${(error as Error).message}` };
    } finally {
      this.pending -= 1;
    }
  }

  /** The refusal no decision could change (an internal IP literal), made before asking anyone. */
  private async refusedBeforeDecision(request: EgressRequest): Promise<EgressVerdict | undefined> {
    const { destination } = request;
    if (destination.kind === "name" || !this.isInternal(destination.host)) return undefined;
    const who = await this.options.attribute?.(request.clientPort);
    return {
      allow: false,
      rule: "internal-address",
      reason: `${destination.host} is an internal address, never reached through the proxy`,
      ...(who ? { call: who.call, pid: who.pid } : {}),
    };
  }

  private isInternal(address: string): boolean {
    return isInternalAddress(address) && !(this.options.allowInternal?.(address) ?? false);
  }

  /** The addresses the proxy may connect to for a destination it allowed, or why there are none. */
  private async addresses(destination: Destination): Promise<string[] | string> {
    let all: string[];
    if (destination.kind !== "name") all = [destination.host];
    else {
      try {
        all = await (this.options.resolve ?? systemResolve)(destination.host);
      } catch (error) {
        return `cannot resolve ${destination.host} (${(error as NodeJS.ErrnoException).code ?? "error"})`;
      }
    }
    const usable = all.filter((address) => isIP(address) !== 0 && !this.isInternal(address));
    return usable.length > 0 ? usable : `${destination.host} resolves only to internal addresses`;
  }

  private record(request: EgressRequest, verdict: EgressVerdict, failure?: string): void {
    const record: EgressRecord = {
      destination: formatDestination(request.destination),
      via: request.via,
      clientPort: request.clientPort,
      ...verdict,
      ...(failure ? { failure } : {}),
    };
    this.options.log.info(record, verdict.allow && !failure ? "egress allowed" : "egress refused");
    this.options.onDecision?.(record);
  }

  private async onConnect(req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    this.track(client);
    const parsed: DestinationResult = parseAuthority(req.url ?? "");
    if (!parsed.ok) {
      refuseTunnel(client, 400, parsed.problem);
      return;
    }
    const request: EgressRequest = {
      destination: parsed.destination,
      via: "connect",
      clientPort: (req.socket as Socket).remotePort ?? 0,
      signal: closedSignal(client),
    };
    const early = await this.refusedBeforeDecision(request);
    if (early) {
      this.record(request, early);
      if (!client.destroyed) refuseTunnel(client, 403, `${early.reason} (${early.rule})`);
      return;
    }
    const verdict = await this.decide(request);
    if (client.destroyed) return;
    if (!verdict.allow) {
      this.record(request, verdict);
      refuseTunnel(client, verdict.rule === "busy" ? 503 : 403, `${verdict.reason} (${verdict.rule})`);
      return;
    }
    const addresses = await this.addresses(parsed.destination);
    if (typeof addresses === "string") {
      this.record(request, verdict, addresses);
      refuseTunnel(client, 403, addresses);
      return;
    }
    const upstream = await this.open(addresses, parsed.destination.port);
    if (typeof upstream === "string") {
      this.record(request, verdict, upstream);
      refuseTunnel(client, 502, upstream);
      return;
    }
    this.record(request, verdict);
    this.track(upstream);
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
    const end = () => {
      upstream.destroy();
      client.destroy();
    };
    upstream.on("error", end);
    client.on("error", end);
    upstream.on("close", end);
    client.on("close", end);
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const parsed = parseHttpUrl(req.url ?? "");
    if (!parsed.ok || !parsed.url) {
      refuseRequest(res, 400, parsed.ok ? "not a proxy request" : parsed.problem);
      req.resume();
      return;
    }
    const url = parsed.url;
    const request: EgressRequest = {
      destination: parsed.destination,
      via: "http",
      clientPort: req.socket.remotePort ?? 0,
      signal: closedSignal(req.socket),
    };
    const early = await this.refusedBeforeDecision(request);
    if (early) {
      this.record(request, early);
      refuseRequest(res, 403, `${early.reason} (${early.rule})`);
      req.resume();
      return;
    }
    const verdict = await this.decide(request);
    if (!verdict.allow) {
      this.record(request, verdict);
      refuseRequest(res, verdict.rule === "busy" ? 503 : 403, `${verdict.reason} (${verdict.rule})`);
      req.resume();
      return;
    }
    const addresses = await this.addresses(parsed.destination);
    if (typeof addresses === "string") {
      this.record(request, verdict, addresses);
      refuseRequest(res, 403, addresses);
      req.resume();
      return;
    }
    this.record(request, verdict);
    const headers = endToEnd(req.headers);
    // The Host is the one decided on (canonical), whatever the client put there.
    const decided = parsed.destination;
    headers.host =
      decided.port === 80 ? formatDestination(decided).replace(/:80$/, "") : formatDestination(decided);
    const upstream = http.request(
      {
        host: addresses[0],
        port: parsed.destination.port,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers,
        setHost: false,
        timeout: this.options.connectTimeoutMs ?? 30_000,
      },
      (response) => {
        res.writeHead(response.statusCode ?? 502, endToEnd(response.headers));
        response.pipe(res);
      },
    );
    upstream.on("timeout", () => upstream.destroy(new Error("the origin did not answer in time")));
    upstream.on("error", (error) => {
      if (!res.headersSent) refuseRequest(res, 502, `the origin failed: ${error.message}`);
      else res.destroy();
    });
    req.pipe(upstream);
  }

  /** Connects to the first address that answers. */
  private async open(addresses: string[], port: number): Promise<Socket | string> {
    let problem = "no address";
    for (const address of addresses.slice(0, 8)) {
      const result = await new Promise<Socket | string>((resolve) => {
        const socket = connect({ host: address, port });
        const timer = setTimeout(() => {
          socket.destroy();
          resolve(`connecting to ${address} timed out`);
        }, this.options.connectTimeoutMs ?? 30_000);
        socket.once("connect", () => {
          clearTimeout(timer);
          socket.setTimeout(this.options.idleTimeoutMs ?? 10 * 60_000, () => socket.destroy());
          resolve(socket);
        });
        socket.once("error", (error: NodeJS.ErrnoException) => {
          clearTimeout(timer);
          resolve(`connecting to ${address} failed (${error.code ?? error.message})`);
        });
      });
      if (typeof result !== "string") return result;
      problem = result;
    }
    return problem;
  }

  /**
   * Every socket the proxy holds, from the moment it holds it: a tool's tunnel socket is handed over by the HTTP
   * server with no error listener, and a peer's reset (ECONNRESET) while a decision waits or after a refusal
   * would otherwise be an uncaught exception that ends the bridge. A socket error ends that connection only.
   */
  private track(socket: Socket | Duplex): void {
    this.sockets.add(socket);
    socket.on("error", () => socket.destroy());
    socket.once("close", () => this.sockets.delete(socket));
  }
}

/** A signal aborted when `socket` closes (the tool gave up waiting). */
function closedSignal(socket: Duplex): AbortSignal {
  const controller = new AbortController();
  if (socket.destroyed) controller.abort();
  else socket.once("close", () => controller.abort());
  return controller.signal;
}

function refuseTunnel(socket: Duplex, status: number, reason: string): void {
  const body = `${reason}\n`;
  const text = { 400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway", 503: "Service Unavailable" }[
    status
  ];
  socket.end(
    `HTTP/1.1 ${status} ${text ?? "Error"}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\nX-Chat-Ui-Agent-Egress: refused\r\n\r\n${body}`,
  );
}

function refuseRequest(res: ServerResponse, status: number, reason: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, {
    "content-type": "text/plain; charset=utf-8",
    connection: "close",
    "x-chat-ui-agent-egress": "refused",
  });
  res.end(`${reason}\n`);
}
