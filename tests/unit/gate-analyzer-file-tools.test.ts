// File tools, servers and environment printers, through a recording Scan.
import assert from "node:assert/strict";
import { test } from "node:test";
import { sedScriptEffects } from "../../agent-runtime/gate/analyzers/file-tools.ts";
import { analyzerFor } from "../../agent-runtime/gate/analyzers/table.ts";
import type { Recorded } from "../support/recording-scan.ts";
import { runAnalyzer } from "../support/recording-scan.ts";

const run = (line: string[], options?: { stdinIsData?: boolean }): Recorded => {
  const [name = "", ...args] = line;
  return runAnalyzer(analyzerFor(name), name, args, options);
};
const opaque = (r: Recorded) =>
  r.findings.classes().includes("UNKNOWN") &&
  r.findings.classes().includes("EXIT") &&
  r.findings.classes().includes("SECRET");
const paths = (r: Recorded) => r.paths.map((p) => `${p.access}:${p.path}`);

test("sed scripts: e and s///e run commands; w writes; r reads; unknown commands are opaque", () => {
  for (const script of [
    "1e id",
    "e id",
    "/x/e curl x",
    "s/.*/id/e",
    "s/a/b/ge",
    "1!e id",
    "$e id",
    "1{e id\n}",
    "1 e id",
    "s|a|b|e",
    "y/a/b/;e id",
    "s/a/b/;1e id",
  ])
    assert.ok(sedScriptEffects(script).runs, script);
  assert.deepEqual(sedScriptEffects("s/a/b/w out.txt").writes, ["out.txt"]);
  assert.deepEqual(sedScriptEffects("w .git/hooks/pre-commit").writes, [".git/hooks/pre-commit"]);
  assert.deepEqual(sedScriptEffects("1r ~/.aws/credentials").reads, ["~/.aws/credentials"]);
  assert.deepEqual(sedScriptEffects("R x").reads, ["x"]);
  for (const script of [
    "s/a/b/",
    "1,20p",
    "/^#/d",
    "s/e/E/g",
    "y/abc/xyz/",
    "s/x/e/",
    ":a;N;$!ba;s/\\n/ /g",
    "1i header",
    "$a footer",
    "s/\\//e/",
    "/re/I,+3d",
    "0~2d",
  ])
    assert.equal(sedScriptEffects(script).runs, undefined, script);
  assert.ok(sedScriptEffects("s/unterminated").unknown);
  assert.ok(sedScriptEffects("1X").unknown);
});

test("the sed analyzer: -e/-f/--expression, in-place edits, --sandbox", () => {
  assert.ok(opaque(run(["sed", "-n", "1e id", "f"])));
  assert.ok(opaque(run(["sed", "--expression=1e id", "f"])));
  assert.ok(opaque(run(["sed", "-e", "s/a/b/", "-e", "1e id", "f"])));
  assert.ok(opaque(run(["sed", "-f", "x.sed", "f"])));
  assert.ok(opaque(run(["sed", "…", "f"])));
  assert.equal(opaque(run(["sed", "--sandbox", "1e id", "f"])), false);
  assert.deepEqual(paths(run(["sed", "-n", "1,5p", "f"])), ["read:f"]);
  assert.deepEqual(paths(run(["sed", "-i.bak", "s/a/b/", "f"])), ["read:f", "write:f"]);
  assert.deepEqual(paths(run(["sed", "s/a/b/w out", "f"])), ["write:out", "read:f"]);
});

test("tar: options that run programs, remote archives, extraction (files the gate cannot list)", () => {
  for (const line of [
    ["tar", "-cf", "/dev/null", "x", "--checkpoint=1", "--checkpoint-action=exec=id"],
    ["tar", "cf", "x.tar", "--checkpoint-act=exec=id", "."],
    ["tar", "xf", "a.tar", "--to-command=sh"],
    ["tar", "-I", "sh -c id", "-cf", "x", "."],
    ["tar", "--use-compress-program=./x", "-xf", "a.tar"],
    ["tar", "-xf", "a.tar", "-F", "./x"],
    ["tar", "--rsh-command=/bin/sh", "-cf", "h:x", "."],
    ["tar", "cfI", "x.tar", "sh -c id", "."],
  ])
    assert.ok(opaque(run(line)), line.join(" "));
  assert.ok(run(["tar", "cf", "host:/x", "."]).findings.classes().includes("EXIT"));
  assert.equal(run(["tar", "--force-local", "-cf", "c:x", "."]).findings.classes().includes("EXIT"), false);
  assert.deepEqual(run(["tar", "xzf", "a.tgz"]).treeWrites, [undefined]);
  assert.deepEqual(run(["tar", "-xzf", "a.tgz", "-C", "out"]).treeWrites, ["out"]);
  assert.deepEqual(run(["tar", "-xOf", "a.tgz"]).treeWrites, []);
  assert.deepEqual(run(["tar", "tzf", "a.tgz"]).treeWrites, []);
  const create = run(["tar", "czf", "out.tgz", "-C", "src", "dir"]);
  assert.deepEqual(
    create.recursiveReads.map((r) => r.path),
    ["src/dir"],
  );
  assert.ok(paths(create).includes("write:out.tgz"));
  assert.ok(run(["tar", "-cf", "x", "-T", "list"]).findings.classes().includes("SECRET"));
});

test("archivers and patches that write files the gate cannot list", () => {
  assert.deepEqual(run(["unzip", "a.zip"]).treeWrites, [undefined]);
  assert.deepEqual(run(["unzip", "-d", "out", "a.zip"]).treeWrites, ["out"]);
  assert.deepEqual(run(["unzip", "-l", "a.zip"]).treeWrites, []);
  assert.deepEqual(run(["7z", "x", "a.7z", "-oout"]).treeWrites, ["out"]);
  assert.deepEqual(run(["cpio", "-i"]).treeWrites, [undefined]);
  assert.deepEqual(run(["patch", "-p1"]).treeWrites, [undefined]);
  assert.deepEqual(run(["patch", "-p1", "--dry-run"]).treeWrites, []);
  assert.ok(opaque(run(["zip", "-TT", "sh -c id", "x.zip", "f"])));
  assert.ok(run(["zip", "x.zip", "-@"], { stdinIsData: true }).findings.classes().includes("SECRET"));
});

test("sort: the compress program runs; -o writes; --files0-from reads names the gate cannot see", () => {
  for (const option of ["--compress-program=sh", "--compress-prog=sh", "--comp=sh"])
    assert.ok(opaque(run(["sort", option, "x"])), option);
  assert.deepEqual(paths(run(["sort", "-o", "out", "in"])), ["write:out", "read:in"]);
  assert.ok(run(["sort", "--files0-from=list"]).findings.classes().includes("SECRET"));
});

test("cp, mv, ln, install: what is really written is DEST/basename(SOURCE) when DEST is a directory", () => {
  assert.deepEqual(paths(run(["cp", "x", ".git/hooks/"])), [
    "read:x",
    "write:.git/hooks/x",
    "write:.git/hooks/",
  ]);
  assert.deepEqual(paths(run(["cp", ".gitconfig", "/home/agent"])), [
    "read:.gitconfig",
    "write:/home/agent/.gitconfig",
    "write:/home/agent",
  ]);
  assert.deepEqual(paths(run(["mv", "a", "b"])), ["delete:a", "read:a", "write:b/a", "write:b"]);
  assert.deepEqual(paths(run(["ln", "-s", "~/.aws/credentials", "x"])), [
    "read:~/.aws/credentials",
    "write:x/credentials",
    "write:x",
  ]);
  assert.deepEqual(
    paths(run(["install", "-m", "755", "x", ".git/hooks/pre-commit"])).at(-1),
    "write:.git/hooks/pre-commit",
  );
  assert.deepEqual(run(["cp", "-r", "staging/.", "."]).treeCopies, [{ from: "staging/.", to: "." }]);
  assert.deepEqual(
    run(["cp", "-t", "dst", "a", "b"])
      .paths.filter((p) => p.access === "write")
      .map((p) => p.path),
    ["dst/a", "dst/b", "dst"],
  );
  assert.deepEqual(paths(run(["dd", "if=.env", "of=.git/hooks/x"])), ["read:.env", "write:.git/hooks/x"]);
  assert.deepEqual(paths(run(["tee", "-a", "a", "b"])), ["write:a", "write:b"]);
  assert.deepEqual(paths(run(["rm", "-rf", "/run/chat-ui-agent"])), ["delete:/run/chat-ui-agent"]);
  assert.deepEqual(paths(run(["chmod", "+x", ".git/hooks/pre-commit"])), ["write:.git/hooks/pre-commit"]);
});

test("readers: content readers read, name readers only stat", () => {
  assert.deepEqual(paths(run(["cat", "-n", "a", "b"])), ["read:a", "read:b"]);
  assert.deepEqual(paths(run(["base64", "-d", "x"])), ["read:x"]);
  assert.deepEqual(paths(run(["ls", "-la", "~/.ssh"])), ["stat:~/.ssh"]);
  assert.deepEqual(paths(run(["wc", "-l", "x"])), ["stat:x"]);
  assert.deepEqual(paths(run(["sha256sum", "x"])), ["stat:x"]);
});

test("search tools: recursive reads (rg skips hidden files unless told), programs they run", () => {
  assert.deepEqual(run(["grep", "-rn", "x", "src"]).recursiveReads, [{ path: "src", hidden: true }]);
  assert.deepEqual(run(["grep", "-r", "x"]).recursiveReads, [{ path: ".", hidden: true }]);
  assert.deepEqual(run(["grep", "-n", "x", "f"]).recursiveReads, []);
  assert.deepEqual(paths(run(["grep", "-f", ".env", "f"])), ["read:.env", "read:f"]);
  // rg reads our excludes, and hands its own globs on (the classifier decides whether they undo them).
  assert.deepEqual(run(["rg", "x"]).recursiveReads, [{ path: ".", hidden: false, excludes: [] }]);
  assert.deepEqual(run(["rg", "--hidden", "x", "~"]).recursiveReads, [
    { path: "~", hidden: true, excludes: [] },
  ]);
  assert.deepEqual(run(["rg", "-uu", "x"]).recursiveReads, [{ path: ".", hidden: true, excludes: [] }]);
  assert.deepEqual(run(["rg", "-g", "*.ts", "--iglob=!t", "x"]).recursiveReads, [
    { path: ".", hidden: false, excludes: ["*.ts", "!t"] },
  ]);
  assert.deepEqual(run(["rg", "--no-config", "x"]).recursiveReads, [{ path: ".", hidden: true }]);
  // ag and ack never read ripgrep's config; ack searches trees by default.
  assert.deepEqual(run(["ag", "x"]).recursiveReads, [{ path: ".", hidden: false }]);
  assert.deepEqual(run(["ack", "x"]).recursiveReads, [{ path: ".", hidden: true }]);
  assert.ok(opaque(run(["rg", "--pre", "./x", "p"])));
  assert.ok(opaque(run(["rg", "--pre=sh", "p"])));
});

test("find: -exec payloads get the found paths as patterns under the roots", () => {
  assert.deepEqual(run(["find", ".", "-name", "*.ts", "-exec", "wc", "-l", "{}", "+"]).commands[0]?.words, [
    "wc",
    "-l",
    "./…*.ts",
  ]);
  assert.deepEqual(run(["find", "~", "-type", "f", "-exec", "cat", "{}", ";"]).commands[0]?.words, [
    "cat",
    "~/…",
  ]);
  assert.deepEqual(run(["find", ".", "-exec", "sh", "-c", "x", "_", "{}", ";"]).commands[0]?.words, [
    "sh",
    "-c",
    "x",
    "_",
    "./…",
  ]);
  assert.ok(opaque(run(["find", ".", "-exec"])));
  assert.deepEqual(paths(run(["find", ".", "-fprintf", ".git/hooks/x", "y"])).at(-1), "write:.git/hooks/x");
  assert.deepEqual(paths(run(["find", ".", "-name", "*.tmp", "-delete"])).at(-1), "delete:./…*.tmp");
  assert.ok(run(["find", "~", "-name", "id_rsa"]).findings.classes().includes("SECRET"));
  assert.deepEqual(run(["fd", "-e", "ts", "-x", "wc", "-l"]).commands[0]?.words, ["wc", "-l", "./…"]);
});

test("pagers and editors that run commands", () => {
  for (const line of [
    ["less", "+!id", "f"],
    ["less", "-k", "keys", "f"],
    ["vim", "-c", "!id", "f"],
    ["vim", "+!id", "f"],
    ["vim", "--cmd", "x", "f"],
    ["vim", "-S", "x.vim"],
    ["vim", "-u", "x.vimrc", "f"],
    ["vim", "-es", "f"],
    ["ex", "f"],
    ["nvim", "--headless", "-c", "!id"],
    ["man", "-P", "sh -c id", "ls"],
    ["man", "--pager=id", "ls"],
    ["man", "-H", "id", "ls"],
    ["emacs", "--batch", "--eval", "(x)"],
  ])
    assert.ok(opaque(run(line)), line.join(" "));
  assert.ok(opaque(run(["ed", "f"], { stdinIsData: true })));
  assert.equal(opaque(run(["less", "+G", "f"])), false);
  assert.equal(opaque(run(["vim", "+10", "f"])), false);
  assert.equal(opaque(run(["man", "ls"])), false);
});

test("servers and tunnels are exits", () => {
  for (const line of [
    ["http-server"],
    ["serve"],
    ["miniserve", "."],
    ["caddy", "file-server"],
    ["ngrok", "http", "80"],
    ["cloudflared", "tunnel"],
    ["jupyter", "notebook"],
    ["code-server"],
    ["ttyd", "bash"],
    ["sshd"],
    ["twistd", "web"],
  ])
    assert.ok(run(line).findings.classes().includes("EXIT"), line.join(" "));
  assert.deepEqual(run(["jupyter", "nbconvert", "--execute", "n.ipynb"]).localCode[0]?.files, ["n.ipynb"]);
  assert.equal(run(["caddy", "fmt"]).findings.classes().includes("EXIT"), false);
});

test("environment and secret stores", () => {
  assert.ok(run(["printenv"]).findings.classes().includes("SECRET"));
  assert.ok(run(["printenv", "GITHUB_TOKEN"]).findings.classes().includes("SECRET"));
  assert.ok(run(["printenv", "…"]).findings.classes().includes("SECRET"));
  assert.deepEqual(run(["printenv", "PATH", "HOME"]).findings.classes(), ["READ"]);
  assert.ok(run(["ps", "e"]).findings.classes().includes("SECRET"));
  assert.ok(run(["ps", "eww", "-p", "1"]).findings.classes().includes("SECRET"));
  assert.deepEqual(run(["ps", "aux"]).findings.classes(), ["READ"]);
  assert.ok(run(["envsubst"]).findings.classes().includes("SECRET"));
  assert.ok(run(["envsubst", "$TOKEN"]).findings.classes().includes("SECRET"));
  assert.deepEqual(run(["envsubst", "$APP_NAME $PORT"]).findings.classes(), ["READ"]);
  for (const name of ["secret-tool", "pass", "op", "bw", "vault", "sops", "keyctl"])
    assert.ok(
      run([name, "x"]).findings.classes().includes("SECRET") ||
        run([name, "x"]).findings.classes().includes("EXIT"),
      name,
    );
  assert.ok(run(["gpg", "--export-secret-keys"]).findings.classes().includes("SECRET"));
  assert.ok(run(["gpg", "--send-keys", "x"]).findings.classes().includes("EXIT"));
});
