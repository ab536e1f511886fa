// The sensitive-path rules (class 8 of issue 10), /proc, hard links, credential-like variable names, and the
// files other programs run later (class 6 for files).
import assert from "node:assert/strict";
import { link, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { isCredentialVariable } from "../../agent-runtime/gate/credential-variables.ts";
import { decide } from "../../agent-runtime/gate/decide.ts";
import { canonicalIn, type PathContext, pathContextFromEnv } from "../../agent-runtime/gate/path-context.ts";
import { matchComponent } from "../../agent-runtime/gate/path-patterns.ts";
import { loadPiPaths } from "../../agent-runtime/gate/pi-paths.ts";
import { laterExecReasonFor } from "../../agent-runtime/gate/protected-paths.ts";
import { SENSITIVE_RULES, sensitiveRuleFor } from "../../agent-runtime/gate/sensitive-paths.ts";
import { tempDir } from "../support/workspace.ts";

const ctx: PathContext = {
  cwd: "/work/project",
  home: "/home/agent",
  agentDir: "/var/lib/chat-ui-agent/pi/agent",
  policyPath: "/run/chat-ui-agent/policy",
  gateDirs: ["/opt/chat-ui-agent"],
};
const paths = await loadPiPaths();

test("every rule covers its own examples", () => {
  for (const rule of SENSITIVE_RULES) {
    const probes = rule.probes(ctx);
    assert.ok(probes.length > 0, rule.id);
    for (const probe of probes) {
      assert.ok(sensitiveRuleFor(probe, ctx), `${rule.id}: ${probe}`);
      assert.ok(rule.matches(probe, ctx), `${rule.id} matches its own ${probe}`);
    }
    assert.equal(rule.matches("/work/project/src/app.ts", ctx), false, rule.id);
  }
});

test("credential files of every kind the issue names, and their class, are sensitive wherever the HOME is", () => {
  const sensitive = [
    // per-user config credentials, in the tools' HOME, Pi's HOME, /root or another user's
    "/home/agent/.config/git/credentials",
    "/root/.git-credentials",
    "/var/lib/chat-ui-agent/pi/home/.aws/credentials",
    "/home/agent/.aws/sso/cache/0123abcd.json",
    "/home/agent/.aws/cli/cache/x.json",
    "/home/agent/.cache/huggingface/stored_tokens",
    "/home/agent/.cache/huggingface/token",
    "/home/agent/.huggingface/token",
    "/home/agent/.config/gcloud/application_default_credentials.json",
    "/home/agent/.config/gcloud/credentials.db",
    "/home/agent/.config/gcloud/access_tokens.db",
    "/home/agent/.config/gcloud/legacy_credentials/me@example.com/adc.json",
    "/home/agent/.terraform.d/credentials.tfrc.json",
    "/home/agent/.terraformrc",
    "/home/agent/.cargo/credentials",
    "/home/agent/.cargo/credentials.toml",
    "/home/agent/.azure/msal_token_cache.json",
    "/home/agent/.azure/accessTokens.json",
    "/home/agent/.config/rclone/rclone.conf",
    "/home/agent/.docker/config.json",
    "/home/agent/.kube/config",
    "/home/agent/.config/gh/hosts.yml",
    "/home/agent/.gem/credentials",
    "/home/agent/.m2/settings.xml",
    "/home/agent/.gnupg/private-keys-v1.d/ABC.key",
    "/home/agent/.password-store/email.gpg",
    "/home/agent/.claude/.credentials.json",
    "/home/agent/.codex/auth.json",
    "/home/agent/.ssh/id_ed25519",
    "/home/agent/.ssh/deploy_key",
    // project files, anywhere
    "/work/project/.npmrc",
    "/work/project/packages/web/.npmrc",
    "/work/project/.envrc",
    "/work/project/credentials.json",
    "/work/project/config/client_secret_1234.apps.googleusercontent.com.json",
    "/work/project/.pgpass",
    "/work/project/.vault-token",
    "/work/project/.env",
    "/work/project/.env.production.local",
    "/work/project/infra/terraform.tfstate",
    "/work/project/.yarnrc.yml",
    "/work/project/certs/tls.key",
    "/work/project/id_ecdsa",
    "/home/agent/.bash_history",
    "/home/agent/.zsh_history",
    "/home/agent/.python_history",
    "/home/agent/.local/share/fish/fish_history",
    "/home/agent/.psql_history",
    // processes, mounted secrets, the runtime's own state
    "/proc/self/environ",
    "/proc/1/environ",
    "/proc/self/task/12/environ",
    "/proc/thread-self/environ",
    "/proc/42/mem",
    "/proc/42/cmdline",
    "/proc/42/auxv",
    "/proc/42/maps",
    "/proc/42/fd/3",
    "/proc/42/fd/socket:[1234]",
    "/proc/42/map_files/7f00-7f01",
    "/proc/42/root",
    "/proc/42/cwd",
    "/proc/42/task/43/mem",
    "/proc/kcore",
    "/dev/mem",
    "/run/secrets/db-password",
    "/var/run/secrets/kubernetes.io/serviceaccount/token",
    "/var/lib/chat-ui-agent/bridge/token",
    "/var/tmp/chat-ui-agent-1000/bridge/epoch",
    "/var/lib/chat-ui-agent/pi/agent/auth.json",
    "/var/lib/chat-ui-agent/pi/agent/models.json",
  ];
  const missed = sensitive.filter((file) => !sensitiveRuleFor(file, ctx));
  assert.deepEqual(missed, []);
});

test("look-alikes stay ordinary (reads of them are not gated)", () => {
  const ordinary = [
    "/work/project/.env.example",
    "/work/project/.env.sample",
    "/work/project/.env.template",
    "/work/project/src/.env.ts",
    "/work/project/src/env.d.ts",
    "/work/project/env.ts",
    "/work/project/.environment.md",
    "/work/project/keyboard.ts",
    "/work/project/src/id_generator.py",
    "/work/project/src/credentials.ts",
    "/work/project/docs/credentials.md",
    "/home/agent/.ssh/known_hosts",
    "/home/agent/.ssh/config",
    "/home/agent/.ssh/id_ed25519.pub",
    "/home/agent/.aws/config",
    "/home/agent/.config/gcloud/active_config",
    "/home/agent/.gitconfig",
    "/home/agent/.bashrc",
    "/proc/self/status",
    "/proc/42/stat",
    "/proc/42/comm",
    "/proc/42/mountinfo",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/var/lib/chat-ui-agent-other/x",
    "/work/project/history.md",
    "/work/project/package.json",
    "/home/agent/.pi/agent/settings.json",
  ];
  const flagged = ordinary
    .filter((file) => sensitiveRuleFor(file, ctx))
    .map((f) => [f, sensitiveRuleFor(f, ctx)?.id]);
  assert.deepEqual(flagged, []);
});

test("/proc paths are decided after canonicalisation: /proc/self/fd, /dev/fd and /dev/stdin resolve into /proc/<pid>", async (t) => {
  const dir = await tempDir(t);
  const context = pathContextFromEnv(dir, { HOME: dir });
  for (const raw of ["/proc/self/environ", "/dev/fd/0", "/dev/stdin", "/proc/thread-self/environ"]) {
    const canonical = canonicalIn(context, raw);
    assert.match(canonical, /^\/proc\/\d+\//, raw);
    assert.ok(sensitiveRuleFor(canonical, context), `${raw} → ${canonical}`);
  }
});

test("a hard link to a credential file is caught by its inode, whatever its name", async (t) => {
  const root = await tempDir(t);
  const home = path.join(root, "home");
  const ws = path.join(root, "ws");
  await mkdir(home);
  await mkdir(ws);
  await writeFile(path.join(home, ".git-credentials"), "https://u:token@example.com\n");
  await link(path.join(home, ".git-credentials"), path.join(ws, "notes.txt"));
  await writeFile(path.join(ws, "other.txt"), "plain\n");
  await link(path.join(ws, "other.txt"), path.join(ws, "other-link.txt")); // two names, nothing secret
  const context = pathContextFromEnv(ws, { HOME: home });
  assert.equal(sensitiveRuleFor(path.join(ws, "notes.txt"), context)?.id, "git-credentials");
  assert.equal(sensitiveRuleFor(path.join(ws, "other-link.txt"), context), undefined);
  const read = (policy: "auto" | "read-only", toolName: string, input: Record<string, unknown>) =>
    decide({
      policy,
      toolName,
      input,
      context: pathContextFromEnv(ws, { HOME: home }),
      parser: undefined,
      paths,
    });
  assert.equal(read("read-only", "read", { path: "notes.txt" }).decision, "confirm");
  assert.equal(read("read-only", "grep", { pattern: ".", path: "notes.txt" }).decision, "confirm");
  assert.equal(read("auto", "write", { path: "notes.txt", content: "x" }).decision, "confirm");
  assert.equal(read("read-only", "read", { path: "other-link.txt" }).decision, "allow");
});

test("credential-like variable names: one rule for the shell walk and the script scan", () => {
  const credential = [
    "OPENAI_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "APIKEY",
    "STRIPE_KEY_LIVE",
    "HF_TOKEN",
    "GITHUB_PAT",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "DATABASE_URL",
    "DB_URL",
    "POSTGRES_URL",
    "REDIS_URL",
    "MONGODB_URI",
    "MONGO_URL",
    "CELERY_BROKER_URL",
    "SENTRY_DSN",
    "DB_DSN",
    "SQLALCHEMY_DATABASE_URI",
    "PGPASSWORD",
    "MYSQL_PWD",
    "DB_PASS",
    "SMTP_PASSWORD",
    "SLACK_WEBHOOK_URL",
    "AZURE_STORAGE_CONNECTION_STRING",
    "NPM_AUTH",
    "SESSION_SECRET",
    "COOKIE_SECRET",
  ];
  const ordinary = [
    "PWD",
    "OLDPWD",
    "HOME",
    "PATH",
    "NODE_ENV",
    "USER",
    "LANG",
    "TERM",
    "EDITOR",
    "CI",
    "PORT",
    "HOSTNAME",
    "SHELL",
    "DEBUG",
    "TZ",
    "BASE_URL",
    "API_URL",
  ];
  assert.deepEqual(
    credential.filter((name) => !isCredentialVariable(name)),
    [],
  );
  assert.deepEqual(
    ordinary.filter((name) => isCredentialVariable(name)),
    [],
  );
});

test("files other programs run later are exits when written", async (t) => {
  const exits = [
    "/home/agent/.gitconfig",
    "/home/agent/.config/git/config",
    "/home/agent/.config/git/attributes",
    "/work/project/.git/config",
    "/work/project/.git/hooks/pre-commit",
    "/work/project/.git/info/attributes",
    "/work/project/.git/modules/lib/hooks/post-checkout",
    "/work/project/.git/worktrees/wt/config.worktree",
    "/work/project/vendor/lib/.git",
    "/usr/share/git-core/templates/hooks/post-checkout",
    "/home/agent/.git-templates/hooks/pre-push",
    "/work/project/.npmrc",
    "/home/agent/.npmrc",
    "/work/project/.yarnrc.yml",
    "/work/project/.pnpmfile.cjs",
    "/work/project/bunfig.toml",
    "/work/project/.cargo/config.toml",
    "/home/agent/.config/pip/pip.conf",
    "/home/agent/.ssh/config",
    "/home/agent/.ssh/authorized_keys",
    "/home/agent/.ssh/rc",
    "/home/agent/.bashrc",
    "/home/agent/.profile",
    "/home/agent/.bash_profile",
    "/home/agent/.zshenv",
    "/home/agent/.config/fish/config.fish",
    "/etc/profile.d/x.sh",
    "/work/project/.envrc",
    "/home/agent/.local/lib/python3.11/site-packages/evil.pth",
    "/work/project/.venv/lib/python3.12/site-packages/sitecustomize.py",
    "/work/project/usercustomize.py",
    "/home/agent/.pythonrc",
    "/home/agent/.curlrc",
    "/home/agent/.wgetrc",
    "/home/agent/.docker/config.json",
    "/home/agent/.vimrc",
    "/home/agent/.lessfilter",
    "/work/project/node_modules/.bin/vitest",
    "/home/agent/.local/bin/git",
    "/home/agent/bin/ls",
  ];
  assert.deepEqual(
    exits.filter((file) => !laterExecReasonFor(file, ctx, { PATH: "/usr/bin:/bin" })),
    [],
  );
  const plain = [
    "/work/project/src/hooks/useAuth.ts",
    "/work/project/src/config/index.ts",
    "/work/project/config.yaml",
    "/work/project/README.md",
    "/work/project/.editorconfig",
    "/work/project/.gitignore",
    "/work/project/.gitattributes",
    "/work/project/package.json",
    "/work/project/Makefile",
    "/work/project/.github/workflows/ci.yml",
    "/work/project/.prettierrc",
  ];
  assert.deepEqual(
    plain.filter((file) => laterExecReasonFor(file, ctx, { PATH: "/usr/bin:/bin" })),
    [],
  );
  // A folder on PATH, and the BASH_ENV target, from the environment.
  assert.ok(laterExecReasonFor("/opt/tools/bin/make", ctx, { PATH: "/usr/bin:/opt/tools/bin" }));
  assert.ok(laterExecReasonFor("/work/project/env.sh", ctx, { PATH: "", BASH_ENV: "/work/project/env.sh" }));

  // An embedded bare repository, written in any order: the last piece is always caught.
  const dir = await tempDir(t);
  const repo = path.join(dir, "vendor.git");
  await mkdir(repo);
  assert.equal(laterExecReasonFor(path.join(repo, "config"), ctx, {}), undefined, "nothing there yet");
  await writeFile(path.join(repo, "config"), "[core]\n\tfsmonitor = ./x\n");
  assert.ok(laterExecReasonFor(path.join(repo, "HEAD"), ctx, {}), "HEAD beside config");
  await writeFile(path.join(repo, "HEAD"), "ref: refs/heads/main\n");
  assert.ok(laterExecReasonFor(path.join(repo, "config"), ctx, {}), "config beside HEAD");
  assert.ok(
    laterExecReasonFor(path.join(repo, "hooks", "post-checkout"), ctx, {}),
    "a hook of a HEAD folder",
  );
});

test("rule patterns match one component at a time", () => {
  assert.equal(matchComponent("*.env.*", "a.env.b"), true);
  assert.equal(matchComponent("id_*", "id_rsa"), true);
  assert.equal(matchComponent("*_history", "fish_history"), true);
  assert.equal(matchComponent("*.pem", "pem"), false);
  assert.equal(matchComponent("*a*a*a*a*b", "a".repeat(100_000)), false); // one backtrack point: O(n·m)
  assert.equal(matchComponent("?", ""), false);
});
