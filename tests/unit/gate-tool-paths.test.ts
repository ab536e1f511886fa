// Class 1 of issue 10: the gate decides on the path Pi's tools will really open. Every built-in path tool, every
// spelling Pi accepts (file:// URLs, %xx escapes, "@", "~", unicode spaces, relative, symlinked, missing,
// dangling links), resolved by Pi's own functions with the tools' HOME, then canonicalised.
import assert from "node:assert/strict";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import fc from "fast-check";
import { decide } from "../../agent-runtime/gate/decide.ts";
import {
  canonicalIn,
  type PathContext,
  pathContextFromEnv,
  physicalPath,
} from "../../agent-runtime/gate/path-context.ts";
import {
  loadPiPaths,
  locatePiPackage,
  piPathsSync,
  resolveToolInputPath,
} from "../../agent-runtime/gate/pi-paths.ts";
import type { SearchExcludeState } from "../../agent-runtime/gate/search-excludes.ts";
import type { PolicyMode } from "../../agent-runtime/policy/policy-store.ts";
import { tempDir } from "../support/workspace.ts";

const paths = await loadPiPaths();
const MODES: PolicyMode[] = ["auto", "ask", "read-only"];
const TOOLS = ["read", "write", "edit", "grep", "find", "ls"] as const;

interface Layout {
  root: string;
  ws: string;
  home: string;
  piHome: string;
  context: () => PathContext;
  search: SearchExcludeState;
}

async function layout(t: import("node:test").TestContext): Promise<Layout> {
  const root = await tempDir(t, "gate-paths-");
  const ws = path.join(root, "ws");
  const home = path.join(root, "tools-home");
  const piHome = path.join(root, "pi-home");
  await mkdir(path.join(home, ".aws"), { recursive: true });
  await mkdir(path.join(ws, "sub"), { recursive: true });
  await mkdir(piHome);
  await writeFile(path.join(ws, ".env"), "TOKEN=x\n");
  await writeFile(path.join(ws, "notes.txt"), "plain\n");
  await writeFile(path.join(home, ".aws", "credentials"), "[default]\n");
  await symlink(path.join(home, ".aws", "credentials"), path.join(ws, "innocent.txt"));
  await symlink(path.join(home, ".bashrc"), path.join(ws, "dangling"));
  await symlink(path.join(home, ".aws"), path.join(ws, "awsdir"));
  const env = {
    HOME: piHome,
    CHAT_UI_AGENT_TOOL_HOME: home,
    AGENT_POLICY_PATH: path.join(root, "policy"),
    PI_CODING_AGENT_DIR: path.join(piHome, "agent"),
  };
  return {
    root,
    ws,
    home,
    piHome,
    context: () => pathContextFromEnv(ws, env),
    search: { path: undefined, searchCwd: ws, assumed: true },
  };
}

function decideAll(l: Layout, toolName: string, input: Record<string, unknown>) {
  return MODES.map((policy) =>
    decide({ policy, toolName, input, context: l.context(), parser: undefined, paths, search: l.search }),
  );
}

function inputFor(tool: string, spelling: string): Record<string, unknown> {
  if (tool === "write") return { path: spelling, content: "x" };
  if (tool === "edit") return { path: spelling, edits: [{ oldText: "a", newText: "b" }] };
  if (tool === "grep") return { pattern: "x", path: spelling };
  if (tool === "find") return { pattern: "*", path: spelling };
  return { path: spelling };
}

test("every path tool decides on the credential file behind every spelling Pi accepts", async (t) => {
  const l = await layout(t);
  const dotenv = path.join(l.ws, ".env");
  const aws = path.join(l.home, ".aws", "credentials");
  const spellings: Array<[string, string]> = [
    [".env", dotenv],
    ["./.env", dotenv],
    ["sub/../.env", dotenv],
    ["@.env", dotenv],
    [`file://${l.ws}/.env`, dotenv],
    [`file://${l.ws}/.en%76`, dotenv],
    [`file://${l.ws}/%2Eenv`, dotenv],
    [`@file://${l.ws}/.e%6Ev`, dotenv],
    [`file://localhost${l.ws}/.env`, dotenv],
    [dotenv, dotenv],
    ["~/.aws/credentials", aws],
    ["@~/.aws/credentials", aws],
    ["~/.aws\u00a0/../.aws/credentials", aws],
    [`file://${l.home}/.aws/cr%65dentials`, aws],
    ["innocent.txt", aws],
    [`file://${l.ws}/innocent.txt`, aws],
    ["awsdir/credentials", aws],
    ["@awsdir/cred\u2009/../credentials", aws],
  ];
  for (const tool of TOOLS) {
    for (const [spelling, file] of spellings) {
      const [auto, ask, readOnly] = decideAll(l, tool, inputFor(tool, spelling));
      const label = `${tool} ${JSON.stringify(spelling)}`;
      assert.equal(auto?.path, file, label);
      assert.ok(auto?.classes.includes("SECRET"), `${label}: ${JSON.stringify(auto)}`);
      const reading = tool === "read" || tool === "grep" || tool === "find" || tool === "ls";
      assert.deepEqual(
        [auto?.decision, ask?.decision, readOnly?.decision],
        reading ? ["confirm", "confirm", "confirm"] : ["confirm", "confirm", "block"],
        label,
      );
    }
  }
});

test("~ is the tools' HOME, not Pi's; plain paths are allowed and decided on their absolute form", async (t) => {
  const l = await layout(t);
  await mkdir(path.join(l.piHome, ".aws"), { recursive: true });
  const [read] = decideAll(l, "read", { path: "~/notes" });
  assert.equal(read?.path, path.join(l.home, "notes"));
  for (const tool of TOOLS) {
    const [auto] = decideAll(l, tool, inputFor(tool, "notes.txt"));
    assert.equal(auto?.decision, "allow", tool);
    assert.equal(auto?.path, path.join(l.ws, "notes.txt"), tool);
  }
  // grep, find and ls default to "." (Pi's `path || "."`): the cwd, absolute.
  for (const tool of ["grep", "find", "ls"]) {
    for (const input of [{ pattern: "x" }, { pattern: "x", path: "" }]) {
      const [auto] = decideAll(l, tool, input);
      assert.equal(auto?.path, l.ws, `${tool} ${JSON.stringify(input)}`);
    }
  }
  // A missing target of a write: the canonical parent plus the missing tail.
  const [write] = decideAll(l, "write", { path: "new/deep/file.ts", content: "x" });
  assert.equal(write?.decision, "allow");
  assert.equal(write?.path, path.join(l.ws, "new", "deep", "file.ts"));
});

test("a dangling symlink is decided on the file writing through it would create", async (t) => {
  const l = await layout(t);
  const [auto, , readOnly] = decideAll(l, "write", { path: "dangling", content: "curl x | sh" });
  assert.equal(auto?.path, path.join(l.home, ".bashrc"));
  assert.equal(auto?.decision, "confirm");
  assert.ok(auto?.classes.includes("EXIT"), JSON.stringify(auto));
  assert.equal(readOnly?.decision, "block");
  // A chain of links, one relative with "..", ending in a missing credential file.
  await symlink("../tools-home/.aws/new-credentials-cache", path.join(l.ws, "hop2"));
  await symlink(path.join(l.ws, "hop2"), path.join(l.ws, "hop1"));
  const [chained] = decideAll(l, "write", { path: "hop1", content: "x" });
  assert.equal(chained?.path, path.join(l.home, ".aws", "new-credentials-cache"));
  assert.ok(chained?.classes.includes("SECRET"), JSON.stringify(chained));
  // A loop never hangs: the kernel would refuse it (ELOOP), so nothing opens.
  await symlink(path.join(l.ws, "loop-b"), path.join(l.ws, "loop-a"));
  await symlink(path.join(l.ws, "loop-a"), path.join(l.ws, "loop-b"));
  assert.equal(physicalPath(path.join(l.ws, "loop-a", "x")), path.join(l.ws, "loop-a", "x"));
});

test("paths Pi would read differently from what the gate decided on are blocked, never guessed", async (t) => {
  const l = await layout(t);
  for (const spelling of [
    `file://${l.ws}/a%C2%A0b`, // decodes to a no-break space that a second pass would turn into a space
    "file://example.com/etc/passwd", // a URL host: fileURLToPath refuses it
    `file://${l.ws}/a%2Fb`, // an encoded "/": refused
  ]) {
    const [auto, , readOnly] = decideAll(l, "write", { path: spelling, content: "x" });
    assert.equal(auto?.decision, "block", spelling);
    assert.equal(readOnly?.decision, "block", spelling);
    assert.ok(auto?.classes.includes("UNKNOWN"));
  }
});

test("read finds the macOS screenshot variant Pi would open, and decides on it", async (t) => {
  const l = await layout(t);
  const real = path.join(l.ws, "Screenshot 10.00\u202fAM.png");
  await writeFile(real, "png");
  const [auto] = decideAll(l, "read", { path: "Screenshot 10.00 AM.png" });
  assert.equal(auto?.path, real);
  assert.equal(auto?.decision, "allow");
});

test("the lexical resolution is Pi's resolveToCwd exactly, for any input (fast-check)", () => {
  const cwd = "/work/project";
  const pieces = [
    "a",
    "~",
    "@",
    "/",
    ".",
    "..",
    "%2e",
    "%41",
    "file://",
    "\u00a0",
    "\u202f",
    "\u3000",
    " ",
    "b%",
  ];
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...pieces), { maxLength: 12 }), (parts) => {
      const raw = parts.join("");
      let expected: string | Error;
      try {
        expected = paths.resolveToCwd(raw, cwd);
      } catch (error) {
        expected = error as Error;
      }
      const ours = resolveToolInputPath(paths, "write", raw, { cwd, toolHome: homedir() }, (p) => p);
      if (expected instanceof Error) return !ours.ok;
      if (!ours.ok) return /does not resolve to itself/.test(ours.reason);
      return ours.lexical === expected;
    }),
    { numRuns: 2000 },
  );
});

test("Pi's path functions come from the Pi package that is running, else the one installed beside the gate", () => {
  const installed = locatePiPackage(undefined);
  assert.match(installed, /@earendil-works\/pi-coding-agent$/);
  assert.equal(locatePiPackage(path.join(installed, "dist", "cli.js")), installed);
  assert.equal(locatePiPackage("/nonexistent/cli.js"), installed);
  assert.equal(paths.packageDir, locatePiPackage());
  // decide() without `paths` uses the same functions, loaded without waiting.
  const sync = piPathsSync();
  assert.equal(sync?.packageDir, paths.packageDir);
  assert.equal(sync?.resolveToCwd("@file:///x/%41", "/cwd"), paths.resolveToCwd("@file:///x/%41", "/cwd"));
});

test("pathological paths are decided quickly and never crash: megabytes, thousands of components, long names", async (t) => {
  const l = await layout(t);
  for (const input of [
    "a".repeat(1024 * 1024),
    "a/".repeat(100_000),
    "../".repeat(100_000),
    `file://${l.ws}/${"%41".repeat(100_000)}`,
    "\u00a0".repeat(1024 * 1024),
    "x".repeat(300),
  ]) {
    for (const tool of TOOLS) {
      const [auto] = decideAll(l, tool, inputFor(tool, input));
      assert.equal(auto?.decision, "block", `${tool} ${input.slice(0, 20)}… (${input.length})`);
      assert.ok((auto?.reasons.join().length ?? 0) < 2000, "reasons quote a clipped input");
    }
  }
  // 1,000 missing components under the workspace: canonicalised iteratively (no stack overflow).
  const deep = path.join(l.ws, "a/".repeat(1000), "file.txt");
  assert.equal(canonicalIn(l.context(), deep), deep);
  const [write] = decideAll(l, "write", { path: deep, content: "x" });
  assert.equal(write?.decision, "allow");
});

test("/proc/<pid>/fd and /dev/fd are decided as spelled: an fd of an ordinary file still needs a dialog", async (t) => {
  const l = await layout(t);
  const { openSync, closeSync } = await import("node:fs");
  const fd = openSync(path.join(l.ws, "notes.txt"), "r");
  t.after(() => closeSync(fd));
  for (const spelling of [
    `/proc/self/fd/${fd}`,
    `/proc/${process.pid}/fd/${fd}`,
    `/dev/fd/${fd}`,
    `/proc/self/root${l.ws}/notes.txt`,
  ]) {
    const [auto] = decideAll(l, "read", { path: spelling });
    assert.equal(auto?.decision, "confirm", `${spelling}: ${JSON.stringify(auto)}`);
  }
});

test("a hard link to the policy file is the policy file: writing it is blocked in every policy", async (t) => {
  const l = await layout(t);
  const { link } = await import("node:fs/promises");
  await writeFile(path.join(l.root, "policy"), "ask\n");
  await link(path.join(l.root, "policy"), path.join(l.ws, "settings.txt"));
  for (const tool of ["write", "edit"] as const) {
    const decisions = decideAll(l, tool, inputFor(tool, "settings.txt")).map((d) => d.decision);
    assert.deepEqual(decisions, ["block", "block", "block"], tool);
  }
});
