// Credential files the name rules do not know, found by what they hold (issue 19, "judge by content"): a read of a
// file whose first 64 KB carry a private key, a token of a known shape, or (in config-like files) a credential
// key with a value, counts as a secret read whatever the file is called. Linear regexes over a bounded, non-blocking
// read; source code is judged by token shapes only (`password = form["password"]` is not a credential).
import path from "node:path";
import { readBounded } from "./bounded-read.ts";

/** How much of a file is looked at. */
export const SNIFF_BYTES = 64 * 1024;

/** Shapes that are credentials wherever they appear. */
const STRONG: ReadonlyArray<{ what: string; pattern: RegExp }> = [
  { what: "a private key", pattern: /-----BEGIN (?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY(?: BLOCK)?-----/ },
  { what: "an AWS secret access key", pattern: /aws_secret_access_key\s{0,8}[=:]/i },
  {
    what: "a service-account key",
    pattern: /"type"\s{0,8}:\s{0,8}"service_account"|"private_key"\s{0,8}:\s{0,8}"-----BEGIN/,
  },
  {
    what: "an OAuth refresh token or client secret",
    pattern: /"(?:refresh_token|client_secret)"\s{0,8}:\s{0,8}"[^"\s]{8}/,
  },
  {
    what: "a package registry token",
    pattern: /_authToken\s{0,8}=\s{0,8}\S{8}|\bnpm_[A-Za-z0-9]{36}\b|\bpypi-AgE[\w-]{40}/,
  },
  {
    what: "an access token of a known service",
    pattern:
      /\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_\w{40}|glpat-[\w-]{20}|xox[abprs]-[\w-]{10}|sk_(?:live|test)_[A-Za-z0-9]{16}|sk-(?:proj-|ant-)?[\w-]{32}|hf_[A-Za-z]{30}|AKIA[0-9A-Z]{16}|AGE-SECRET-KEY-1[0-9A-Z]{40}|ya29\.[\w-]{8}|sbp_[a-f0-9]{40}|SG\.[\w-]{22}\.[\w-]{43})/,
  },
  {
    what: "a webhook URL with its secret",
    pattern: /https:\/\/hooks\.slack\.com\/services\/\w+\/\w+\/\w{8}/,
  },
  { what: "a storage account key", pattern: /AccountKey=[A-Za-z0-9+/=]{16}/ },
  {
    what: "registry credentials",
    pattern: /"auths"\s{0,8}:\s{0,8}\{[^}]{0,512}"auth"\s{0,8}:\s{0,8}"[A-Za-z0-9+/=]{8}/,
  },
  { what: "password hashes", pattern: /^[^:\s]{1,64}:\$(?:apr1|2[aby]|1|5|6|y)\$[./A-Za-z0-9]{4}/m },
];

/** In config-like files: a credential-named key with a real-looking value. */
const KEY_VALUE =
  /^[ \t]{0,32}(?:export[ \t]+)?["']?[\w.-]{0,48}(?:password|passwd|secret|token|api_?key|access_?key|account_?key|private_?key|credentials?)["']?[ \t]{0,8}[=:][ \t]{0,8}["']?([^\s"'#]{8,256})/im;
/** Values that are placeholders, not credentials. */
const PLACEHOLDER =
  /^(?:\$\{|\$\(|<|%|\{\{|your|changeme|change_me|example|xxx|\*{3}|true$|false$|null$|none$)/i;

/** Source files: judged by token shapes only. */
const SOURCE_EXTENSIONS = new Set([
  "js",
  "mjs",
  "cjs",
  "ts",
  "mts",
  "cts",
  "jsx",
  "tsx",
  "py",
  "rb",
  "go",
  "rs",
  "java",
  "kt",
  "scala",
  "php",
  "c",
  "h",
  "cc",
  "cpp",
  "hpp",
  "cs",
  "swift",
  "m",
  "lua",
  "pl",
  "pm",
  "sh",
  "bash",
  "zsh",
  "md",
  "html",
  "css",
  "vue",
  "svelte",
]);

/** What credential a file holds, judged by content, or undefined (also when it is not a readable regular file). */
export function credentialContentRule(file: string): string | undefined {
  const read = readBounded(file, SNIFF_BYTES, { prefix: true });
  if (!read.ok || read.bytes.length === 0) return undefined;
  const text = read.bytes.toString("latin1");
  for (const { what, pattern } of STRONG) if (pattern.test(text)) return `${what} (by its content)`;
  const extension = path.extname(file).slice(1).toLowerCase();
  if (SOURCE_EXTENSIONS.has(extension)) return undefined;
  const match = KEY_VALUE.exec(text);
  if (match?.[1] && !PLACEHOLDER.test(match[1])) return "a credential value (by its content)";
  return undefined;
}
