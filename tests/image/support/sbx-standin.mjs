// A stand-in for sbx-server (HF's sandbox HTTP server), for the image tests: run as the container's command, it
// serves HTTP on $PORT and starts what it is asked to (here: the bridge, with its token in the environment),
// discarding the child's stdout. Unlike sbx-server it keeps the tail of each child's stderr and its exit status,
// so a test can read them. Requests need its own token (X-Sandbox-Token), which it takes out of the environment
// its children get. Plain Node, no dependencies.
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";

const token = process.env.SBX_TOKEN ?? "";
delete process.env.SBX_TOKEN;
const jobs = new Map();

function run({ id, argv, env, files }) {
  for (const file of files ?? []) {
    mkdirSync(path.dirname(file.path), { recursive: true });
    writeFileSync(file.path, file.content, { mode: file.mode ?? 0o600 });
  }
  const child = spawn(argv[0], argv.slice(1), {
    cwd: "/workspace",
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const job = { pid: child.pid ?? null, exitCode: null, signal: null, stderr: "" };
  child.stderr.on("data", (chunk) => {
    job.stderr = (job.stderr + chunk.toString("utf8")).slice(-64 * 1024);
  });
  child.on("error", (err) => {
    job.stderr += `spawn failed: ${err.message}\n`;
    job.exitCode = -1;
  });
  child.on("close", (code, signal) => {
    job.exitCode = code;
    job.signal = signal;
  });
  jobs.set(id, job);
  return job;
}

const server = createServer((req, res) => {
  const reply = (status, body) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  if (req.headers["x-sandbox-token"] !== token || token === "") {
    // Like any HTTP server it answers every path; only the token opens the job API.
    reply(req.url === "/" ? 200 : 401, { server: "sbx stand-in" });
    return;
  }
  if (req.method === "POST" && req.url === "/exec") {
    let body = "";
    req.on("data", (d) => {
      body += d;
    });
    req.on("end", () => {
      const job = run(JSON.parse(body));
      reply(200, { pid: job.pid });
    });
    return;
  }
  const match = /^\/jobs\/([\w-]+)$/.exec(req.url ?? "");
  const job = match ? jobs.get(match[1]) : undefined;
  if (job) reply(200, job);
  else reply(404, { error: "no such job" });
});
server.listen(Number(process.env.PORT ?? 7860), process.env.HOST ?? "127.0.0.1");
