// Scripts the agent may have written, in Python, JavaScript/TypeScript, Ruby, Perl and PHP, judged by a model of
// what the gate understands (issue 19: default to asking for what it cannot model). A script is modeled when every
// module it loads is one the gate knows (a safe standard module, or a local file it follows and scans in turn)
// and it uses no construct that hides what runs (eval, dynamic imports, reflection, `#!` arguments, a local file
// shadowing a standard module). Within the model, token scans say what it does: the network (sends), other
// programs or code built at run time (unmodeled), the whole environment or credential paths (secret reads).
// Everything else is unmodeled. Linear regexes over at most 256 KB; static and best effort by nature: the OS
// boundary and the egress guard are what protect credentials.
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { isCredentialVariable } from "./credential-variables.ts";
import type { UnmodeledCause } from "./effects.ts";
import {
  NODE_BUILTINS,
  NODE_NETWORK,
  NODE_PROGRAMS,
  NODE_SAFE,
  PERL_SAFE,
  PYTHON_NETWORK,
  PYTHON_PROGRAMS,
  PYTHON_SAFE,
  PYTHON_STDLIB,
  RUBY_NETWORK,
  RUBY_SAFE,
} from "./script-modules.ts";

export type ScriptLanguage = "python" | "node" | "ruby" | "perl" | "php";

export type ScriptFinding =
  | { kind: "sends"; what: string }
  | { kind: "reads-secret"; what: string }
  | { kind: "unmodeled"; cause: UnmodeledCause; what: string };

export interface ScriptScan {
  findings: ScriptFinding[];
  /** It may write files (so code run after it in the same command may not be what the gate read). */
  writesFiles: boolean;
  /** Local files the script loads (imports, requires, shadowing modules): inspected in turn. */
  localFiles: string[];
}

interface Rule {
  kind: "sends" | "reads-secret" | "unmodeled";
  what: string;
  pattern: RegExp;
}

const RULES: Record<ScriptLanguage, Rule[]> = {
  python: [
    {
      kind: "sends",
      what: "network access",
      pattern: /\burlopen\s*\(|\burllib\.request\b|\bcreate_connection\s*\(/,
    },
    {
      kind: "unmodeled",
      what: "runs other programs",
      pattern:
        /\.(?:system|popen|exec[lv]p?e?|spawn[lv]p?e?|fork|forkpty|posix_spawnp?|startfile)\s*\(|\bcreate_subprocess_(?:exec|shell)\b|\bimport\s+(?:system|popen|exec\w*|spawn\w*|fork|posix_spawn\w*)\b/,
    },
    {
      kind: "unmodeled",
      what: "runs code built at run time or reached by reflection",
      pattern:
        /(?<![.\w])(?:exec|eval|compile|__import__|globals|vars|breakpoint)\s*\(|\bimportlib\b|\brunpy\b|\b(?:pickle|marshal|dill|shelve)\.loads?\b|\bctypes\b|\bsys\.modules\b|__(?:builtins|dict|class|subclasses|globals|code|loader|spec)__|\bgetattr\s*\(\s*[^,()]{1,128},\s*(?!["'][\w]{1,64}["']\s*[,)])|\bsetattr\s*\(/,
    },
    {
      kind: "reads-secret",
      what: "reads the whole environment",
      pattern: /\benviron\b(?!\s*(?:\[|\.get\s*\(|\.setdefault\s*\())|\bgetenv\s*\(\s*\)/,
    },
  ],
  node: [
    {
      kind: "sends",
      what: "network access",
      pattern: /\bfetch\b|\bXMLHttpRequest\b|\bWebSocket\b|\bEventSource\b|\bsendBeacon\b/,
    },
    {
      kind: "unmodeled",
      what: "runs other programs or native code",
      pattern:
        /\bprocess\s*\.\s*(?:binding|_linkedBinding|dlopen|execve|kill)\b|\bBun\s*\.|\bDeno\s*\.|(?<![.\w])(?:execSync|execFileSync|spawnSync|execaSync|execa|spawn|execFile|fork)\s*\(/,
    },
    {
      kind: "unmodeled",
      what: "runs code built at run time or reached by reflection",
      pattern:
        /(?<![.\w])eval\s*\(|\bnew\s+Function\b|(?<![.\w])Function\s*\(|\bReflect\s*\.|\bglobalThis\s*\[|\bprocess\s*\[|\bmodule\.constructor\b|\bconstructor\s*\.\s*constructor\b|\[\s*["'`]constructor["'`]\s*\]|\b(?:require|import)\s*\(\s*(?!["'][^"'`\n]{1,256}["']\s*\))/,
    },
    {
      kind: "reads-secret",
      what: "reads the whole environment",
      pattern:
        /\bprocess\s*\.\s*env\b(?!\s*(?:\.\s*[A-Za-z_$][\w$]*|\[\s*["'][\w.-]+["']\s*\]))|\{[^}]{0,256}\benv\b[^}]{0,256}\}\s*=\s*process\b/,
    },
  ],
  ruby: [
    {
      kind: "unmodeled",
      what: "runs other programs",
      pattern:
        /`|%x[({[<|]|\b(?:system|exec|spawn)\s*[("'`%]|\bfork\s*(?:do\b|\{)|\bIO\.popen\b|\bOpen3\b|\bPTY\.spawn\b|\bopen\s*\(?\s*["']\|/,
    },
    {
      kind: "unmodeled",
      what: "runs code built at run time or reached by reflection",
      pattern:
        /\b(?:eval|instance_eval|class_eval|module_eval|instance_exec|binding)\b|\bMarshal\.load\b|\.(?:send|public_send|__send__|method|const_get)\s*[(:]|\bObjectSpace\b|\bFiddle\b/,
    },
    { kind: "reads-secret", what: "reads the whole environment", pattern: /\bENV\b(?!\s*\[|\.fetch\b)/ },
  ],
  perl: [
    {
      kind: "unmodeled",
      what: "runs other programs",
      pattern: /`|\bqx\s*[^\s\w]|\b(?:system|exec)\s*[("'$@]|\bfork\s*[;(]|\bopen\s*\(?[^;\n]{0,160}\|/,
    },
    {
      kind: "unmodeled",
      what: "runs code built at run time",
      pattern: /\beval\s*[\s{("'$]|\bdo\s+["'$]|\brequire\s+\$|\bsyscall\b/,
    },
    {
      kind: "reads-secret",
      what: "reads the whole environment",
      pattern: /%ENV\b|\b(?:keys|values|each)\s*\(?\s*%ENV/,
    },
  ],
  php: [
    {
      kind: "sends",
      what: "network access",
      pattern:
        /\b(?:curl_init|curl_exec|fsockopen|pfsockopen|stream_socket_client|socket_create|socket_connect|mail|mb_send_mail)\s*\(|\b(?:file_get_contents|fopen|readfile|file|copy)\s*\(\s*["'](?:https?|ftp|ssl|tls|tcp|udp):|\bnew\s+\\?(?:SoapClient|SplFileObject)\b/,
    },
    {
      kind: "unmodeled",
      what: "runs other programs",
      pattern: /`|\b(?:exec|shell_exec|system|passthru|popen|proc_open|pcntl_exec|pcntl_fork)\s*\(|\bFFI\b/,
    },
    {
      kind: "unmodeled",
      what: "runs code built at run time, or opens a path or URL computed at run time",
      pattern:
        /\b(?:eval|assert|create_function|call_user_func(?:_array)?)\s*\(|\b(?:include|require)(?:_once)?\s*\(?\s*\$|\b(?:file_get_contents|fopen|readfile|file|copy|stream_context_create)\s*\(\s*\$|\$\w+\s*\(/,
    },
    {
      kind: "reads-secret",
      what: "reads the whole environment",
      pattern: /\$_ENV\b(?!\s*\[)|\$_SERVER\b(?!\s*\[)|\bgetenv\s*\(\s*\)/,
    },
  ],
};

/** File writes, by language (a script that writes may change what runs after it in the same command). */
const WRITES: Record<ScriptLanguage, RegExp> = {
  python:
    /\bopen\s*\([^)]{0,256},\s*(?:mode\s*=\s*)?(?:["'][^"']{0,8}[wax+]|[A-Za-z_])|\.write_(?:text|bytes)\s*\(|\bshutil\.|\bos\.(?:rename|replace|remove|unlink|symlink|link|makedirs|mkdir|truncate|write|open)\b|\.(?:touch|symlink_to|hardlink_to|rename|replace|unlink)\s*\(|\btempfile\b/,
  node: /\b(?:writeFile|appendFile|createWriteStream|copyFile|cp|rename|symlink|link|truncate|rm|unlink|mkdir|open|write|writev)(?:Sync)?\s*\(/,
  ruby: /\bFile\.(?:write|open|rename|delete|symlink|link)\b|\bFileUtils\b|\bIO\.write\b/,
  perl: /\bopen\s*\(?[^;\n]{0,160}[>+]|\b(?:rename|unlink|symlink|link|mkdir|truncate)\b/,
  php: /\b(?:file_put_contents|fwrite|fputs|fopen|rename|unlink|copy|mkdir|symlink|link|touch|tempnam)\s*\(/,
};

/** String literals (single, double, backtick quotes; no escapes spanning lines), up to 512 chars each. */
const STRING_LITERAL = /"((?:[^"\\\n]|\\.){0,512})"|'((?:[^'\\\n]|\\.){0,512})'|`((?:[^`\\\n]|\\.){0,512})`/g;
/** A variable read by name, in any of the five languages. */
const NAMED_VARIABLE =
  /\b(?:environ(?:\.get)?|getenv|env(?:\.get)?|ENV(?:\.fetch)?)\s*[[(]\s*["']([A-Za-z_][\w]{0,127})["']|\bprocess\.env\.([A-Za-z_$][\w$]{0,127})|\$ENV\{\s*["']?([A-Za-z_]\w{0,127})|\$_ENV\[\s*["']([A-Za-z_]\w{0,127})/g;
const MAX_FINDINGS = 16;
const MAX_MODULES = 256;

/**
 * Judges one script. `file` locates its local imports; `isCredentialPath` judges string literals that look like
 * paths (`~/.aws/credentials`, `/proc/self/environ`, `.env`).
 */
export function scanScript(
  text: string,
  language: ScriptLanguage,
  options: { file: string; isCredentialPath: (literal: string) => string | undefined },
): ScriptScan {
  const findings: ScriptFinding[] = [];
  const localFiles = new Set<string>();
  const add = (finding: ScriptFinding) => {
    if (findings.length < MAX_FINDINGS && !findings.some((f) => f.what === finding.what))
      findings.push(finding);
  };
  for (const rule of RULES[language]) {
    if (!rule.pattern.test(text)) continue;
    if (rule.kind === "unmodeled") add({ kind: "unmodeled", cause: "construct", what: rule.what });
    else add({ kind: rule.kind, what: rule.what });
  }
  for (const match of text.matchAll(NAMED_VARIABLE)) {
    const name = match[1] ?? match[2] ?? match[3] ?? match[4];
    if (name && isCredentialVariable(name))
      add({ kind: "reads-secret", what: `reads credential-like variable ${name}` });
  }
  for (const match of text.matchAll(STRING_LITERAL)) {
    const literal = match[1] ?? match[2] ?? match[3] ?? "";
    if (!/[/.~]/.test(literal)) continue;
    const why = options.isCredentialPath(literal);
    if (why) add({ kind: "reads-secret", what: `names ${why} (${JSON.stringify(literal.slice(0, 80))})` });
    if (findings.length >= MAX_FINDINGS) break;
  }
  const dir = path.dirname(options.file);
  for (const spec of moduleSpecifiers(text, language)) {
    const local = resolveLocal(dir, spec, language);
    if (local === "not-a-module") continue;
    if (local) {
      localFiles.add(local);
      continue;
    }
    const verdict = judgeModule(spec, language);
    if (verdict) add(verdict);
  }
  // Python puts the script's folder first on sys.path: a file there named like a standard module is what every
  // import of that module gets, the standard library's own imports included.
  if (language === "python") for (const shadow of shadowingModules(dir)) localFiles.add(shadow);
  return { findings, writesFiles: WRITES[language].test(text), localFiles: [...localFiles] };
}

/** What loading a non-local module means: undefined (modeled), sends, or unmodeled. */
function judgeModule(spec: string, language: ScriptLanguage): ScriptFinding | undefined {
  switch (language) {
    case "python": {
      const top = spec.replace(/^\.+/, "").split(".")[0] ?? "";
      if (top === "") return undefined;
      const full = spec.replace(/^\.+/, "");
      if (PYTHON_NETWORK.has(top) || PYTHON_NETWORK.has(full))
        return { kind: "sends", what: `network access (${full})` };
      if (PYTHON_PROGRAMS.has(top) || PYTHON_PROGRAMS.has(full))
        return { kind: "unmodeled", cause: "construct", what: `runs other programs (${full})` };
      if (PYTHON_SAFE.has(full) || PYTHON_SAFE.has(top)) return undefined;
      return {
        kind: "unmodeled",
        cause: PYTHON_STDLIB.has(top) ? "language" : "dependencies",
        what: `imports ${full}, which the gate does not model`,
      };
    }
    case "node": {
      const name = spec.replace(/^node:/, "");
      const top = name.split("/")[0] ?? "";
      if (NODE_NETWORK.has(top)) return { kind: "sends", what: `network access (${name})` };
      if (NODE_PROGRAMS.has(top))
        return { kind: "unmodeled", cause: "construct", what: `runs other programs or code (${name})` };
      if (NODE_BUILTINS.has(top) || spec.startsWith("node:"))
        return NODE_SAFE.has(name) || NODE_SAFE.has(top)
          ? undefined
          : { kind: "unmodeled", cause: "language", what: `loads ${spec}, which the gate does not model` };
      return {
        kind: "unmodeled",
        cause: "dependencies",
        what: `loads the package ${spec}, which the gate does not read`,
      };
    }
    case "ruby":
      if (RUBY_NETWORK.has(spec.split("/")[0] ?? spec) || RUBY_NETWORK.has(spec))
        return { kind: "sends", what: `network access (${spec})` };
      return RUBY_SAFE.has(spec)
        ? undefined
        : {
            kind: "unmodeled",
            cause: "dependencies",
            what: `requires ${spec}, which the gate does not model`,
          };
    case "perl":
      if (/^(?:LWP|IO::Socket|HTTP::|Net::|Socket$|Mojo::UserAgent|WWW::)/.test(spec))
        return { kind: "sends", what: `network access (${spec})` };
      return PERL_SAFE.has(spec)
        ? undefined
        : { kind: "unmodeled", cause: "dependencies", what: `uses ${spec}, which the gate does not model` };
    case "php":
      return {
        kind: "unmodeled",
        cause: "dependencies",
        what: `includes ${spec}, which is not a file beside the script`,
      };
  }
}

/** The modules a script loads, by the language's own import forms (literal specifiers; the rest is a construct). */
function moduleSpecifiers(text: string, language: ScriptLanguage): string[] {
  const found = new Set<string>();
  const push = (spec: string | undefined) => {
    if (spec && found.size < MAX_MODULES) found.add(spec.trim());
  };
  switch (language) {
    case "python":
      for (const match of text.matchAll(/^[ \t]*from[ \t]+(\.{0,3}[\w.]{0,128})[ \t]+import\b/gm))
        push(match[1] || ".");
      for (const match of text.matchAll(/^[ \t]*import[ \t]+([\w., \t]{1,512})/gm))
        for (const part of (match[1] ?? "").split(",")) push(part.trim().split(/\s+/)[0]);
      break;
    case "node":
      for (const match of text.matchAll(
        /\b(?:require|import)\s*\(\s*["']([^"'\n]{1,256})["']\s*\)|\bfrom\s+["']([^"'\n]{1,256})["']|\bimport\s+["']([^"'\n]{1,256})["']/g,
      ))
        push(match[1] ?? match[2] ?? match[3]);
      break;
    case "ruby":
      for (const match of text.matchAll(/\b(require(?:_relative)?|load)\s*\(?\s*["']([^"'\n]{1,256})["']/g))
        push(match[1] === "require" ? match[2] : `./${match[2]}`);
      break;
    case "perl":
      for (const match of text.matchAll(/^[ \t]*(?:use|require)[ \t]+([A-Za-z][\w:]{0,128})/gm))
        push(match[1]);
      for (const match of text.matchAll(/\b(?:require|do)\s+["']([^"'\n]{1,256})["']/g))
        push(`./${match[1]}`);
      break;
    case "php":
      for (const match of text.matchAll(/\b(?:include|require)(?:_once)?\s*\(?\s*["']([^"'\n]{1,256})["']/g))
        push(match[1]?.startsWith("/") ? match[1] : `./${match[1]}`);
      break;
  }
  return [...found];
}

/** Perl pragmas and version numbers are not modules. */
const PERL_PRAGMAS =
  /^(?:strict|warnings|utf8|feature|constant|vars|lib|parent|base|integer|bytes|open|overload|\d[\d.]*|v\d[\d.]*)$/;

/**
 * A local file a specifier names (relative specifiers, Python modules beside the script); "not-a-module" for a
 * pragma or a relative specifier that names nothing (the script fails to load it); undefined for a module.
 */
function resolveLocal(
  dir: string,
  spec: string,
  language: ScriptLanguage,
): string | "not-a-module" | undefined {
  const candidates: string[] = [];
  if (language === "node") {
    if (!/^\.{1,2}\//.test(spec)) return undefined;
    const base = path.resolve(dir, spec);
    candidates.push(
      base,
      ...[".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx"].map((ext) => base + ext),
    );
    candidates.push(...["index.js", "index.ts", "index.mjs"].map((name) => path.join(base, name)));
    if (/\.js$/.test(spec)) candidates.push(base.replace(/\.js$/, ".ts")); // TypeScript's ".js" imports
  } else if (language === "python") {
    const relative = spec.replace(/^\.+/, "").replace(/\./g, "/");
    if (!relative) return undefined;
    candidates.push(path.join(dir, `${relative}.py`), path.join(dir, relative, "__init__.py"));
  } else if (language === "ruby") {
    if (!spec.startsWith("./") && !spec.startsWith("../")) return undefined;
    candidates.push(path.resolve(dir, spec), path.resolve(dir, `${spec}.rb`));
  } else if (language === "perl") {
    if (PERL_PRAGMAS.test(spec)) return "not-a-module";
    if (!spec.startsWith("./")) return undefined;
    candidates.push(path.resolve(dir, spec));
  } else {
    candidates.push(path.resolve(dir, spec));
  }
  const found = candidates.find(isFile);
  // A relative specifier that names nothing loads nothing (the script fails): not a module to judge.
  if (!found && (language === "node" || language === "ruby" || language === "php" || spec.startsWith("./")))
    return "not-a-module";
  return found;
}

/** `*.py` files (or packages) beside a Python script whose names are standard modules. */
function shadowingModules(dir: string): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir).slice(0, 4096);
  } catch {
    return out;
  }
  for (const name of names) {
    const module = name.endsWith(".py") ? name.slice(0, -3) : name;
    if (!PYTHON_STDLIB.has(module)) continue;
    const file = name.endsWith(".py") ? path.join(dir, name) : path.join(dir, name, "__init__.py");
    if (isFile(file)) out.push(file);
  }
  return out;
}

/** Interpreter arguments on a `#!` line beyond ones that change nothing the gate models (`-u`, `-S` of env). */
export function shebangArguments(text: string): string | undefined {
  if (!text.startsWith("#!")) return undefined;
  const end = text.indexOf("\n");
  const line = text.slice(2, end === -1 ? Math.min(text.length, 512) : Math.min(end, 512));
  const words = line.trim().split(/\s+/);
  let rest = words.slice(1);
  if ((words[0] ?? "").split("/").pop() === "env") {
    while (rest[0]?.startsWith("-")) rest = rest.slice(1);
    rest = rest.slice(1); // the interpreter
  }
  const meaningful = rest.filter((word) => !/^-[uBEsIOqv]+$/.test(word) && word !== "--" && word !== "-");
  return meaningful.length > 0 ? JSON.stringify(meaningful.join(" ").slice(0, 80)) : undefined;
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

function isFile(file: string): boolean {
  try {
    return statSync(file, { throwIfNoEntry: false })?.isFile() === true;
  } catch {
    return false;
  }
}
