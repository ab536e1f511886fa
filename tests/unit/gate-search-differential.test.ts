// Shell searches and pattern reads, judged against what really runs: the real ripgrep with our exclude config,
// real grep and cat, in a temp workspace and HOME holding credential files at several depths. Whenever a command
// prints a credential, the gate must not have allowed it in auto; commands that print none stay allowed, so
// `auto` stays useful (both directions can fail). Every command here only reads files under the temp dirs.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { decide } from "../../agent-runtime/gate/decide.ts";
import { MAX_WALK_ENTRIES } from "../../agent-runtime/gate/disk-walk.ts";
import { pathContextFromEnv } from "../../agent-runtime/gate/path-context.ts";
import { searchExcludeConfig } from "../../agent-runtime/gate/search-excludes.ts";
import { gateParser } from "../support/gate-parser.ts";

const parser = await gateParser();
const root = mkdtempSync(path.join(tmpdir(), "gate-search-diff-"));
process.on("exit", () => rmSync(root, { recursive: true, force: true }));
const home = path.join(root, "home");
const ws = path.join(root, "ws");
const config = path.join(root, "rg-exclude.conf");
writeFileSync(config, searchExcludeConfig());

const SECRET = "SECRET_MARK";
const files: Record<string, string> = {
  [path.join(ws, "config", "credentials.json")]: `{"k":"${SECRET}_GCP"}`,
  [path.join(ws, "app", ".env")]: `TOKEN=${SECRET}_ENV`,
  [path.join(ws, "deep", "a", "b", "secrets.yaml")]: `token: ${SECRET}_YAML`,
  [path.join(ws, "deep", "a", "b", "keys", "id_ed25519")]: `${SECRET}_KEY`,
  [path.join(ws, "src", "main.ts")]: "export const plain = 1; // PLAIN_MARK",
  [path.join(ws, "src", "util.ts")]: "export const util = 2; // PLAIN_MARK",
  [path.join(ws, "README.md")]: "PLAIN_MARK readme",
  [path.join(home, ".aws", "credentials")]: `aws_secret_access_key=${SECRET}_AWS`,
  [path.join(home, "notes.md")]: "PLAIN_MARK note",
};
for (const [file, content] of Object.entries(files)) {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${content}\n`);
}

const env = { HOME: home, PATH: process.env.PATH, RIPGREP_CONFIG_PATH: config, LANG: "C" };

/** What the command prints when it really runs (bash, in the workspace, with the tools' search config). */
function output(command: string): string {
  try {
    return execFileSync("bash", ["-c", command], {
      cwd: ws,
      env,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (err) {
    return String((err as { stdout?: string }).stdout ?? "");
  }
}

function decision(command: string): string {
  const context = pathContextFromEnv(ws, env);
  return decide({ policy: "auto", toolName: "bash", input: { command }, context, parser }).decision;
}

const LEAKING = [
  "rg -g '*' -N SECRET_ .",
  "rg -g '*.json' SECRET_",
  "rg -g '**' SECRET_ deep",
  "rg --iglob '*.YAML' SECRET_",
  "rg --glob-case-insensitive -g 'CONFIG/*' SECRET_",
  "rg --hidden -g '.e*' SECRET_",
  "rg -g 'id_*' SECRET_ deep",
  "rg -g \"$(echo '*')\" SECRET_",
  "rg --no-config -uu SECRET_",
  "env -i PATH=/usr/bin:/bin rg -uu SECRET_",
  "env -u RIPGREP_CONFIG_PATH rg SECRET_ config",
  "unset RIPGREP_CONFIG_PATH; rg SECRET_ deep",
  "X=RIPGREP_CONFIG_PATH; unset $X; rg SECRET_ config",
  "grep -r SECRET_ .",
  "grep -rl . deep | xargs cat",
  "grep -R SECRET_ deep",
  "git grep --no-index SECRET_",
  "cat config/*",
  "cat deep/*/*/*.yaml",
  "head -n 1 app/.??*",
  "cat app/.[e]nv",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion under test
  'cat "app/${F:-.env}"',
  'cat "deep/$(echo a/b)/secrets.yaml"',
  "tar cf - deep | tar xOf -",
  "cp -r deep /tmp/x && cat /tmp/x/a/b/secrets.yaml",
];

const PLAIN = [
  "rg PLAIN_MARK",
  "rg -n PLAIN_MARK src",
  "rg -g '*.ts' PLAIN_MARK",
  "rg -g '!*.md' PLAIN_MARK",
  "rg --hidden -uu PLAIN_MARK",
  "grep -rn PLAIN_MARK src",
  "cat src/*",
  "cat src/*.ts README.md",
  'for f in src/*.ts; do cat "$f"; done',
  "rg -t ts PLAIN_MARK",
];

test("every command that prints a credential needs a dialog in auto (and really prints one)", () => {
  execFileSync("rg", ["--version"], { stdio: "ignore" }); // the differential needs the real ripgrep
  for (const command of LEAKING) {
    assert.match(output(command), new RegExp(SECRET), `${command} really prints a credential here`);
    assert.notEqual(decision(command), "allow", `${command} prints a credential, so auto must ask`);
  }
});

test("searches and reads that print no credential stay allowed in auto (and print what they should)", () => {
  for (const command of PLAIN) {
    const printed = output(command);
    assert.match(printed, /PLAIN_MARK/, `${command} finds the plain files`);
    assert.doesNotMatch(printed, new RegExp(SECRET), `${command} prints no credential`);
    assert.equal(decision(command), "allow", `${command} reads nothing secret, so auto allows it`);
  }
});

test("a tree too large to walk, or a link to a folder inside it, is not vouched for", () => {
  const big = path.join(ws, "big");
  mkdirSync(big);
  for (let i = 0; i <= MAX_WALK_ENTRIES; i++) writeFileSync(path.join(big, `f${i}.txt`), "");
  assert.equal(decision("grep -r PLAIN_MARK big"), "confirm");
  assert.equal(decision("rg PLAIN_MARK big"), "allow", "ripgrep's excludes cover any size");
  rmSync(big, { recursive: true });
  const linked = path.join(ws, "linked");
  mkdirSync(linked);
  symlinkSync(path.join(home, ".aws"), path.join(linked, "cloud"));
  assert.equal(decision("grep -R SECRET_ linked"), "confirm");
  assert.match(output("grep -R SECRET_ linked"), new RegExp(SECRET));
  rmSync(linked, { recursive: true });
  assert.equal(decision("grep -r PLAIN_MARK src"), "allow");
});
