// The folder layering rule: bridge/ may import agent-runtime/, never the reverse.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { it } from "node:test";

const root = path.resolve(import.meta.dirname, "../..");

function sources(dir: string): string[] {
  return readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|mts|mjs)$/.test(e.name))
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)));
}

it("agent-runtime/ imports nothing from bridge/", () => {
  const offenders: string[] = [];
  for (const file of sources("agent-runtime")) {
    const text = readFileSync(path.join(root, file), "utf8");
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)) {
      const spec = match[1] ?? "";
      if (!spec.startsWith(".")) continue;
      const target = path.relative(root, path.resolve(root, path.dirname(file), spec));
      if (target.startsWith(`bridge${path.sep}`)) offenders.push(`${file} → ${spec}`);
    }
  }
  assert.deepEqual(offenders, []);
});
