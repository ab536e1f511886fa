// Network clients (issue 10, class 5): anything that sends data is an exit; a GET with literal arguments is not;
// any argument computed at run time is (data can leave in a URL, header or DNS name). Options that read local
// files into a request are checked as reads; options that write are checked as writes.
import { credentialLike } from "../credential-variables.ts";
import { type ParsedArgs, parseArgs } from "../shell-options.ts";
import type { Analyzer, Scan } from "../shell-scan.ts";
import { type ShellWord, syntheticWord } from "../shell-words.ts";
import {
  checkOperands,
  distinct,
  exitOnComputedArguments,
  onlyAsksVersion,
  remoteTool,
  textAt,
} from "./common.ts";
import { serverFinding } from "./servers.ts";

const SAFE_METHODS = /^(GET|HEAD|OPTIONS)$/i;
/** URL schemes a GET-style client may fetch from without sending data. */
const FETCH_SCHEMES = /^(https?|ftps?):\/\//i;

/** A file operand written `@file` (curl, httpie): the file's content goes into the request. */
function atFile(value: ShellWord): ShellWord | undefined {
  const at = value.text.indexOf("@");
  if (at === -1) return undefined;
  const forms = value.forms.map((f) => f.slice(f.indexOf("@") + 1)).filter((f) => f !== "-");
  if (forms.length === 0) return undefined;
  return { ...value, text: forms[0] ?? "", forms };
}

/** `-F name=<file`: the file's content becomes the field's value. */
function formFile(value: ShellWord): ShellWord | undefined {
  if (!value.text.includes("=<")) return undefined;
  const forms = value.forms.map((f) => f.slice(f.indexOf("=<") + 2).split(";")[0] ?? "");
  return { ...value, text: forms[0] ?? "", forms };
}

// ---- curl ----

const CURL_SHORT_WITH_VALUE = "bcCdDeEFhHKmoPQrtTuUwxXyYzA";
const CURL_LONG_WITH_VALUE = distinct("curl options with a value", [
  "abstract-unix-socket",
  "alt-svc",
  "aws-sigv4",
  "cacert",
  "capath",
  "cert",
  "cert-type",
  "ciphers",
  "config",
  "connect-timeout",
  "connect-to",
  "continue-at",
  "cookie",
  "cookie-jar",
  "create-file-mode",
  "crlfile",
  "curves",
  "data",
  "data-ascii",
  "data-binary",
  "data-raw",
  "data-urlencode",
  "delegation",
  "dns-interface",
  "dns-ipv4-addr",
  "dns-ipv6-addr",
  "dns-servers",
  "doh-url",
  "dump-header",
  "egd-file",
  "engine",
  "etag-compare",
  "etag-save",
  "expect100-timeout",
  "form",
  "form-string",
  "ftp-account",
  "ftp-alternative-to-user",
  "ftp-method",
  "ftp-port",
  "ftp-ssl-ccc-mode",
  "happy-eyeballs-timeout-ms",
  "haproxy-clientip",
  "header",
  "help",
  "hostpubmd5",
  "hostpubsha256",
  "hsts",
  "interface",
  "ip-tos",
  "ipfs-gateway",
  "json",
  "keepalive-time",
  "key",
  "key-type",
  "krb",
  "libcurl",
  "limit-rate",
  "local-port",
  "login-options",
  "mail-auth",
  "mail-from",
  "mail-rcpt",
  "max-filesize",
  "max-redirs",
  "max-time",
  "netrc-file",
  "noproxy",
  "oauth2-bearer",
  "output",
  "output-dir",
  "pass",
  "pinnedpubkey",
  "preproxy",
  "proto",
  "proto-default",
  "proto-redir",
  "proxy",
  "proxy-cacert",
  "proxy-capath",
  "proxy-cert",
  "proxy-cert-type",
  "proxy-ciphers",
  "proxy-crlfile",
  "proxy-header",
  "proxy-key",
  "proxy-key-type",
  "proxy-pass",
  "proxy-pinnedpubkey",
  "proxy-service-name",
  "proxy-tls13-ciphers",
  "proxy-tlsauthtype",
  "proxy-tlspassword",
  "proxy-tlsuser",
  "proxy-user",
  "proxy1.0",
  "pubkey",
  "quote",
  "random-file",
  "range",
  "rate",
  "referer",
  "request",
  "request-target",
  "resolve",
  "retry",
  "retry-delay",
  "retry-max-time",
  "sasl-authzid",
  "service-name",
  "socks4",
  "socks4a",
  "socks5",
  "socks5-gssapi-service",
  "socks5-hostname",
  "speed-limit",
  "speed-time",
  "stderr",
  "telnet-option",
  "tftp-blksize",
  "time-cond",
  "tls-max",
  "tls13-ciphers",
  "tlsauthtype",
  "tlspassword",
  "tlsuser",
  "trace",
  "trace-ascii",
  "trace-config",
  "unix-socket",
  "upload-file",
  "url",
  "url-query",
  "user",
  "user-agent",
  "variable",
  "write-out",
  "expand-url",
  "expand-data",
  "expand-header",
  "expand-output",
  "ech",

  "vlan-priority",
  "knownhosts",
]);
/** Options whose presence sends data (a body, an upload, mail). */
const CURL_SENDS = [
  "d",
  "F",
  "T",
  "data",
  "data-ascii",
  "data-binary",
  "data-raw",
  "data-urlencode",
  "form",
  "form-string",
  "upload-file",
  "json",
  "mail-from",
  "mail-rcpt",
  "mail-auth",
  "post301",
  "post302",
  "post303",
  "quote",
  "telnet-option",
  "ftp-create-dirs",
];
/** Options whose value is a local file the request reads (`@file` forms are handled separately). */
const CURL_READS = [
  "cert",
  "E",
  "key",
  "cacert",
  "capath",
  "netrc-file",
  "pubkey",
  "proxy-cert",
  "proxy-key",
  "crlfile",
  "random-file",
  "egd-file",
  "knownhosts",
  "hsts",
  "alt-svc",
  "etag-compare",
];
/** Options whose value is a file curl writes. */
const CURL_WRITES = [
  "o",
  "output",
  "c",
  "cookie-jar",
  "D",
  "dump-header",
  "trace",
  "trace-ascii",
  "stderr",
  "libcurl",
  "etag-save",
];
/** Options that change where traffic goes or run commands: the request may not be what it looks like. */
const CURL_REROUTES = [
  "x",
  "proxy",
  "preproxy",
  "socks4",
  "socks4a",
  "socks5",
  "socks5-hostname",
  "doh-url",
  "connect-to",
  "resolve",
];

const curl: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: CURL_SHORT_WITH_VALUE,
    longWithValue: CURL_LONG_WITH_VALUE,
    abbreviations: true,
  });
  const f = scan.findings;
  f.reads();
  exitOnComputedArguments(call, scan);
  if (parsed.has("K", "config")) f.opaque("curl reads options from a config file");
  if (parsed.has(...CURL_SENDS)) f.sends("curl uploads or posts data");
  for (const method of parsed.values("X", "request"))
    if (!method.literal || !SAFE_METHODS.test(method.text)) f.sends(`curl sends a ${method.source} request`);
  if (parsed.has("variable") || parsed.options.some((o) => o.long && o.name.startsWith("expand")))
    f.sends("curl builds the request from variables (which can hold file contents)");
  if (parsed.has(...CURL_REROUTES))
    f.sends("curl sends the request through a proxy or resolver the command chose");
  if (parsed.has("unix-socket", "abstract-unix-socket"))
    f.sends("curl talks to a local socket (a service that may act on the request)");
  if (parsed.has("J", "remote-header-name")) scan.treeWrite(parsed.values("output-dir")[0], "curl -J");
  for (const value of parsed.values(
    "b",
    "cookie",
    "H",
    "header",
    "proxy-header",
    "url-query",
    "write-out",
    "w",
    "variable",
    ...CURL_SENDS,
  )) {
    const file = atFile(value) ?? formFile(value);
    if (file) scan.path(file, "read");
  }
  for (const value of parsed.values("H", "header", "proxy-header", "url-query", "b", "cookie")) {
    if (atFile(value)) f.sends(`curl sends the content of a file (${value.source})`);
  }
  for (const file of parsed.values("T", "upload-file")) scan.path(file, "read");
  for (const file of parsed.values(...CURL_READS)) scan.path(file, "read");
  for (const file of parsed.values(...CURL_WRITES)) scan.path(file, "write");
  const cookieFile = parsed
    .values("b", "cookie")
    .find((v) => !v.text.includes("=") && !v.text.startsWith("@"));
  if (cookieFile) scan.path(cookieFile, "read");
  for (const value of parsed.values("u", "user", "oauth2-bearer", "H", "header", "proxy-user")) {
    if (credentialLike(value.text)) f.readsSecret("curl sends credentials");
  }
  for (const url of [...parsed.operands, ...parsed.values("url")]) curlUrl(url, scan);
  if (parsed.has("O", "remote-name", "remote-name-all")) {
    for (const url of [...parsed.operands, ...parsed.values("url")])
      downloadName(url, scan, parsed.values("output-dir")[0]);
  }
};

function curlUrl(url: ShellWord, scan: Scan) {
  for (const form of url.forms) {
    if (/^file:/i.test(form)) {
      scan.path(syntheticWord(form, url.literal), "read");
      continue;
    }
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(form)?.[1]?.toLowerCase();
    if (scheme && !FETCH_SCHEMES.test(form) && !["ws", "wss"].includes(scheme))
      scan.findings.sends(`curl to ${scheme}://`);
  }
}

/** `curl -O URL`, `wget URL`: the file is named after the URL's last path segment. */
function downloadName(url: ShellWord, scan: Scan, dir: ShellWord | undefined) {
  if (!url.literal) return;
  const name = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*\/(?:[^?#]*\/)?([^/?#]+)/i.exec(url.text)?.[1];
  if (!name) return;
  let decoded = name;
  try {
    decoded = decodeURIComponent(name);
  } catch {
    // keep the raw segment
  }
  const target = dir ? `${dir.text.replace(/\/$/, "")}/${decoded}` : decoded;
  scan.path(syntheticWord(target, dir?.literal ?? true), "write");
}

// ---- wget ----

const WGET_SHORT_WITH_VALUE = "oaOPeiBtTwQUYlAR";
const WGET_LONG_WITH_VALUE = [
  "output-file",
  "append-output",
  "output-document",
  "directory-prefix",
  "execute",
  "input-file",
  "base",
  "tries",
  "timeout",
  "wait",
  "quota",
  "user-agent",
  "level",
  "accept",
  "reject",
  "post-data",
  "post-file",
  "body-data",
  "body-file",
  "method",
  "header",
  "load-cookies",
  "save-cookies",
  "certificate",
  "private-key",
  "ca-certificate",
  "ca-directory",
  "password",
  "http-password",
  "ftp-password",
  "proxy-password",
  "user",
  "http-user",
  "ftp-user",
  "config",
  "use-askpass",
  "bind-address",
  "referer",
  "limit-rate",
  "dns-timeout",
  "connect-timeout",
  "read-timeout",
  "waitretry",
  "domains",
  "exclude-domains",
  "include-directories",
  "exclude-directories",
  "cut-dirs",
  "default-page",
  "restrict-file-names",
  "warc-file",
  "rejected-log",
  "hsts-file",
  "progress",
  "secure-protocol",
  "crl-file",
  "random-file",
  "egd-file",
  "local-encoding",
  "remote-encoding",
  "e",
];

const wget: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: WGET_SHORT_WITH_VALUE,
    longWithValue: WGET_LONG_WITH_VALUE,
    abbreviations: true,
  });
  const f = scan.findings;
  exitOnComputedArguments(call, scan);
  if (parsed.has("e", "execute", "config")) f.opaque("wget runs wgetrc commands (post_file, header…)");
  if (parsed.has("use-askpass")) f.opaque("wget runs an askpass program");
  if (parsed.has("post-data", "post-file", "body-data", "body-file")) f.sends("wget sends data");
  for (const method of parsed.values("method"))
    if (!method.literal || !SAFE_METHODS.test(method.text)) f.sends(`wget sends a ${method.source} request`);
  if (parsed.has("password", "http-password", "ftp-password", "proxy-password"))
    f.readsSecret("wget sends a password");
  for (const header of parsed.values("header"))
    if (credentialLike(header.text)) f.readsSecret("wget sends credentials");
  if (parsed.has("i", "input-file")) {
    for (const file of parsed.values("i", "input-file")) scan.path(file, "read");
    f.sends("wget fetches URLs read from a file (the gate cannot see them)");
  }
  for (const file of parsed.values(
    "post-file",
    "body-file",
    "load-cookies",
    "certificate",
    "private-key",
    "ca-certificate",
  ))
    scan.path(file, "read");
  for (const file of parsed.values(
    "o",
    "output-file",
    "a",
    "append-output",
    "O",
    "output-document",
    "save-cookies",
    "rejected-log",
  ))
    scan.path(file, "write");
  const prefix = parsed.values("P", "directory-prefix").at(-1);
  const recursive = parsed.has(
    "r",
    "recursive",
    "m",
    "mirror",
    "p",
    "page-requisites",
    "content-disposition",
    "trust-server-names",
  );
  scan.findings.writes("wget downloads to a file");
  if (recursive) scan.treeWrite(prefix, "wget");
  else if (!parsed.has("O", "output-document"))
    for (const url of parsed.operands) downloadName(url, scan, prefix);
  for (const url of parsed.operands) {
    for (const form of url.forms)
      if (/^file:/i.test(form)) scan.path(syntheticWord(form, url.literal), "read");
  }
};

// ---- httpie and xh ----

const httpie: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: "aAopvbhSs",
    longWithValue: [
      "auth",
      "auth-type",
      "output",
      "print",
      "session",
      "session-read-only",
      "verify",
      "cert",
      "cert-key",
      "proxy",
      "timeout",
      "pretty",
      "style",
      "format-options",
      "boundary",
      "max-redirects",
      "ssl",
      "ciphers",
      "default-scheme",
      "response-charset",
      "response-mime",
    ],
    abbreviations: true,
  });
  const f = scan.findings;
  exitOnComputedArguments(call, scan);
  f.reads();
  const [first, ...rest] = parsed.operands;
  const method = first && /^[A-Za-z]+$/.test(first.text) && rest.length > 0 ? first : undefined;
  const items = method ? rest.slice(1) : rest;
  if (method && !SAFE_METHODS.test(method.text)) f.sends(`\`${call.name}\` sends a ${method.text} request`);
  if (parsed.has("f", "form", "multipart", "raw", "chunked")) f.sends(`\`${call.name}\` sends a body`);
  if (parsed.has("proxy")) f.sends(`\`${call.name}\` sends the request through a proxy the command chose`);
  for (const item of items) {
    const text = item.text;
    if (/^[^=:@]*==/.test(text)) continue; // query parameter (literal: visible)
    if (/^[^=:@]*:(?!=)/.test(text)) {
      if (credentialLike(text)) f.readsSecret(`\`${call.name}\` sends credentials in a header`);
      if (/^[^:]*:@/.test(text))
        scan.path(syntheticWord(text.slice(text.indexOf(":@") + 2), item.literal), "read");
      continue;
    }
    if (/^[^=:@]*(:=@|=@|@)/.test(text)) {
      const file = text.slice(text.indexOf("@") + 1);
      scan.path(syntheticWord(file, item.literal), "read");
    }
    if (/^[^=:@]*(:=|=|@)/.test(text)) f.sends(`\`${call.name}\` sends data (${item.source})`);
  }
  if (parsed.has("a", "auth")) f.readsSecret(`\`${call.name}\` sends credentials`);
  for (const file of parsed.values("session", "session-read-only", "cert", "cert-key"))
    scan.path(file, "read");
  for (const file of parsed.values("o", "output")) scan.path(file, "write");
  if (call.stdinIsData && !parsed.has("ignore-stdin", "I"))
    f.sends(`\`${call.name}\` sends stdin as the request body`);
};

/** Other fetchers: computed arguments and hooks are exits; plain GETs of literal URLs are downloads. */
const aria2c: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  exitOnComputedArguments(call, scan);
  if (call.args.some((a) => /^--on-/.test(a.text))) return scan.findings.opaque("aria2c runs hook commands");
  if (call.args.some((a) => /^--(enable-rpc|rpc)/.test(a.text)))
    return serverFinding(scan, "aria2c --enable-rpc");
  if (call.args.some((a) => /^(-i|--input-file)/.test(a.text)))
    scan.findings.sends("aria2c fetches URLs read from a file");
  scan.findings.writes("aria2c downloads files");
};

const textBrowser: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  exitOnComputedArguments(call, scan);
  if (
    call.args.some(
      (a) =>
        /^-(cmd_script|post_data|get_data|cfg|lss|editor|exec)/.test(a.text) ||
        /^-?-?(post|upload)/.test(a.text),
    )
  )
    return scan.findings.opaque(`\`${call.name}\` options that send data or run scripts`);
  scan.findings.reads();
  for (const url of call.args) {
    for (const form of url.forms)
      if (/^file:/i.test(form)) scan.path(syntheticWord(form, url.literal), "read");
  }
};

// ---- DNS, ping and friends: a lookup of a computed name carries data ----

const lookup: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  exitOnComputedArguments(call, scan);
  scan.findings.reads();
};

const getent: Analyzer = (call, scan) => {
  const database = textAt(call.args, 0);
  if (/^(hosts|ahosts|ahostsv4|ahostsv6|networks|services|protocols|rpc|netgroup)$/.test(database)) {
    if (exitOnComputedArguments(call, scan)) return;
  }
  scan.findings.reads();
};

const openssl: Analyzer = (call, scan) => {
  const sub = textAt(call.args, 0);
  if (sub === "s_client") return scan.findings.sends("openssl s_client opens a network connection");
  if (sub === "s_server" || sub === "s_time") return serverFinding(scan, `openssl ${sub}`);
  if (sub === "ocsp" && call.args.some((a) => a.text === "-url" || a.text === "-host"))
    return scan.findings.sends("openssl ocsp contacts a responder");
  if (call.args.some((a) => /^-(engine|provider-path)$/.test(a.text)))
    scan.findings.opaque("openssl loads an engine or provider (code)");
  scan.findings.reads();
  const parsed = parseArgs(call.args.slice(1), {
    singleDashLong: true,
    longWithValue: [
      "in",
      "out",
      "key",
      "inkey",
      "signkey",
      "CAkey",
      "passin",
      "passout",
      "config",
      "CAfile",
      "CApath",
      "cert",
      "certfile",
      "sigfile",
      "prverify",
      "recip",
      "secret",
    ],
  });
  for (const file of parsed.values(
    "in",
    "key",
    "inkey",
    "signkey",
    "CAkey",
    "prverify",
    "certfile",
    "cert",
    "sigfile",
    "recip",
  ))
    scan.path(file, "read");
  for (const file of parsed.values("out")) scan.path(file, "write");
  for (const pass of parsed.values("passin", "passout"))
    if (/^(file|fd|env):/.test(pass.text))
      scan.path(syntheticWord(pass.text.replace(/^file:/, ""), pass.literal), "read");
  checkOperands(parsed.operands, scan, "read");
};

// ---- database clients ----

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|::1|\[::1\]|\/.*)$/i;

/** psql, mysql, redis-cli…: connecting to a host the command names can send data there. */
function databaseClient(
  hostOptions: readonly string[],
  spec: { shortWithValue: string; longWithValue: readonly string[] },
): Analyzer {
  return (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    if (exitOnComputedArguments(call, scan)) return;
    const parsed: ParsedArgs = parseArgs(call.args, { ...spec, abbreviations: true });
    const hosts = parsed.values(...hostOptions);
    const urls = [...parsed.operands, ...parsed.values("d", "dbname", "u", "uri", "url")].filter((o) =>
      /^[a-z][a-z0-9+.-]*:\/\//i.test(o.text),
    );
    const remoteHost = hosts.find((h) => !LOOPBACK.test(h.text));
    const remoteUrl = urls.find((u) => {
      const host = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/]*@)?(\[[^\]]*\]|[^:/?]*)/i.exec(u.text)?.[1] ?? "";
      return host !== "" && !LOOPBACK.test(host);
    });
    if (remoteHost || remoteUrl)
      return scan.findings.sends(`\`${call.name}\` connects to ${remoteHost?.source ?? remoteUrl?.source}`);
    scan.findings.writes(`\`${call.name}\` uses a local database`);
    for (const file of parsed.values("f", "file", "init-command")) scan.path(file, "read");
  };
}

// ---- rsync and scp ----

const rsync: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: "eBTfM",
    longWithValue: [
      "rsh",
      "rsync-path",
      "files-from",
      "include-from",
      "exclude-from",
      "filter",
      "log-file",
      "write-batch",
      "read-batch",
      "only-write-batch",
      "password-file",
      "config",
      "port",
      "temp-dir",
      "partial-dir",
      "backup-dir",
      "compare-dest",
      "copy-dest",
      "link-dest",
      "chown",
      "chmod",
      "usermap",
      "groupmap",
      "exclude",
      "include",
      "suffix",
      "timeout",
      "contimeout",
      "address",
      "sockopts",
      "outbuf",
      "remote-option",
      "info",
      "debug",
      "max-size",
      "min-size",
      "max-delete",
      "block-size",
      "checksum-choice",
      "compress-choice",
      "skip-compress",
      "bwlimit",
      "stop-after",
      "stop-at",
      "protocol",
      "iconv",
      "checksum-seed",
      "modify-window",
      "log-file-format",
      "out-format",
      "mkpath",
    ],
    abbreviations: true,
  });
  const f = scan.findings;
  if (parsed.has("daemon")) return serverFinding(scan, "rsync --daemon");
  if (parsed.has("e", "rsh")) f.opaque("rsync runs a remote shell command");
  if (parsed.has("rsync-path", "M", "remote-option")) f.sends("rsync runs a command on the remote side");
  const remote = parsed.operands.some((o) => /^[^/]*:/.test(o.text) || o.text.startsWith("rsync://"));
  if (remote) f.sends("rsync copies to or from a remote host");
  exitOnComputedArguments(call, scan);
  for (const file of parsed.values(
    "files-from",
    "include-from",
    "exclude-from",
    "read-batch",
    "password-file",
    "config",
  ))
    scan.path(file, "read");
  for (const file of parsed.values("log-file", "write-batch", "only-write-batch")) scan.path(file, "write");
  if (parsed.has("files-from"))
    f.readsSecret("rsync copies files listed in a file (the gate cannot see them)");
  f.writes("rsync copies files");
  const destination = parsed.operands.at(-1);
  const sources = parsed.operands.slice(0, -1);
  for (const source of sources) {
    if (/^[^/]*:/.test(source.text)) continue;
    scan.recursiveRead(source, "rsync");
    if (destination && !/^[^/]*:/.test(destination.text)) scan.treeCopy(source, destination, "rsync");
  }
  if (destination && !/^[^/]*:/.test(destination.text)) scan.path(destination, "write");
};

const scp: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  scan.findings.sends(`\`${call.name}\` copies files to or from a remote host`);
  const parsed = parseArgs(call.args, { shortWithValue: "cFiJloPSDX" });
  if (parsed.has("S", "o"))
    scan.findings.opaque(`\`${call.name}\` runs a program or options the gate does not model`);
  for (const operand of parsed.operands) {
    if (/^[^/]*:/.test(operand.text)) continue;
    if (parsed.has("r")) scan.recursiveRead(operand, call.name);
    scan.path(operand, "read");
  }
  for (const file of parsed.values("i", "F")) scan.path(file, "read");
};

const ssh: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, { shortWithValue: "BbcDEeFIiJLlmOoPpQRSWw", stopAtOperand: true });
  scan.findings.sends(`\`${call.name}\` connects to a remote host`);
  const options = parsed.values("o").map((o) => o.text);
  if (options.some((o) => /^(ProxyCommand|LocalCommand|PermitLocalCommand|KnownHostsCommand|Match)/i.test(o)))
    scan.findings.opaque(`\`${call.name}\` -o runs a local command`);
  if (parsed.has("R", "D")) scan.findings.sends(`\`${call.name}\` exposes a port through the connection`);
  for (const file of parsed.values("i", "F")) scan.path(file, "read");
  for (const file of parsed.values("E")) scan.path(file, "write");
};

export const NETWORK_ANALYZERS: Readonly<Record<string, Analyzer>> = {
  curl,
  wget,
  wget2: wget,
  http: httpie,
  https: httpie,
  httpie,
  xh: httpie,
  xhs: httpie,
  aria2c,
  axel: aria2c,
  lynx: textBrowser,
  w3m: textBrowser,
  links: textBrowser,
  elinks: textBrowser,
  dig: lookup,
  nslookup: lookup,
  host: lookup,
  drill: lookup,
  kdig: lookup,
  delv: lookup,
  resolvectl: lookup,
  whois: lookup,
  ping: lookup,
  ping6: lookup,
  traceroute: lookup,
  traceroute6: lookup,
  tracepath: lookup,
  mtr: lookup,
  arping: lookup,
  fping: lookup,
  "ssh-keyscan": lookup,
  getent,
  openssl,
  nmap: remoteTool("scans network hosts"),
  masscan: remoteTool("scans network hosts"),
  zmap: remoteTool("scans network hosts"),
  hping3: remoteTool("sends crafted packets"),
  ssh,
  scp,
  sftp: remoteTool("transfers files to or from a remote host"),
  mosh: remoteTool("connects to a remote host"),
  autossh: remoteTool("connects to a remote host"),
  sshpass: remoteTool("logs in to a remote host"),
  "ssh-copy-id": remoteTool("copies keys to a remote host"),
  rsync,
  ftp: remoteTool("transfers files over FTP"),
  tftp: remoteTool("transfers files over TFTP"),
  lftp: remoteTool("transfers files to or from a remote host"),
  ncftp: remoteTool("transfers files over FTP"),
  ncftpput: remoteTool("uploads files over FTP"),
  ncftpget: remoteTool("downloads files over FTP"),
  nc: remoteTool("opens raw network connections"),
  ncat: remoteTool("opens raw network connections"),
  netcat: remoteTool("opens raw network connections"),
  socat: remoteTool("opens raw network connections"),
  telnet: remoteTool("opens a network connection"),
  websocat: remoteTool("opens a WebSocket connection"),
  wscat: remoteTool("opens a WebSocket connection"),
  grpcurl: remoteTool("sends gRPC requests"),
  mail: remoteTool("sends mail"),
  mailx: remoteTool("sends mail"),
  sendmail: remoteTool("sends mail"),
  mutt: remoteTool("sends mail"),
  neomutt: remoteTool("sends mail"),
  swaks: remoteTool("sends mail"),
  msmtp: remoteTool("sends mail"),
  croc: remoteTool("sends files to another machine"),
  "magic-wormhole": remoteTool("sends files to another machine"),
  wormhole: remoteTool("sends files to another machine"),
  transfer: remoteTool("uploads files"),
  ffsend: remoteTool("uploads files"),
  psql: databaseClient(["h", "host"], {
    shortWithValue: "cdfhLoPpTUvW",
    longWithValue: [
      "command",
      "dbname",
      "file",
      "host",
      "log-file",
      "output",
      "port",
      "username",
      "set",
      "variable",
    ],
  }),
  pg_dump: databaseClient(["h", "host"], {
    shortWithValue: "dfhpUEFjnNsStTxZ",
    longWithValue: ["dbname", "file", "host", "port", "username"],
  }),
  mysql: databaseClient(["h", "host"], {
    shortWithValue: "hPuDepSe",
    longWithValue: ["host", "port", "user", "database", "execute", "socket", "init-command"],
  }),
  mariadb: databaseClient(["h", "host"], {
    shortWithValue: "hPuDepSe",
    longWithValue: ["host", "port", "user", "database", "execute", "socket", "init-command"],
  }),
  mysqldump: databaseClient(["h", "host"], {
    shortWithValue: "hPuS",
    longWithValue: ["host", "port", "user", "socket", "result-file"],
  }),
  "redis-cli": databaseClient(["h", "u"], { shortWithValue: "hpsaun", longWithValue: ["user", "pass"] }),
  mongosh: databaseClient(["host"], {
    shortWithValue: "upf",
    longWithValue: ["host", "port", "username", "password", "file", "eval"],
  }),
  mongo: databaseClient(["host"], {
    shortWithValue: "upf",
    longWithValue: ["host", "port", "username", "password", "file", "eval"],
  }),
  sqlcmd: remoteTool("connects to a database server"),
  "clickhouse-client": databaseClient(["h", "host"], {
    shortWithValue: "hqd",
    longWithValue: ["host", "port", "query", "database", "user", "password"],
  }),
  cqlsh: remoteTool("connects to a database server"),
  influx: remoteTool("connects to a database server"),
  etcdctl: remoteTool("connects to a key-value server"),
  consul: remoteTool("connects to a service registry"),
  nats: remoteTool("publishes to a message broker"),
  kcat: remoteTool("produces to or consumes from Kafka"),
  kafkacat: remoteTool("produces to or consumes from Kafka"),
  "kafka-console-producer": remoteTool("produces to Kafka"),
  mosquitto_pub: remoteTool("publishes to an MQTT broker"),
  mosquitto_sub: remoteTool("subscribes to an MQTT broker"),
  "amqp-publish": remoteTool("publishes to a message broker"),
  ldapsearch: remoteTool("queries a directory server"),
  ldapmodify: remoteTool("changes a directory server"),
  smbclient: remoteTool("transfers files over SMB"),
  nsupdate: remoteTool("updates DNS records"),
  hurl: remoteTool("sends the HTTP requests a file describes"),
  newman: remoteTool("sends the HTTP requests of a Postman collection"),
  k6: remoteTool("sends load-test traffic"),
  ab: remoteTool("sends benchmark traffic"),
  siege: remoteTool("sends benchmark traffic"),
  wrk: remoteTool("sends benchmark traffic"),
  hey: remoteTool("sends benchmark traffic"),
  vegeta: remoteTool("sends benchmark traffic"),
  curlie: httpie,
  "xdg-open": lookup,
  open: lookup,
  "sensible-browser": lookup,
  "www-browser": lookup,
  logger: (call, scan) => {
    if (call.args.some((a) => /^(-n|--server|-P|--port|-T|--tcp|-d|--udp)/.test(a.text)))
      return scan.findings.sends("`logger` sends to a remote syslog server");
    scan.findings.writes("logger writes to the system log");
  },
};
