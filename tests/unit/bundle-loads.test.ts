// The bridge never loads code from a place the tools can write: everything it runs is in its bundle, so at run
// time it asks Node only for builtins and its own chunks. An optional `require` of an uninstalled package (ws's
// bufferutil) would make Node search $HOME/.node_modules, $HOME/.node_libraries and NODE_PATH; the build settles
// those (scripts/build.mjs), and this reads the built files to prove nothing else is left.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { test } from "node:test";
import { DATE_FNS_FOR_PINO_ROLL, outDir, SETTLED_OPTIONAL_MODULES } from "../../scripts/build.mjs";

const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** The files the bridge process evaluates: bridge.mjs and the chunks it imports. */
function bridgeFiles(): string[] {
  const chunks = path.join(outDir, "chunks");
  assert.ok(existsSync(path.join(outDir, "bridge.mjs")), "build first: npm run build");
  return [
    path.join(outDir, "bridge.mjs"),
    ...readdirSync(chunks).map((name) => path.join(chunks, name)),
    // The operator's client loads ws too (it runs with the operator's HOME).
    path.join(outDir, "chat-ui-agent.mjs"),
  ];
}

test("the built bridge requires only Node builtins, imports only builtins and its own chunks", () => {
  for (const file of bridgeFiles()) {
    const text = readFileSync(file, "utf8");
    const name = path.relative(outDir, file);
    for (const match of text.matchAll(/\b(?:__require|require)\(\s*(["'`])([^"'`]*)\1\s*\)/g)) {
      assert.ok(builtins.has(match[2] ?? ""), `${name} requires ${match[2]} at run time`);
    }
    const dynamic = [...text.matchAll(/\b(?:__require|require)\(\s*[^"'`\s)]/g)].map((m) => m[0]);
    assert.deepEqual(dynamic, [], `${name} requires a computed name`);
    for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*)(["'])([^"']+)\1/g)) {
      const specifier = match[2] ?? "";
      assert.ok(
        builtins.has(specifier) || specifier.startsWith("./"),
        `${name} imports ${specifier}, which Node would look up at run time`,
      );
    }
    for (const addon of SETTLED_OPTIONAL_MODULES)
      assert.ok(!text.includes(`"${addon}"`), `${name} still names ${addon}`);
  }
});

test("what bridge.mjs loads before it starts Pi holds zod/mini, not the full zod (classic schemas, every locale)", () => {
  const entry = readFileSync(path.join(outDir, "bridge.mjs"), "utf8");
  const first = [...entry.matchAll(/\bfrom\s*"\.\/(chunks\/[^"]+)"/g)].map((m) =>
    path.join(outDir, m[1] ?? ""),
  );
  assert.ok(first.length > 0, "bridge.mjs imports its shared chunk statically");
  let bytes = Buffer.byteLength(entry);
  for (const file of first) {
    const text = readFileSync(file, "utf8");
    bytes += Buffer.byteLength(text);
    assert.deepEqual(text.match(/\$constructor\("Zod(?!Mini)\w*"/g) ?? [], [], `${file} holds the full zod`);
  }
  // The full zod with its locales is about 700 KB; all of it loaded before Pi starts was about 40 ms.
  assert.ok(bytes < 300_000, `bridge.mjs loads ${bytes} bytes before it starts Pi`);
});

test("the bridge's log file (pino-roll) gets only the date-fns functions it takes, not all of date-fns", () => {
  assert.deepEqual(DATE_FNS_FOR_PINO_ROLL, ["format", "addDays", "addHours", "parse", "isValid"]);
  for (const file of bridgeFiles().filter((f) => !f.endsWith("chat-ui-agent.mjs"))) {
    const text = readFileSync(file, "utf8");
    // Functions of date-fns that pino-roll never uses (the whole index would bring them).
    for (const unused of ["eachWeekendOfInterval", "formatDistanceStrict", "differenceInBusinessDays"])
      assert.ok(!text.includes(unused), `${path.relative(outDir, file)} holds date-fns's ${unused}`);
  }
});

test("zod's locales are English alone in every bundle (nothing uses another; each was 360 KB of every bundle)", () => {
  const bundles = [
    ...readdirSync(outDir).filter((name) => name.endsWith(".mjs")),
    ...readdirSync(path.join(outDir, "chunks")).map((name) => path.join("chunks", name)),
  ];
  for (const name of bundles) {
    const text = readFileSync(path.join(outDir, name), "utf8");
    // zod's Dutch and Indonesian messages (locales/nl.js, locales/id.js: ASCII, as esbuild writes them); English stays.
    for (const foreign of ["Ongeldige invoer", "Input tidak valid"])
      assert.ok(!text.includes(foreign), `${name} holds zod's locale with ${foreign}`);
  }
});
