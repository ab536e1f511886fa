// The typed client installs on its own: `npm pack build/lib` (after npm run build), installed into an empty
// project from the tarball (its two dependencies from npm's cache or the npm registry), loads there, and a small
// strict TypeScript program type-checks against it, its Pi events narrowed precisely.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { CLIENT_PACKAGE, libDir } from "../../scripts/build-client.mjs";
import { root } from "../support/bridge.ts";
import { tempDir } from "../support/workspace.ts";

const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");

/** npm, quiet and without network chatter it does not need (packages come from its cache when they are there). */
function npm(args: string[], cwd: string): string {
  return execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, npm_config_update_notifier: "false" },
  });
}

const CONSUMER = `// A chat-ui-like consumer of the packed client.
import {
  BridgeClient,
  isPiEvent,
  type PiEventFrame,
  type PromptOutcome,
  PromptError,
} from "${CLIENT_PACKAGE}";

const client = new BridgeClient({ url: "ws://127.0.0.1:1/v1/rpc", token: "a-token-of-enough-length" });

client.on("piEvent", (event: PiEventFrame) => {
  if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") {
    const delta: string = event.assistantMessageEvent.delta;
    void delta;
  }
  if (event.type === "tool_execution_end") {
    const failed: boolean = event.isError;
    // @ts-expect-error a tool's end carries no text delta: the types are precise, not unknown
    void event.delta;
    void failed;
  }
});
client.on("frame", (frame) => {
  if (isPiEvent(frame) && frame.type === "agent_end") {
    const willRetry: boolean = frame.willRetry;
    void willRetry;
  }
});

export async function ask(text: string): Promise<string> {
  try {
    const outcome: PromptOutcome = await client.promptAndWait(text, { timeoutMs: 60_000 });
    const last = outcome.messages.at(-1);
    return last?.role === "assistant" ? last.content.map((c) => (c.type === "text" ? c.text : "")).join("") : "";
  } catch (error) {
    if (error instanceof PromptError) return \`failed: \${error.message} after \${error.events.length} events\`;
    throw error;
  }
}
`;

test("npm pack of the client: its own manifest, no install script, no Pi, only what it imports", async (t) => {
  const manifest = JSON.parse(readFileSync(path.join(libDir, "package.json"), "utf8")) as Record<
    string,
    unknown
  >;
  assert.equal(manifest.name, CLIENT_PACKAGE);
  assert.equal(manifest.scripts, undefined, "no install script of any kind");
  assert.deepEqual(Object.keys(manifest.dependencies as object), ["ws", "zod"]);
  const out = await tempDir(t, "client-pack-");
  const packed = JSON.parse(npm(["pack", libDir, "--pack-destination", out, "--json"], root)) as {
    filename: string;
    size: number;
    files: { path: string }[];
  }[];
  const files = (packed[0]?.files ?? []).map((f) => f.path).sort();
  assert.ok(
    files.includes("client.mjs") && files.includes("package.json") && files.includes("LICENSE"),
    `${files}`,
  );
  assert.ok(files.includes("types/bridge/client.d.ts") && files.includes("types/bridge/pi-events.d.ts"));
  for (const file of files)
    assert.match(file, /^(client\.mjs|package\.json|LICENSE|types\/.*\.d\.ts)$/, file);
  // The whole runtime pack was 11 MB; the client alone is a few dozen KB.
  assert.ok((packed[0]?.size ?? Infinity) < 200_000, `packed size ${packed[0]?.size}`);
  t.diagnostic(`packed ${packed[0]?.filename}: ${packed[0]?.size} bytes, ${files.length} files`);

  // An empty project installs the tarball: its dependencies only, nothing of Pi.
  const project = await tempDir(t, "client-consumer-");
  await writeFile(
    path.join(project, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  );
  npm(["install", "--prefer-offline", path.join(out, packed[0]?.filename ?? "")], project);
  const installed = readdirSync(path.join(project, "node_modules")).sort();
  assert.ok(
    installed.includes(CLIENT_PACKAGE) && installed.includes("ws") && installed.includes("zod"),
    `${installed}`,
  );
  assert.equal(
    existsSync(path.join(project, "node_modules", "@earendil-works")),
    false,
    "no Pi was installed",
  );

  // It loads by its name…
  const loaded = spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const m = await import("${CLIENT_PACKAGE}"); console.log(typeof m.BridgeClient, m.PI_EVENT_TYPES.length)`,
    ],
    { cwd: project, encoding: "utf8" },
  );
  assert.equal(loaded.status, 0, loaded.stderr);
  assert.match(loaded.stdout, /^function \d+\n$/);

  // …and a strict NodeNext program type-checks against its declarations (with @ts-expect-error proving precision).
  await writeFile(path.join(project, "consumer.mts"), CONSUMER);
  await writeFile(
    path.join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        target: "ES2023",
        noEmit: true,
        skipLibCheck: false,
        types: ["node"],
        typeRoots: [path.join(root, "node_modules", "@types")],
      },
      files: ["consumer.mts"],
    }),
  );
  const checked = spawnSync(process.execPath, [tsc, "-p", path.join(project, "tsconfig.json")], {
    cwd: project,
    encoding: "utf8",
  });
  assert.equal(checked.status, 0, `${checked.stdout}${checked.stderr}`);
  // The check can fail: a wrong field is an error.
  await writeFile(
    path.join(project, "consumer.mts"),
    `${CONSUMER}\nexport const wrong: number = client.clientId;\n`,
  );
  const wrong = spawnSync(process.execPath, [tsc, "-p", path.join(project, "tsconfig.json")], {
    cwd: project,
    encoding: "utf8",
  });
  assert.notEqual(wrong.status, 0);
  assert.match(wrong.stdout, /consumer\.mts.*TS2322/);
});
