// Looks for credentials baked into an image: `docker history` (RUN lines and build args), `docker inspect`
// (env and labels) and every byte of `docker save` (layer tarballs are uncompressed tar in the archive).
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import type Docker from "dockerode";

/**
 * Token shapes of the services this runtime talks to, plus private keys. Each has literal prefixes that a
 * token must contain, so a file is only decoded and matched when one occurs (a native byte search).
 */
const TOKEN_PATTERNS: ReadonlyArray<{ kind: string; prefixes: string[]; pattern: RegExp }> = [
  { kind: "huggingface", prefixes: ["hf_"], pattern: /(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}/g },
  {
    kind: "github",
    prefixes: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    pattern: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})/g,
  },
  {
    kind: "openai/anthropic",
    prefixes: ["sk-"],
    pattern: /(?<![A-Za-z0-9_-])sk-(?:ant-|proj-)?[A-Za-z0-9_-]{32,}/g,
  },
  // AWS's documented example key id (AKIAIOSFODNN7EXAMPLE) ships in SDK docs: not a credential.
  {
    kind: "aws",
    prefixes: ["AKIA"],
    pattern: /(?<![A-Z0-9])AKIA(?![0-9A-Z]{9}EXAMPLE)[0-9A-Z]{16}(?![A-Z0-9])/g,
  },
  { kind: "slack", prefixes: ["xox"], pattern: /(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}/g },
  { kind: "npm", prefixes: ["npm_"], pattern: /(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])/g },
  { kind: "gitlab", prefixes: ["glpat-"], pattern: /(?<![A-Za-z0-9_])glpat-[A-Za-z0-9_-]{20,}/g },
  // A PEM header alone is a string constant in crypto code; a key has base64 body lines after it.
  {
    kind: "private key",
    prefixes: ["PRIVATE KEY-----"],
    pattern: /-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED )?PRIVATE KEY-----\r?\n[A-Za-z0-9+/=]{40,}/g,
  },
];

export function findTokens(data: string | Buffer): Array<{ kind: string; match: string }> {
  const found: Array<{ kind: string; match: string }> = [];
  let text: string | undefined = typeof data === "string" ? data : undefined;
  for (const { kind, prefixes, pattern } of TOKEN_PATTERNS) {
    if (!prefixes.some((prefix) => data.includes(prefix))) continue;
    text ??= (data as Buffer).toString("latin1");
    for (const match of text.matchAll(pattern)) found.push({ kind, match: match[0] });
  }
  return found;
}

/** Env or build-arg names that carry a secret whatever the value looks like. */
const SECRET_NAME = /(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL)/i;

export interface Finding {
  source: "history" | "env" | "labels" | "layers";
  kind: string;
  /** Where it was found, with the secret itself cut to a short prefix. */
  excerpt: string;
}

function redact(value: string): string {
  return `${value.slice(0, 6)}…(${value.length} chars)`;
}

/** `NAME=value` pairs whose name says secret and whose value is not empty. */
function secretAssignments(text: string): string[] {
  return [...text.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)]
    .filter((m) => SECRET_NAME.test(m[1] ?? "") && (m[2] ?? "").replace(/"/g, "") !== "")
    .map((m) => m[1] ?? "");
}

function scanText(source: Finding["source"], text: string, findings: Finding[]): void {
  for (const { kind, match } of findTokens(text)) findings.push({ source, kind, excerpt: redact(match) });
  for (const name of secretAssignments(text)) {
    findings.push({ source, kind: "secret-named assignment", excerpt: `${name}=…` });
  }
}

/** Known non-secrets by file: GnuTLS carries its FIPS self-test keys inside the library. */
const LAYER_ALLOWLIST: ReadonlyArray<{ file: RegExp; kind: string }> = [
  { file: /^usr\/lib\/x86_64-linux-gnu\/libgnutls\.so\.[0-9.]+$/, kind: "private key" },
];

function* regularFiles(dir: string, prefix = ""): Generator<{ full: string; relative: string }> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* regularFiles(full, relative);
    else if (entry.isFile()) yield { full, relative };
  }
}

/** Unpacking is mostly disk writes: use RAM (/dev/shm) when it has room for the image twice over. */
function scratchRoot(): string {
  try {
    const stats = statfsSync("/dev/shm");
    if (stats.bavail * stats.bsize > 4e9) return "/dev/shm";
  } catch {
    // No /dev/shm: the ordinary temp dir.
  }
  return tmpdir();
}

/**
 * `docker save`, then every layer tarball unpacked on its own (so files deleted by a later layer are still
 * scanned), every regular file read as bytes. GNU tar does the unpacking.
 */
async function scanLayers(docker: Docker, image: string, findings: Finding[]): Promise<number> {
  const work = mkdtempSync(path.join(scratchRoot(), "chat-ui-image-scan-"));
  try {
    const saved = path.join(work, "saved");
    mkdirSync(saved);
    const stream = (await docker.getImage(image).get()) as NodeJS.ReadableStream;
    const untar = spawn("tar", ["-x", "-C", saved], { stdio: ["pipe", "ignore", "pipe"] });
    let untarError = "";
    untar.stderr.on("data", (chunk: Buffer) => {
      untarError += chunk.toString("utf8");
    });
    const done = new Promise<number | null>((resolve) => untar.on("close", resolve));
    await pipeline(stream, untar.stdin);
    if ((await done) !== 0) throw new Error(`tar -x of docker save failed: ${untarError}`);
    const manifest = JSON.parse(readFileSync(path.join(saved, "manifest.json"), "utf8")) as Array<{
      Layers: string[];
    }>;
    let bytes = 0;
    for (const [index, layer] of (manifest[0]?.Layers ?? []).entries()) {
      const dir = path.join(work, `layer-${index}`);
      mkdirSync(dir);
      const result = spawnSync("tar", ["-x", "--no-same-owner", "-f", path.join(saved, layer), "-C", dir]);
      if (result.status !== 0) throw new Error(`tar -x ${layer} failed: ${result.stderr.toString()}`);
      for (const file of regularFiles(dir)) {
        const content = readFileSync(file.full);
        bytes += content.length;
        for (const { kind, match } of findTokens(content)) {
          if (LAYER_ALLOWLIST.some((allowed) => allowed.kind === kind && allowed.file.test(file.relative)))
            continue;
          findings.push({ source: "layers", kind, excerpt: `${file.relative}: ${redact(match)}` });
        }
      }
      rmSync(dir, { recursive: true, force: true });
    }
    return bytes;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export interface ScanReport {
  findings: Finding[];
  layerBytes: number;
}

export async function scanImageForCredentials(docker: Docker, image: string): Promise<ScanReport> {
  const findings: Finding[] = [];
  const history = (await docker.getImage(image).history()) as Array<{ CreatedBy?: string; Comment?: string }>;
  for (const entry of history)
    scanText("history", `${entry.CreatedBy ?? ""}\n${entry.Comment ?? ""}`, findings);
  const inspect = await docker.getImage(image).inspect();
  for (const config of [inspect.Config, inspect.ContainerConfig]) {
    for (const variable of config?.Env ?? []) scanText("env", variable, findings);
    for (const [name, value] of Object.entries(config?.Labels ?? {})) {
      scanText("labels", `${name}=${value}`, findings);
    }
  }
  const layerBytes = await scanLayers(docker, image, findings);
  return { findings, layerBytes };
}
