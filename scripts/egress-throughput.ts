// The egress proxy's throughput for bench:tools: bytes from a loopback origin to a client, through a CONNECT
// tunnel of the bridge's EgressProxy (in this process, as in the bridge), against the same transfer straight
// from the origin, measured in the same run and interleaved. The origin and the client are another Node process,
// so the proxy's event loop is the only thing this process runs (as in the bridge).
import { spawn } from "node:child_process";
import pino from "pino";
import { EgressProxy } from "../bridge/egress/proxy.ts";

const MIB = 1024 * 1024;

/** The child: an origin that sends `bytes` per connection, and a client that reads them (direct or tunnelled). */
const CHILD = `
const net = require("net");
const [bytes, proxyPort, rounds] = process.argv.slice(1).map(Number);
const block = Buffer.alloc(1024 * 1024, 120);
const origin = net.createServer((s) => {
  let left = bytes;
  const pump = () => {
    while (left > 0) {
      left -= block.length;
      if (!s.write(block)) return s.once("drain", pump);
    }
    s.end();
  };
  pump();
}).listen(0, "127.0.0.1", async () => {
  const port = origin.address().port;
  const read = (socket, first) => new Promise((resolve, reject) => {
    let got = first ? first.length : 0;
    const start = process.hrtime.bigint();
    socket.on("data", (c) => { got += c.length; });
    socket.on("end", () => resolve({ got, ns: Number(process.hrtime.bigint() - start) }));
    socket.on("error", reject);
  });
  const direct = () => read(net.connect(port, "127.0.0.1"));
  const tunnelled = () => new Promise((resolve, reject) => {
    const s = net.connect(proxyPort, "127.0.0.1", () => s.write("CONNECT origin.test:" + port + " HTTP/1.1\\r\\nHost: origin.test:" + port + "\\r\\n\\r\\n"));
    let head = Buffer.alloc(0);
    const onHead = (c) => {
      head = Buffer.concat([head, c]);
      const at = head.indexOf("\\r\\n\\r\\n");
      if (at < 0) return;
      s.off("data", onHead);
      if (!head.subarray(0, 12).toString().includes("200")) return reject(new Error(head.toString()));
      read(s, head.subarray(at + 4)).then(resolve, reject);
    };
    s.on("data", onHead);
    s.on("error", reject);
  });
  const out = { direct: [], proxied: [] };
  for (let i = 0; i < rounds; i++) {
    out.direct.push(await direct());
    out.proxied.push(await tunnelled());
  }
  process.stdout.write(JSON.stringify(out));
  origin.close();
});
`;

export interface ThroughputFigure {
  bytes_per_transfer: number;
  rounds: number;
  direct_mb_s: number;
  proxied_mb_s: number;
  ratio_proxied_over_direct: number;
  target_mb_s: number;
  met: boolean;
}

export async function egressProxyThroughput(options: {
  node: string;
  megabytes?: number;
  rounds?: number;
}): Promise<ThroughputFigure> {
  const bytes = (options.megabytes ?? 256) * MIB;
  const rounds = options.rounds ?? 5;
  const proxy = new EgressProxy({
    decide: async () => ({ allow: true, rule: "bench", reason: "bench" }),
    log: pino({ level: "silent" }),
    resolve: async () => ["127.0.0.1"],
    allowInternal: (address) => address === "127.0.0.1",
  });
  const { port } = await proxy.listen();
  try {
    const child = spawn(options.node, ["-e", CHILD, String(bytes), String(port), String(rounds)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let text = "";
    child.stdout.on("data", (c: Buffer) => {
      text += c.toString("utf8");
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    if (code !== 0) throw new Error(`the throughput child exited with ${code}`);
    const out = JSON.parse(text) as Record<"direct" | "proxied", { got: number; ns: number }[]>;
    // The median transfer of each kind, in MB/s (10^6 bytes).
    const rate = (runs: { got: number; ns: number }[]) => {
      for (const run of runs)
        if (run.got < bytes) throw new Error(`a transfer got ${run.got} of ${bytes} bytes`);
      const sorted = runs.map((r) => r.got / 1e6 / (r.ns / 1e9)).sort((a, b) => a - b);
      return Math.round((sorted[Math.floor(sorted.length / 2)] ?? 0) * 10) / 10;
    };
    const direct = rate(out.direct);
    const proxied = rate(out.proxied);
    return {
      bytes_per_transfer: bytes,
      rounds,
      direct_mb_s: direct,
      proxied_mb_s: proxied,
      ratio_proxied_over_direct: Math.round((proxied / direct) * 1000) / 1000,
      target_mb_s: 100,
      met: proxied >= 100,
    };
  } finally {
    await proxy.close();
  }
}
