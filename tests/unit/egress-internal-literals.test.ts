// The egress proxy refuses an internal IP literal before any decision (no dialog can let it through, so none is
// raised), however it is spelled: the spellings are generated from the address (the IPv4 number forms the URL
// host parser accepts, trailing dot, percent-encoding, IPv6 compressed, expanded and in capitals, the IPv4-mapped,
// -compatible and -translated forms, 6to4, NAT64), by both ways in (CONNECT and plain HTTP). The same generator
// applied to a test-only public address (203.0.113.7, TEST-NET-3) reaches the decision every time, so the
// refusal is the class, not the digits. Zone ids do not parse and are refused as malformed. Every decision in
// these tests denies: no connection is ever attempted, so nothing leaves loopback even if the refusal regressed.
import assert from "node:assert/strict";
import { type AddressInfo, connect } from "node:net";
import { after, before, describe, it } from "node:test";
import pino from "pino";
import { isInternalAddress } from "../../bridge/egress/address-class.ts";
import { parseHostPort } from "../../bridge/egress/destination.ts";
import { EgressProxy, type EgressRecord, type EgressRequest } from "../../bridge/egress/proxy.ts";

const PORT = 8;

/** Internal IPv4 addresses, one or more per class (loopback, private, metadata, CGNAT, multicast, reserved). */
const INTERNAL_V4 = [
  "127.0.0.1",
  "127.255.255.254",
  "0.0.0.0",
  "10.0.0.1",
  "172.16.0.1",
  "172.31.255.255",
  "192.168.0.1",
  "169.254.169.254",
  "169.254.170.2",
  "100.64.0.1",
  "100.100.100.200",
  "192.0.0.192",
  "198.18.0.1",
  "224.0.0.1",
  "240.0.0.1",
  "255.255.255.255",
];

/** Internal IPv6 addresses (loopback, unspecified, link-local, unique-local, site-local, multicast, discard,
 * and the ranges that carry an IPv4 address: Teredo, local-use NAT64). */
const INTERNAL_V6 = [
  "::1",
  "::",
  "fe80::1",
  "fe80::a:b:c:d",
  "fc00::1",
  "fd00:ec2::254",
  "fec0::1",
  "ff02::1",
  "100::1",
  "2001:0:4136:e378:8000:63bf:3fff:fdd2",
  "64:ff9b:1::a00:1",
];

const PUBLIC_V4 = "203.0.113.7";

function octets(v4: string): number[] {
  return v4.split(".").map(Number);
}

function hex16(v4: string): [string, string] {
  const [a = 0, b = 0, c = 0, d = 0] = octets(v4);
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
}

/** Spellings of one IPv4 address that mean that address. */
function v4Spellings(v4: string): string[] {
  const [a = 0, b = 0, c = 0, d = 0] = octets(v4);
  const n = a * 2 ** 24 + b * 2 ** 16 + c * 2 ** 8 + d;
  const [high, low] = hex16(v4);
  return [
    v4,
    `${v4}.`,
    String(n),
    `0x${n.toString(16)}`,
    `0X${n.toString(16).toUpperCase()}`,
    `0${n.toString(8)}`,
    [a, b, c, d].map((o) => `0x${o.toString(16)}`).join("."),
    [a, b, c, d].map((o) => `0${o.toString(8)}`).join("."),
    [a, b, c, d].map((o) => `0x${o.toString(16).padStart(2, "0")}`).join("."),
    `${a}.${b}.${c * 256 + d}`,
    `${a}.${b * 65536 + c * 256 + d}`,
    `0x${a.toString(16)}.${b * 65536 + c * 256 + d}.`,
    [...v4].map((ch) => `%${ch.charCodeAt(0).toString(16)}`).join(""),
    `[::ffff:${v4}]`,
    `[::FFFF:${high}:${low}]`,
    `[0:0:0:0:0:ffff:${v4}]`,
    `[0000:0000:0000:0000:0000:ffff:${high.padStart(4, "0")}:${low.padStart(4, "0")}]`,
  ];
}

/** Forms that carry an IPv4 address inside IPv6 and are refused whole, whatever they carry. */
function v4Carriers(v4: string): string[] {
  const [high, low] = hex16(v4);
  return [
    `[::${v4}]`,
    `[::${high}:${low}]`,
    `[::ffff:0:${v4}]`,
    `[64:ff9b::${v4}]`,
    `[64:ff9b:1::${high}:${low}]`,
    `[2002:${high}:${low}::1]`,
  ];
}

function expanded(v6: string): string[] {
  const [head = "", tail] = v6.split("::");
  const first = head ? head.split(":") : [];
  const last = tail ? tail.split(":") : [];
  const groups =
    tail === undefined ? first : [...first, ...Array(8 - first.length - last.length).fill("0"), ...last];
  return groups;
}

/** Spellings of one IPv6 address that mean that address. */
function v6Spellings(v6: string): string[] {
  const groups = expanded(v6);
  return [
    `[${v6}]`,
    `[${v6.toUpperCase()}]`,
    `[${groups.join(":")}]`,
    `[${groups.map((g) => g.padStart(4, "0")).join(":")}]`,
  ];
}

const INTERNAL_SPELLINGS = [
  ...INTERNAL_V4.flatMap((v4) => [...v4Spellings(v4), ...v4Carriers(v4)]),
  ...INTERNAL_V6.flatMap(v6Spellings),
  // Full-width digits and dots, mapped to ASCII by IDNA.
  "\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11",
];

/** Zone ids are not part of a URL host: refused as malformed, also before any decision. */
const ZONE_IDS = ["[fe80::1%25eth0]", "[fe80::1%eth0]", "[::1%25lo]", "[fe80::1%251]"];

/** Raw bytes to the proxy (the clients' own URL checks are not the proxy's): the status and the body. */
function exchange(proxyPort: number, text: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port: proxyPort });
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const status = Number(/^HTTP\/1\.1 ([0-9]{3})/.exec(raw)?.[1] ?? 0);
      resolve({ status, body: raw.slice(raw.indexOf("\r\n\r\n") + 4) });
    });
    socket.end(Buffer.from(text, "utf8"));
  });
}

const WAYS_IN = {
  connect: (proxyPort: number, host: string) =>
    exchange(proxyPort, `CONNECT ${host}:${PORT} HTTP/1.1\r\nHost: ${host}:${PORT}\r\n\r\n`),
  http: (proxyPort: number, host: string) =>
    exchange(
      proxyPort,
      `GET http://${host}:${PORT}/ HTTP/1.1\r\nHost: ${host}:${PORT}\r\nConnection: close\r\n\r\n`,
    ),
};

describe("egress proxy: internal IP literals are refused before any decision", () => {
  const asked: EgressRequest[] = [];
  const records: EgressRecord[] = [];
  const resolved: string[] = [];
  let proxyPort = 0;
  let proxy: EgressProxy | undefined;
  after(() => proxy?.close());

  before(async () => {
    proxy = new EgressProxy({
      decide: async (request) => {
        asked.push(request);
        return { allow: false, rule: "test-deny", reason: "refused by the test" };
      },
      log: pino({ level: "silent" }),
      onDecision: (record) => records.push(record),
      resolve: async (host) => {
        resolved.push(host);
        throw new Error("these tests resolve no name");
      },
    });
    proxyPort = ((await proxy.listen()) as AddressInfo).port;
  });

  it("every generated spelling parses to an internal address (the generator makes what it claims)", () => {
    for (const spelling of INTERNAL_SPELLINGS) {
      const parsed = parseHostPort(spelling, String(PORT));
      assert.ok(parsed.ok, spelling);
      assert.notEqual(parsed.destination.kind, "name", spelling);
      assert.equal(isInternalAddress(parsed.destination.host), true, spelling);
    }
  });

  for (const [way, send] of Object.entries(WAYS_IN)) {
    it(`${way}: every spelling of an internal address is refused with 403, no decision, an audit line`, async () => {
      for (const spelling of INTERNAL_SPELLINGS) {
        const before = { asked: asked.length, records: records.length };
        const { status, body } = await send(proxyPort, spelling);
        if (status === 400) {
          // Node's HTTP parser takes no raw non-ASCII in a request target: refused before the proxy sees it.
          assert.ok(/[^\x20-\x7e]/.test(spelling), `${way} ${spelling}: 400 only for a non-ASCII target`);
        } else {
          assert.equal(status, 403, `${way} ${spelling}`);
          assert.match(body, /is an internal address.*\(internal-address\)/, `${way} ${spelling}`);
          const record = records[before.records];
          assert.equal(record?.rule, "internal-address", `${way} ${spelling}`);
          assert.equal(record?.allow, false);
          assert.equal(record?.via, way);
          assert.equal(records.length, before.records + 1, `${way} ${spelling}: one audit line`);
        }
        assert.equal(asked.length, before.asked, `${way} ${spelling}: no decision, no dialog`);
      }
    });

    it(`${way}: a zone id is malformed, refused before any decision`, async () => {
      const before = asked.length;
      for (const spelling of ZONE_IDS) {
        assert.equal((await send(proxyPort, spelling)).status, 400, `${way} ${spelling}`);
      }
      assert.equal(asked.length, before);
    });

    it(`${way}: the same spellings of a test-only public address reach the decision`, async () => {
      for (const spelling of v4Spellings(PUBLIC_V4)) {
        const before = asked.length;
        const { status, body } = await send(proxyPort, spelling);
        assert.equal(status, 403, `${way} ${spelling}`);
        assert.match(body, /\(test-deny\)/, `${way} ${spelling}`);
        assert.equal(asked.length, before + 1, `${way} ${spelling}: decided on`);
        const host = asked.at(-1)?.destination.host;
        assert.ok(host === PUBLIC_V4 || host === "::ffff:cb00:7107", `${way} ${spelling} → ${host}`);
      }
      for (const v6 of ["2001:db8::7", "2606:4700::1111"]) {
        for (const spelling of v6Spellings(v6)) {
          const before = asked.length;
          assert.equal((await send(proxyPort, spelling)).status, 403, `${way} ${spelling}`);
          assert.equal(asked.length, before + 1, `${way} ${spelling}: decided on`);
          assert.equal(asked.at(-1)?.destination.host, v6);
        }
      }
    });
  }

  it("a name is decided on and never resolved unless allowed (no DNS query for a refused name)", async () => {
    for (const [way, send] of Object.entries(WAYS_IN)) {
      const before = asked.length;
      const { status } = await send(proxyPort, "metadata.test");
      assert.equal(status, 403, way);
      assert.equal(asked.length, before + 1, way);
      assert.equal(asked.at(-1)?.destination.host, "metadata.test");
    }
    assert.deepEqual(resolved, []);
  });
});
