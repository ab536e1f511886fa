// The README's environment variable table names every variable the binaries read (bridge/, agent-runtime/), and
// nothing the code does not read: a variable added to the code without a row, or a row left behind, fails here.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { TOOL_ENV_ALLOWED } from "../../agent-runtime/executor/tool-env.ts";
import { CREDENTIAL_NAMES } from "../../agent-runtime/health-server.ts";
import { MODULE_PATH_VARIABLES } from "../../bridge/private-home.ts";

const root = path.resolve(import.meta.dirname, "..", "..");
/** The dev harness (scripted model, Pi drivers) is not shipped. */
const NOT_SHIPPED = [`agent-runtime${path.sep}dev${path.sep}`];

function sources(): string[] {
  return ["bridge", "agent-runtime"].flatMap((dir) =>
    readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && /\.(ts|mjs)$/.test(e.name) && !/\.test\.|\.d\.ts$/.test(e.name))
      .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
      .filter((file) => !NOT_SHIPPED.some((prefix) => file.startsWith(prefix))),
  );
}

/**
 * Names the code reads (or sets for the processes it starts): `env.NAME`, `env["NAME"]`, `…_ENV = "NAME"` constants
 * it reads them through, and the name lists it passes, reports or removes.
 */
export function variablesInCode(): Map<string, string> {
  const found = new Map<string, string>();
  const patterns = [
    /\benv\??\.([A-Z][A-Z0-9_]*)\b/g,
    /\benv\[\s*"([A-Z][A-Z0-9_]*)"\s*\]/g,
    /\b[A-Z][A-Z0-9_]*_ENV\s*=\s*"([A-Z][A-Z0-9_]*)"/g,
  ];
  for (const file of sources()) {
    // Comments name variables they do not read (`delete process.env.X`): only code counts.
    const text = readFileSync(path.join(root, file), "utf8")
      .split("\n")
      .filter((line) => !/^\s*(\/\/|\*|\/\*)/.test(line))
      .join("\n");
    for (const pattern of patterns)
      for (const match of text.matchAll(pattern))
        if (match[1] && !found.has(match[1])) found.set(match[1], file);
  }
  for (const name of [...TOOL_ENV_ALLOWED, ...CREDENTIAL_NAMES, ...MODULE_PATH_VARIABLES])
    if (!found.has(name)) found.set(name, "lists");
  return found;
}

/** The rows of the README table under "## Environment variables": the first cell's `NAME`s. */
function variablesInReadme(): Set<string> {
  const readme = readFileSync(path.join(root, "README.md"), "utf8");
  const section = /^## Environment variables\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1];
  assert.ok(section, "README.md has an '## Environment variables' section");
  const names = new Set<string>();
  for (const line of section.split("\n")) {
    const cell = /^\|\s*([^|]+?)\s*\|/.exec(line)?.[1];
    if (!cell) continue;
    for (const [, name] of cell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) if (name) names.add(name);
  }
  return names;
}

test("every environment variable the code reads has a row in the README's table, and every row is read", () => {
  const code = variablesInCode();
  const readme = variablesInReadme();
  const missing = [...code].filter(([name]) => !readme.has(name)).map(([name, file]) => `${name} (${file})`);
  assert.deepEqual(missing, [], "variables read in the code but missing from the README table");
  // LC_* is a family (the tools' locale), written `LC_*` in the table.
  const unread = [...readme].filter((name) => !code.has(name) && name !== "LC_");
  assert.deepEqual(unread, [], "README rows for variables no code reads");
});

test("the scan finds what it must: a known read of each kind", () => {
  const code = variablesInCode();
  for (const name of ["LOG_LEVEL", "CHAT_UI_AGENT_BRIDGE_TOKEN", "AGENT_POLICY_PATH", "HF_TOKEN", "TZ"])
    assert.ok(code.has(name), name);
});
