// The credential values the runtime knows, for the secret filter (issue 19, point 4): the values inside credential
// files in the workspace and the tools' HOME (as the sensitive-path rules name them) and the values of
// credential-named variables in the tools' environment (`--tool-env`). Read with the reader's own privileges (the
// executor's: the tools'), bounded and non-blocking, and kept as a snapshot that is refreshed when something
// changes: a folder's listing is read again only when its mtime changed, a credential file only when its size,
// mtime or inode did. Values never leave this module except as the matcher built from them.
import { lstatSync } from "node:fs";
import path from "node:path";
import { readBounded } from "./bounded-read.ts";
import { isCredentialVariable } from "./credential-variables.ts";
import { listDirectory } from "./disk-walk.ts";
import type { PathContext } from "./path-context.ts";
import { SecretMatcher, type SecretValue } from "./secret-matcher.ts";
import { sensitiveRuleByName } from "./sensitive-paths.ts";

/** Folders a refresh may visit, credential files it may read, bytes per file and values kept. */
export const SNAPSHOT_BOUNDS = {
  folders: 4096,
  entries: 50_000,
  files: 128,
  fileBytes: 64 * 1024,
  values: 512,
};
const MIN_VALUE = 8;
const MIN_KEYED_VALUE = 6;
const MAX_VALUE = 4096;

/** Folders that hold dependencies, caches or build output, not credentials (a `.git` folder: only its config). */
const SKIPPED = new Set([
  "node_modules",
  "__pycache__",
  ".venv",
  "venv",
  ".tox",
  ".nox",
  "target",
  "dist",
  "build",
  ".next",
  ".nuxt",
  ".npm",
  ".pnpm-store",
  ".yarn",
  ".rustup",
  ".gradle",
  ".m2",
  ".ivy2",
  ".sbt",
  ".vscode-server",
  ".cursor-server",
  "proc",
]);
/** HOME/.cache is mostly caches: only its credential subfolders are walked. */
const CACHE_KEEP = new Set(["huggingface"]);

const PLACEHOLDER =
  /^(?:\$\{|\$\(|<|%|\{\{|your|changeme|change_me|example|xxx|\*{3}|true$|false$|null$|none$|localhost)/i;
const CREDENTIAL_KEY = /pass|secret|token|key|auth|cred|private|session|signature|cookie|api|pwd/i;

/** Values a credential file holds: keyed values, JSON strings, URL passwords, key lines, whole-file tokens. */
export function valuesInFile(text: string): string[] {
  const out = new Set<string>();
  const keep = (raw: string | undefined, keyed: boolean) => {
    if (!raw) return;
    const value = raw.trim().replace(/^["']|["']$/g, "");
    if (value.length < (keyed ? MIN_KEYED_VALUE : MIN_VALUE) || value.length > MAX_VALUE) return;
    if (PLACEHOLDER.test(value) || /^\s*$/.test(value)) return;
    // A value with no key naming a credential must look like one: long, and not a word or a path.
    if (!keyed && (value.length < 12 || /^[a-z-]+$/i.test(value) || /^[./~]/.test(value))) return;
    out.add(value);
  };
  const lines = text.split("\n").slice(0, 4096);
  for (const line of lines) {
    const keyed = /^\s*(?:export\s+)?["']?([\w./:@-]{1,128})["']?\s*[=:]\s*(.+?)\s*$/.exec(line);
    if (keyed?.[2] && !keyed[2].startsWith("{") && !keyed[2].startsWith("[")) {
      const value = keyed[2].replace(/\s+#.*$/, "");
      keep(value, CREDENTIAL_KEY.test(keyed[1] ?? ""));
    }
    for (const match of line.matchAll(/\bpassword\s+(\S+)/gi)) keep(match[1], true);
    // Base64 body lines of a PEM key.
    if (/^[A-Za-z0-9+/=]{16,}$/.test(line.trim())) keep(line.trim(), false);
  }
  for (const match of text
    .slice(0, SNAPSHOT_BOUNDS.fileBytes)
    .matchAll(/"([\w.-]{1,64})"\s*:\s*"([^"\\\n]{6,4096})"/g)) {
    keep(match[2], CREDENTIAL_KEY.test(match[1] ?? ""));
    // Registry "auth" fields are base64 of user:password.
    if (/^auth$/i.test(match[1] ?? ""))
      keep(
        Buffer.from(match[2] ?? "", "base64")
          .toString("utf8")
          .split(":")
          .slice(1)
          .join(":"),
        true,
      );
  }
  for (const match of text.matchAll(/[a-z][a-z0-9+.-]{1,16}:\/\/[^\s:/@]{1,256}:([^\s@/]{1,512})@/gi))
    keep(match[1], true);
  // A file that is one token (`~/.cache/huggingface/token`, `.vault-token`).
  const whole = text.trim();
  if (whole.length >= MIN_VALUE && !/\s/.test(whole)) keep(whole, true);
  return [...out];
}

interface Folder {
  mtimeMs: number;
  ino: number;
  folders: string[];
  files: string[];
}

interface FileEntry {
  key: string;
  values: string[];
}

/**
 * The snapshot: refreshed on demand (before a tool call's output is filtered), rebuilt only when something changed.
 * `degraded` says what the bounds left out.
 */
export class SecretSnapshot {
  private readonly folders = new Map<string, Folder>();
  private readonly files = new Map<string, FileEntry>();
  private matcher: SecretMatcher = new SecretMatcher([]);
  private fingerprint = "";
  degraded: string | undefined;

  /** The matcher for the credential files under `roots` and the credential variables of `env`. */
  refresh(
    roots: { home: string; workspace: string },
    env: Readonly<Record<string, string | undefined>>,
  ): SecretMatcher {
    const context: PathContext = {
      cwd: roots.workspace,
      home: roots.home,
      agentDir: path.join(roots.home, "\0no-agent-dir"),
      policyPath: "",
      gateDirs: [],
    };
    const credentialFiles = this.walk([roots.workspace, roots.home], context);
    const values: SecretValue[] = [];
    for (const [name, value] of Object.entries(env).sort(([a], [b]) => a.localeCompare(b)))
      if (value && value.length >= MIN_KEYED_VALUE && value.length <= MAX_VALUE && isCredentialVariable(name))
        values.push({ value, source: `$${name}` });
    for (const file of credentialFiles.slice(0, SNAPSHOT_BOUNDS.files)) {
      const entry = this.readValues(file);
      for (const value of entry) values.push({ value, source: shown(file, roots.home) });
    }
    if (credentialFiles.length > SNAPSHOT_BOUNDS.files)
      this.degraded = `${credentialFiles.length - SNAPSHOT_BOUNDS.files} credential files beyond the bound`;
    const kept = values.slice(0, SNAPSHOT_BOUNDS.values);
    const fingerprint = kept.map((v) => `${v.source}\0${v.value}`).join("\n");
    if (fingerprint !== this.fingerprint) {
      this.fingerprint = fingerprint;
      this.matcher = new SecretMatcher(kept);
      if (this.matcher.dropped > 0 || values.length > kept.length)
        this.degraded = `${this.matcher.dropped + values.length - kept.length} credential values beyond the filter's bound`;
    }
    return this.matcher;
  }

  /** Credential files below the roots (a bounded walk that reuses unchanged folders' listings). */
  private walk(roots: readonly string[], context: PathContext): string[] {
    const found: string[] = [];
    const seen = new Set<string>();
    const queue = roots.filter((root) => root && path.isAbsolute(root));
    let entries = 0;
    this.degraded = undefined;
    for (let dir = queue.shift(); dir !== undefined; dir = queue.shift()) {
      if (seen.has(dir)) continue;
      seen.add(dir);
      if (seen.size > SNAPSHOT_BOUNDS.folders) {
        this.degraded = "more folders than the filter walks";
        break;
      }
      const folder = this.folder(dir, context);
      if (!folder) continue;
      entries += folder.files.length + folder.folders.length;
      if (entries > SNAPSHOT_BOUNDS.entries) {
        this.degraded = "more files than the filter walks";
        break;
      }
      found.push(...folder.files);
      queue.push(...folder.folders);
    }
    // Forget folders no longer reached (bounded memory).
    for (const dir of this.folders.keys()) if (!seen.has(dir)) this.folders.delete(dir);
    const current = new Set(found);
    for (const file of this.files.keys()) if (!current.has(file)) this.files.delete(file);
    return found;
  }

  private folder(dir: string, context: PathContext): Folder | undefined {
    let stat: ReturnType<typeof lstatSync>;
    try {
      stat = lstatSync(dir, { throwIfNoEntry: false });
    } catch {
      return undefined;
    }
    if (!stat?.isDirectory()) return undefined;
    const cached = this.folders.get(dir);
    if (cached && cached.mtimeMs === stat.mtimeMs && cached.ino === stat.ino) return cached;
    const listed = listDirectory(dir, SNAPSHOT_BOUNDS.entries);
    if ("incomplete" in listed) return undefined;
    const folder: Folder = { mtimeMs: stat.mtimeMs, ino: stat.ino, folders: [], files: [] };
    const inCache = path.basename(dir) === ".cache";
    for (const entry of listed.entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name === ".git") {
          if (sensitiveRuleByName(path.join(full, "config"), context))
            folder.files.push(path.join(full, "config"));
        } else if (!SKIPPED.has(entry.name) && (!inCache || CACHE_KEEP.has(entry.name)))
          folder.folders.push(full);
      } else if (entry.isFile() && sensitiveRuleByName(full, context)) folder.files.push(full);
    }
    this.folders.set(dir, folder);
    return folder;
  }

  /** A credential file's values, read again only when its size, mtime or inode changed. */
  private readValues(file: string): string[] {
    let key: string;
    try {
      const stat = lstatSync(file, { throwIfNoEntry: false });
      if (!stat?.isFile()) return [];
      key = `${stat.size}:${stat.mtimeMs}:${stat.ino}`;
    } catch {
      return [];
    }
    const cached = this.files.get(file);
    if (cached?.key === key) return cached.values;
    const read = readBounded(file, SNAPSHOT_BOUNDS.fileBytes, { prefix: true });
    const values = read.ok ? valuesInFile(read.bytes.toString("utf8")) : [];
    this.files.set(file, { key, values });
    return values;
  }
}

/** `~/.aws/credentials` for files in HOME, the path otherwise. */
function shown(file: string, home: string): string {
  return file.startsWith(`${home}/`) ? `~/${file.slice(home.length + 1)}` : file;
}
