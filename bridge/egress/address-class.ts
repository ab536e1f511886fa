// Which resolved addresses the egress proxy never connects to for a tool: loopback (the tools reach it
// directly), and the internal ranges a name could be pointed at to turn the proxy into a way into the
// container's own network or the host's metadata service (link-local 169.254.169.254, private, CGNAT, multicast,
// reserved). IPv4-mapped IPv6 addresses are checked as the IPv4 address they carry (net.BlockList does this).
import { BlockList, isIPv4 } from "node:net";

const INTERNAL_V4: readonly [string, number][] = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];

const INTERNAL_V6: readonly [string, number][] = [
  ["::", 128],
  ["::1", 128],
  ["100::", 64],
  ["fc00::", 7],
  ["fe80::", 10],
  // Site-local (deprecated, still private where a stack honours it).
  ["fec0::", 10],
  ["ff00::", 8],
  // IPv4-compatible (`::127.0.0.1`), IPv4-translated (`::ffff:0:127.0.0.1`), 6to4, Teredo and NAT64 (well-known
  // and local-use) carry an IPv4 address the checks above would have to see: refused whole.
  ["::", 96],
  ["::ffff:0:0:0", 96],
  ["2002::", 16],
  ["2001::", 32],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
];

const internal = new BlockList();
for (const [net, prefix] of INTERNAL_V4) internal.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of INTERNAL_V6) internal.addSubnet(net, prefix, "ipv6");

/** True for an address in a loopback, private, link-local, CGNAT, multicast or reserved range. */
export function isInternalAddress(address: string): boolean {
  return internal.check(address, isIPv4(address) ? "ipv4" : "ipv6");
}
