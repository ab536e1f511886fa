// Paths whose change would change the gate itself: the policy file (and its directory), the gate's
// install directory, and Pi's agent dir (settings, extensions, auth) plus a project's .pi directory.
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { POLICY_DIR } from "../runtime-paths.ts";
import { gitHooksDir } from "./git-hooks.ts";
import { isWithin, type PathContext } from "./path-context.ts";
import { matchesAtAnyDepth } from "./path-patterns.ts";

export { POLICY_DIR };

/**
 * `ancestors`: also count a directory above a protected path (moving or deleting it takes the policy with it).
 */
export function tamperReasonFor(
  file: string,
  ctx: PathContext,
  options: { ancestors?: boolean } = {},
): string | undefined {
  const policy = `changes the approval policy (${ctx.policyPath})`;
  if (file === ctx.policyPath || isWithin(file, POLICY_DIR)) return policy;
  if (options.ancestors && isWithin(ctx.policyPath, file)) return policy;
  for (const dir of ctx.gateDirs) {
    if (isWithin(file, dir)) return `changes the approval gate (${dir})`;
  }
  if (isWithin(file, ctx.agentDir))
    return `changes Pi's agent settings, extensions or auth (${ctx.agentDir})`;
  const projectPi = path.join(ctx.cwd, ".pi");
  if (isWithin(file, projectPi)) return `changes the project's Pi settings or extensions (${projectPi})`;
  if (sameFile(file, ctx.policyPath)) return `${policy}: it is a hard link to the policy file`;
  if (options.ancestors) {
    for (const dir of [...ctx.gateDirs, ctx.agentDir]) {
      if (isWithin(dir, file)) return `moves or removes a directory holding the approval gate (${dir})`;
    }
  }
  return undefined;
}

/** Two names for one inode (a hard link): writing either changes both. */
function sameFile(a: string, b: string): boolean {
  try {
    const first = statSync(a, { throwIfNoEntry: false });
    if (!first?.isFile() || first.nlink < 2) return false;
    const second = statSync(b, { throwIfNoEntry: false });
    return second !== undefined && first.dev === second.dev && first.ino === second.ino;
  } catch {
    return false;
  }
}

/** Files other programs run or obey later: writing one is a possible exit (class 6 of issue 10). */
const LATER_EXEC: ReadonlyArray<{ why: string; patterns: readonly string[] }> = [
  {
    why: "writes git config (fsmonitor, sshCommand, pager, aliases and filters run commands on later git calls)",
    patterns: [
      ".gitconfig",
      ".config/git/config",
      ".config/git/attributes",
      ".git/config",
      ".git/config.worktree",
      ".git/worktrees/*/config.worktree",
      ".git/modules/**",
      ".git/info/attributes",
      ".git/commondir",
    ],
  },
  { why: "writes a git hook (runs on later git commands)", patterns: [".git/hooks/**"] },
  {
    why: "writes a git template (copied into every new repository, hooks included)",
    patterns: ["git-core/templates/**", ".git-templates/**", ".git_template/**", ".git-template/**"],
  },
  {
    why: "writes a .git file (a gitfile that points git at another repository and its hooks)",
    patterns: [".git"],
  },
  {
    why: "writes package-manager config that runs commands or code (npm script-shell/node-options, yarnPath, pnpmfile, bunfig preload, cargo runners)",
    patterns: [
      ".npmrc",
      ".yarnrc",
      ".yarnrc.yml",
      ".pnpmfile.cjs",
      ".pnpmfile.mjs",
      "bunfig.toml",
      ".bunfig.toml",
      ".cargo/config",
      ".cargo/config.toml",
      "pip.conf",
      "pip.ini",
      ".pydistutils.cfg",
    ],
  },
  {
    why: "writes SSH config or keys (ProxyCommand and LocalCommand run commands; authorized_keys lets someone log in)",
    patterns: [".ssh/**"],
  },
  {
    why: "writes a shell start-up file (runs in later shells)",
    patterns: [
      ".bashrc",
      ".bash_profile",
      ".bash_login",
      ".bash_logout",
      ".profile",
      ".zshrc",
      ".zshenv",
      ".zprofile",
      ".zlogin",
      ".zlogout",
      ".kshrc",
      ".mkshrc",
      ".config/fish/**",
      "profile.d/**",
      ".envrc",
    ],
  },
  {
    why: "writes a file an interpreter loads at start-up (sitecustomize, .pth, startup files, vimrc, lessfilter)",
    patterns: [
      "sitecustomize.py",
      "usercustomize.py",
      "site-packages/*.pth",
      "dist-packages/*.pth",
      ".pythonrc",
      ".pythonrc.py",
      ".irbrc",
      ".pryrc",
      ".perldb",
      ".vimrc",
      ".exrc",
      ".config/nvim/**",
      ".lessfilter",
      ".lesskey",
    ],
  },
  {
    why: "writes network-client config (curl and wget obey it on every later call: uploads, headers, proxies)",
    patterns: [".curlrc", "_curlrc", ".wgetrc", ".docker/config.json"],
  },
  {
    why: "writes a program into a folder on PATH (a later command of that name runs it)",
    patterns: [
      "node_modules/.bin/**",
      ".local/bin/**",
      "go/bin/**",
      ".cargo/bin/**",
      ".deno/bin/**",
      ".bun/bin/**",
    ],
  },
  {
    why: "writes into installed packages or a virtualenv (code that later imports, test runs and tools load, and the gate does not read)",
    patterns: [
      "node_modules/**",
      "site-packages/**",
      "dist-packages/**",
      ".venv/**",
      "venv/bin/**",
      "venv/lib/**",
      ".virtualenvs/**",
      "vendor/bundle/**",
    ],
  },
  {
    why: "writes git's own files (config, hooks, attributes, objects and refs that later git commands obey)",
    patterns: [".git/**"],
  },
  {
    why: "writes a tool's plug-in, wrapper or start-up file in the project (yarn plug-ins and releases, Maven and Gradle wrappers and extensions, mise hooks, debugger and REPL start-up files, Mercurial hooks)",
    patterns: [
      ".yarn/plugins/**",
      ".yarn/releases/**",
      ".mvn/**",
      "gradle/wrapper/**",
      ".mise.toml",
      "mise.toml",
      ".mise/**",
      ".config/mise/**",
      ".gdbinit",
      ".lldbinit",
      ".pdbrc",
      ".Rprofile",
      ".psqlrc",
      ".sqliterc",
      ".hg/hgrc",
      ".hgrc",
      "lefthook.yml",
      ".lefthook.yml",
      ".pre-commit-config.yaml",
    ],
  },
];

/** Absolute locations every program reads its configuration or code from. */
const SYSTEM_LATER = [
  { prefix: "/etc/", why: "writes system configuration (/etc): programs read it on every later run" },
  { prefix: "/usr/", why: "writes into the system's programs and libraries (/usr)" },
  { prefix: "/opt/", why: "writes into installed programs (/opt)" },
];

/** Names of folders that mark a Python virtualenv when they hold a `pyvenv.cfg`. */
const VENV_MARKER = "pyvenv.cfg";

/**
 * Files that other programs run or obey later: writing one is a possible exit, because a later,
 * innocent-looking command runs what it says. `ctx` gives HOME and cwd. The shell classifier calls this for
 * redirections and copies too, so there is one list.
 */
export function laterExecReasonFor(
  file: string,
  ctx: PathContext,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const parts = file.split("/").filter((p) => p.length > 0);
  for (const { why, patterns } of LATER_EXEC) {
    if (patterns.some((pattern) => matchesAtAnyDepth(pattern, parts))) return why;
  }
  for (const { prefix, why } of SYSTEM_LATER) if (file.startsWith(prefix)) return why;
  const home = homeConfigReason(file, ctx);
  if (home) return home;
  const venv = virtualenvReason(file);
  if (venv) return venv;
  const onPath = pathDirectories(env, ctx).find((dir) => path.dirname(file) === dir);
  if (onPath)
    return `writes a program into ${onPath}, a folder on PATH (a later command of that name runs it)`;
  if (env.BASH_ENV && path.resolve(ctx.cwd, env.BASH_ENV) === file)
    return "writes BASH_ENV (runs in every later bash)";
  return embeddedRepositoryReason(file) ?? configuredHookReason(file, ctx);
}

/**
 * Anything in HOME's dotfiles and dot-folders (outside the workspace): every tool reads its rc, start-up files,
 * plug-ins and credential-process settings from there (`~/.gdbinit`, `~/.config/gh/config.yml`, `~/.aws/config`,
 * `~/.docker/cli-plugins/`…), so a write there is obeyed by later, innocent-looking commands.
 */
function homeConfigReason(file: string, ctx: PathContext): string | undefined {
  if (!isWithin(file, ctx.home) || file === ctx.home || isWithin(file, ctx.cwd)) return undefined;
  const first = file.slice(ctx.home.length + 1).split("/")[0] ?? "";
  if (first.startsWith(".") || first === "bin")
    return `writes ~/${first} in the tools' HOME (tools read their rc, start-up, plug-in and credential-process settings there)`;
  return undefined;
}

/** A file in a Python virtualenv (a folder holding pyvenv.cfg, up to 3 levels up): its programs and packages. */
function virtualenvReason(file: string): string | undefined {
  let dir = path.dirname(file);
  for (let level = 0; level < 3 && dir !== "/"; level++) {
    if (existsSync(path.join(dir, VENV_MARKER)))
      return `writes into the virtualenv ${dir} (its programs and packages run later)`;
    dir = path.dirname(dir);
  }
  return undefined;
}

/** A file in the folder `core.hooksPath` names (husky's `.husky/_`, a `.githooks`): a hook the next commit runs. */
function configuredHookReason(file: string, ctx: PathContext): string | undefined {
  const dir = path.dirname(file);
  const found = gitHooksDir(dir, ctx);
  if ("dir" in found && found.dir === dir && path.basename(path.dirname(dir)) !== ".git")
    return `writes a git hook in ${dir} (core.hooksPath): later git commands run it`;
  return undefined;
}

function pathDirectories(env: NodeJS.ProcessEnv, ctx: PathContext): string[] {
  return [
    ...(env.PATH ?? "").split(":").filter((dir) => path.isAbsolute(dir)),
    path.join(ctx.home, "bin"),
    path.join(ctx.home, ".local", "bin"),
  ];
}

/**
 * A write that makes or arms a git repository in some folder (an embedded bare repository: a later
 * `git -C <dir>` or `cd <dir> && git …` uses its hooks and config): `config` beside a `HEAD`, a `HEAD` beside
 * `config`, `objects` or `refs`, a hook of a folder holding a `HEAD`. Any order of writes trips one of these.
 */
function embeddedRepositoryReason(file: string): string | undefined {
  const name = path.basename(file);
  const parent = path.dirname(file);
  const beside = (marker: string) => existsSync(path.join(parent, marker));
  let repoDir: string | undefined;
  if (name === "config" && beside("HEAD")) repoDir = parent;
  else if (name === "HEAD" && (beside("config") || beside("objects") || beside("refs"))) repoDir = parent;
  else if (path.basename(parent) === "hooks" && existsSync(path.join(path.dirname(parent), "HEAD")))
    repoDir = path.dirname(parent);
  if (!repoDir) return undefined;
  return `writes ${name === "config" || name === "HEAD" ? name : "a hook"} of a git repository at ${repoDir} (bare or embedded: git runs its hooks and obeys its config)`;
}
