#!/usr/bin/env node
// Applies and verifies our fail-closed patch to Pi's RPC handler (patches/manifest.json says what was reviewed).
// Plain JS with Node built-ins only: it runs from `postinstall` on every `npm ci`, and in the image's `pi` stage.
//
//   node scripts/pi-patches.mjs apply [--root DIR]  pre-check -> patch-package -> post-check (idempotent)
//   node scripts/pi-patches.mjs check [--root DIR]  post-check an already patched tree
//   node scripts/pi-patches.mjs print [--root DIR]  freshly computed manifest values, for a maintainer
//
// patch-package alone is not a guard: it tolerates +-20 lines of offset, a version mismatch is only a warning,
// and a change outside a hunk's context is invisible to it. So the manifest pins exact package versions, the
// whole pristine and patched file hashes, and normalised hashes of every region the patch touches or relies on.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const PROGRAM = "pi-patches";
const PATCH_DIR = "patches";
const MANIFEST_FILE = path.join(PATCH_DIR, "manifest.json");
const CHILD_TIMEOUT_MS = 60_000;

export function sha256(data) {
  return createHash("sha256").update(data).digest("hex");
}

/** CRLF -> LF and trailing whitespace removed per line; nothing else (indentation still counts). */
export function normaliseRegion(text) {
  return text
    .replace(/\r\n/g, "\n")
    .split("\n")
    .map((line) => line.replace(/[ \t]+$/, ""))
    .join("\n");
}

function countOccurrences(text, needle) {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) count++;
  return count;
}

/**
 * A region runs from the start of the line holding `start` (which must occur exactly once) to the end of the
 * line holding the first `end` at or after it. Returns {text, firstLine, lastLine} or {error}.
 */
export function findRegion(content, start, end) {
  const occurrences = countOccurrences(content, start);
  if (occurrences !== 1) {
    return {
      error: `start anchor ${JSON.stringify(start)} found ${occurrences} times (expected exactly once)`,
    };
  }
  const startAt = content.indexOf(start);
  const endAt = content.indexOf(end, startAt);
  if (endAt === -1) return { error: `end anchor ${JSON.stringify(end)} not found after the start anchor` };
  const from = content.lastIndexOf("\n", startAt) + 1;
  const newline = content.indexOf("\n", endAt + end.length);
  const to = newline === -1 ? content.length : newline;
  const lineOf = (index) => countOccurrences(content.slice(0, index), "\n") + 1;
  return { text: content.slice(from, to), firstLine: lineOf(from), lastLine: lineOf(to) };
}

function parseArgs(argv) {
  const [command, ...rest] = argv;
  let root = process.cwd();
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === "--root" && rest[i + 1] !== undefined) {
      root = path.resolve(rest[++i]);
    } else {
      throw new Error(`unknown argument ${JSON.stringify(rest[i])}`);
    }
  }
  if (!["apply", "check", "print"].includes(command)) {
    throw new Error(
      `usage: node scripts/pi-patches.mjs apply|check|print [--root DIR] (got ${JSON.stringify(command)})`,
    );
  }
  return { command, root };
}

const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
const isHash = (value) => typeof value === "string" && /^[0-9a-f]{64}$/.test(value);
const isText = (value) => typeof value === "string" && value.length > 0;

/** The manifest is an outside input too: a malformed one fails the guard, it never relaxes it. */
export function loadManifest(root) {
  const file = path.join(root, MANIFEST_FILE);
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Error(`manifest: cannot read ${file}: ${error.message}`);
  }
  const problems = [];
  if (manifest?.schema !== 1) problems.push("schema must be 1");
  if (!isText(manifest?.patch)) problems.push("patch (name of the patch set) must be a non-empty string");
  if (
    !isObject(manifest?.patchFile) ||
    !isText(manifest.patchFile.name) ||
    !isHash(manifest.patchFile.sha256)
  ) {
    problems.push("patchFile must be {name, sha256}");
  }
  if (!isObject(manifest?.packages) || !Object.values(manifest.packages).every(isText)) {
    problems.push("packages must map package names to exact versions");
  }
  const target = manifest?.target;
  if (
    !isObject(target) ||
    !isText(target.package) ||
    !isText(target.file) ||
    !isHash(target.pristineSha256) ||
    !isHash(target.patchedSha256)
  ) {
    problems.push("target must be {package, file, pristineSha256, patchedSha256}");
  }
  if (!Array.isArray(manifest?.markers) || manifest.markers.length === 0 || !manifest.markers.every(isText)) {
    problems.push("markers must be a non-empty list of strings");
  }
  if (!Array.isArray(manifest?.regions) || manifest.regions.length === 0) {
    problems.push("regions must be a non-empty list");
  } else {
    manifest.regions.forEach((region, i) => {
      const ok =
        isObject(region) &&
        isText(region.name) &&
        isText(region.package) &&
        isText(region.file) &&
        isText(region.start) &&
        isText(region.end) &&
        typeof region.patched === "boolean" &&
        isHash(region.sha256);
      if (!ok)
        problems.push(`regions[${i}] must be {name, package, file, start, end, patched, sha256, why?}`);
    });
  }
  if (problems.length > 0) throw new Error(`manifest ${file} is malformed: ${problems.join("; ")}`);
  return manifest;
}

const packageDir = (root, name) => path.join(root, "node_modules", ...name.split("/"));
const relative = (root, file) => path.relative(root, file) || file;

function readOrNull(file) {
  try {
    return readFileSync(file);
  } catch {
    return null;
  }
}

function checkVersions(root, manifest, failures) {
  for (const [name, version] of Object.entries(manifest.packages)) {
    const raw = readOrNull(path.join(packageDir(root, name), "package.json"));
    if (raw === null) {
      failures.push(`versions: ${name} is not installed under ${relative(root, packageDir(root, name))}`);
      continue;
    }
    let installed;
    try {
      installed = JSON.parse(raw.toString("utf8")).version;
    } catch {
      installed = "<unreadable package.json>";
    }
    if (installed !== version) failures.push(`versions: ${name} installed ${installed} != pinned ${version}`);
  }
}

function targetPath(root, manifest) {
  return path.join(packageDir(root, manifest.target.package), manifest.target.file);
}

function checkRegions(root, manifest, failures, { includePatched }) {
  const cache = new Map();
  for (const region of manifest.regions) {
    if (region.patched && !includePatched) continue;
    const file = path.join(packageDir(root, region.package), region.file);
    if (!cache.has(file)) cache.set(file, readOrNull(file)?.toString("utf8") ?? null);
    const content = cache.get(file);
    const label = `region ${region.name} (${relative(root, file)})`;
    if (content === null) {
      failures.push(`${label}: file missing`);
      continue;
    }
    const found = findRegion(content, region.start, region.end);
    if (found.error) {
      failures.push(`${label}: ${found.error}`);
      continue;
    }
    const actual = sha256(normaliseRegion(found.text));
    if (actual !== region.sha256) {
      failures.push(
        `region ${region.name} (${relative(root, file)}:${found.firstLine}-${found.lastLine}): normalised sha256 ${actual} != expected ${region.sha256}`,
      );
    }
  }
}

function checkPatchFile(root, manifest, failures) {
  const file = path.join(root, PATCH_DIR, manifest.patchFile.name);
  const raw = readOrNull(file);
  if (raw === null) {
    failures.push(`patch file: ${relative(root, file)} is missing`);
  } else if (sha256(raw) !== manifest.patchFile.sha256) {
    failures.push(
      `patch file: ${relative(root, file)} sha256 ${sha256(raw)} != reviewed ${manifest.patchFile.sha256}`,
    );
  }
}

/** Before patching: the exact upstream release the patch was reviewed against. */
export function preCheck(root, manifest) {
  const failures = [];
  checkVersions(root, manifest, failures);
  checkPatchFile(root, manifest, failures);
  const file = targetPath(root, manifest);
  const raw = readOrNull(file);
  if (raw === null) {
    failures.push(`pristine file: ${relative(root, file)} is missing`);
  } else if (sha256(raw) !== manifest.target.pristineSha256) {
    failures.push(
      `pristine file: ${relative(root, file)} sha256 ${sha256(raw)} != expected ${manifest.target.pristineSha256} (upstream file changed)`,
    );
  }
  checkRegions(root, manifest, failures, { includePatched: true });
  return failures;
}

function runNode(args, options = {}) {
  return spawnSync(process.execPath, args, { encoding: "utf8", timeout: CHILD_TIMEOUT_MS, ...options });
}

const oneLine = (text) =>
  text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .slice(-3)
    .join(" | ");

/** After patching: exactly the reviewed output, still the reviewed dependencies, and it loads. */
export function postCheck(root, manifest) {
  const failures = [];
  checkVersions(root, manifest, failures);
  const file = targetPath(root, manifest);
  const raw = readOrNull(file);
  if (raw === null) {
    failures.push(`patched file: ${relative(root, file)} is missing`);
    return failures;
  }
  if (sha256(raw) !== manifest.target.patchedSha256) {
    failures.push(
      `patched file: ${relative(root, file)} sha256 ${sha256(raw)} != expected ${manifest.target.patchedSha256} (patched output differs)`,
    );
  }
  const content = raw.toString("utf8");
  for (const marker of manifest.markers) {
    const count = countOccurrences(content, marker);
    if (count !== 1)
      failures.push(`markers: ${JSON.stringify(marker)} occurs ${count} times (expected once)`);
  }
  checkRegions(root, manifest, failures, { includePatched: false });
  const scratch = mkdtempSync(path.join(tmpdir(), `${PROGRAM}-`));
  try {
    const copy = path.join(scratch, "rpc-mode.mjs");
    copyFileSync(file, copy);
    const parse = runNode(["--check", copy]);
    if (parse.status !== 0) {
      failures.push(
        `node --check: patched file does not parse: ${oneLine(parse.stderr.replaceAll(copy, "<copy>"))}`,
      );
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const probe =
    "const m = await import(process.argv[1]);" +
    "if (typeof m.runRpcMode !== 'function') { console.error('runRpcMode is not exported'); process.exit(3); }" +
    "process.exit(0);";
  const load = runNode(["--input-type=module", "-e", probe, pathToFileURL(file).href]);
  if (load.status !== 0) {
    failures.push(
      `import: patched module failed to load (node ${process.versions.node}): ${oneLine(`${load.stderr}${load.error ? ` ${load.error.message}` : ""}`)}`,
    );
  }
  return failures;
}

function patchPackageBin() {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve("patch-package/package.json")), "index.js");
}

/** patch-package with every soft failure made hard (see the header comment). */
function runPatchPackage(root) {
  const result = runNode(
    [patchPackageBin(), "--error-on-fail", "--error-on-warn", "--patch-dir", PATCH_DIR],
    {
      cwd: root,
      env: { ...process.env, FORCE_COLOR: "0" },
    },
  );
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`;
  for (const line of output.split("\n")) if (line.trim()) process.stderr.write(`  patch-package: ${line}\n`);
  if (result.status === 0) return [];
  const reason = result.error ? result.error.message : `exit code ${result.status}`;
  const summary = output.match(/patch-package finished with [^\n]*/)?.[0] ?? "see its output above";
  return [`patch-package: ${reason} (${summary})`];
}

function report(stage, failures, manifest) {
  if (failures.length === 0) {
    process.stderr.write(
      `${PROGRAM}: ${stage} passed (${manifest.patch} for ${manifest.target.package}@${manifest.packages[manifest.target.package]})\n`,
    );
    return true;
  }
  process.stderr.write(`${PROGRAM}: ${stage} FAILED (${failures.length}):\n`);
  for (const failure of failures) process.stderr.write(`${PROGRAM}: ${stage} FAILED: ${failure}\n`);
  return false;
}

export function apply(root, manifest) {
  const file = targetPath(root, manifest);
  const current = readOrNull(file);
  if (current !== null && sha256(current) === manifest.target.patchedSha256) {
    // Already patched (e.g. a second `npm ci` hook run): verify, never patch twice.
    return report("post-check (already patched)", postCheck(root, manifest), manifest);
  }
  if (!report("pre-check", preCheck(root, manifest), manifest)) return false;
  if (!report("patch-package", runPatchPackage(root), manifest)) return false;
  return report("post-check", postCheck(root, manifest), manifest);
}

/** Fresh values for a maintainer preparing an upgrade. Nothing is written; CI never calls this. */
export function print(root, manifest) {
  const out = { packages: {}, target: {}, patchFile: {}, regions: [] };
  for (const name of Object.keys(manifest.packages)) {
    const raw = readOrNull(path.join(packageDir(root, name), "package.json"));
    out.packages[name] = raw === null ? null : JSON.parse(raw.toString("utf8")).version;
  }
  const patchRaw = readOrNull(path.join(root, PATCH_DIR, manifest.patchFile.name));
  out.patchFile = { name: manifest.patchFile.name, sha256: patchRaw === null ? null : sha256(patchRaw) };
  const file = targetPath(root, manifest);
  const content = readFileSync(file);
  const patched = content.includes(manifest.markers[0]);
  out.target = { package: manifest.target.package, file: manifest.target.file };
  if (patched) {
    out.target.pristineSha256 = "<tree is patched: run `npm ci --ignore-scripts`, then print again>";
    out.target.patchedSha256 = sha256(content);
  } else {
    out.target.pristineSha256 = sha256(content);
    out.target.patchedSha256 = patchedHashOf(root, manifest, content);
  }
  for (const region of manifest.regions) {
    const regionFile = path.join(packageDir(root, region.package), region.file);
    const found = findRegion(readFileSync(regionFile, "utf8"), region.start, region.end);
    const value =
      region.patched && patched
        ? "<patched region: read it from a pristine tree>"
        : (found.error ?? sha256(normaliseRegion(found.text)));
    out.regions.push({
      name: region.name,
      lines: found.error ? null : `${found.firstLine}-${found.lastLine}`,
      sha256: value,
    });
  }
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  return true;
}

/** Applies the patch to a scratch copy of the pristine target file and hashes the result. */
function patchedHashOf(root, manifest, pristine) {
  const scratch = mkdtempSync(path.join(tmpdir(), `${PROGRAM}-print-`));
  try {
    const pkg = packageDir(scratch, manifest.target.package);
    mkdirSync(path.dirname(path.join(pkg, manifest.target.file)), { recursive: true });
    copyFileSync(
      path.join(packageDir(root, manifest.target.package), "package.json"),
      path.join(pkg, "package.json"),
    );
    writeFileSync(path.join(pkg, manifest.target.file), pristine);
    writeFileSync(path.join(scratch, "package.json"), '{"name":"pi-patches-print","private":true}\n');
    mkdirSync(path.join(scratch, PATCH_DIR));
    copyFileSync(
      path.join(root, PATCH_DIR, manifest.patchFile.name),
      path.join(scratch, PATCH_DIR, manifest.patchFile.name),
    );
    const failures = runPatchPackage(scratch);
    if (failures.length > 0) return `<the patch does not apply: ${failures.join("; ")}>`;
    return sha256(readFileSync(path.join(pkg, manifest.target.file)));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function main() {
  let args;
  let manifest;
  try {
    args = parseArgs(process.argv.slice(2));
    if (!existsSync(path.join(args.root, "package.json"))) {
      throw new Error(`--root ${args.root} has no package.json`);
    }
    manifest = loadManifest(args.root);
  } catch (error) {
    process.stderr.write(`${PROGRAM}: FAILED: ${error.message}\n`);
    return 1;
  }
  if (args.command === "apply") return apply(args.root, manifest) ? 0 : 1;
  if (args.command === "check") return report("post-check", postCheck(args.root, manifest), manifest) ? 0 : 1;
  return print(args.root, manifest) ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.exitCode = main();
}
