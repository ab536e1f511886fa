// Pi and every @earendil-works/pi-* package are pinned to exactly 0.84.2, in package.json and the lockfile.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

const root = path.resolve(import.meta.dirname, "..", "..");
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8"));
const PI = "0.84.2";

test("package.json pins Pi exactly and overrides every pi-* package", () => {
  assert.equal(pkg.dependencies["@earendil-works/pi-coding-agent"], PI);
  for (const [name, version] of Object.entries(pkg.overrides)) {
    if (name.startsWith("@earendil-works/pi-")) assert.equal(version, PI, name);
  }
  assert.equal(pkg.engines.node, ">=22.19");
});

test("the lockfile holds 0.84.2 for every @earendil-works/pi-* package, and overrides cover them all", () => {
  const piEntries = Object.entries(lock.packages as Record<string, { version: string }>).filter(([key]) =>
    /node_modules\/@earendil-works\/pi-[^/]+$/.test(key),
  );
  assert.ok(piEntries.length >= 6, `expected the pi-* family in the lockfile, found ${piEntries.length}`);
  for (const [key, entry] of piEntries) {
    assert.equal(entry.version, PI, key);
    const name = key.slice(key.indexOf("@earendil-works/"));
    if (name !== "@earendil-works/pi-coding-agent")
      assert.equal(pkg.overrides[name], PI, `override for ${name}`);
  }
});

test("the installed Pi is 0.84.2 too", () => {
  const installed = JSON.parse(
    readFileSync(
      path.join(root, "node_modules", "@earendil-works", "pi-coding-agent", "package.json"),
      "utf8",
    ),
  );
  assert.equal(installed.version, PI);
});
