// The one rule for environment assignments: which variables make later programs run other commands, load
// code, read another configuration or send traffic elsewhere. Used alike by `VAR=x cmd`, `env VAR=x cmd`,
// `sudo VAR=x cmd`, `export VAR=x; cmd`, `declare -x VAR=x`, `VAR=x; cmd` (an assignment to a variable that
// is already exported changes the environment too, so every assignment counts).
import type { ShellWord } from "./shell-words.ts";

export type AssignmentEffect =
  /** Makes programs run a command or load code the gate does not see: opaque. */
  | { kind: "runs-code"; reason: string }
  /** Sends network traffic through, or to, a host the command chose. */
  | { kind: "network"; reason: string }
  /** Changes how the shell splits words (the classifier stops trusting unquoted expansions). */
  | { kind: "word-splitting"; reason: string }
  | undefined;

/** Variables whose value is a command line a program runs (a pager, an editor, ssh). */
const COMMAND_VARIABLES = new Set([
  "PAGER",
  "MANPAGER",
  "GIT_PAGER",
  "EDITOR",
  "VISUAL",
  "SUDO_EDITOR",
  "GIT_EDITOR",
  "GIT_SEQUENCE_EDITOR",
  "BROWSER",
  "GIT_SSH",
  "GIT_SSH_COMMAND",
  "GIT_EXTERNAL_DIFF",
  "GIT_ASKPASS",
  "SSH_ASKPASS",
  "SUDO_ASKPASS",
  "GIT_PROXY_COMMAND",
  "SHELL",
  "LESSOPEN",
  "LESSCLOSE",
  "LESSEDIT",
  "PROMPT_COMMAND",
]);
/** Prompt strings undergo expansion (`$(…)` runs) when printed. */
const PROMPT_VARIABLES = new Set(["PS0", "PS1", "PS2", "PS3", "PS4"]);
/** Values of command variables that run nothing else: a pager or editor that only shows text, or a no-op. */
const BENIGN_COMMANDS = new Set([
  "",
  "cat",
  "less",
  "less -R",
  "less -FRX",
  "more",
  "true",
  ":",
  "vi",
  "vim",
  "nano",
  "bash",
  "sh",
  "/bin/bash",
  "/bin/sh",
  "/usr/bin/bash",
]);

/**
 * Variables the tools' environment sets for safety (RIPGREP_CONFIG_PATH: searches skip credential files). After
 * `unset`, `env -u`, `env -i` or `exec -c` removes one, a search is judged as if it had no excludes.
 */
export const PROTECTIVE_VARIABLES: ReadonlySet<string> = new Set(["RIPGREP_CONFIG_PATH"]);

/** Variables that load code, options or configuration into whatever program runs next. */
const CODE_VARIABLES = new Set([
  "BASH_ENV",
  "ENV",
  "LD_PRELOAD",
  "LD_LIBRARY_PATH",
  "LD_AUDIT",
  "SHELLOPTS",
  "BASHOPTS",
  "GLOBIGNORE",
  "TAR_OPTIONS",
  "RIPGREP_CONFIG_PATH",
  "GREP_OPTIONS",
  "CURL_HOME",
  "WGETRC",
  "SYSTEM_WGETRC",
  "NODE_OPTIONS",
  "NODE_PATH",
  "NODE_REPL_EXTERNAL_MODULE",
  "PYTHONSTARTUP",
  "PYTHONPATH",
  "PYTHONHOME",
  "PYTHONUSERBASE",
  "PYTHONBREAKPOINT",
  "PYTHONINSPECT",
  "PERL5OPT",
  "PERL5LIB",
  "PERLLIB",
  "PERL5DB",
  "RUBYOPT",
  "RUBYLIB",
  "BUNDLE_GEMFILE",
  "JAVA_TOOL_OPTIONS",
  "_JAVA_OPTIONS",
  "JDK_JAVA_OPTIONS",
  "RUSTC_WRAPPER",
  "RUSTC",
  "RUSTDOC",
  "CC",
  "CXX",
  "CPP",
  "LD",
  "AR",
  "MAKEFLAGS",
  "MAKEFILES",
  "MFLAGS",
  "HOME",
  "XDG_CONFIG_HOME",
  "XDG_DATA_HOME",
  "ZDOTDIR",
  "VIMINIT",
  "EXINIT",
  "MYVIMRC",
  "EMACSLOADPATH",
  "GNUPGHOME",
  "LESSKEY",
  "LESSKEYIN",
  "LESSKEY_SYSTEM",
  "MANOPT",
  "MANROFFOPT",
  "INPUTRC",
  "GCONV_PATH",
  "CDPATH",
  "SQLITE_HISTORY",
  "PSQLRC",
  "MYSQL_HOME",
  "DOCKER_CONFIG",
  "KUBECONFIG",
  "NPMRC",
  "YARNRC",
  "PIP_CONFIG_FILE",
  "PIPENV_DOTENV_LOCATION",
  "GEMRC",
  "CARGO_HOME",
  "GEM_HOME",
  "GEM_PATH",
  "BASH_COMPAT",
]);
const CODE_PREFIXES = ["LD_", "DYLD_", "BASH_FUNC_"];
/** Families where only some names run code, load config or pick a package index: the dangerous ones. */
const CODE_PATTERNS = [
  /^CARGO_.*(WRAPPER|RUNNER|RUSTC|RUSTDOC|LINKER|REGISTR|CREDENTIAL|ALIAS|CONFIG|NET_|HTTP_|SOURCE)/,
  /^YARN_(RC_FILENAME|.*(REGISTRY|PLUGIN|PROXY|SCRIPT|SHELL|INJECT|NODE_OPTIONS|HOME))/,
  /^(PIP|UV|PIPENV|POETRY|PDM|HATCH)_.*(INDEX|FIND_LINKS|PROXY|CONFIG|TRUSTED_HOST|REPOSITOR|SOURCE)/,
  /^GO(FLAGS|PROXY|NOSUMDB|NOSUMCHECK|INSECURE|PRIVATE|TOOLCHAIN|ENV|EXPERIMENT)$/,
  /^CGO_(CFLAGS|CPPFLAGS|CXXFLAGS|LDFLAGS|FFLAGS)(_ALLOW)?$/,
  /^(BUN_CONFIG_.*|BUNFIG|BUN_INSTALL_REGISTRY)$/,
  /^(PNPM_HOME|COREPACK_.*|NPM_CONFIG_USERCONFIG)$/,
];
/** npm config keys (as NPM_CONFIG_*, any case, `-` or `_`) that only change output, caching or what to install. */
const HARMLESS_NPM_CONFIG = new Set([
  "loglevel",
  "fund",
  "audit",
  "progress",
  "color",
  "update_notifier",
  "yes",
  "cache",
  "prefer_offline",
  "prefer_online",
  "offline",
  "ignore_scripts",
  "production",
  "omit",
  "include",
  "save",
  "save_exact",
  "save_dev",
  "legacy_peer_deps",
  "engine_strict",
  "unicode",
  "timing",
  "strict_peer_deps",
  "package_lock",
]);
/** GIT_* variables that only set identities, dates, prompts or tracing. Every other GIT_* counts. */
const HARMLESS_GIT = new Set([
  "GIT_AUTHOR_NAME",
  "GIT_AUTHOR_EMAIL",
  "GIT_AUTHOR_DATE",
  "GIT_COMMITTER_NAME",
  "GIT_COMMITTER_EMAIL",
  "GIT_COMMITTER_DATE",
  "GIT_TERMINAL_PROMPT",
  "GIT_TRACE",
  "GIT_TRACE2",
  "GIT_CURL_VERBOSE",
  "GIT_MERGE_AUTOEDIT",
  "GIT_OPTIONAL_LOCKS",
  "GIT_FLUSH",
  "GIT_LFS_SKIP_SMUDGE",
  "GIT_ADVICE",
  "GIT_NO_REPLACE_OBJECTS",
  "GIT_PROGRESS_DELAY",
]);
const PROXY_VARIABLES = new Set(["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "FTP_PROXY", "RSYNC_PROXY"]);
/** Where remote tools send their traffic or credentials. */
const REMOTE_TARGET_VARIABLES = new Set(["DOCKER_HOST", "CONTAINER_HOST", "KUBERNETES_SERVICE_HOST"]);

export function assignmentEffect(name: string, value: ShellWord | undefined): AssignmentEffect {
  const text = value?.text ?? "";
  const literal = value === undefined || value.literal;
  if (name === "IFS") return { kind: "word-splitting", reason: "sets IFS, which changes how words split" };
  if (name === "PATH") return pathEffect(value);
  if (COMMAND_VARIABLES.has(name)) {
    if (literal && BENIGN_COMMANDS.has(text.trim())) return undefined;
    return { kind: "runs-code", reason: `sets ${name}, a command line other programs run` };
  }
  if (name === "LESS") {
    if (literal && /^[-A-Za-z0-9 #=.~]*$/.test(text.slice(0, 256)) && text.length <= 256) return undefined;
    return { kind: "runs-code", reason: "sets LESS options (less runs `+` commands)" };
  }
  if (PROMPT_VARIABLES.has(name)) {
    if (literal && !/[$`]/.test(text)) return undefined;
    return { kind: "runs-code", reason: `sets ${name}, a prompt string whose expansions run commands` };
  }
  if (name.startsWith("GIT_") && !HARMLESS_GIT.has(name))
    return { kind: "runs-code", reason: `sets ${name}, which changes what git runs, reads or trusts` };
  const upper = name.toUpperCase();
  if (PROXY_VARIABLES.has(upper))
    return {
      kind: "network",
      reason: `sets ${name}: network traffic goes through a proxy the command chose`,
    };
  if (REMOTE_TARGET_VARIABLES.has(name))
    return { kind: "network", reason: `sets ${name}: the tool talks to a host the command chose` };
  if (upper.startsWith("NPM_CONFIG_")) {
    const key = upper.slice("NPM_CONFIG_".length).toLowerCase().replaceAll("-", "_");
    if (HARMLESS_NPM_CONFIG.has(key)) return undefined;
    return {
      kind: "runs-code",
      reason: `sets ${name}, npm configuration (script-shell, node-options, registry…)`,
    };
  }
  if (
    CODE_VARIABLES.has(name) ||
    CODE_PREFIXES.some((prefix) => upper.startsWith(prefix)) ||
    CODE_PATTERNS.some((pattern) => pattern.test(upper))
  ) {
    return {
      kind: "runs-code",
      reason: `sets ${name}, which can make programs load code or other configuration`,
    };
  }
  return undefined;
}

/** Directories the image's programs live in (root-owned): putting only these first shadows nothing. */
const SYSTEM_PATH_DIRS = new Set([
  "/usr/local/sbin",
  "/usr/local/bin",
  "/usr/sbin",
  "/usr/bin",
  "/sbin",
  "/bin",
]);

/**
 * PATH: directories before the old `$PATH` (or all of them, when it is replaced) decide what `git` or `ls`
 * run. Only system directories may come first; anything appended after `$PATH` is harmless.
 */
function pathEffect(value: ShellWord | undefined): AssignmentEffect {
  const source = (value?.source ?? "").replace(/^[A-Za-z_][A-Za-z0-9_]*=/, "").replace(/^["']|["']$/g, "");
  for (const part of source.split(":")) {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell spelling ${PATH}, not a template
    if (part === "$PATH" || part === "${PATH}") return undefined;
    if (!SYSTEM_PATH_DIRS.has(part.replace(/\/+$/, "")))
      return {
        kind: "runs-code",
        reason: "puts directories at the front of PATH, so command names may run other programs",
      };
  }
  return undefined;
}
