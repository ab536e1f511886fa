// A TCP listener on 127.0.0.1 that records every connection and every byte: the place an attack would send
// stolen data to. A test proves "nothing left" by showing it saw no connection at all.
import { createServer, type Server } from "node:net";
import type { TestContext } from "node:test";

export interface LeakListener {
  port: number;
  url: string;
  connections: number;
  received: () => string;
}

export async function startLeakListener(t: TestContext): Promise<LeakListener> {
  const chunks: Buffer[] = [];
  const state = { connections: 0 };
  const server: Server = createServer((socket) => {
    state.connections++;
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => {});
    // Answer like a web server so a client does not hang, then close.
    socket.end("HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("listener has no port");
  return {
    port: address.port,
    url: `http://127.0.0.1:${address.port}/`,
    get connections() {
      return state.connections;
    },
    received: () => Buffer.concat(chunks).toString("utf8"),
  };
}
