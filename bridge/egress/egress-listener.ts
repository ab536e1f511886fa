// The egress proxy's address, bound by prestart before Pi starts: the tools' environment names its port, so it
// must exist before the plan is made. Loaded before the logger (node:net only). Connections that come before
// the proxy takes the listener over wait in a short queue (no tool runs before Pi answers, so it stays empty in
// practice); more than that are closed.
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";

export interface EgressListener {
  server: Server;
  address: AddressInfo;
  /** The proxy serves every queued and later connection from now on. */
  handOver(onConnection: (socket: Socket) => void): void;
}

const MAX_QUEUED = 64;

/** Binds 127.0.0.1 on a port the kernel picks; rejects with the bind's error. */
export async function bindEgressListener(host = "127.0.0.1"): Promise<EgressListener> {
  const queued: Socket[] = [];
  let serve: ((socket: Socket) => void) | undefined;
  const server = createServer({ pauseOnConnect: true }, (socket) => {
    if (serve) {
      serve(socket);
      return;
    }
    if (queued.length >= MAX_QUEUED) {
      socket.destroy();
      return;
    }
    queued.push(socket);
    socket.once("close", () => {
      const at = queued.indexOf(socket);
      if (at >= 0) queued.splice(at, 1);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    server,
    address: server.address() as AddressInfo,
    handOver(onConnection) {
      serve = (socket) => {
        onConnection(socket);
        socket.resume();
      };
      for (const socket of queued.splice(0)) serve(socket);
    },
  };
}
