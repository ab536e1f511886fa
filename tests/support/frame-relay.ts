// A WebSocket relay between a client and the bridge that lets a test force an interleaving the network produces
// only now and then (a response still in flight when the client sends its next frame). Every frame passes
// through unchanged, the handshake included, so it works whatever the handshake is; a test's hooks decide
// when each frame goes on.
import type { AddressInfo } from "node:net";
import type { TestContext } from "node:test";
import WebSocket, { WebSocketServer } from "ws";

/** One client connection through the relay, and its own connection to the bridge. */
export interface RelayLeg {
  /** 0 for the client's first connection, 1 for its first reconnect… */
  readonly index: number;
  /** Passes a frame on to the bridge; resolves once it is written to the bridge's socket. */
  toBridge(text: string): Promise<void>;
  /** Passes a frame on to the client; false if the client side is no longer open (the frame is lost). */
  toClient(text: string): boolean;
  /** Cuts the client off as a network failure would (no close handshake); the bridge's side closes after
   * every frame passed on so far. */
  drop(): void;
}

export interface RelayHooks {
  /** A frame from the client (parsed, or undefined if not JSON); default: `leg.toBridge(text)`. */
  fromClient?: (frame: Record<string, unknown> | undefined, text: string, leg: RelayLeg) => void;
  /** A frame from the bridge; default: `leg.toClient(text)`. */
  fromBridge?: (frame: Record<string, unknown> | undefined, text: string, leg: RelayLeg) => void;
}

/** Close codes a peer may send (1005/1006 only describe a close without one). */
const sendable = (code: number) => code === 1000 || (code >= 3000 && code <= 4999);

function parse(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Listens on 127.0.0.1; returns the URL a client uses instead of `bridgeUrl`. Closed at test end. */
export async function startFrameRelay(t: TestContext, bridgeUrl: string, hooks: RelayHooks): Promise<string> {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: false });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  const sockets = new Set<WebSocket>();
  let legs = 0;
  server.on("connection", (down) => {
    const up = new WebSocket(bridgeUrl, { perMessageDeflate: false });
    sockets.add(down).add(up);
    // Frames to the bridge go in order, and the close after them.
    let written = new Promise<void>((resolve) => up.once("open", () => resolve()));
    const leg: RelayLeg = {
      index: legs++,
      toBridge: (text) => {
        written = written.then(
          () =>
            new Promise<void>((resolve) => {
              if (up.readyState === WebSocket.OPEN) up.send(text, () => resolve());
              else resolve();
            }),
        );
        return written;
      },
      toClient: (text) => {
        if (down.readyState !== WebSocket.OPEN) return false;
        down.send(text);
        return true;
      },
      drop: () => down.terminate(),
    };
    down.on("message", (data) => {
      const text = String(data);
      if (hooks.fromClient) hooks.fromClient(parse(text), text, leg);
      else void leg.toBridge(text);
    });
    up.on("message", (data) => {
      const text = String(data);
      if (hooks.fromBridge) hooks.fromBridge(parse(text), text, leg);
      else leg.toClient(text);
    });
    // Either side ending ends the other, with the bridge's close code passed on to the client.
    down.on("close", () => {
      if (up.readyState === WebSocket.CONNECTING) up.terminate();
      else void written.then(() => up.close());
    });
    up.on("close", (code, reason) => (sendable(code) ? down.close(code, reason) : down.terminate()));
    down.on("error", () => {});
    up.on("error", () => down.terminate());
  });
  t.after(async () => {
    for (const socket of sockets) socket.terminate();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/rpc`;
}
