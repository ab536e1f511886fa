// Issue 17's chain in the real image, link by link, in each launch mode: the tools (a detached process of the
// tools' user, in their Landlock domain, with an empty environment) plant modules where Node looks, flood the
// bridge before authenticating, hold what they can of its lock, squat its port once it is stopped by hand, and
// play the bridge to the person's own client. Each link must fail:
//   - health: the unauthenticated /v1/health says only ok or not ok; the HEALTHCHECK is healthy;
//   - planted modules: none is loaded by the bridge or Pi;
//   - the pre-auth floods: the bridge's RSS stays within +50 MB, failed proofs slow every further check;
//   - restart: the same command starts again although a tool holds what it could of the lock;
//   - squat: the person's client finds an impostor, reports it, and gives it nothing usable;
//   - port and lock: the squatter denies the same address (the bridge says so at once, before Pi starts) and
//     nothing more: a bridge on another port takes the state dir, and refuses what the squatter captured.
// Attack code is data (support/auth-chain-attacks.ts), run only inside the container; traffic stays on loopback
// (host networking, every listener on 127.0.0.1).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type Docker from "dockerode";
import { writeScriptedAgentDir } from "../../agent-runtime/dev/agent-dir.ts";
import { type ScriptedModel, startScriptedModel } from "../../agent-runtime/dev/scripted-model.ts";
import { landlockArgs, toolsDomain } from "../../agent-runtime/sandbox/landlock.ts";
import { BridgeClient, type BridgeConnectionError, type BridgeFrame } from "../../bridge/client.ts";
import { TestClient } from "../support/bridge.ts";
import {
  FLOOD_AUTH,
  FLOOD_MEMORY,
  PLANT_MODULES,
  SQUAT_LOCK,
  SQUAT_PORT,
} from "./support/auth-chain-attacks.ts";
import { docker, execIn, freePort, repoRoot, testedImage } from "./support/docker.ts";
import { toolScript } from "./support/harness.ts";

const IMAGE = testedImage("chat-ui-agent-runtime:auth-chain-test");
const SUPPORT = path.join(repoRoot, "tests", "image", "support");
const ATTACKS = {
  squat: SQUAT_PORT,
  lock: SQUAT_LOCK,
  flood: FLOOD_MEMORY,
  guess: FLOOD_AUTH,
  plant: PLANT_MODULES,
};
/** Where the tools' user may write (in their domain): the planted folders, NODE_PATH among them. */
const PLANT_FOLDERS = [
  "/home/agent/.node_modules",
  "/home/agent/.node_libraries",
  "/tmp/np",
  "/workspace/node_modules",
];
const MARKERS = "/tmp/planted-loaded";
const MiB = 1024;

interface Mode {
  key: string;
  name: string;
  /** docker run --user (undefined: the image's default user). */
  user: string | undefined;
  token: "env" | "file";
}

const MODES: Mode[] = [
  { key: "root", name: "root, --agent-user agent, token in a --token-file", user: "root", token: "file" },
  {
    key: "sbx",
    name: "the image's default user, started as sbx-server would (token in the environment)",
    user: undefined,
    token: "env",
  },
  { key: "user1000", name: "--user 1000 (token in the environment)", user: "1000", token: "env" },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(100);
  }
}

interface Job {
  pid: number | null;
  exitCode: number | null;
  signal: string | null;
  stderr: string;
}

interface Marker {
  name: string;
  uid: number;
  argv: string[];
}

/** What each link of the chain did, recorded (not asserted) so every row gets its own verdict. */
interface Chain {
  errors: string[];
  health?: { status: number; body: string; head: number; docker: string };
  plant?: { names: string[]; controlLoaded: boolean; markers: Marker[] };
  flood?: {
    baselineKiB: number;
    peakKiB: number;
    memory: unknown[];
    guesses: { started: number; results: { at: number; ms: number; code: number | string }[] };
    personMs: number;
  };
  restart?: { job: Job; listening: boolean; epochKept: boolean; lock: string };
  squat?: {
    status: string;
    capture: string[];
    failure: { kind: string; name: string; message: string } | undefined;
    commandRejected: boolean;
  };
  denial?: {
    job: Job;
    ms: number;
    otherPortListening: boolean;
    replayClose: number | undefined;
    lock: string;
  };
}

class Sandbox {
  readonly root: (command: string) => Promise<string>;
  private n = 0;
  readonly container: Docker.Container;
  readonly mode: Mode;
  private readonly sbx: { port: number; token: string };
  private readonly landlock: string[];

  constructor(
    container: Docker.Container,
    mode: Mode,
    sbx: { port: number; token: string },
    landlock: string[],
  ) {
    this.container = container;
    this.mode = mode;
    this.sbx = sbx;
    this.landlock = landlock;
    this.root = async (command) => {
      const r = await execIn(container, ["sh", "-c", command], "root");
      return r.stdout + r.stderr;
    };
  }

  /** Starts a bridge through the sbx stand-in, as chat-ui would through sbx-server. */
  async startBridge(token: string, port: number): Promise<string> {
    const id = `bridge-${++this.n}`;
    const argv = [
      "node",
      "/opt/chat-ui-agent/bridge.mjs",
      "--listen",
      `127.0.0.1:${port}`,
      "--cwd",
      "/workspace",
      "--agent-user",
      "agent",
      ...(this.mode.token === "file" ? ["--token-file", "/run/bridge-token"] : []),
      "--provider",
      "scripted",
      "--model",
      "scripted-model",
      "--no-session",
    ];
    const response = await fetch(`http://127.0.0.1:${this.sbx.port}/exec`, {
      method: "POST",
      headers: { "x-sandbox-token": this.sbx.token },
      body: JSON.stringify({
        id,
        argv,
        // A launcher whose NODE_PATH points where the tools write (and, under --user 1000, whose HOME is theirs).
        env: {
          NODE_PATH: "/tmp/np",
          ...(this.mode.token === "env" ? { CHAT_UI_AGENT_BRIDGE_TOKEN: token } : {}),
        },
        files:
          this.mode.token === "file"
            ? [{ path: "/run/bridge-token", content: token, mode: 0o600 }]
            : undefined,
      }),
    });
    assert.equal(response.status, 200, await response.text());
    return id;
  }

  async job(id: string): Promise<Job> {
    const response = await fetch(`http://127.0.0.1:${this.sbx.port}/jobs/${id}`, {
      headers: { "x-sandbox-token": this.sbx.token },
    });
    return (await response.json()) as Job;
  }

  async stop(id: string): Promise<Job> {
    const { pid } = await this.job(id);
    await this.root(`kill -TERM ${pid}`);
    return until(`${id} to exit`, 30_000, async () => {
      const job = await this.job(id);
      return job.exitCode !== null || job.signal !== null ? job : undefined;
    });
  }

  /** Runs an attack as the tools would: their uid, their Landlock domain, an empty environment. */
  async tools(attack: keyof typeof ATTACKS, args: string[], detached = false): Promise<string> {
    const argv = [
      "env",
      "-i",
      "PATH=/usr/local/bin:/usr/bin:/bin",
      "/opt/chat-ui-agent/landlock-exec",
      ...this.landlock,
      "--",
      "/usr/local/bin/node",
      `/attacks/${attack}.js`,
      ...args,
    ];
    if (!detached) {
      const r = await execIn(this.container, argv, "1000");
      return r.stdout + r.stderr;
    }
    // Its own session, outside the bridge's tree, outliving whatever started it.
    const line = argv.map((a) => `'${a}'`).join(" ");
    const r = await execIn(
      this.container,
      ["sh", "-c", `setsid -f ${line} > /tmp/chain/${attack}.out 2>&1 < /dev/null`],
      "1000",
    );
    return r.stdout + r.stderr;
  }

  async rssKiB(pid: number): Promise<number> {
    const text = await this.root(`grep VmRSS /proc/${pid}/status`);
    return Number(/VmRSS:\s+(\d+)/.exec(text)?.[1] ?? Number.NaN);
  }

  async dockerHealth(): Promise<string> {
    const info = await this.container.inspect();
    return (info.State as { Health?: { Status?: string } }).Health?.Status ?? "none";
  }
}

async function healthy(port: number): Promise<boolean> {
  const response = await fetch(`http://127.0.0.1:${port}/v1/health`);
  await response.text();
  return response.status === 200;
}

/** Runs the whole chain in one container of `mode`, recording each link. */
async function runChain(mode: Mode, model: ScriptedModel, work: string, cleanups: (() => Promise<void>)[]) {
  const chain: Chain = { errors: [] };
  // Each link is bounded: on today's code a step can wait forever (its client reconnects forever to nothing).
  const step = async (name: string, body: () => Promise<void>, ms = 4 * 60_000) => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        body(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no result within ${ms} ms`)), ms);
        }),
      ]);
    } catch (error) {
      chain.errors.push(
        `${name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
    } finally {
      clearTimeout(timer);
    }
  };
  const seed = path.join(work, "pi-seed");
  mkdirSync(seed);
  await writeScriptedAgentDir(model.baseUrl, seed);
  chmodSync(seed, 0o755);
  chmodSync(path.join(seed, "models.json"), 0o644);
  const [port, otherPort, sbxPort] = [await freePort(), await freePort(), await freePort()];
  const token = `bridge-token-${randomBytes(16).toString("hex")}`;
  const sbx = { port: sbxPort, token: randomBytes(16).toString("hex") };
  const container = await docker.createContainer({
    Image: IMAGE,
    ...(mode.user ? { User: mode.user } : {}),
    Cmd: ["node", "/sbx/sbx-standin.mjs"],
    Env: [
      `PORT=${sbxPort}`,
      "HOST=127.0.0.1",
      `SBX_TOKEN=${sbx.token}`,
      "PI_CODING_AGENT_DIR=/pi-seed",
      "PI_OFFLINE=1",
    ],
    // The image's own HEALTHCHECK (command, start period, retries), checked every second instead of every 30 s.
    Healthcheck: { Interval: 1e9 },
    HostConfig: {
      NetworkMode: "host",
      Binds: [`${SUPPORT}:/sbx:ro`, `${path.join(work, "attacks")}:/attacks:ro`, `${seed}:/pi-seed:ro`],
    },
  });
  cleanups.push(() => container.remove({ force: true }));
  await container.start();
  await until("the sbx stand-in", 30_000, async () =>
    (await fetch(`http://127.0.0.1:${sbxPort}/`)).ok ? true : undefined,
  );
  const abi = JSON.parse(
    (await execIn(container, ["/opt/chat-ui-agent/landlock-exec", "--probe"])).stdout,
  ).abi;
  const domain = toolsDomain({
    workspace: "/workspace",
    toolHome: "/home/agent",
    runtime: ["/opt/chat-ui-agent", "/usr/local/bin/node"],
    extraRead: ["/attacks"],
  });
  const box = new Sandbox(container, mode, sbx, landlockArgs(domain, abi));
  await box.root("mkdir -p /tmp/chain && chown 1000:1000 /tmp/chain");

  // Link 5 (issue 17's "code in the bridge"): modules planted wherever Node would look, before the bridge starts.
  await step("plant", async () => {
    const out = await box.tools("plant", [PLANT_FOLDERS.join(":"), MARKERS, "/tmp/chain/planted.json"]);
    const planted = JSON.parse(await box.root("cat /tmp/chain/planted.json")) as { names: string[] };
    // The plants work: a plain node with that HOME and NODE_PATH loads one.
    await execIn(
      container,
      [
        "env",
        "-i",
        "HOME=/home/agent",
        "NODE_PATH=/tmp/np",
        "PATH=/usr/local/bin:/usr/bin",
        "node",
        "-e",
        "require('bufferutil')",
      ],
      "1000",
    );
    const controlLoaded = (await box.root(`ls ${MARKERS}`)).includes("bufferutil");
    await box.root(`rm -f ${MARKERS}/*`);
    chain.plant = { names: planted.names, controlLoaded, markers: [] };
    if (planted.names.length === 0) throw new Error(`nothing planted: ${out}`);
  });

  const first = await box.startBridge(token, port);
  let bridgePid = 0;
  let person: BridgeClient | undefined;
  const frames: BridgeFrame[] = [];
  const newPerson = async () => {
    const client = new BridgeClient({
      url: `ws://127.0.0.1:${port}/v1/rpc`,
      token,
      clientId: "the-person",
      backoff: { initialMs: 50, maxMs: 250 },
      challengeTimeoutMs: 5_000,
    });
    client.on("frame", (f) => frames.push(f));
    client.on("failure", () => {});
    cleanups.push(async () => client.close());
    await client.connect();
    return client;
  };
  const settled = (from: number) =>
    until("agent_settled", 90_000, async () =>
      frames.slice(from).some((f) => f.type === "agent_settled") ? true : undefined,
    );

  // Link 6 (issue 17's leak): what health says without the token.
  await step("health", async () => {
    await until("the bridge to be healthy", 90_000, async () => ((await healthy(port)) ? true : undefined));
    bridgePid = (await box.job(first)).pid ?? 0;
    const response = await fetch(`http://127.0.0.1:${port}/v1/health`);
    const head = await fetch(`http://127.0.0.1:${port}/v1/health`, { method: "HEAD" });
    // Checked every second: healthy once a check passes (a check during the bridge's start may have failed).
    const dockerHealth = await until("docker's health status", 30_000, async () =>
      (await box.dockerHealth()) === "healthy" ? "healthy" : undefined,
    ).catch(() => box.dockerHealth());
    chain.health = {
      status: response.status,
      body: await response.text(),
      head: head.status,
      docker: dockerHealth,
    };
  });

  // The person attaches and works: Pi and the tools run (and load what they load).
  await step("person", async () => {
    person = await newPerson();
    await person.setPolicy("auto");
    const from = frames.length;
    await person.prompt("BASH echo hello from the tools");
    await settled(from);
  });

  // Link 4: floods before authentication, measured on the bridge's RSS.
  await step("flood", async () => {
    await sleep(1_000);
    const baselineKiB = await box.rssKiB(bridgePid);
    let peakKiB = baselineKiB;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peakKiB = Math.max(peakKiB, await box.rssKiB(bridgePid).catch(() => 0));
        await sleep(200);
      }
    })();
    const memory: unknown[] = [];
    for (const count of [8, 24]) {
      await box.tools("flood", [String(port), String(count), "6", `/tmp/chain/flood-${count}.json`]);
      memory.push({ count, ...JSON.parse(await box.root(`cat /tmp/chain/flood-${count}.json`)) });
    }
    // Wrong proofs from 8 connections at once for 10 s; meanwhile the person connects again.
    const guessing = box.tools("guess", [String(port), "10", "8", "/tmp/chain/guesses.json"]);
    await sleep(3_000);
    const started = Date.now();
    const again = await newPerson();
    const personMs = Date.now() - started;
    person?.close();
    person = again;
    await guessing;
    sampling = false;
    await sampler;
    const guesses = JSON.parse(await box.root("cat /tmp/chain/guesses.json"));
    chain.flood = { baselineKiB, peakKiB, memory, guesses, personMs };
  });

  // Link 3: a tool holds what it can of the lock; the bridge is stopped by hand and started again, same command.
  await step("restart", async () => {
    await box.tools(
      "lock",
      [
        mode.user === "1000" ? "/var/tmp/chat-ui-agent-1000" : "/var/lib/chat-ui-agent",
        "/tmp/chain/lock.log",
      ],
      true,
    );
    await until("the lock squatter", 20_000, async () =>
      (await box.root("cat /tmp/chain/lock.log 2>/dev/null")).includes("LOCK:READY") ? true : undefined,
    );
    const epoch = person?.bridgeEpoch;
    await box.stop(first);
    // Whatever name the bridge held is the squatter's now (today: the abstract socket, once the bridge let it go).
    await until("the squatter to take what it can", 5_000, async () =>
      (await box.root("cat /tmp/chain/lock.log")).includes("ABSTRACT:BOUND") ? true : undefined,
    ).catch(() => {});
    const second = await box.startBridge(token, port);
    const listening = await until("the restarted bridge", 90_000, async () => {
      const job = await box.job(second);
      if (job.exitCode !== null) return false;
      return (await healthy(port)) ? true : undefined;
    }).catch(() => false);
    let epochKept = false;
    if (listening) {
      await until("the person's client to resume", 30_000, async () =>
        person?.state === "live" ? true : undefined,
      );
      epochKept = person?.bridgeEpoch === epoch;
      bridgePid = (await box.job(second)).pid ?? 0;
    }
    chain.restart = {
      job: await box.job(second),
      listening,
      epochKept,
      lock: await box.root("cat /tmp/chain/lock.log"),
    };

    // Link 2: a squatter waits for the port; the bridge is stopped by hand (if the restart got it running); the
    // person's client, reconnecting by itself, comes back to whatever holds the port.
    await box.tools("squat", [String(port), "/tmp/chain/capture.ndjson", "/tmp/chain/squat.log"], true);
    await sleep(500);
    const failure = new Promise<BridgeConnectionError>((resolve) => person?.once("failure", resolve));
    if (listening) await box.stop(second);
    // The person keeps working during the outage: none of it may reach whatever answers next.
    const command = person?.prompt("BASH echo while the bridge is away");
    const commandRejected = command
      ? command.then(
          () => false,
          () => true,
        )
      : Promise.resolve(false);
    const failed = await Promise.race([failure, sleep(30_000).then(() => undefined)]);
    await sleep(500);
    chain.squat = {
      status: await box.root("cat /tmp/chain/squat.log 2>/dev/null"),
      capture: (await box.root("cat /tmp/chain/capture.ndjson 2>/dev/null")).split("\n").filter(Boolean),
      failure: failed ? { kind: failed.kind, name: failed.name, message: failed.message } : undefined,
      commandRejected: await Promise.race([commandRejected, sleep(1_000).then(() => false)]),
    };

    // Link 1: with the port squatted, the same command is refused at once; another port takes the state dir.
    const startedAt = Date.now();
    const third = await box.startBridge(token, port);
    const job = await until("the third bridge to exit", 30_000, async () => {
      const j = await box.job(third);
      return j.exitCode !== null || j.signal !== null ? j : undefined;
    });
    const ms = Date.now() - startedAt;
    const fourth = await box.startBridge(token, otherPort);
    const otherPortListening = await until("a bridge on another port", 90_000, async () => {
      if ((await box.job(fourth)).exitCode !== null) return false;
      return (await healthy(otherPort)) ? true : undefined;
    }).catch(() => false);
    let replayClose: number | undefined;
    const hello = chain.squat.capture.find((line) => line.includes('"hello"'));
    if (otherPortListening && hello) {
      // What the squatter captured, replayed to the real bridge by whoever holds it.
      const thief = await TestClient.open(`ws://127.0.0.1:${otherPort}/v1/rpc`);
      await thief.challenge();
      thief.send(hello);
      replayClose = (await thief.closed).code;
    }
    chain.denial = {
      job,
      ms,
      otherPortListening,
      replayClose,
      lock: await box.root("cat /tmp/chain/lock.log"),
    };
  });

  await step("markers", async () => {
    const listing = await box.root(`for f in ${MARKERS}/*; do [ -f "$f" ] && cat "$f" && echo; done`);
    const markers = listing
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Marker);
    if (chain.plant) chain.plant.markers = markers;
  });
  return chain;
}

for (const mode of MODES) {
  describe(`issue 17's chain in the image, ${mode.name}`, { timeout: 20 * 60_000 }, () => {
    let chain: Chain = { errors: ["the chain did not run"] };
    const cleanups: (() => Promise<void>)[] = [];
    let work = "";
    let model: ScriptedModel | undefined;
    before(
      async () => {
        work = mkdtempSync(path.join(tmpdir(), `auth-chain-${mode.key}-`));
        mkdirSync(path.join(work, "attacks"));
        for (const [name, source] of Object.entries(ATTACKS))
          writeFileSync(path.join(work, "attacks", `${name}.js`), source);
        chmodSync(work, 0o755);
        chmodSync(path.join(work, "attacks"), 0o755);
        model = await startScriptedModel({ script: toolScript });
        chain = await runChain(mode, model, work, cleanups);
      },
      { timeout: 15 * 60_000 },
    );
    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
      await model?.close();
      if (work) rmSync(work, { recursive: true, force: true });
    });
    const seen = <K extends keyof Chain>(key: K): NonNullable<Chain[K]> => {
      const value = chain[key];
      assert.ok(value, `not observed:\n${chain.errors.join("\n")}`);
      return value as NonNullable<Chain[K]>;
    };

    it("health without the token says only ok or not ok; the image's HEALTHCHECK is healthy", () => {
      const health = seen("health");
      assert.equal(health.status, 200);
      assert.equal(
        health.body,
        '{"status":"ok"}',
        "no attached flag, restarts, state or paths without the token",
      );
      assert.equal(health.head, 200);
      assert.equal(health.docker, "healthy", "the HEALTHCHECK with sbx-server's stand-in as the command");
    });

    it("modules planted in every folder Node searches are loaded by neither the bridge nor Pi", (t) => {
      const plant = seen("plant");
      t.diagnostic(
        `${plant.names.length} names planted in ${PLANT_FOLDERS.length} folders; loaded: ${plant.markers.map((m) => `${m.name} by ${m.argv[1]}`).join(", ") || "none"}`,
      );
      assert.ok(plant.names.includes("bufferutil"), plant.names.join(", "));
      assert.equal(
        plant.controlLoaded,
        true,
        "a plain node with that HOME and NODE_PATH loads a planted module",
      );
      assert.ok(seen("health"));
      // The tool executor runs as the tools' own principal: what it loads from their HOME is theirs already.
      const trusted = plant.markers.filter((m) => !m.argv.some((a) => a.includes("tool-executor.mjs")));
      assert.deepEqual(trusted, [], `loaded by a trusted process: ${JSON.stringify(trusted)}`);
      assert.deepEqual(
        chain.errors.filter((e) => e.startsWith("person")),
        [],
        "Pi and the tools ran",
      );
    });

    it("floods before authentication: RSS within +50 MB, and failed proofs slow every further check", (t) => {
      const flood = seen("flood");
      const growthMiB = (flood.peakKiB - flood.baselineKiB) / MiB;
      t.diagnostic(
        `bridge RSS ${(flood.baselineKiB / MiB).toFixed(1)} MiB → peak ${(flood.peakKiB / MiB).toFixed(1)} MiB (+${growthMiB.toFixed(1)}) under 8 and 24 unfinished 31 MiB messages and the guessing; ${JSON.stringify(flood.memory)}`,
      );
      assert.ok(growthMiB <= 50, `the bridge grew ${growthMiB.toFixed(1)} MiB`);
      const answered = flood.guesses.results.filter((r) => r.at <= 10_000 && r.code !== "WELCOME");
      t.diagnostic(
        `wrong proofs: ${flood.guesses.started} started, ${answered.length} answered in 10 s; answer times (ms): ${answered.map((r) => r.ms).join(" ")}`,
      );
      assert.equal(flood.guesses.results.filter((r) => r.code === "WELCOME").length, 0);
      assert.ok(
        answered.length <= 40,
        `${answered.length} guesses answered in 10 s (issue 17: 200 in 0.38 s)`,
      );
      assert.ok(Math.max(...flood.guesses.results.map((r) => r.ms)) >= 5_000, "the delay grew past 5 s");
      t.diagnostic(`the person connected during the guessing in ${flood.personMs} ms`);
      assert.ok(flood.personMs <= 20_000, `the person got in after ${flood.personMs} ms during the flood`);
    });

    it("a restart with the same command is not blocked by what a tool holds of the lock", (t) => {
      const restart = seen("restart");
      t.diagnostic(`what the tools took: ${restart.lock.trim().split("\n").join("; ")}`);
      assert.match(restart.lock, /LOCK:READY/);
      assert.doesNotMatch(restart.lock, /LOCKFILE:WRITTEN/, "the tools wrote into the private state dir");
      assert.equal(restart.listening, true, `the restart failed: ${restart.job.stderr.slice(-2000)}`);
      assert.equal(restart.epochKept, true, "the person resumed on the same epoch");
    });

    it("the person's client reconnecting to a squatter: an impostor, reported; nothing usable leaks", () => {
      const squat = seen("squat");
      assert.match(squat.status, /PORT:TAKEN/);
      assert.match(squat.status, /CLIENT:CONNECTED/, "the person's client did reach the squatter");
      assert.doesNotMatch(squat.status, /TOKEN:CAPTURED/);
      assert.doesNotMatch(
        squat.status,
        /COMMAND:RECEIVED/,
        "a command, an answer or an ack reached the squatter",
      );
      assert.ok(squat.failure, "the client reported no failure");
      assert.equal(squat.failure.kind, "impostor", squat.failure.message);
      assert.equal(squat.failure.name, "BridgeImpostorError");
      assert.equal(squat.commandRejected, true, "the command issued meanwhile was not left pending");
      assert.ok(squat.capture.length >= 1 && squat.capture.length <= 2, squat.capture.join("\n"));
      for (const line of squat.capture) {
        const { resume: _resume, ...hello } = JSON.parse(line) as Record<string, unknown>;
        assert.deepEqual(Object.keys(hello).sort(), ["clientId", "nonce", "proof", "protocol", "type"]);
      }
      const denial = seen("denial");
      assert.equal(denial.replayClose, 4001, "the captured hello replayed to the real bridge");
    });

    it("a squatter on the port denies that address and nothing more: the lock stays the bridge's", (t) => {
      const denial = seen("denial");
      t.diagnostic(`same command with the port squatted: exit ${denial.job.exitCode} after ${denial.ms} ms`);
      assert.equal(denial.job.exitCode, 2, denial.job.stderr.slice(-2000));
      assert.match(denial.job.stderr.split("\n")[0] ?? "", /already in use/);
      assert.doesNotMatch(
        denial.job.stderr,
        /"msg":"Pi started"/,
        "Pi was started before the address was bound",
      );
      assert.equal(denial.otherPortListening, true, "a bridge on another port could not take the state dir");
      assert.doesNotMatch(denial.lock, /LOCKFILE:WRITTEN/);
    });
  });
}

describe("the image's HEALTHCHECK in a Space (the default command, the health server)", {
  timeout: 10 * 60_000,
}, () => {
  for (const user of [undefined, "1000"]) {
    it(`is healthy as ${user ?? "the default user"}`, async () => {
      const port = await freePort();
      const container = await docker.createContainer({
        Image: IMAGE,
        ...(user ? { User: user } : {}),
        Env: [`PORT=${port}`, "HOST=127.0.0.1"],
        // The image's own check, its start period and retries; only the interval is shortened.
        Healthcheck: { Interval: 1e9 },
        HostConfig: { NetworkMode: "host" },
      });
      try {
        await container.start();
        const status = async () =>
          ((await container.inspect()).State as { Health?: { Status?: string } }).Health?.Status ?? "none";
        const seen = await until("docker's health status", 60_000, async () =>
          (await status()) === "healthy" ? "healthy" : undefined,
        ).catch(status);
        assert.equal(seen, "healthy");
      } finally {
        await container.remove({ force: true });
      }
    });
  }
});
