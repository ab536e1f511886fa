// Network mode: GET /v1/health and the WebSocket at /v1/rpc (hello, welcome, replay, live frames).
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type RawData, WebSocket, WebSocketServer } from "ws";
import type { Logger } from "../agent-runtime/log.ts";
import type { BridgeCore } from "./core.ts";
import { MAX_FRAME_DEPTH, nestsDeeperThan } from "./frame-input.ts";
import { CloseCode, HelloFrame, PROTOCOL_VERSION, type WelcomeFrame } from "./protocol.ts";
import type { ReplayRing } from "./replay-ring.ts";
import type { RingSink } from "./ring-sink.ts";

/** Frames are handed to ws only while less than this is buffered; the rest waits in the ring. */
const HIGH_WATER_BYTES = 1024 * 1024;
/** Frames are written to the socket in batches of about this size. */
const BATCH_BYTES = 64 * 1024;

export interface NetworkOptions {
  host: string;
  port: number;
  token: string;
  helloTimeoutMs: number;
  authFailureDelayMs: number;
  maxFrameBytes: number;
  maxSendQueueBytes: number;
  /** How long a hello waits for Pi to be proved patched (or refused) before the welcome goes anyway. */
  agentWaitMs?: number;
}

/** A hello is small (a token, an id, a cursor); anything larger is refused like any malformed hello. */
const MAX_HELLO_BYTES = 16 * 1024;

/** What a client may send between its hello and the welcome (it is handled after the welcome). */
const MAX_EARLY_FRAMES = 256;

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

class Connection {
  clientId: string | undefined;
  /** Seq of the last ring frame handed to ws. */
  sentSeq = 0;
  /** headSeq when the welcome went out: the replay before it does not count as a slow-client backlog. */
  liveFrom = 0;
  ready = false;
  closed = false;
  private readonly early: RawData[] = [];
  private earlyBytes = 0;
  private waitingForDrain = false;

  readonly ws: WebSocket;
  private readonly server: NetworkServer;

  constructor(ws: WebSocket, server: NetworkServer) {
    this.ws = ws;
    this.server = server;
  }

  /** Keeps a frame that came before the welcome; false if too many did (the connection is closed). */
  hold(data: RawData, maxBytes: number): boolean {
    this.earlyBytes += rawBytes(data);
    this.early.push(data);
    return this.early.length <= MAX_EARLY_FRAMES && this.earlyBytes <= maxBytes;
  }

  takeEarly(): RawData[] {
    this.earlyBytes = 0;
    return this.early.splice(0);
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    // Detach now: the close handshake can take long with a client that does not read.
    this.server.release(this);
    this.ws.close(code, reason);
  }

  pump(): void {
    if (!this.ready || this.closed) return;
    // One socket write for the whole batch instead of one per frame.
    const socket = (this.ws as unknown as { _socket?: { cork(): void; uncork(): void } })._socket;
    socket?.cork();
    try {
      this.pumpFrames(socket);
    } finally {
      socket?.uncork();
    }
  }

  private pumpFrames(socket: { cork(): void; uncork(): void } | undefined): void {
    const ring = this.server.ring;
    const sendable = this.server.sink.sendableSeq;
    let batchBytes = 0;
    while (this.sentSeq < sendable) {
      if (batchBytes >= BATCH_BYTES) {
        // Bounded batches: the first frames of a long replay leave without waiting for the rest.
        socket?.uncork();
        socket?.cork();
        batchBytes = 0;
      }
      if (this.ws.bufferedAmount >= HIGH_WATER_BYTES) {
        if (!this.waitingForDrain) {
          this.waitingForDrain = true;
          // A ping's callback runs once everything queued before it has been written to the socket.
          this.ws.ping(undefined, undefined, () => {
            this.waitingForDrain = false;
            this.pump();
          });
        }
        return;
      }
      const frame = ring.get(this.sentSeq + 1);
      if (!frame) {
        this.close(CloseCode.tooSlow, "fell behind the replay ring; resume");
        return;
      }
      this.ws.send(frame.data, { binary: false });
      this.sentSeq = frame.seq;
      batchBytes += frame.bytes;
    }
  }

  /** Resolves once everything in the ring has been handed over and written (bounded wait). */
  async flush(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < deadline) {
      this.pump();
      if (this.sentSeq >= this.server.sink.sendableSeq && this.ws.bufferedAmount === 0) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

export class NetworkServer {
  private readonly http: Server;
  private readonly wss: WebSocketServer;
  private controller: Connection | undefined;
  private readonly connections = new Set<Connection>();
  private readonly tokenDigest: Buffer;
  private closing = false;

  private readonly core: BridgeCore;
  readonly sink: RingSink;
  readonly ring: ReplayRing;
  private readonly options: NetworkOptions;
  private readonly log: Logger;
  /** Extra fields for GET /v1/health (where the log file is; never what it holds). */
  healthExtra: () => Record<string, unknown> = () => ({});

  constructor(core: BridgeCore, sink: RingSink, options: NetworkOptions, log: Logger) {
    this.core = core;
    this.sink = sink;
    this.ring = sink.ring;
    this.options = options;
    this.log = log;
    this.tokenDigest = digest(options.token);
    this.http = createServer((req, res) => this.onHttp(req, res));
    this.wss = new WebSocketServer({
      noServer: true,
      // Frames up to this size get an error frame, not a dropped connection; larger ones close with 1009.
      maxPayload: Math.max(2 * options.maxFrameBytes, options.maxFrameBytes + 1024 * 1024),
    });
    this.http.on("upgrade", (req, socket, head) => {
      const url = new URL(req.url ?? "/", "http://bridge");
      if (url.pathname !== "/v1/rpc" || this.closing) {
        socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        return;
      }
      // Frames are small and latency matters: no Nagle delay.
      if ("setNoDelay" in socket && typeof socket.setNoDelay === "function") socket.setNoDelay(true);
      this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws));
    });
  }

  async listen(): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.http.once("error", reject);
      this.http.listen(this.options.port, this.options.host, () => resolve());
    });
    return this.http.address() as AddressInfo;
  }

  private pumpScheduled = false;

  /** New frames are in the ring: send them once the current batch of Pi lines has been read. */
  notify(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    queueMicrotask(() => {
      this.pumpScheduled = false;
      this.pumpController();
    });
  }

  private pumpController(): void {
    const conn = this.controller;
    if (!conn?.ready || conn.closed) return;
    // During the replay the ring itself bounds the backlog (an evicted unsent frame closes 4008 in pump).
    if (
      conn.sentSeq >= conn.liveFrom &&
      this.ring.bytesAfter(conn.sentSeq) > this.options.maxSendQueueBytes
    ) {
      this.log.warn(
        {
          clientId: conn.clientId,
          sentSeq: conn.sentSeq,
          liveFrom: conn.liveFrom,
          headSeq: this.ring.headSeq,
        },
        "client too slow: send backlog over the limit",
      );
      conn.close(CloseCode.tooSlow, "send backlog over the limit; resume");
      return;
    }
    conn.pump();
  }

  /** Delivers what is left to the controller, then closes everything. */
  async close(): Promise<void> {
    this.closing = true;
    await this.controller?.flush(1_000);
    for (const conn of this.connections) conn.close(CloseCode.goingAway, "bridge shutting down");
    await new Promise((r) => setTimeout(r, 50));
    for (const client of this.wss.clients) client.terminate();
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  /** The connection no longer controls the agent (closed, superseded or too slow). */
  release(conn: Connection): void {
    if (this.controller !== conn) return;
    this.controller = undefined;
    if (conn.clientId !== undefined) this.core.detach(conn.clientId);
    this.log.info({ clientId: conn.clientId }, "client detached");
  }

  private onHttp(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", "http://bridge");
    if (req.method === "GET" && url.pathname === "/v1/health") {
      const pi = this.core.piStatus();
      const status = this.core.isShuttingDown
        ? "shutting_down"
        : pi.state === "exited"
          ? "agent_exited"
          : pi.state === "refused"
            ? "agent_unverified"
            : "ok";
      const body = {
        status,
        protocol: PROTOCOL_VERSION,
        pi: { state: pi.state, patched: pi.patched, problem: pi.problem, restarts: pi.restarts },
        attached: this.core.attached !== undefined,
        ...this.healthExtra(),
        // Unauthenticated, so the summary only: which mode, and why not isolated (bridge_status has the rest).
        isolation: (({ mode, reasons }) => ({ mode, reasons }))(this.core.status().isolation),
      };
      // Fail closed where a load balancer or sbx-server looks: an unverified Pi is not a healthy bridge.
      res.writeHead(status === "agent_unverified" ? 503 : 200, {
        "content-type": "application/json",
        "cache-control": "no-store",
      });
      res.end(JSON.stringify(body));
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end('{"error":"not_found"}');
  }

  private onConnection(ws: WebSocket): void {
    const conn = new Connection(ws, this);
    this.connections.add(conn);
    let state: "hello" | "accepting" | "rejected" | "attached" = "hello";
    const reject = (why: string) => {
      if (state === "rejected") return;
      state = "rejected";
      this.log.warn({ why }, "connection refused");
      // Same delay for every failure, so timing tells nothing about the token.
      setTimeout(() => conn.close(CloseCode.unauthorized, "unauthorized"), this.options.authFailureDelayMs);
    };
    const helloTimer = setTimeout(() => reject("no hello in time"), this.options.helloTimeoutMs);
    ws.on("message", (data, isBinary) => {
      if (state === "attached") {
        this.onClientData(conn, data, isBinary);
      } else if (state === "accepting") {
        if (!conn.hold(data, 4 * this.options.maxFrameBytes)) {
          this.log.warn({ clientId: conn.clientId }, "too much sent before the welcome");
          conn.close(CloseCode.tooSlow, "too much sent before the welcome; wait for it");
        }
      } else if (state === "hello") {
        clearTimeout(helloTimer);
        const hello = this.parseHello(data, isBinary);
        if (!hello.ok) {
          reject(hello.why);
          return;
        }
        state = "accepting";
        void this.accept(conn, hello.frame).then(
          () => {
            if (conn.closed) return;
            state = "attached";
            for (const early of conn.takeEarly()) this.onClientData(conn, early, false);
            conn.pump();
          },
          (err: Error) => {
            this.log.error({ err: err.message }, "accepting a client failed");
            conn.close(CloseCode.goingAway, "internal error");
          },
        );
      }
    });
    ws.on("error", (err) => this.log.warn({ err: err.message }, "websocket error"));
    ws.on("close", () => {
      clearTimeout(helloTimer);
      conn.closed = true;
      this.connections.delete(conn);
      this.release(conn);
    });
  }

  private parseHello(
    data: RawData,
    isBinary: boolean,
  ): { ok: true; frame: ReturnType<typeof HelloFrame.parse> } | { ok: false; why: string } {
    if (isBinary) return { ok: false, why: "binary hello" };
    if (rawBytes(data) > MAX_HELLO_BYTES) return { ok: false, why: "hello too large" };
    const text = rawText(data);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { ok: false, why: "hello is not JSON" };
    }
    if (nestsDeeperThan(text, MAX_FRAME_DEPTH)) parsed = null;
    const check = HelloFrame.safeParse(parsed);
    const token = (parsed as { token?: unknown } | null)?.token;
    // Compare before looking at the result so every failure costs the same.
    const tokenOk = timingSafeEqual(digest(typeof token === "string" ? token : ""), this.tokenDigest);
    if (!check.success) return { ok: false, why: "malformed hello" };
    if (!tokenOk) return { ok: false, why: "wrong token" };
    return { ok: true, frame: check.data };
  }

  private async accept(conn: Connection, hello: ReturnType<typeof HelloFrame.parse>): Promise<void> {
    const previous = this.controller;
    conn.clientId = hello.clientId;
    this.controller = conn;
    if (previous) previous.close(CloseCode.superseded, "superseded by a newer hello");
    this.core.attach(hello.clientId);
    const resume = hello.resume;
    let reset: WelcomeFrame["reset"] = null;
    // Nothing is served before Pi is proved patched (or refused: then the welcome says so).
    await this.core.agentSettled(this.options.agentWaitMs ?? 90_000);
    if (conn.closed || this.controller !== conn) return;
    this.sink.flush();
    if (!resume) reset = "new";
    else if (resume.epoch !== this.core.epoch) reset = "epoch_changed";
    else if (!this.canResumeFrom(resume.lastSeq)) reset = "cursor_too_old";
    if (reset !== null) await this.core.refreshState();
    if (conn.closed || this.controller !== conn) return;
    this.sink.flush();
    const snapshot = this.core.snapshot();
    const welcome: WelcomeFrame = {
      type: "welcome",
      seq: 0,
      protocol: PROTOCOL_VERSION,
      epoch: this.core.epoch,
      headSeq: this.sink.sendableSeq,
      resumed: reset === null,
      reset,
      pendingDialogs: snapshot.pendingDialogs,
      snapshot,
    };
    conn.ws.send(JSON.stringify(welcome));
    conn.sentSeq = reset === null && resume ? resume.lastSeq : welcome.headSeq;
    conn.liveFrom = welcome.headSeq;
    conn.ready = true;
    this.log.info(
      { clientId: hello.clientId, reset, from: conn.sentSeq, head: this.ring.headSeq },
      "client attached",
    );
  }

  /** A cursor at or behind what was journaled, with every frame after it still held. */
  private canResumeFrom(lastSeq: number): boolean {
    return lastSeq <= this.sink.sendableSeq && this.ring.canResumeFrom(lastSeq);
  }

  private onClientData(conn: Connection, data: RawData, isBinary: boolean): void {
    if (this.controller !== conn) return;
    if (isBinary) {
      this.core.publishError("invalid_frame", "binary frames are not accepted; send JSON text frames");
      return;
    }
    // The core's intake checks the size (ws's maxPayload bounds what arrives here).
    this.core.handleClientText(rawText(data));
  }
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}

function rawBytes(data: RawData): number {
  if (Buffer.isBuffer(data)) return data.length;
  if (Array.isArray(data)) return data.reduce((n, b) => n + b.length, 0);
  return data.byteLength;
}

export { WebSocket };
