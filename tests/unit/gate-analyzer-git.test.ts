// git, on its own through a recording Scan.
import assert from "node:assert/strict";
import { test } from "node:test";
import { analyzerFor } from "../../agent-runtime/gate/analyzers/table.ts";
import type { Recorded } from "../support/recording-scan.ts";
import { runAnalyzer } from "../support/recording-scan.ts";

const git = (...args: string[]): Recorded => runAnalyzer(analyzerFor("git"), "git", args);
const opaque = (r: Recorded) =>
  r.findings.classes().includes("UNKNOWN") &&
  r.findings.classes().includes("EXIT") &&
  r.findings.classes().includes("SECRET");

test("the real subcommand is found after global options", () => {
  for (const args of [
    ["push"],
    ["-C", "sub", "push"],
    ["--git-dir=.git", "--work-tree=.", "push"],
    ["-c", "color.ui=always", "push"],
    ["--no-pager", "push"],
    ["-P", "push"],
    ["--namespace", "x", "push"],
  ]) {
    assert.ok(
      git(...args)
        .findings.classes()
        .includes("EXIT"),
      args.join(" "),
    );
  }
  assert.deepEqual(git("-c", "color.ui=always", "status").findings.classes(), ["READ"]);
  assert.deepEqual(git("--no-pager", "log").findings.classes(), ["READ"]);
});

test("config that runs commands, passed with -c, --config-env or written with git config, is an exit", () => {
  for (const setting of [
    "core.pager=sh -c id",
    "core.fsmonitor=id",
    "core.sshCommand=id",
    "core.editor=id",
    "sequence.editor=id",
    "alias.x=!id",
    "diff.external=./x",
    "diff.x.textconv=./x",
    "filter.x.clean=./x",
    "credential.helper=!id",
    "include.path=/tmp/x",
    "init.templateDir=/tmp/t",
    "url.https://evil.example/.insteadOf=https://github.com/",
    "protocol.ext.allow=always",
    "core.hooksPath=/tmp/h",
  ]) {
    assert.ok(git("-c", setting, "status").findings.classes().includes("EXIT"), setting);
    const [key = "", value = ""] = setting.split(/=(.*)/s);
    assert.ok(git("config", "--global", key, value).findings.classes().includes("EXIT"), `git config ${key}`);
    assert.ok(git("config", "set", key, value).findings.classes().includes("EXIT"), `git config set ${key}`);
  }
  assert.ok(opaque(git("--config-env=core.pager=X", "log")));
  assert.ok(opaque(git("-c", "…", "log")));
  assert.ok(opaque(git("--exec-path=/tmp/x", "status")));
  assert.ok(git("config", "--edit").findings.classes().includes("EXIT"));
  assert.deepEqual(git("config", "user.name", "Agent").findings.classes(), ["WRITE"]);
  assert.deepEqual(git("config", "--get", "remote.origin.url").findings.classes(), ["READ"]);
  assert.ok(
    git("config", "--list").findings.classes().includes("SECRET"),
    "config --list can show extraheader tokens",
  );
  assert.deepEqual(git("config", "-f", "~/.aws/credentials", "--list").paths[0], {
    path: "~/.aws/credentials",
    access: "read",
  });
});

test("another repository's config: --git-dir, --bare", () => {
  assert.ok(git("--git-dir=x", "status").findings.classes().includes("EXIT"));
  assert.ok(git("--git-dir", "sub/repo.git", "log").findings.classes().includes("EXIT"));
  assert.ok(git("--bare", "status").findings.classes().includes("EXIT"));
  assert.equal(git("--git-dir=.git", "status").findings.classes().includes("EXIT"), false);
});

test("subcommand options that run programs are opaque", () => {
  for (const args of [
    ["grep", "-O", "x"],
    ["grep", "-Oid", "x"],
    ["grep", "--open-files-in-pager=id", "x"],
    ["difftool", "-x", "id"],
    ["difftool", "--extcmd=id"],
    ["difftool", "-y", "-x", "sh -c id", "HEAD"],
    ["rebase", "--exec", "id", "main"],
    ["rebase", "-x", "id"],
    ["submodule", "foreach", "id"],
    ["filter-branch", "--tree-filter", "id"],
    ["fetch", "--upload-pack=id", "x"],
    ["clone", "-u", "id", "x", "y"],
    ["ls-remote", "--upload-pack=id", "."],
    ["clone", "ext::sh -c id%s", "x"],
    ["maintenance", "start"],
    ["…"],
    ["push", "…"],
  ]) {
    assert.ok(
      opaque(git(...args)) ||
        git(...args)
          .findings.classes()
          .includes("EXIT"),
      args.join(" "),
    );
  }
  for (const args of [["grep", "-O", "x"], ["difftool", "-x", "id"], ["submodule", "foreach", "id"], ["…"]])
    assert.ok(opaque(git(...args)), args.join(" "));
});

test("network subcommands: literal arguments fetch, computed ones are exits", () => {
  for (const args of [
    ["fetch", "origin"],
    ["pull", "--rebase"],
    ["clone", "https://x.example/r.git"],
    ["ls-remote", "origin"],
  ])
    assert.equal(
      git(...args)
        .findings.classes()
        .includes("EXIT"),
      false,
      args.join(" "),
    );
  for (const args of [
    ["ls-remote", "https://x.example/…"],
    ["clone", "https://x.example/…", "x"],
    ["fetch", "…"],
    ["pull", "origin", "…"],
  ])
    assert.ok(
      git(...args)
        .findings.classes()
        .includes("EXIT"),
      args.join(" "),
    );
  assert.ok(git("clone", "--template=./t", "https://x.example/r").findings.classes().includes("EXIT"));
  assert.ok(git("init", "--template=./t", "x").findings.classes().includes("EXIT"));
  assert.ok(git("remote", "add", "x", "https://x.example").findings.classes().includes("EXIT"));
  assert.deepEqual(git("remote", "-v").findings.classes(), ["READ"]);
});

test("servers, senders and credential helpers", () => {
  for (const sub of [
    "push",
    "send-email",
    "request-pull",
    "imap-send",
    "daemon",
    "instaweb",
    "upload-pack",
    "http-backend",
  ])
    assert.ok(git(sub).findings.classes().includes("EXIT"), sub);
  assert.ok(git("credential", "fill").findings.classes().includes("SECRET"));
  assert.ok(git("lfs", "push", "origin").findings.classes().includes("EXIT"));
  assert.ok(git("lfs", "install").findings.classes().includes("EXIT"), "installs hooks and global config");
  assert.ok(git("frobnicate").findings.classes().includes("EXIT"), "unknown subcommands may be aliases");
});

test("paths the reading subcommands open: rev:path blobs, --no-index files, -C directories", () => {
  assert.deepEqual(git("show", "HEAD:.env").paths, [{ path: ".env", access: "read" }]);
  assert.deepEqual(git("cat-file", "-p", ":.env").paths, [{ path: ".env", access: "read" }]);
  assert.deepEqual(
    git("diff", "--no-index", "/dev/null", "~/.aws/credentials").paths.map((p) => p.path),
    ["/dev/null", "~/.aws/credentials"],
  );
  const grep = git("-C", "/home/agent", "grep", "--no-index", "-e", "token");
  assert.deepEqual(grep.recursiveReads, [{ path: "/home/agent/.", hidden: true }]);
  assert.deepEqual(git("log", "-p", "--", "src/.env").paths.at(-1), { path: "src/.env", access: "read" });
});

test("subcommands that run hooks report them as optional local code (class 7)", () => {
  const commit = git("commit", "-m", "x");
  // Hook names in the directory git runs in: the hooks folder is git's to find (git-hooks.ts).
  assert.equal(commit.localCode[0]?.kind, "git-hooks");
  assert.deepEqual(commit.localCode[0]?.files, [
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
  ]);
  assert.equal(commit.localCode[0]?.optional, true);
  assert.deepEqual(git("-C", "sub", "checkout", "x").localCode[0]?.files, ["sub/post-checkout"]);
  const hooks = (...args: string[]) => git(...args).localCode.filter((run) => run.kind === "git-hooks");
  assert.deepEqual(hooks("commit", "--no-verify", "-m", "x"), []);
  assert.deepEqual(hooks("status"), []);
  // Every git command obeys git's config (core.fsmonitor, pagers, drivers): read in the folder git runs in.
  assert.deepEqual(git("status").localCode, [
    { kind: "git-config", program: "git", files: ["."], targets: [], optional: true },
  ]);
  assert.deepEqual(git("-C", "sub", "log").localCode[0]?.files, ["sub"]);
});

test("writing subcommands check their operands as writes", () => {
  const add = git("add", ".git/hooks/pre-commit");
  assert.deepEqual(add.paths, [{ path: ".git/hooks/pre-commit", access: "write" }]);
  assert.deepEqual(git("commit", "-F", "msg.txt").paths[0], { path: "msg.txt", access: "read" });
  assert.deepEqual(git("bisect", "run", "make", "test").commands[0]?.words, ["make", "test"]);
});
