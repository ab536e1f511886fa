// Programs that print the environment, other processes' environments or stored secrets.
import { isCredentialVariable } from "../credential-variables.ts";
import { parseArgs } from "../shell-options.ts";
import type { Analyzer } from "../shell-scan.ts";
import { checkOperands, onlyAsksVersion } from "./common.ts";

/** `printenv` prints everything; `printenv NAME…` only those names. */
const printenv: Analyzer = (call, scan) => {
  const names = parseArgs(call.args).operands;
  if (names.length === 0) return scan.findings.readsSecret("`printenv` prints environment variables");
  const secret = names.find((n) => !n.literal || isCredentialVariable(n.text));
  if (secret)
    return scan.findings.readsSecret(
      `\`printenv\` prints ${secret.literal ? `credential-like variable ${secret.text}` : "a variable named at run time"}`,
    );
  scan.findings.reads();
};

/** BSD-style `ps e` (no dash) prints process environments; so do `-o env`-like formats with `e`. */
const ps: Analyzer = (call, scan) => {
  if (call.args.some((a) => !a.text.startsWith("-") && /^[a-zA-Z]*e[a-zA-Z]*$/.test(a.text)))
    return scan.findings.readsSecret("`ps e` prints process environments");
  if (call.args.some((a) => /environ|^e$/.test(a.text) && a !== call.args[0]))
    return scan.findings.readsSecret("`ps` prints process environments");
  scan.findings.reads();
};

const compgen: Analyzer = (call, scan) => {
  if (call.args.some((a) => /^-[a-zA-Z]*[ve]/.test(a.text) || a.text === "-A"))
    return scan.findings.readsSecret("`compgen` lists variables");
  scan.findings.reads();
};

/** envsubst replaces `$NAME` in its input with the environment's values. */
const envsubst: Analyzer = (call, scan) => {
  const allowed = parseArgs(call.args).operands;
  if (allowed.length > 0 && allowed.every((a) => a.literal)) {
    const names = [
      ...allowed
        .map((a) => a.text)
        .join(" ")
        .matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]{0,255})/g),
    ].map((m) => m[1] ?? "");
    if (names.length > 0 && !names.some((n) => isCredentialVariable(n))) return scan.findings.reads();
  }
  scan.findings.readsSecret("`envsubst` writes environment values into its output");
};

function secretStore(what: string): Analyzer {
  return (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    scan.findings.readsSecret(`\`${call.name}\` ${what}`);
  };
}

const gpg: Analyzer = (call, scan) => {
  if (
    call.args.some((a) =>
      /^--(export-secret|export-ssh-key|decrypt|show-session-key|list-packets)|^-[a-zA-Z]*d/.test(a.text),
    )
  )
    scan.findings.readsSecret(`\`${call.name}\` reveals secret keys or decrypted data`);
  if (
    call.args.some((a) =>
      /^--(send-keys|keyserver|recv-keys|refresh-keys|search-keys|fetch-keys|auto-key-locate)/.test(a.text),
    )
  )
    scan.findings.sends(`\`${call.name}\` talks to a keyserver`);
  scan.findings.writes(`runs \`${call.name}\``);
  checkOperands(call.args, scan, "read");
};

const sshKeygen: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, { shortWithValue: "abCDEfFIJjKmMnNOPrsStuUVwYz" });
  for (const file of parsed.values("f")) scan.path(file, parsed.has("y", "e", "l", "B") ? "read" : "write");
  if (parsed.has("y") || parsed.has("e")) scan.findings.reads();
  scan.findings.writes("ssh-keygen writes key files");
};

export const ENVIRONMENT_ANALYZERS: Readonly<Record<string, Analyzer>> = {
  printenv,
  ps,
  compgen,
  envsubst,
  gpg,
  gpg2: gpg,
  "ssh-keygen": sshKeygen,
  "secret-tool": secretStore("reads a secret store"),
  security: secretStore("reads the keychain"),
  pass: secretStore("reads a password store"),
  gopass: secretStore("reads a password store"),
  op: secretStore("reads a password manager"),
  keyring: secretStore("reads a secret store"),
  bw: secretStore("reads a password manager"),
  lpass: secretStore("reads a password manager"),
  "aws-vault": secretStore("reads stored cloud credentials"),
  keyctl: secretStore("reads the kernel keyring"),
  "git-credential-store": secretStore("reads stored git credentials"),
  history: secretStore("prints the shell history (it can hold secrets)"),
  sops: secretStore("decrypts secrets"),
  age: (call, scan) => {
    if (call.args.some((a) => a.text === "-d" || a.text === "--decrypt"))
      scan.findings.readsSecret("`age -d` decrypts data");
    scan.findings.writes("runs `age`");
    checkOperands(call.args, scan, "read");
  },
};
