// Credential-bearing locations, as data. Each rule is a list of path patterns in ripgrep's glob syntax, matched
// at any depth (`.aws/credentials` covers every HOME, Pi's and the tools', and /root), so the one list serves
// three uses: deciding on a canonical path, keeping searches out of those files (the rg exclude config,
// search-excludes.ts) and telling whether a search's own glob could reach one (search-glob.ts).
import { statSync } from "node:fs";
import path from "node:path";
import { compileGlob, globMatchCompiled } from "./glob-match.ts";
import { isWithin, type PathContext } from "./path-context.ts";
import { matchesAbsolute, matchesAnyComponent, matchesAtAnyDepth } from "./path-patterns.ts";

/** A rule as data (the list below); SensitiveRule adds `matches`. */
export interface SensitiveRuleSpec {
  id: string;
  why: string;
  /**
   * Path patterns, matched against the end of a canonical path, component by component: `*` and `?` inside one
   * component, a final `**` for everything below a directory. Written as ripgrep globs (a leading "any folders" is implied).
   */
  patterns: readonly string[];
  /** Basename patterns spared from `patterns` (templates, public keys). Searches still skip them. */
  except?: readonly string[];
  /** Absolute patterns (same syntax, anchored at /), for system locations. */
  absolute?: readonly string[];
  /** Extra paths that depend on where the session runs (Pi's agent dir). */
  located?(ctx: PathContext): string[];
  /** Example paths the rule covers: a recursive read of a folder holding one is gated; hard links are compared. */
  probes(ctx: PathContext): string[];
}

export interface SensitiveRule extends SensitiveRuleSpec {
  /** This rule alone covers the canonical path, by name and location (no file system access). */
  matches(file: string, ctx: PathContext): boolean;
}

const TEMPLATES = ["*.example", "*.sample", "*.template", "*.dist", "*.tmpl"];
/** A `.env.<ext>` that is source code or markup (a typed env module, docs), not a dotenv file. */
const SOURCE = [
  ...["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs", "vue", "svelte", "astro"],
  ...["py", "rb", "go", "rs", "java", "kt", "kts", "scala", "swift", "cs", "php", "lua", "dart", "ex", "exs"],
  ...["c", "h", "cc", "cpp", "hpp", "zig", "hs", "ml", "clj", "md", "mdx", "rst", "html", "css", "scss"],
].map((ext) => `*.${ext}`);
const SSH_PUBLIC = [
  "*.pub",
  "known_hosts",
  "known_hosts.old",
  "config",
  "authorized_keys",
  "authorized_keys2",
];

const home = (ctx: PathContext, ...parts: string[]) => path.join(ctx.home, ...parts);

/** Edit this list to protect more files; tests/unit/gate-sensitive-paths.test.ts covers every rule. */
const RULE_SPECS: readonly SensitiveRuleSpec[] = [
  {
    id: "dotenv",
    why: "environment file with secrets (.env)",
    patterns: [".env", ".env.*"],
    except: [...TEMPLATES, ...SOURCE],
    probes: (ctx) => [path.join(ctx.cwd, ".env"), path.join(ctx.cwd, ".env.local")],
  },
  {
    id: "envrc",
    why: "direnv file that exports secrets (.envrc)",
    patterns: [".envrc"],
    probes: (ctx) => [path.join(ctx.cwd, ".envrc")],
  },
  {
    id: "netrc",
    why: "login credentials (.netrc)",
    patterns: [".netrc", "_netrc"],
    probes: (ctx) => [home(ctx, ".netrc")],
  },
  {
    id: "git-credentials",
    why: "git's stored credentials",
    patterns: [".git-credentials", ".config/git/credentials"],
    probes: (ctx) => [home(ctx, ".git-credentials"), home(ctx, ".config/git/credentials")],
  },
  {
    id: "ssh-keys",
    why: "SSH private key material (~/.ssh)",
    patterns: [".ssh/**"],
    except: SSH_PUBLIC,
    probes: (ctx) => [home(ctx, ".ssh", "id_ed25519")],
  },
  {
    id: "aws-credentials",
    why: "AWS credentials or cached tokens (~/.aws)",
    patterns: [".aws/**"],
    except: ["config"],
    probes: (ctx) => [home(ctx, ".aws/credentials"), home(ctx, ".aws/sso/cache/token.json")],
  },
  {
    id: "azure",
    why: "Azure CLI tokens (~/.azure)",
    patterns: [".azure/**"],
    probes: (ctx) => [home(ctx, ".azure/msal_token_cache.json")],
  },
  {
    id: "gcloud",
    why: "Google Cloud credentials",
    patterns: [".config/gcloud/**", "application_default_credentials.json"],
    except: ["active_config", "config_default", "*.log"],
    probes: (ctx) => [
      home(ctx, ".config/gcloud/credentials.db"),
      home(ctx, ".config/gcloud/application_default_credentials.json"),
    ],
  },
  {
    id: "cloud-keys",
    why: "cloud service-account or OAuth client key file",
    patterns: [
      "credentials.json",
      "client_secret*.json",
      "service-account*.json",
      "service_account*.json",
      ".s3cfg",
      ".boto",
      ".databrickscfg",
      ".oci/**",
      ".kaggle/kaggle.json",
      ".config/doctl/config.yaml",
    ],
    probes: (ctx) => [path.join(ctx.cwd, "credentials.json"), home(ctx, ".s3cfg")],
  },
  {
    id: "repo-config",
    why: "a repository's git config, which can hold tokens (URLs with passwords, http.extraheader)",
    patterns: [".git/config"],
    probes: (ctx) => [path.join(ctx.cwd, ".git", "config")],
  },
  {
    id: "secrets-file",
    why: "a file of secrets (secrets.yaml and the like)",
    patterns: [
      "secrets.yml",
      "secrets.yaml",
      "secrets.json",
      "secrets.toml",
      "secrets.env",
      ".secrets",
      "*.secrets",
    ],
    probes: (ctx) => [path.join(ctx.cwd, "secrets.yaml")],
  },
  {
    id: "ssh-host-keys",
    why: "the machine's SSH host keys",
    patterns: [],
    absolute: ["/etc/ssh/ssh_host_*_key"],
    probes: () => ["/etc/ssh/ssh_host_ed25519_key"],
  },
  {
    id: "gh-hosts",
    why: "GitHub / GitLab CLI token",
    patterns: [
      ".config/gh/hosts.yml",
      ".config/hub",
      ".config/glab-cli/config.yml",
      ".config/github-copilot/**",
    ],
    probes: (ctx) => [home(ctx, ".config/gh/hosts.yml")],
  },
  {
    id: "docker-config",
    why: "container registry credentials",
    patterns: [
      ".docker/config.json",
      ".dockercfg",
      "containers/auth.json",
      "helm/registry/config.json",
      ".config/helm/repositories.yaml",
    ],
    probes: (ctx) => [home(ctx, ".docker/config.json")],
  },
  {
    id: "package-registry",
    why: "package registry token (npm, yarn, PyPI, RubyGems, cargo, Maven, Gradle, Composer, pip)",
    patterns: [
      ".npmrc",
      ".yarnrc",
      ".yarnrc.yml",
      ".pypirc",
      "pip.conf",
      "pip.ini",
      ".gem/credentials",
      ".cargo/credentials",
      ".cargo/credentials.toml",
      ".m2/settings.xml",
      ".m2/settings-security.xml",
      ".gradle/gradle.properties",
      ".composer/auth.json",
      ".config/composer/auth.json",
    ],
    probes: (ctx) => [
      home(ctx, ".npmrc"),
      path.join(ctx.cwd, ".npmrc"),
      home(ctx, ".pypirc"),
      home(ctx, ".cargo/credentials.toml"),
    ],
  },
  {
    id: "hf-token",
    why: "Hugging Face token",
    patterns: ["huggingface/token", "huggingface/stored_tokens", ".huggingface/token"],
    probes: (ctx) => [home(ctx, ".cache/huggingface/token"), home(ctx, ".cache/huggingface/stored_tokens")],
  },
  {
    id: "kube-config",
    why: "Kubernetes credentials",
    patterns: [".kube/config"],
    probes: (ctx) => [home(ctx, ".kube/config")],
  },
  {
    id: "infra-tokens",
    why: "infrastructure tool credentials or state with secrets (terraform, vault, rclone, pulumi, fly, wrangler)",
    patterns: [
      "credentials.tfrc.json",
      ".terraformrc",
      "terraform.rc",
      "*.tfstate",
      "*.tfstate.backup",
      ".vault-token",
      "rclone.conf",
      ".fly/config.yml",
      ".wrangler/config/*.toml",
      ".config/netlify/config.json",
      "com.vercel.cli/auth.json",
      ".config/configstore/**",
    ],
    probes: (ctx) => [
      home(ctx, ".terraform.d/credentials.tfrc.json"),
      home(ctx, ".vault-token"),
      home(ctx, ".config/rclone/rclone.conf"),
    ],
  },
  {
    id: "vault-passwords",
    why: "a vault or web server password file (Ansible vault password, .htpasswd)",
    patterns: [
      ".vault_pass",
      ".vault_pass.txt",
      "vault_pass",
      "vault_pass.txt",
      ".vault-password",
      ".htpasswd",
      "*.htpasswd",
    ],
    probes: (ctx) => [path.join(ctx.cwd, ".vault_pass")],
  },
  {
    id: "database-passwords",
    why: "database password file",
    patterns: [".pgpass", ".my.cnf", ".mylogin.cnf"],
    probes: (ctx) => [home(ctx, ".pgpass")],
  },
  {
    id: "agent-cli-auth",
    why: "another coding agent's login",
    patterns: [
      ".claude/.credentials.json",
      ".codex/auth.json",
      ".pi/agent/auth.json",
      ".pi/agent/models.json",
    ],
    probes: (ctx) => [home(ctx, ".claude/.credentials.json")],
  },
  {
    id: "keyrings",
    why: "private keyring or password store",
    patterns: [".gnupg/**", ".password-store/**", ".local/share/keyrings/**", "*.kdbx"],
    probes: (ctx) => [home(ctx, ".gnupg/private-keys-v1.d/key.key")],
  },
  {
    id: "shell-history",
    why: "shell or REPL history (commands typed with secrets)",
    patterns: ["*_history", ".zhistory", ".histfile"],
    probes: (ctx) => [home(ctx, ".bash_history")],
  },
  {
    id: "proc-process",
    why: "another process's environment, memory, arguments or open files (/proc)",
    patterns: [],
    absolute: ["/proc/kcore", "/dev/mem", "/dev/kmem", "/dev/port", "/dev/fd/**"],
    probes: () => ["/proc/self/environ", "/proc/1/environ"],
  },
  {
    id: "run-secrets",
    why: "mounted secrets (/run/secrets)",
    patterns: [],
    absolute: ["/run/secrets/**", "/var/run/secrets/**"],
    probes: () => ["/run/secrets/token"],
  },
  {
    id: "runtime-state",
    why: "the agent runtime's private state (bridge token hand-over, journal, Pi's session and keys)",
    patterns: [],
    absolute: ["/var/lib/chat-ui-agent/**", "/var/tmp/chat-ui-agent-*/**"],
    probes: () => ["/var/lib/chat-ui-agent/pi/agent/auth.json"],
  },
  {
    id: "pi-auth",
    why: "Pi's provider keys (auth.json, models.json)",
    patterns: [],
    located: (ctx) => [path.join(ctx.agentDir, "auth.json"), path.join(ctx.agentDir, "models.json")],
    probes: (ctx) => [path.join(ctx.agentDir, "auth.json")],
  },
  {
    id: "private-key",
    why: "private key file",
    patterns: ["*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.ppk"],
    probes: (ctx) => [path.join(ctx.cwd, "server.pem")],
  },
  {
    id: "ssh-key-name",
    why: "private key file (id_*)",
    patterns: ["id_*"],
    // id_rsa, id_ed25519_sk…: key names have no dot; id_rsa.pub, id_map.json are not keys.
    except: ["*.*"],
    probes: (ctx) => [path.join(ctx.cwd, "id_rsa")],
  },
];

export const SENSITIVE_RULES: readonly SensitiveRule[] = RULE_SPECS.map((spec) => ({
  ...spec,
  matches: (file: string, ctx: PathContext) => ruleMatches(spec, file, ctx),
}));

function ruleMatches(rule: SensitiveRuleSpec, file: string, ctx: PathContext): boolean {
  if (rule.id === "proc-process" && procProcessEntry(file)) return true;
  const parts = file.split("/").filter((p) => p.length > 0);
  if (parts.some((part) => part.length > NAME_MAX)) return false;
  if (rule.except && matchesAnyComponent(rule.except, parts.at(-1) ?? "")) return false;
  return (
    rule.patterns.some((pattern) => matchesAtAnyDepth(pattern, parts)) ||
    (rule.absolute?.some((pattern) => matchesAbsolute(pattern, parts)) ?? false) ||
    (rule.located?.(ctx).includes(file) ?? false)
  );
}

/** /proc/<pid>/… entries that say nothing about another process's secrets; every other one is sensitive. */
const PROC_HARMLESS = new Set([
  "status",
  "stat",
  "statm",
  "comm",
  "limits",
  "cgroup",
  "mounts",
  "mountinfo",
  "mountstats",
  "oom_score",
  "oom_score_adj",
  "oom_adj",
  "loginuid",
  "sessionid",
  "uid_map",
  "gid_map",
  "setgroups",
  "sched",
  "schedstat",
  "wchan",
  "timerslack_ns",
  "net",
  "ns",
  "task",
  "children",
  "cpuset",
  "personality",
]);

/** Process directories: /proc/<pid>, /proc/self, /proc/thread-self and their /task/<tid>. */
const PROC_ENTRY = /^\/proc\/(?:\d+|self|thread-self)(?:\/task\/(?:\d+))?(?:\/(.*))?$/;

function procProcessEntry(file: string): boolean {
  const match = PROC_ENTRY.exec(file);
  if (!match) return false;
  const rest = match[1];
  if (rest === undefined || rest === "") return false; // the directory itself (a recursive read is a container)
  const first = rest.split("/")[0] ?? "";
  return !PROC_HARMLESS.has(first);
}

/** The first rule a canonical path falls under (by name, by location, or as a hard link to a known credential file). */
export function sensitiveRuleFor(file: string, ctx: PathContext): SensitiveRule | undefined {
  return sensitiveRuleByName(file, ctx) ?? hardLinkRuleFor(file, ctx);
}

/** The rule a canonical path falls under by its name and location alone (no file system access). */
export function sensitiveRuleByName(file: string, ctx: PathContext): SensitiveRule | undefined {
  return sensitiveRuleByPattern(file) ?? SENSITIVE_RULES.find((rule) => rule.located?.(ctx).includes(file));
}

/** The rule a path falls under by the rules' fixed patterns (what the search excludes can name). */
export function sensitiveRuleByPattern(file: string): SensitiveRule | undefined {
  if (procProcessEntry(file)) return PROC_RULE;
  const parts = file.split("/").filter((p) => p.length > 0);
  // A name longer than NAME_MAX cannot be opened (ENAMETOOLONG): no file to protect, no time spent matching.
  if (parts.some((part) => part.length > NAME_MAX)) return undefined;
  for (const rule of SENSITIVE_RULES) {
    if (rule.except && matchesAnyComponent(rule.except, parts.at(-1) ?? "")) continue;
    if (rule.patterns.some((pattern) => matchesAtAnyDepth(pattern, parts))) return rule;
    if (rule.absolute?.some((pattern) => matchesAbsolute(pattern, parts))) return rule;
  }
  return undefined;
}

/** The longest name a Linux file system accepts, in bytes (so at most this many UTF-16 units). */
const NAME_MAX = 255;

const PROC_RULE = SENSITIVE_RULES.find((rule) => rule.id === "proc-process") as SensitiveRule;

/**
 * A regular file with more than one name whose inode is one of the known credential files' (e.g. `ln
 * ~/.git-credentials notes.txt`): the name says nothing, the inode does. Only the rules' example locations are
 * compared (a hard link elsewhere to a file found by pattern, such as some `sub/.env`, is not detected).
 */
export function hardLinkRuleFor(file: string, ctx: PathContext): SensitiveRule | undefined {
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(file, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
  if (!stat?.isFile() || stat.nlink < 2) return undefined;
  return credentialInodes(ctx).get(`${stat.dev}:${stat.ino}`);
}

const inodeCaches = new WeakMap<PathContext, Map<string, SensitiveRule>>();

/** dev:ino of every example credential file that exists, once per decision's context. */
function credentialInodes(ctx: PathContext): Map<string, SensitiveRule> {
  let inodes = inodeCaches.get(ctx);
  if (!inodes) {
    inodes = new Map();
    for (const { rule, probe } of probesFor(ctx)) {
      try {
        const stat = statSync(probe, { throwIfNoEntry: false });
        if (stat?.isFile()) inodes.set(`${stat.dev}:${stat.ino}`, rule);
      } catch {
        // unreadable: nothing to compare
      }
    }
    inodeCaches.set(ctx, inodes);
  }
  return inodes;
}

/**
 * A directory whose recursive read would reach a credential file (e.g. `grep -r x ~/.ssh`, `tar c ~/.aws`).
 * The root, HOME and the session cwd are excluded: they contain everything and would gate every listing
 * (the grep tool does not use this exemption: see search-excludes.ts).
 */
export function sensitiveContainerFor(dir: string, ctx: PathContext): SensitiveRule | undefined {
  if (
    dir === "/" ||
    dir === ctx.home ||
    dir === ctx.cwd ||
    isWithin(ctx.cwd, dir) ||
    isWithin(ctx.home, dir)
  ) {
    return undefined;
  }
  return probeInside(dir, ctx);
}

/** A rule one of whose example paths lies strictly inside `dir`, with no exemption. */
export function probeInside(dir: string, ctx: PathContext): SensitiveRule | undefined {
  return probesFor(ctx).find(({ probe }) => probe !== dir && isWithin(probe, dir))?.rule;
}

/**
 * A directory every file of which is a secret (`~/.ssh`, `~/.aws`, `/run/secrets`, `/proc/<pid>`): a search
 * rooted at or inside one reads credentials whatever the excludes say.
 */
export function secretDirectoryRuleFor(dir: string, ctx: PathContext): SensitiveRule | undefined {
  const parts = dir.split("/").filter((p) => p.length > 0);
  if (PROC_ENTRY.test(dir)) return PROC_RULE;
  for (const rule of SENSITIVE_RULES) {
    const all = [
      ...rule.patterns.map((p) => ({ p, anchored: false })),
      ...(rule.absolute ?? []).map((p) => ({ p, anchored: true })),
    ];
    for (const { p, anchored } of all) {
      if (!p.endsWith("/**")) continue;
      // `dir` is the secret directory itself or inside it: `<dir>/x` matches the pattern.
      const inside = [...parts, "x"];
      if (anchored ? matchesAbsolute(p, inside) : matchesAtAnyDepth(p, inside)) return rule;
    }
  }
  return sensitiveRuleByName(dir, ctx);
}

const probeCache = new Map<string, Array<{ rule: SensitiveRule; probe: string }>>();

/** Every rule's example paths. They depend only on the context's strings (no file system), so they are cached. */
export function probesFor(ctx: PathContext): Array<{ rule: SensitiveRule; probe: string }> {
  const key = `${ctx.cwd}\0${ctx.home}\0${ctx.agentDir}`;
  let probes = probeCache.get(key);
  if (!probes) {
    if (probeCache.size > 64) probeCache.clear();
    probes = SENSITIVE_RULES.flatMap((rule) =>
      rule.probes(ctx).flatMap((probe) => {
        // Attributed to the rule that really matches it (an earlier rule may cover the same file).
        const matched = sensitiveRuleByName(probe, ctx);
        return matched ? [{ rule: matched, probe }] : [];
      }),
    );
    probeCache.set(key, probes);
  }
  return probes;
}

/** A rule one of whose example paths a glob pattern (absolute, already resolved) could match (glob-match.ts: linear). */
export function sensitiveRuleForGlob(pattern: string, ctx: PathContext): SensitiveRule | undefined {
  const glob = compileGlob(pattern);
  return probesFor(ctx).find(({ probe }) => globMatchCompiled(glob, probe))?.rule;
}
