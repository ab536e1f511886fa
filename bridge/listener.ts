// The bridge's address, bound by prestart before Pi starts: an address in use stops the start with a clear
// sentence instead of after Pi booted. Until the network side takes the server over, it answers as a bridge
// that is starting: health 503, and 503 to an upgrade (a client retries).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";

export class ListenError extends Error {}

export interface BoundListener {
  server: Server;
  address: AddressInfo;
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

const LISTEN_PROBLEMS: Record<string, (where: string) => string> = {
  EADDRINUSE: (where) =>
    `the address ${where} is already in use (another bridge, or any other process, holds it); choose another --listen port or stop what holds it`,
  EACCES: (where) => `the bridge may not listen on ${where} (permission denied)`,
  EADDRNOTAVAIL: (where) => `the address ${where} does not exist on this machine`,
};

export async function bindListener(host: string, port: number): Promise<BoundListener> {
  const server = createServer();
  server.on("request", starting);
  server.on("upgrade", startingUpgrade);
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
      const explain = LISTEN_PROBLEMS[err.code ?? ""];
      reject(new ListenError(explain ? explain(where) : `cannot listen on ${where}: ${err.message}`));
    });
    server.listen(port, host, () => resolve());
  });
  return {
    server,
    address: server.address() as AddressInfo,
    handOver() {
      server.off("request", starting);
      server.off("upgrade", startingUpgrade);
      return server;
    },
  };
}
