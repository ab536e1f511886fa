// Network mode: GET /v1/health and the WebSocket at /v1/rpc (challenge, hello, welcome, replay, live frames).
// Before a connection proves it knows the token it may send little (bytes), few such connections may wait (the
// oldest gives way), and failed proofs slow every further check.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { type RawData, WebSocket, WebSocketServer } from "ws";
import type { Logger } from "../agent-runtime/log.ts";
import { AuthThrottle } from "./auth-throttle.ts";
import type { BridgeCore } from "./core.ts";
import { MAX_FRAME_DEPTH, nestsDeeperThan } from "./frame-input.ts";
import { GarbageNudge } from "./gc-nudge.ts";
import { type AuthKey, bridgeProof, clientProof, deriveKey, newNonce, proofMatches } from "./handshake.ts";
import { type BoundListener, bindListener } from "./listener.ts";
import {
  type ChallengeFrame,
  CloseCode,
  HelloFrame,
  PROTOCOL_VERSION,
  type WelcomeFrame,
} from "./protocol.ts";
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
  /** The delay after a first failed proof; it doubles with each recent failure (see AuthThrottle). */
  authFailureDelayMs: number;
  maxFrameBytes: number;
  maxSendQueueBytes: number;
  /** How long a hello waits for Pi to be proved patched (or refused) before the welcome goes anyway. */
  agentWaitMs?: number;
  /** The server prestart bound (already listening); without one, `listen` binds host:port. */
  listener?: BoundListener;
  /** Pre-authentication bounds (defaults: PRE_AUTH). */
  preAuth?: Partial<PreAuthLimits>;
}

export interface PreAuthLimits {
  /** Raw bytes a connection may send before its hello is accepted; past this it is dropped. */
  bytes: number;
  /** Connections waiting to authenticate; one more evicts the oldest. */
  connections: number;
  /** Ceiling of the auth-failure delay. */
  maxFailureDelayMs: number;
  /** How long a failed proof counts towards the delay. */
  failureWindowMs: number;
}

/**
 * What a connection may do before it proved it knows the token: little, so a flood cannot starve the bridge. A
 * hello is at most 16 KiB; a connection past twice that is dropped on the read that crossed it.
 */
export const PRE_AUTH: PreAuthLimits = {
  bytes: 32 * 1024,
  connections: 16,
  maxFailureDelayMs: 10_000,
  failureWindowMs: 60_000,
};

/** What the network side needs of the core. */
export type NetworkCore = Pick<
  BridgeCore,
  | "health"
  | "attach"
  | "detach"
  | "agentSettled"
  | "refreshState"
  | "snapshot"
  | "epoch"
  | "handleClientText"
  | "rejectOversized"
  | "publishError"
>;

/** How long an unauthenticated connection that was closed may take to answer the close frame. */
const UNAUTHENTICATED_CLOSE_MS = 1_000;

/** A hello is small (an id, a nonce, a proof, a cursor); anything larger is refused like any malformed hello. */
const MAX_HELLO_BYTES = 16 * 1024;

/** What a client may send between its hello and the welcome (it is handled after the welcome). */
const MAX_EARLY_FRAMES = 256;

/**
 * One state per connection:
 * challenged → (hello) verifying → (proof checked) accepting → (welcome sent) attached;
 * verifying → rejected (wrong proof: closed after the failure delay); any → closed.
 */
type ConnectionState = "challenged" | "verifying" | "rejected" | "accepting" | "attached" | "closed";

/** Before its proof is accepted a connection is unauthenticated: bounded in bytes, in number, and evictable. */
const UNAUTHENTICATED: ReadonlySet<ConnectionState> = new Set(["challenged", "verifying", "rejected"]);

/** Logs the 1st, 2nd, 4th, 8th… occurrence only: a flood cannot flood the log. */
class DoublingLog {
  private count = 0;
  private next = 1;
  private readonly log: Logger;
  private readonly msg: string;

  constructor(log: Logger, msg: string) {
    this.log = log;
    this.msg = msg;
  }
  note(fields: Record<string, unknown>): void {
    this.count += 1;
    if (this.count < this.next) return;
    this.next *= 2;
    this.log.warn({ ...fields, total: this.count }, this.msg);
  }
}

class Connection {
  state: ConnectionState = "challenged";
  readonly bridgeNonce = newNonce();
  clientId: string | undefined;
  /** Seq of the last ring frame handed to ws. */
  sentSeq = 0;
  /** headSeq when the welcome went out: the replay before it does not count as a slow-client backlog. */
  liveFrom = 0;
  /** Set once the proof is accepted: from then on the connection is no longer counted or evictable. */
  authenticated = false;
  /** Raw bytes received while unauthenticated (also while its close is under way). */
  preAuthBytes = 0;
  helloTimer: NodeJS.Timeout | undefined;
  private readonly early: RawData[] = [];
  private earlyBytes = 0;
  private waitingForDrain = false;

  readonly ws: WebSocket;
  /** The upgraded socket (kept from the upgrade: batching and the pre-auth byte count need it). */
  readonly socket: Socket;
  private readonly server: NetworkServer;

  constructor(ws: WebSocket, socket: Socket, server: NetworkServer) {
    this.ws = ws;
    this.socket = socket;
    this.server = server;
  }

  get unauthenticated(): boolean {
    return UNAUTHENTICATED.has(this.state);
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
    if (this.state === "closed") return;
    this.state = "closed";
    clearTimeout(this.helloTimer);
    // Detach now: the close handshake can take long with a client that does not read.
    this.server.release(this);
    this.ws.close(code, reason);
    // An unauthenticated peer gets no 30 s close handshake: it is dropped soon after its close frame.
    if (!this.authenticated) setTimeout(() => this.socket.destroy(), UNAUTHENTICATED_CLOSE_MS).unref();
  }

  /** Drops the connection without a close handshake (it sent too much before authenticating). */
  destroy(): void {
    if (this.state !== "closed") {
      this.state = "closed";
      clearTimeout(this.helloTimer);
      this.server.release(this);
    }
    this.socket.destroy();
  }

  pump(): void {
    if (this.state !== "attached") return;
    // One socket write for the whole batch instead of one per frame.
    this.socket.cork();
    try {
      this.pumpFrames();
    } finally {
      this.socket.uncork();
    }
  }

  private pumpFrames(): void {
    const ring = this.server.ring;
    const sendable = this.server.sink.sendableSeq;
    let batchBytes = 0;
    while (this.sentSeq < sendable) {
      if (batchBytes >= BATCH_BYTES) {
        // Bounded batches: the first frames of a long replay leave without waiting for the rest.
        this.socket.uncork();
        this.socket.cork();
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
    while (this.state === "attached" && Date.now() < deadline) {
      this.pump();
      if (this.sentSeq >= this.server.sink.sendableSeq && this.ws.bufferedAmount === 0) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

type HelloCheck = { ok: true; frame: HelloFrame } | { ok: false; why: string; oldProtocol?: boolean };

export class NetworkServer {
  private http: Server | undefined;
  private readonly wss: WebSocketServer;
  private controller: Connection | undefined;
  private readonly connections = new Set<Connection>();
  /** Unauthenticated connections, oldest first (a Set keeps insertion order). */
  private readonly waiting = new Set<Connection>();
  /** Hellos waiting for the auth gate to open. */
  private readonly atGate = new Map<Connection, HelloFrame>();
  private gateTimer: NodeJS.Timeout | undefined;
  private gateScheduled = false;
  private readonly throttle: AuthThrottle;
  private readonly preAuth: PreAuthLimits;
  private key: AuthKey | undefined;
  private readonly keyReady: Promise<void>;
  private closing = false;
  private readonly dropped: DoublingLog;
  private readonly refusedV1: DoublingLog;
  private readonly malformed: DoublingLog;
  /** Reads of dropped connections are garbage: past 16 MiB of them, a collection (see gc-nudge.ts). */
  private readonly garbage = new GarbageNudge(16 * 1024 * 1024);

  private readonly core: NetworkCore;
  readonly sink: RingSink;
  readonly ring: ReplayRing;
  private readonly options: Omit<NetworkOptions, "token">;
  private readonly log: Logger;

  constructor(core: NetworkCore, sink: RingSink, options: NetworkOptions, log: Logger) {
    this.core = core;
    this.sink = sink;
    this.ring = sink.ring;
    const { token, ...rest } = options;
    this.options = rest;
    this.log = log;
    this.preAuth = { ...PRE_AUTH, ...options.preAuth };
    this.throttle = new AuthThrottle({
      baseDelayMs: options.authFailureDelayMs,
      maxDelayMs: Math.max(options.authFailureDelayMs, this.preAuth.maxFailureDelayMs),
      windowMs: this.preAuth.failureWindowMs,
    });
    // Derived once, off the event loop; the token itself is not kept.
    this.keyReady = deriveKey(token).then(
      (key) => {
        this.key = key;
      },
      (err: Error) =>
        log.error({ err: err.message }, "cannot derive the handshake key: no client can authenticate"),
    );
    this.dropped = new DoublingLog(log, "pre-auth limit: connections dropped before authenticating");
    this.refusedV1 = new DoublingLog(
      log,
      "protocol-1 hello refused (it carries the token in clear): the client must speak protocol 2",
    );
    this.malformed = new DoublingLog(log, "connections refused for a malformed or missing hello");
    this.wss = new WebSocketServer({
      noServer: true,
      // Frames up to this size get an error frame, not a dropped connection; larger ones close with 1009.
      maxPayload: Math.max(2 * options.maxFrameBytes, options.maxFrameBytes + 1024 * 1024),
    });
    if (options.listener) this.serve(options.listener.handOver());
  }

  /** Binds host:port unless prestart already did; resolves with the address. */
  async listen(): Promise<AddressInfo> {
    if (!this.http) this.serve((await bindListener(this.options.host, this.options.port)).handOver());
    return (this.http as Server).address() as AddressInfo;
  }

  private serve(http: Server): void {
    this.http = http;
    // A connection that never finishes its request headers is let go; the rest is bounded per connection.
    http.headersTimeout = this.options.helloTimeoutMs;
    http.requestTimeout = this.options.helloTimeoutMs;
    http.on("request", (req, res) => this.onHttp(req, res));
    http.on("upgrade", (req, socket, head) => this.onUpgrade(req, socket as Socket, head));
  }

  private onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://bridge");
    if (url.pathname !== "/v1/rpc") {
      socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    if (this.closing) {
      socket.end("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    // Frames are small and latency matters: no Nagle delay.
    socket.setNoDelay(true);
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, socket));
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
    if (conn?.state !== "attached") return;
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
    clearTimeout(this.gateTimer);
    await this.controller?.flush(1_000);
    for (const conn of this.connections) conn.close(CloseCode.goingAway, "bridge shutting down");
    await new Promise((r) => setTimeout(r, 50));
    for (const client of this.wss.clients) client.terminate();
    const http = this.http;
    if (!http) return;
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  }

  /** The connection no longer controls the agent (closed, superseded or too slow), or stopped waiting. */
  release(conn: Connection): void {
    this.waiting.delete(conn);
    this.atGate.delete(conn);
    if (this.controller !== conn) return;
    this.controller = undefined;
    if (conn.clientId !== undefined) this.core.detach(conn.clientId);
    this.log.info({ clientId: conn.clientId }, "client detached");
  }

  /** Unauthenticated: only whether the bridge is healthy (the details are in bridge_status, behind the proof). */
  private onHttp(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", "http://bridge");
    if ((req.method === "GET" || req.method === "HEAD") && url.pathname === "/v1/health") {
      const { ok } = this.core.health();
      res.writeHead(ok ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" });
      res.end(req.method === "HEAD" ? undefined : ok ? '{"status":"ok"}' : '{"status":"unavailable"}');
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end('{"error":"not_found"}');
  }

  private onConnection(ws: WebSocket, socket: Socket): void {
    const conn = new Connection(ws, socket, this);
    this.connections.add(conn);
    this.admit(conn);
    // Counted on the raw socket (ws's maxPayload is per message and server-wide): a flood of unfinished
    // messages is cut at a few KiB each instead of being buffered up to maxPayload.
    // Counted until the proof is accepted, including while a refused or evicted connection closes (ws would
    // otherwise buffer up to maxPayload during its close handshake).
    const countPreAuth = (chunk: Buffer) => {
      if (conn.authenticated) {
        socket.off("data", countPreAuth);
        return;
      }
      conn.preAuthBytes += chunk.length;
      if (conn.preAuthBytes > this.preAuth.bytes) {
        this.dropped.note({ why: "too many bytes before authenticating", limit: this.preAuth.bytes });
        conn.destroy();
        this.garbage.dropped(conn.preAuthBytes);
      }
    };
    socket.on("data", countPreAuth);
    ws.on("message", (data, isBinary) => this.onMessage(conn, data, isBinary));
    ws.on("error", (err) => this.log.debug({ err: err.message }, "websocket error"));
    ws.on("close", () => {
      socket.off("data", countPreAuth);
      conn.state = "closed";
      clearTimeout(conn.helloTimer);
      this.connections.delete(conn);
      this.release(conn);
    });
    conn.helloTimer = setTimeout(() => {
      this.malformed.note({ why: "no hello in time" });
      conn.close(CloseCode.unauthorized, "unauthorized");
    }, this.options.helloTimeoutMs);
    // The bridge speaks first: a fresh nonce the client's proof must cover.
    const challenge: ChallengeFrame = {
      type: "challenge",
      protocol: PROTOCOL_VERSION,
      nonce: conn.bridgeNonce,
    };
    ws.send(JSON.stringify(challenge));
  }

  /** Counts a new unauthenticated connection; over the cap the oldest waiting one gives way. */
  private admit(conn: Connection): void {
    this.waiting.add(conn);
    if (this.waiting.size <= this.preAuth.connections) return;
    const oldest = this.waiting.values().next().value;
    if (!oldest) return;
    this.dropped.note({
      why: "too many connections waiting to authenticate",
      limit: this.preAuth.connections,
    });
    oldest.close(CloseCode.busy, "too many connections waiting to authenticate; retry");
  }

  private onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    switch (conn.state) {
      case "attached":
        this.onClientData(conn, data, isBinary);
        return;
      case "verifying":
      case "accepting":
        // Handled after the welcome (bounded: the raw byte count applies until the proof is accepted).
        if (!conn.hold(data, 4 * this.options.maxFrameBytes)) {
          this.log.warn({ clientId: conn.clientId }, "too much sent before the welcome");
          conn.close(CloseCode.tooSlow, "too much sent before the welcome; wait for it");
        }
        return;
      case "challenged": {
        clearTimeout(conn.helloTimer);
        const hello = parseHello(data, isBinary);
        if (!hello.ok) {
          if (hello.oldProtocol) {
            this.refusedV1.note({});
            conn.close(CloseCode.unauthorized, OLD_PROTOCOL_REASON);
          } else {
            this.malformed.note({ why: hello.why });
            conn.close(CloseCode.unauthorized, "unauthorized");
          }
          return;
        }
        conn.state = "verifying";
        conn.clientId = hello.frame.clientId;
        this.atGate.set(conn, hello.frame);
        this.openGate();
        return;
      }
      default:
        return;
    }
  }

  /** Checks every hello at the gate once it is open (and the key is derived); otherwise waits for that. */
  private openGate(): void {
    if (this.gateScheduled || this.atGate.size === 0) return;
    const reopen = () => {
      this.gateScheduled = false;
      this.openGate();
    };
    if (!this.key) {
      this.gateScheduled = true;
      void this.keyReady.then(reopen);
      return;
    }
    const wait = this.throttle.waitMs();
    if (wait > 0) {
      this.gateScheduled = true;
      this.gateTimer = setTimeout(reopen, wait);
      return;
    }
    const key = this.key;
    const batch = [...this.atGate];
    this.atGate.clear();
    for (const [conn, hello] of batch) {
      if (conn.state !== "verifying") continue;
      const expected = clientProof(key, {
        bridgeNonce: conn.bridgeNonce,
        clientNonce: hello.nonce,
        clientId: hello.clientId,
      });
      if (hello.nonce !== conn.bridgeNonce && proofMatches(expected, hello.proof)) {
        conn.state = "accepting";
        conn.authenticated = true;
        this.waiting.delete(conn);
        void this.accept(conn, hello, key).catch((err: Error) => {
          this.log.error({ err: err.message }, "accepting a client failed");
          conn.close(CloseCode.goingAway, "internal error");
        });
        continue;
      }
      conn.state = "rejected";
      const delayMs = this.throttle.recordFailure();
      this.log.warn(
        { why: "wrong proof", recentFailures: this.throttle.recentFailures(), delayMs },
        "connection refused",
      );
      // The answer waits as long as the gate stays closed: failing tells nothing sooner than the next check.
      setTimeout(() => conn.close(CloseCode.unauthorized, "unauthorized"), delayMs);
    }
  }

  private async accept(conn: Connection, hello: HelloFrame, key: AuthKey): Promise<void> {
    const previous = this.controller;
    this.controller = conn;
    if (previous) previous.close(CloseCode.superseded, "superseded by a newer hello");
    this.core.attach(hello.clientId);
    const resume = hello.resume;
    let reset: WelcomeFrame["reset"] = null;
    // Nothing is served before Pi is proved patched (or refused: then the welcome says so).
    await this.core.agentSettled(this.options.agentWaitMs ?? 90_000);
    if (conn.state !== "accepting" || this.controller !== conn) return;
    this.sink.flush();
    if (!resume) reset = "new";
    else if (resume.epoch !== this.core.epoch) reset = "epoch_changed";
    else if (!this.canResumeFrom(resume.lastSeq)) reset = "cursor_too_old";
    if (reset !== null) await this.core.refreshState();
    if (conn.state !== "accepting" || this.controller !== conn) return;
    this.sink.flush();
    const snapshot = this.core.snapshot();
    const epoch = this.core.epoch;
    const welcome: WelcomeFrame = {
      type: "welcome",
      seq: 0,
      protocol: PROTOCOL_VERSION,
      proof: bridgeProof(key, {
        bridgeNonce: conn.bridgeNonce,
        clientNonce: hello.nonce,
        clientId: hello.clientId,
        epoch,
      }),
      epoch,
      headSeq: this.sink.sendableSeq,
      resumed: reset === null,
      reset,
      pendingDialogs: snapshot.pendingDialogs,
      snapshot,
    };
    conn.ws.send(JSON.stringify(welcome));
    conn.sentSeq = reset === null && resume ? resume.lastSeq : welcome.headSeq;
    conn.liveFrom = welcome.headSeq;
    conn.state = "attached";
    this.log.info(
      { clientId: hello.clientId, reset, from: conn.sentSeq, head: this.ring.headSeq },
      "client attached",
    );
    // What the client sent before the welcome, in order, before anything it sends next.
    for (const early of conn.takeEarly()) this.onClientData(conn, early, false);
    conn.pump();
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

/** The close reason a protocol-1 hello gets (at most 123 bytes, as WebSocket close reasons must be). */
export const OLD_PROTOCOL_REASON =
  "protocol 1 is refused: this bridge speaks protocol 2 (challenge-response)";

function parseHello(data: RawData, isBinary: boolean): HelloCheck {
  if (isBinary) return { ok: false, why: "binary hello" };
  if (rawBytes(data) > MAX_HELLO_BYTES) return { ok: false, why: "hello too large" };
  const text = rawText(data);
  if (nestsDeeperThan(text, MAX_FRAME_DEPTH)) return { ok: false, why: "hello nests too deep" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { ok: false, why: "hello is not JSON" };
  }
  const check = HelloFrame.safeParse(parsed);
  if (check.success) return { ok: true, frame: check.data };
  const claimed = parsed as { type?: unknown; protocol?: unknown; token?: unknown } | null;
  const oldProtocol =
    claimed?.type === "hello" && (claimed.protocol === 1 || typeof claimed.token === "string");
  return { ok: false, why: oldProtocol ? "protocol-1 hello" : "malformed hello", oldProtocol };
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
