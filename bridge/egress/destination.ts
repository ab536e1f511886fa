// A destination as the egress proxy decides on it and connects to it: one canonical host and a port. The host is
// parsed by the WHATWG URL host parser (the same rules as the clients' own URL parsers: percent-decoding, IDNA to
// ASCII, the IPv4 number forms `0x7f.1` and `2130706433`), then checked label by label; the proxy connects to
// exactly the canonical value it decided on, so a spelling cannot mean one thing to the decision and another to
// the connection. A trailing dot is dropped (`example.com.` is `example.com`), and NUL, blanks, `@`, `/` and the
// like are refused before any parsing.
import { isIPv4, isIPv6 } from "node:net";

export type HostKind = "name" | "ipv4" | "ipv6";

export interface Destination {
  /** Canonical host: lowercase ASCII name without a trailing dot, dotted IPv4, or IPv6 without brackets. */
  host: string;
  kind: HostKind;
  port: number;
}

export type DestinationResult = { ok: true; destination: Destination } | { ok: false; problem: string };

const MAX_HOST_CHARS = 253;
/** Characters a host in a CONNECT line or a URL authority may carry before parsing. */
const RAW_HOST = /^[A-Za-z0-9.\-_:[\]%\u0080-\uffff]+$/;
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** `host:port` or `[v6]:port`, as in an HTTP CONNECT request line. */
export function parseAuthority(authority: string): DestinationResult {
  if (authority.length > MAX_HOST_CHARS + 8) return { ok: false, problem: "the authority is too long" };
  const match = /^(\[[^\]]*\]|[^:]*):([0-9]{1,5})$/.exec(authority);
  if (!match) return { ok: false, problem: "a CONNECT target must be host:port" };
  return parseHostPort(match[1] ?? "", match[2] ?? "");
}

/** The destination of an absolute-form `http://` URL (a plain-HTTP request through the proxy). */
export function parseHttpUrl(raw: string): DestinationResult & { url?: URL } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, problem: "not an absolute URL" };
  }
  if (url.protocol !== "http:")
    return { ok: false, problem: "only http:// is forwarded; use CONNECT for TLS" };
  if (url.username || url.password) return { ok: false, problem: "credentials in the URL are refused" };
  const port = url.port === "" ? "80" : url.port;
  const result = parseHostPort(url.hostname, port);
  return result.ok ? { ...result, url } : result;
}

export function parseHostPort(rawHost: string, rawPort: string): DestinationResult {
  if (!/^[0-9]{1,5}$/.test(rawPort)) return { ok: false, problem: "the port must be a number" };
  const port = Number(rawPort);
  if (port < 1 || port > 65535) return { ok: false, problem: "the port must be 1-65535" };
  if (rawHost.length === 0 || rawHost.length > MAX_HOST_CHARS)
    return { ok: false, problem: "the host is empty or too long" };
  if (!RAW_HOST.test(rawHost)) return { ok: false, problem: "the host has characters no host name has" };
  let parsed: string;
  try {
    parsed = new URL(`http://${rawHost}/`).hostname;
  } catch {
    return { ok: false, problem: "the host does not parse" };
  }
  if (parsed.startsWith("[") && parsed.endsWith("]")) {
    const v6 = parsed.slice(1, -1);
    return isIPv6(v6)
      ? { ok: true, destination: { host: v6, kind: "ipv6", port } }
      : { ok: false, problem: "not an IPv6 address" };
  }
  if (isIPv4(parsed)) return { ok: true, destination: { host: parsed, kind: "ipv4", port } };
  const name = parsed.endsWith(".") ? parsed.slice(0, -1) : parsed;
  if (name.length === 0 || name.length > MAX_HOST_CHARS) return { ok: false, problem: "the host is empty" };
  for (const label of name.split(".")) {
    if (!LABEL.test(label)) return { ok: false, problem: `"${label.slice(0, 63)}" is not a host name label` };
  }
  // A name that is all digits and dots would be an IPv4 form the URL parser did not take: refuse the ambiguity.
  if (/^[0-9.]+$/.test(name)) return { ok: false, problem: "a numeric host that is not an IPv4 address" };
  return { ok: true, destination: { host: name, kind: "name", port } };
}

/** `host:port` for logs and dialogs (IPv6 in brackets). */
export function formatDestination(destination: Destination): string {
  return destination.kind === "ipv6"
    ? `[${destination.host}]:${destination.port}`
    : `${destination.host}:${destination.port}`;
}

/**
 * Whether `host` is `pattern` or, for a pattern `*.suffix`, a name below `suffix` (label boundary). Exact
 * string comparison of canonical forms: no substring or endsWith over raw text.
 */
export function hostMatches(pattern: string, destination: Destination): boolean {
  if (pattern.startsWith("*.")) {
    if (destination.kind !== "name") return false;
    const suffix = pattern.slice(1);
    return destination.host.endsWith(suffix) && destination.host.length > suffix.length;
  }
  return pattern === destination.host;
}
