// The bridge's address, bound by prestart before Pi starts: an address in use stops the start with a clear
// sentence instead of after Pi booted. Until the network side takes the server over, it answers as a bridge
// that is starting: health 503, and 503 to an upgrade (a client retries).
//
// The same port is held on the other loopback family too (::1 beside 127.0.0.1, and the reverse): "localhost"
// resolves to both, and a client may try ::1 first, so a process holding [::1]:PORT while the bridge holds
// 127.0.0.1:PORT would receive that client's connections (and could relay them to the bridge). If the twin is
// already held, the bridge refuses to start; without IPv6 (or IPv4) loopback there is nothing to hold.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import {
  type AddressInfo,
  createServer as createNetServer,
  isIPv6,
  type Server as NetServer,
} from "node:net";
import type { Duplex } from "node:stream";
import { http } from "./node-http.ts";

export class ListenError extends Error {}

export interface BoundListener {
  server: Server;
  address: AddressInfo;
  /** The other loopback family's address on the same port, when it exists here. */
  twin: AddressInfo | undefined;
  /** Ends the placeholder answers; the caller attaches its own `request` and `upgrade` handlers. */
  handOver(): Server;
}

const UNAVAILABLE = '{"status":"unavailable"}';

function starting(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(503, { "content-type": "application/json", "cache-control": "no-store" });
  res.end(UNAVAILABLE);
}

function startingUpgrade(_req: IncomingMessage, socket: Duplex): void {
  socket.end("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
}

const where = (host: string, port: number) => `${host.includes(":") ? `[${host}]` : host}:${port}`;

const LISTEN_PROBLEMS: Record<string, (at: string) => string> = {
  EADDRINUSE: (at) =>
    `the address ${at} is already in use (another bridge, or any other process, holds it); choose another --listen port or stop what holds it`,
  EACCES: (at) => `the bridge may not listen on ${at} (permission denied)`,
  EADDRNOTAVAIL: (at) => `the address ${at} does not exist on this machine`,
};

/** Codes that mean this machine has no such loopback family: nothing there to hold. */
const NO_FAMILY = new Set(["EADDRNOTAVAIL", "EAFNOSUPPORT", "EPROTONOSUPPORT"]);

function listen(
  server: Server | NetServer,
  port: number,
  host: string,
): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const onError = (err: NodeJS.ErrnoException) => resolve(err);
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve(undefined);
    });
  });
}

function close(server: Server | NetServer): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

export async function bindListener(host: string, port: number): Promise<BoundListener> {
  // Port 0 asks for any free port: one whose twin is taken is given back and another one tried.
  for (let attempt = 0; ; attempt++) {
    const server = http.createServer();
    server.on("request", starting);
    server.on("upgrade", startingUpgrade);
    const failed = await listen(server, port, host);
    if (failed) {
      const explain = LISTEN_PROBLEMS[failed.code ?? ""];
      const at = where(host, port);
      throw new ListenError(explain ? explain(at) : `cannot listen on ${at}: ${failed.message}`);
    }
    const address = server.address() as AddressInfo;
    const twinHost = isIPv6(address.address) ? "127.0.0.1" : "::1";
    const twin = createNetServer((socket) => server.emit("connection", socket));
    const twinFailed = await listen(twin, address.port, twinHost);
    if (twinFailed && !NO_FAMILY.has(twinFailed.code ?? "")) {
      await close(server);
      if (port === 0 && attempt < 8) continue;
      throw new ListenError(
        `${where(twinHost, address.port)} is held by another process: a client connecting to localhost:${address.port} could reach it instead of the bridge (${twinFailed.code})`,
      );
    }
    if (!twinFailed) server.once("close", () => twin.close());
    return {
      server,
      address,
      twin: twinFailed ? undefined : (twin.address() as AddressInfo),
      handOver() {
        server.off("request", starting);
        server.off("upgrade", startingUpgrade);
        return server;
      },
    };
  }
}
