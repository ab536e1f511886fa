// Best-effort token scans of scripts the agent may have written (class 7: write, then run). Each language gets a
// few linear regexes (alternations of words, no nested quantifiers: time linear in the text, which is at most
// 256 KB) for four kinds of use: the network, other programs, the environment (whole, or credential-named
// variables) and credential paths, plus code built at run time. Static and incomplete by nature: a script can
// hide all of these (the OS boundary is what protects credentials); the scan catches the plain cases and shows
// the person the script.
import { isCredentialVariable } from "./credential-variables.ts";
import type { GateClass } from "./gate-classes.ts";

export type ScriptLanguage = "python" | "node" | "ruby" | "perl" | "php";

export interface ScriptFinding {
  cls: GateClass;
  what: string;
}

interface Rule {
  cls: GateClass;
  what: string;
  pattern: RegExp;
}

const NETWORK = "EXIT" as const;
const PROGRAMS = "UNKNOWN" as const;
const SECRETS = "SECRET" as const;

const RULES: Record<ScriptLanguage, Rule[]> = {
  python: [
    {
      cls: NETWORK,
      what: "network access",
      pattern:
        /\b(?:import|from)\s+(?:socket|urllib\.request|urllib2|urllib3|http\.client|httplib|requests|httpx|aiohttp|ftplib|smtplib|poplib|imaplib|telnetlib|paramiko|websockets?|xmlrpc|pycurl|boto3|botocore|grpc|dns)\b|\burlopen\s*\(|\burllib\.request\b/,
    },
    {
      cls: PROGRAMS,
      what: "runs other programs",
      pattern:
        /\b(?:import|from)\s+(?:subprocess|pty|commands)\b|\bos\.(?:system|popen|exec\w*|spawn\w*|posix_spawn\w*|fork)\b|\bcreate_subprocess_(?:exec|shell)\b/,
    },
    {
      cls: PROGRAMS,
      what: "runs code built at run time",
      pattern:
        /(?<![.\w])(?:exec|eval|compile|__import__)\s*\(|\bimportlib\b|\b(?:pickle|marshal|dill)\.loads?\b|\bctypes\b/,
    },
    {
      cls: SECRETS,
      what: "reads the whole environment",
      pattern: /\bos\.environ\b(?!\s*(?:\[|\.get\s*\(|\.setdefault\s*\())|\bos\.getenv\s*\(\s*\)/,
    },
  ],
  node: [
    {
      cls: NETWORK,
      what: "network access",
      pattern:
        /\b(?:require\s*\(\s*|from\s+|import\s*\(\s*|import\s+)["'](?:node:)?(?:https?|http2|net|tls|dgram|dns|undici|axios|node-fetch|got|ws|superagent|request)["']|\bfetch\s*\(|\bXMLHttpRequest\b|\bWebSocket\b|\bEventSource\b|\bsendBeacon\b|\bDeno\.connect\w*\b|\bBun\.connect\b/,
    },
    {
      cls: PROGRAMS,
      what: "runs other programs",
      pattern:
        /["'](?:node:)?child_process["']|\b(?:execSync|execFileSync|spawnSync|execaSync|execa)\s*\(|\bBun\.spawn(?:Sync)?\b|\bBun\.\$|\bDeno\.(?:run|Command)\b|\bprocess\.(?:binding|dlopen)\b|\bworker_threads\b/,
    },
    {
      cls: PROGRAMS,
      what: "runs code built at run time",
      pattern:
        /(?<![.\w])eval\s*\(|\bnew\s+Function\b|(?<![.\w])Function\s*\(|["'](?:node:)?vm["']|\b(?:require|import)\s*\(\s*(?:[^"'`)\s]|(["'`])[^"'`\n]{0,256}\1\s*[^)\s]|`[^`\n]{0,256}\$\{)|\bmodule\.constructor\b|\bconstructor\s*\.\s*constructor\b|\[\s*["'`]constructor["'`]\s*\]/,
    },
    {
      cls: SECRETS,
      what: "reads the whole environment",
      pattern:
        /\bprocess\.env\b(?!\s*(?:\.\s*[A-Za-z_$][\w$]*|\[\s*["'][\w.-]+["']\s*\]))|\bDeno\.env\.toObject\b|\bBun\.env\b(?!\s*\.)/,
    },
  ],
  ruby: [
    {
      cls: NETWORK,
      what: "network access",
      pattern:
        /\bNet::\w+|\brequire\s+["'](?:open-uri|net\/\w+|socket|faraday|httparty|rest-client|excon|typhoeus)["']|\bURI\.open\b|\b(?:TCP|UDP|UNIX)Socket\b|\bSocket\.new\b/,
    },
    {
      cls: PROGRAMS,
      what: "runs other programs",
      pattern:
        /`|%x[({[<|]|\b(?:system|exec|spawn)\s*[("'`%]|\bfork\s*(?:do\b|\{)|\bIO\.popen\b|\bOpen3\b|\bPTY\.spawn\b/,
    },
    {
      cls: PROGRAMS,
      what: "runs code built at run time",
      pattern:
        /\b(?:eval|instance_eval|class_eval|module_eval|binding\.eval)\b|\bMarshal\.load\b|\.send\s*\(/,
    },
    {
      cls: SECRETS,
      what: "reads the whole environment",
      pattern:
        /\bENV\.(?:to_h|to_a|each\w*|keys|values|inspect|map|select|filter|reject|sort|dup|clone)\b|\bENV\s*\)|\bp\s+ENV\b|\bputs\s+ENV\b/,
    },
  ],
  perl: [
    {
      cls: NETWORK,
      what: "network access",
      pattern:
        /\b(?:use|require)\s+(?:LWP|IO::Socket|HTTP::Tiny|Net::|Socket\b|Mojo::UserAgent|WWW::Mechanize)/,
    },
    {
      cls: PROGRAMS,
      what: "runs other programs",
      pattern: /`|\bqx\s*[^\s\w]|\b(?:system|exec)\s*[("'$@]|\bfork\s*[;(]|\bopen\s*\(?[^;\n]{0,160}\|/,
    },
    {
      cls: PROGRAMS,
      what: "runs code built at run time",
      pattern: /\beval\s*[\s{("'$]|\bdo\s+["'$]|\brequire\s+\$/,
    },
    {
      cls: SECRETS,
      what: "reads the whole environment",
      pattern: /%ENV\b|\b(?:keys|values|each)\s*\(?\s*%ENV/,
    },
  ],
  php: [
    {
      cls: NETWORK,
      what: "network access",
      pattern:
        /\b(?:curl_init|curl_exec|fsockopen|pfsockopen|stream_socket_client|socket_create|socket_connect|mail)\s*\(|\b(?:file_get_contents|fopen|readfile|file|copy)\s*\(\s*["'](?:https?|ftp|ssl|tls|tcp|udp):/,
    },
    {
      cls: PROGRAMS,
      what: "runs other programs",
      pattern: /`|\b(?:exec|shell_exec|system|passthru|popen|proc_open|pcntl_exec|pcntl_fork)\s*\(/,
    },
    {
      cls: PROGRAMS,
      what: "runs code built at run time",
      pattern: /\b(?:eval|assert|create_function)\s*\(|\b(?:include|require)(?:_once)?\s*\(?\s*\$/,
    },
    {
      cls: SECRETS,
      what: "reads the whole environment",
      pattern: /\$_ENV\b(?!\s*\[)|\$_SERVER\b(?!\s*\[)|\bgetenv\s*\(\s*\)/,
    },
  ],
};

/** String literals (single, double, backtick quotes; no escapes spanning lines), up to 512 chars each. */
const STRING_LITERAL = /"((?:[^"\\\n]|\\.){0,512})"|'((?:[^'\\\n]|\\.){0,512})'|`((?:[^`\\\n]|\\.){0,512})`/g;
/** A variable read by name, in any of the five languages. */
const NAMED_VARIABLE =
  /\b(?:environ(?:\.get)?|getenv|env(?:\.get)?|ENV(?:\.fetch)?)\s*[[(]\s*["']([A-Za-z_][\w]{0,127})["']|\bprocess\.env\.([A-Za-z_$][\w$]{0,127})|\$ENV\{\s*["']?([A-Za-z_]\w{0,127})|\$_ENV\[\s*["']([A-Za-z_]\w{0,127})/g;
const MAX_FINDINGS = 12;

/**
 * Scans one script. `isCredentialPath` judges string literals that look like paths (`~/.aws/credentials`,
 * `/proc/self/environ`, `.env`).
 */
export function scanScriptText(
  text: string,
  language: ScriptLanguage,
  isCredentialPath: (literal: string) => string | undefined,
): ScriptFinding[] {
  const findings: ScriptFinding[] = [];
  const add = (cls: GateClass, what: string) => {
    if (findings.length < MAX_FINDINGS && !findings.some((f) => f.what === what))
      findings.push({ cls, what });
  };
  for (const rule of RULES[language]) if (rule.pattern.test(text)) add(rule.cls, rule.what);
  for (const match of text.matchAll(NAMED_VARIABLE)) {
    const name = match[1] ?? match[2] ?? match[3] ?? match[4];
    if (name && isCredentialVariable(name)) add(SECRETS, `reads credential-like variable ${name}`);
  }
  for (const match of text.matchAll(STRING_LITERAL)) {
    const literal = match[1] ?? match[2] ?? match[3] ?? "";
    if (!/[/.~]/.test(literal)) continue;
    const why = isCredentialPath(literal);
    if (why) add(SECRETS, `names ${why} (${JSON.stringify(literal.slice(0, 80))})`);
    if (findings.length >= MAX_FINDINGS) break;
  }
  return findings;
}

/** The language a shebang line names (`#!/usr/bin/env -S python3 -u` → python), or "shell", or undefined. */
export function shebangLanguage(text: string): ScriptLanguage | "shell" | "unknown" | undefined {
  if (!text.startsWith("#!")) return undefined;
  const line = text.slice(
    2,
    text.indexOf("\n") === -1 ? Math.min(text.length, 512) : Math.min(text.indexOf("\n"), 512),
  );
  const words = line.trim().split(/\s+/);
  let program = (words[0] ?? "").split("/").pop() ?? "";
  if (program === "env") {
    const next = words.slice(1).find((w) => !w.startsWith("-") && !w.includes("="));
    program = (next ?? "").split("/").pop() ?? "";
  }
  if (/^(?:sh|bash|dash|zsh|ksh|mksh|ash|busybox)$/.test(program)) return "shell";
  if (/^python[\d.]*$/.test(program)) return "python";
  if (/^(?:node|nodejs|deno|bun|tsx|ts-node)$/.test(program)) return "node";
  if (/^ruby[\d.]*$/.test(program)) return "ruby";
  if (/^perl[\d.]*$/.test(program)) return "perl";
  if (/^php[\d.]*$/.test(program)) return "php";
  return "unknown";
}

/** The language of a script file by its name, for kinds that do not say (test files, local imports). */
export function languageByName(file: string): ScriptLanguage | "shell" | undefined {
  if (/\.(?:sh|bash|zsh)$/.test(file)) return "shell";
  if (/\.py$/.test(file)) return "python";
  if (/\.(?:[cm]?js|jsx|[cm]?ts|tsx)$/.test(file)) return "node";
  if (/\.rb$/.test(file)) return "ruby";
  if (/\.(?:pl|pm|t)$/.test(file)) return "perl";
  if (/\.php$/.test(file)) return "php";
  return undefined;
}

/** Local files a script imports (relative specifiers), to be inspected too. Literal specifiers only. */
export function localImports(text: string, language: ScriptLanguage): string[] {
  const found = new Set<string>();
  const patterns: Record<ScriptLanguage, RegExp> = {
    node: /\b(?:require|import)\s*\(\s*["'](\.{1,2}\/[^"'\n]{1,256})["']|\bfrom\s+["'](\.{1,2}\/[^"'\n]{1,256})["']|\bimport\s+["'](\.{1,2}\/[^"'\n]{1,256})["']/g,
    python: /^[ \t]*(?:from[ \t]+(\.{0,3}[\w.]{1,128})[ \t]+import|import[ \t]+([\w.]{1,128}))/gm,
    ruby: /\b(?:require_relative|load)\s*\(?\s*["']([^"'\n]{1,256})["']/g,
    perl: /\b(?:require|do)\s+["']([^"'\n]{1,256})["']/g,
    php: /\b(?:include|require)(?:_once)?\s*\(?\s*["']([^"'\n]{1,256})["']/g,
  };
  for (const match of text.matchAll(patterns[language])) {
    const spec = match[1] ?? match[2] ?? match[3];
    if (spec) found.add(spec);
    if (found.size >= 64) break;
  }
  return [...found];
}
