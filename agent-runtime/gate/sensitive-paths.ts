// Credential-bearing locations, as data. A rule matches a canonical absolute path; `probes` are example
// paths the rule covers, used to test shell globs and recursive reads of a containing directory.
import path from "node:path";
import { compileGlob, globMatchCompiled } from "./glob-match.ts";
import { isWithin, type PathContext } from "./path-context.ts";

export interface SensitiveRule {
  id: string;
  why: string;
  matches(file: string, ctx: PathContext): boolean;
  probes(ctx: PathContext): string[];
}

const TEMPLATE_SUFFIX = /\.(example|sample|template|dist)$/i;
const SSH_PUBLIC = /^(known_hosts(\.old)?|config|authorized_keys|.*\.pub)$/;

const homeFile = (id: string, relative: string, why: string): SensitiveRule => ({
  id,
  why,
  matches: (file, ctx) => file === path.join(ctx.home, relative),
  probes: (ctx) => [path.join(ctx.home, relative)],
});

/** Edit this list to protect more files; tests/unit/gate-sensitive-paths.test.ts covers every rule. */
export const SENSITIVE_RULES: SensitiveRule[] = [
  {
    id: "dotenv",
    why: "environment file with secrets (.env)",
    matches: (file) => {
      const base = path.basename(file);
      return (base === ".env" || base.startsWith(".env.")) && !TEMPLATE_SUFFIX.test(base);
    },
    probes: (ctx) => [path.join(ctx.cwd, ".env"), path.join(ctx.cwd, ".env.local")],
  },
  homeFile("netrc", ".netrc", "~/.netrc holds login credentials"),
  homeFile("git-credentials", ".git-credentials", "~/.git-credentials holds git tokens"),
  {
    id: "ssh-keys",
    why: "SSH private key material (~/.ssh)",
    matches: (file, ctx) => {
      const dir = path.join(ctx.home, ".ssh");
      return file !== dir && isWithin(file, dir) && !SSH_PUBLIC.test(path.basename(file));
    },
    probes: (ctx) => [path.join(ctx.home, ".ssh", "id_ed25519")],
  },
  homeFile("aws-credentials", ".aws/credentials", "AWS credentials"),
  homeFile("gh-hosts", ".config/gh/hosts.yml", "GitHub CLI token"),
  homeFile("docker-config", ".docker/config.json", "container registry credentials"),
  homeFile("npmrc", ".npmrc", "npm registry token"),
  homeFile("pypirc", ".pypirc", "PyPI upload token"),
  homeFile("hf-token", ".cache/huggingface/token", "Hugging Face token"),
  homeFile("hf-token-config", ".huggingface/token", "Hugging Face token"),
  homeFile("kube-config", ".kube/config", "Kubernetes credentials"),
  homeFile("gcloud-credentials", ".config/gcloud/credentials.db", "Google Cloud credentials"),
  {
    id: "proc-environ",
    why: "process environment (/proc/*/environ)",
    matches: (file) => /^\/proc\/[^/]+\/(task\/[^/]+\/)?environ$/.test(file),
    probes: () => ["/proc/1/environ", "/proc/self/environ"],
  },
  {
    id: "run-secrets",
    why: "mounted secrets (/run/secrets)",
    matches: (file) => file !== "/run/secrets" && isWithin(file, "/run/secrets"),
    probes: () => ["/run/secrets/token"],
  },
  {
    id: "pi-auth",
    why: "Pi's auth.json (provider keys)",
    matches: (file, ctx) => file === path.join(ctx.agentDir, "auth.json"),
    probes: (ctx) => [path.join(ctx.agentDir, "auth.json")],
  },
  {
    id: "private-key",
    why: "private key file",
    matches: (file) => {
      const base = path.basename(file);
      if (base.endsWith(".pub")) return false;
      return /\.(pem|key|p12|pfx|jks|keystore)$/i.test(base) || /^id_[a-z0-9_-]+$/i.test(base);
    },
    probes: (ctx) => [path.join(ctx.cwd, "server.pem"), path.join(ctx.cwd, "id_rsa")],
  },
];

/** The first rule a canonical path falls under. */
export function sensitiveRuleFor(file: string, ctx: PathContext): SensitiveRule | undefined {
  return SENSITIVE_RULES.find((rule) => rule.matches(file, ctx));
}

/**
 * A directory whose recursive read would reach a credential file (e.g. `grep -r x ~/.ssh`, `tar c ~/.aws`).
 * The root, HOME and the session cwd are excluded: they contain everything and would gate every listing.
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
  return probesFor(ctx).find(({ probe }) => probe !== dir && isWithin(probe, dir))?.rule;
}

const probeCache = new Map<string, Array<{ rule: SensitiveRule; probe: string }>>();

/** Every rule's example paths. They depend only on the context's strings (no file system), so they are cached. */
function probesFor(ctx: PathContext): Array<{ rule: SensitiveRule; probe: string }> {
  const key = `${ctx.cwd}\0${ctx.home}\0${ctx.agentDir}`;
  let probes = probeCache.get(key);
  if (!probes) {
    if (probeCache.size > 64) probeCache.clear();
    probes = SENSITIVE_RULES.flatMap((rule) =>
      rule
        .probes(ctx)
        .filter((probe) => rule.matches(probe, ctx))
        .map((probe) => ({ rule, probe })),
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
