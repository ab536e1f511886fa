// Why a client could not reach the bridge, classified so that a client stops on what retrying cannot fix
// (a wrong address, a wrong token, an impostor) and says it, with the cause, instead of reconnecting forever.

export type FailureKind =
  | "refused"
  | "dns"
  | "tls"
  | "not_found"
  | "unauthorized"
  | "superseded"
  | "impostor"
  | "protocol"
  | "busy"
  | "http"
  | "network";

/**
 * Whether retrying can help: never for a permanent kind; for `refused`, once the client was live (the bridge
 * restarting), and on a first connection only within the client's start grace (a bridge still starting).
 */
export const FAILURES: Record<FailureKind, { retry: "never" | "once_live" | "always"; what: string }> = {
  refused: { retry: "once_live", what: "the connection was refused: nothing listens at that address" },
  dns: { retry: "never", what: "the host name does not resolve" },
  tls: { retry: "never", what: "the TLS handshake failed" },
  not_found: { retry: "never", what: "the server answered 404 to the WebSocket upgrade: wrong path or host" },
  unauthorized: {
    retry: "never",
    what: "unauthorized: a wrong bridge token, or a proxy refusing its credentials",
  },
  superseded: { retry: "never", what: "another client took over (4002)" },
  impostor: {
    retry: "never",
    what: "the endpoint is not the bridge (it could not prove it knows the token): nothing was sent to it",
  },
  protocol: { retry: "never", what: "the bridge speaks another protocol version" },
  busy: { retry: "always", what: "the bridge is busy with connections waiting to authenticate (4029)" },
  http: { retry: "always", what: "the server refused the WebSocket upgrade" },
  network: { retry: "always", what: "the connection was lost" },
};

export class BridgeConnectionError extends Error {
  readonly kind: FailureKind;
  readonly url: string;

  constructor(kind: FailureKind, url: string, detail: string | undefined, options?: { cause?: unknown }) {
    super(`${url}: ${FAILURES[kind].what}${detail ? ` (${detail})` : ""}`, options);
    this.name = kind === "impostor" ? "BridgeImpostorError" : "BridgeConnectionError";
    this.kind = kind;
    this.url = url;
  }

  /** True when no retry can help: the client stops and reports this error. */
  permanent(wasLive: boolean): boolean {
    const { retry } = FAILURES[this.kind];
    return retry === "never" || (retry === "once_live" && !wasLive);
  }
}

/** An endpoint that failed the handshake: a permanent, named failure, never a reconnect. */
export class BridgeImpostorError extends BridgeConnectionError {
  constructor(url: string, detail: string) {
    super("impostor", url, detail);
  }
}

/** Node's TLS failures (ERR_TLS_*, certificate problems from OpenSSL). */
const TLS_CODES = new Set([
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "EPROTO",
]);

/** A socket-level error before the upgrade. */
export function classifyError(url: string, error: NodeJS.ErrnoException): BridgeConnectionError {
  const code = error.code ?? "";
  const kind: FailureKind =
    code === "ECONNREFUSED"
      ? "refused"
      : code === "ENOTFOUND"
        ? "dns"
        : TLS_CODES.has(code) || code.startsWith("ERR_TLS") || code.startsWith("ERR_SSL")
          ? "tls"
          : "network";
  return new BridgeConnectionError(kind, url, code || error.message, { cause: error });
}

/** An HTTP answer instead of the upgrade. */
export function classifyStatus(url: string, status: number): BridgeConnectionError {
  const kind: FailureKind =
    status === 404 ? "not_found" : status === 401 || status === 403 ? "unauthorized" : "http";
  return new BridgeConnectionError(kind, url, `HTTP ${status}`);
}

/** Close codes the bridge ends a session with (anything else is a lost connection). */
const CLOSE_KINDS: Record<number, FailureKind> = { 4001: "unauthorized", 4002: "superseded", 4029: "busy" };

export function classifyClose(url: string, code: number, reason: string): BridgeConnectionError {
  const kind = CLOSE_KINDS[code] ?? "network";
  const detail =
    kind === "unauthorized" ? `4001${reason ? `: ${reason}` : ""}` : `${code}${reason ? ` ${reason}` : ""}`;
  return new BridgeConnectionError(kind, url, detail);
}
