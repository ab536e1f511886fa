// What individual programs do: wrappers to unwrap, interpreters given code, exits (publish, upload,
// deploy, push, network), secret readers, writers posing as readers. Tables first, then the dispatcher.
import path from "node:path";
import { IMAGE_RUNTIME_DIR } from "../runtime-paths.ts";
import {
  analyzeNested,
  type CommandContext,
  checkPathWord,
  type ShellScan,
  scanNested,
  scanScript,
} from "./shell-classifier.ts";
import type { ShellWord } from "./shell-words.ts";

/** Programs that only read or print (argument paths are still checked for credentials). */
const READERS = new Set([
  "cat",
  "head",
  "tail",
  "less",
  "more",
  "ls",
  "pwd",
  "echo",
  "printf",
  "grep",
  "egrep",
  "fgrep",
  "rg",
  "ag",
  "wc",
  "uniq",
  "diff",
  "cmp",
  "file",
  "stat",
  "which",
  "type",
  "whereis",
  "true",
  "false",
  "test",
  "[",
  "date",
  "whoami",
  "id",
  "uname",
  "basename",
  "dirname",
  "realpath",
  "readlink",
  "cut",
  "tr",
  "jq",
  "yq",
  "tree",
  "du",
  "df",
  "cd",
  "pushd",
  "popd",
  "column",
  "nl",
  "od",
  "xxd",
  "hexdump",
  "strings",
  "sha256sum",
  "sha1sum",
  "md5sum",
  "sha512sum",
  "base64",
  "fold",
  "fmt",
  "paste",
  "join",
  "comm",
  "expand",
  "rev",
  "tac",
  "seq",
  "sleep",
  "free",
  "uptime",
  "hostname",
  "nproc",
  "tty",
  "locale",
  "getconf",
  "cal",
  "bc",
  "expr",
  "zcat",
  "bzcat",
  "xzcat",
  "sed",
  "awk",
  "sort",
  "find",
  "ps",
  "git",
  "exit",
  "return",
  "shift",
  "wait",
  "jobs",
  "read",
  "printenv",
  "env",
  "help",
  "man",
  "lsb_release",
  "arch",
  "groups",
  "users",
  "w",
  "who",
]);
/** Programs that only print their arguments: no path checks (avoids flagging `echo .env`). */
const PRINTERS = new Set(["echo", "printf", "true", "false", "test", "[", "expr", "seq", "sleep", "exit"]);

const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "rbash"]);
/** Interpreters and the flags that hand them code on the command line. */
const INTERPRETERS: Record<string, string[]> = {
  python: ["-c"],
  node: ["-e", "-p", "--eval", "--print"],
  nodejs: ["-e", "-p", "--eval", "--print"],
  deno: ["eval"],
  bun: ["-e", "--eval", "-p", "--print"],
  perl: ["-e", "-E"],
  ruby: ["-e"],
  php: ["-r"],
  lua: ["-e"],
  luajit: ["-e"],
  Rscript: ["-e"],
  R: ["-e"],
  pwsh: ["-c", "-command", "-Command"],
  powershell: ["-c", "-command", "-Command"],
  tclsh: [],
  irb: [],
  osascript: ["-e"],
  julia: ["-e"],
  ghci: ["-e"],
  scala: ["-e"],
  groovy: ["-e"],
  gawk: [],
  mawk: [],
  nawk: [],
  jshell: [],
  sqlite3: [],
};
const VERSION_FLAGS = new Set(["--version", "-V", "-v", "--help", "-h", "version"]);

/** Wrappers whose trailing words are another command; value = options that take an argument. */
const WRAPPERS: Record<string, string[]> = {
  sudo: ["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-R", "-T", "--user", "--group"],
  doas: ["-u", "-C"],
  nohup: [],
  nice: ["-n", "--adjustment"],
  ionice: ["-c", "-n", "-p", "-t"],
  stdbuf: ["-i", "-o", "-e"],
  time: ["-f", "-o"],
  builtin: [],
  setsid: [],
  unbuffer: [],
  chronic: [],
  strace: ["-o", "-e", "-p", "-s"],
  ltrace: ["-o", "-e"],
  caffeinate: [],
  chroot: [],
  runuser: ["-u", "-g"],
  taskset: [],
  chrt: [],
  numactl: [],
  fakeroot: [],
  proot: [],
  firejail: [],
  torsocks: [],
  proxychains: [],
  proxychains4: [],
  "with-contenv": [],
  tini: [],
  "dumb-init": [],
  catchsegv: [],
  nsenter: ["-t"],
  unshare: [],
  npx: ["-p", "--package", "-c", "--call"],
  bunx: ["-p", "--package"],
  pnpx: [],
  uvx: ["--from", "--with"],
  dotenv: ["-e", "-c"],
  "dotenv-cli": ["-e"],
  retry: ["-t", "--times"],
  entr: [],
  parallel: [],
};
const SUBCOMMAND_WRAPPERS: Record<string, Set<string>> = {
  npm: new Set(["exec", "x"]),
  pnpm: new Set(["dlx", "exec"]),
  yarn: new Set(["dlx", "exec"]),
  pipx: new Set(["run"]),
  uv: new Set(["run", "tool"]),
  poetry: new Set(["run"]),
  bundle: new Set(["exec"]),
  pdm: new Set(["run"]),
  rye: new Set(["run"]),
  hatch: new Set(["run"]),
  conda: new Set(["run"]),
  mise: new Set(["exec", "x"]),
  asdf: new Set(["exec"]),
  direnv: new Set(["exec"]),
  nix: new Set(["shell", "run", "develop"]),
  "nix-shell": new Set([]),
  flatpak: new Set(["run"]),
  busybox: new Set([]),
  toybox: new Set([]),
  docker: new Set([]),
  kubectl: new Set([]),
};

/** Deploy and cloud tools: any use talks to a remote account. */
const REMOTE_TOOLS = new Set([
  "aws",
  "gsutil",
  "gcloud",
  "az",
  "azcopy",
  "rclone",
  "s3cmd",
  "vercel",
  "netlify",
  "fly",
  "flyctl",
  "heroku",
  "wrangler",
  "firebase",
  "serverless",
  "sls",
  "surge",
  "railway",
  "doctl",
  "linode-cli",
  "ibmcloud",
  "oci",
  "pulumi",
  "cdk",
  "sam",
  "eb",
  "now",
  "render",
  "deployctl",
  "vsce",
  "ovsx",
  "ghr",
  "hub",
  "glab",
  "tea",
  "ssh",
  "scp",
  "sftp",
  "ftp",
  "tftp",
  "lftp",
  "ncftp",
  "ncftpput",
  "nc",
  "ncat",
  "netcat",
  "socat",
  "telnet",
  "mail",
  "mailx",
  "sendmail",
  "mutt",
  "swaks",
  "ssh-copy-id",
  "mosh",
  "sshpass",
  "autossh",
  "websocat",
  "wscat",
  "grpcurl",
  "croc",
  "magic-wormhole",
  "wormhole",
  "transfer",
  "ngrok",
  "cloudflared",
  "tailscale",
  "ffsend",
  "b2",
  "mc",
  "gdrive",
  "dropbox_uploader",
  "twine",
  "ansible",
  "ansible-playbook",
  "netlify-cli",
  "firebase-tools",
  "gh-pages",
  "np",
  "release-it",
  "semantic-release",
  "clasp",
  "eas",
  "expo",
  "cap",
]);
const PACKAGE_PUBLISH: Record<string, Set<string>> = {
  npm: new Set([
    "publish",
    "unpublish",
    "deprecate",
    "dist-tag",
    "owner",
    "access",
    "adduser",
    "login",
    "token",
    "team",
    "star",
    "hook",
    "org",
  ]),
  pnpm: new Set(["publish", "unpublish", "deprecate", "dist-tag", "owner", "access", "login", "adduser"]),
  yarn: new Set(["publish", "npm", "login", "tag", "owner"]),
  bun: new Set(["publish"]),
  cargo: new Set(["publish", "login", "owner", "yank"]),
  gem: new Set(["push", "owner", "yank", "signin"]),
  poetry: new Set(["publish"]),
  flit: new Set(["publish"]),
  hatch: new Set(["publish"]),
  uv: new Set(["publish"]),
  pdm: new Set(["publish"]),
  mvn: new Set(["deploy", "release:perform"]),
  gradle: new Set(["publish", "publishToMavenLocal"]),
  dotnet: new Set(["nuget"]),
  nuget: new Set(["push"]),
  pod: new Set(["trunk"]),
  helm: new Set(["push", "install", "upgrade", "uninstall", "rollback", "repo"]),
  terraform: new Set(["apply", "destroy", "import", "state", "taint", "login", "push"]),
  tofu: new Set(["apply", "destroy", "import", "state", "taint", "login"]),
  docker: new Set(["push", "login"]),
  podman: new Set(["push", "login"]),
  buildah: new Set(["push", "login"]),
  nerdctl: new Set(["push", "login"]),
  skopeo: new Set(["copy", "login", "sync"]),
  crane: new Set(["push", "copy", "append", "mutate"]),
  kubectl: new Set([
    "apply",
    "create",
    "replace",
    "patch",
    "edit",
    "set",
    "scale",
    "rollout",
    "delete",
    "cp",
    "exec",
    "run",
    "expose",
    "label",
    "annotate",
    "port-forward",
    "proxy",
    "attach",
    "drain",
    "cordon",
    "taint",
    "debug",
  ]),
  oc: new Set([
    "apply",
    "create",
    "replace",
    "patch",
    "delete",
    "cp",
    "exec",
    "rsync",
    "new-app",
    "start-build",
  ]),
  "huggingface-cli": new Set([
    "upload",
    "upload-large-folder",
    "repo",
    "lfs-multipart-upload",
    "delete-cache",
    "repo-files",
    "tag",
  ]),
  hf: new Set([
    "upload",
    "upload-large-folder",
    "repo",
    "repos",
    "lfs-multipart-upload",
    "jobs",
    "repo-files",
    "tag",
    "endpoints",
    "spaces",
  ]),
  conda: new Set(["upload"]),
  anaconda: new Set(["upload"]),
  jfrog: new Set(["rt", "npm-publish"]),
  lerna: new Set(["publish", "version"]),
  changeset: new Set(["publish"]),
  nx: new Set(["release", "deploy"]),
  turbo: new Set(["deploy"]),
};
/** Script names that usually ship something somewhere. */
const SHIPPING_SCRIPT = /(deploy|publish|release|upload|push|ship|promote|rollout)/i;

export function analyzeProgram(
  program: string,
  invokedAs: string,
  args: ShellWord[],
  scan: ShellScan,
  command: CommandContext,
) {
  const f = scan.findings;
  if (program === "chat-ui-agent-policy" || invokedAs.startsWith(`${IMAGE_RUNTIME_DIR}/`)) {
    if (textAt(args, 0) !== "get" && textAt(args, 0) !== "explain")
      f.add("TAMPER", "runs the policy tool to change the policy");
  }
  if (program === "pi") {
    const sub = args[0]?.text ?? "";
    if (["install", "remove", "uninstall", "update", "config"].includes(sub))
      f.add("TAMPER", `\`pi ${sub}\` changes Pi's settings or extensions`);
    else f.opaque("starts another agent outside this gate");
    return;
  }

  // Wrappers: classify the wrapped command.
  if (program in WRAPPERS) return unwrap(program, args, WRAPPERS[program] ?? [], scan, command);
  if (program === "env") return analyzeEnv(args, scan, command);
  if (program === "timeout") return analyzeTimeout(args, scan, command);
  if (program === "command" || program === "exec") {
    const rest = skipOptions(args, program === "exec" ? ["-a"] : []);
    if (program === "command" && args.some((a) => a.text === "-v" || a.text === "-V")) return;
    if (rest.length === 0) return;
    return analyzeNested(rest, scan, command);
  }
  if (program === "xargs") {
    const rest = skipOptions(args, [
      "-I",
      "-i",
      "-n",
      "-P",
      "-L",
      "-l",
      "-d",
      "-E",
      "-e",
      "-s",
      "-a",
      "--arg-file",
      "--delimiter",
      "--max-args",
      "--max-procs",
      "--replace",
    ]);
    f.add("READ");
    return rest.length === 0 ? undefined : analyzeNested(rest, scan, { stdinIsData: false });
  }
  if (program === "watch" || program === "flock") {
    const rest = skipOptions(
      args,
      program === "watch" ? ["-n", "--interval", "-d"] : ["-w", "-E", "--timeout"],
    );
    const cmdArg = args.findIndex((a) => a.text === "-c" || a.text === "--command");
    if (cmdArg !== -1) return scanNested(args[cmdArg + 1], scan, `${program} -c`);
    const wrapped = program === "flock" ? rest.slice(1) : rest;
    if (wrapped.length === 1) return scanNested(wrapped[0], scan, program);
    return wrapped.length === 0 ? undefined : analyzeNested(wrapped, scan, command);
  }
  const subWrappers = SUBCOMMAND_WRAPPERS[program];
  if (subWrappers && subWrappers.size > 0 && args[0] && subWrappers.has(args[0].text)) {
    const rest = skipOptions(args.slice(1), ["-p", "--package", "--from", "--with", "-n", "--name", "-c"]);
    if (rest[0]?.text === "--") rest.shift();
    return rest.length === 0
      ? f.add("WRITE", `${program} ${args[0].text}`)
      : analyzeNested(rest, scan, command);
  }
  if (program === "busybox" || program === "toybox")
    return args.length ? analyzeNested(args, scan, command) : undefined;

  // Code handed to a shell or an interpreter.
  if (SHELLS.has(program)) return analyzeShell(program, args, scan, command);
  const interpreter = interpreterName(program);
  if (interpreter !== undefined) return analyzeInterpreter(program, interpreter, args, scan, command);
  if (program === "eval") {
    scan.findings.opaque("`eval` runs text as code");
    return scanNestedJoined(args, scan, "eval");
  }
  if (program === "source" || program === ".") {
    const target = args[0];
    if (!target?.literal) return f.opaque(`${program} of a script path computed at run time`);
    checkPathWord(target, scan, { writer: false });
    return f.add("WRITE", `runs the script ${target.text}`);
  }
  if (program === "su" || program === "runuser" || program === "script") {
    const c = args.findIndex((a) => /^-[a-zA-Z]*c$/.test(a.text) || a.text === "--command");
    if (c !== -1) return scanNested(args[c + 1], scan, `${program} -c`);
    if (program !== "script") return f.opaque(`\`${program}\` starts a shell reading commands from stdin`);
  }
  if (["crontab", "at", "batch", "systemd-run", "launchctl", "nohup-later"].includes(program)) {
    return f.opaque(`\`${program}\` schedules commands the gate will not see`);
  }
  if (program === "alias" && args.some((a) => a.text.includes("=")))
    return f.opaque("defines an alias (hidden command)");
  if (program === "trap") return args[0] ? scanNested(args[0], scan, "trap") : undefined;

  // Exits and secrets.
  if (program === "git") return analyzeGit(args, scan);
  if (program === "gh") return analyzeGh(args, scan);
  if (program === "curl") return analyzeCurl(args, scan);
  if (program === "wget") return analyzeWget(args, scan);
  if (
    program === "http" ||
    program === "https" ||
    program === "xh" ||
    program === "xhs" ||
    program === "httpie"
  ) {
    return analyzeHttpie(program, args, scan);
  }
  if (program === "rsync") return analyzeRsync(args, scan);
  if (REMOTE_TOOLS.has(program)) {
    if (args.length === 1 && VERSION_FLAGS.has(textAt(args, 0))) return;
    f.add("EXIT", `\`${program}\` sends data to a remote host or account`);
    return checkArgs(args, scan, true);
  }
  if (["dig", "nslookup", "host", "drill", "kdig", "resolvectl", "delv"].includes(program)) {
    if (args.some((a) => !a.literal)) f.add("EXIT", `\`${program}\` DNS lookup fed with computed data`);
    return checkArgs(args, scan, false);
  }
  if (program === "openssl" && textAt(args, 0) === "s_client")
    return f.add("EXIT", "openssl s_client opens a network connection");
  if (program === "ps" && args.some((a) => /^[a-zA-Z]*e[a-zA-Z]*$/.test(a.text) && !a.text.startsWith("-"))) {
    return f.add("SECRET", "`ps e` prints process environments");
  }
  if (program === "printenv") return f.add("SECRET", "`printenv` prints environment variables");
  if (program === "set" && args.length === 0) return f.add("SECRET", "`set` prints all variables");
  if (program === "compgen" && args.some((a) => a.text === "-v" || a.text === "-e"))
    return f.add("SECRET", "lists variables");
  if (
    ["secret-tool", "security", "pass", "gopass", "op", "vault", "keyring", "bw", "lpass"].includes(program)
  ) {
    return f.add("SECRET", `\`${program}\` reads a secret store`);
  }

  const publish = PACKAGE_PUBLISH[program];
  const sub = firstOperand(args);
  // Any operand, not just the first: `docker image push`, `pnpm -r publish`, `yarn workspaces foreach npm publish`.
  const shipping = publish ? args.find((a) => !a.text.startsWith("-") && publish.has(a.text)) : undefined;
  if (shipping) {
    if (program === "docker" && shipping.text === "login")
      f.add("SECRET", "docker login uses registry credentials");
    f.add("EXIT", `\`${program} ${shipping.text}\` publishes, uploads or deploys`);
  }
  if (
    (program === "docker" || program === "podman") &&
    args.some((a) => a.text === "--push" || a.text.startsWith("--output=type=registry"))
  ) {
    f.add("EXIT", `\`${program}\` build pushes the image`);
  }
  if (
    [
      "npm",
      "pnpm",
      "yarn",
      "bun",
      "make",
      "just",
      "task",
      "invoke",
      "rake",
      "nox",
      "tox",
      "mise",
      "composer",
      "deno",
    ].includes(program)
  ) {
    // Package managers run one named script; make-style tools take several targets (any may ship).
    const operands = args.filter(
      (a) => !a.text.startsWith("-") && !["run", "run-script", "task"].includes(a.text),
    );
    const targets = ["npm", "pnpm", "yarn", "bun", "deno", "composer"].includes(program)
      ? operands.slice(0, 1)
      : operands;
    const target = targets.find((a) => SHIPPING_SCRIPT.test(a.text) || !a.literal);
    if (target) {
      f.add(
        "EXIT",
        `\`${program} … ${target.literal ? target.text : "(computed)"}\` runs a script that may deploy or publish`,
      );
    }
    if (program === "npm" && sub?.text === "config" && args.some((a) => /_auth|token/i.test(a.text))) {
      f.add("SECRET", "reads npm auth configuration");
    }
  }
  if (
    program === "kubectl" &&
    sub?.text === "config" &&
    args.some((a) => a.text === "--raw" || a.text === "view")
  ) {
    f.add("SECRET", "kubectl config view shows cluster credentials");
  }
  if ((program === "hf" || program === "huggingface-cli") && args.some((a) => a.text === "token")) {
    f.add("SECRET", "prints the Hugging Face token");
  }

  // Writers posing as readers.
  if (program === "sed" && args.some((a) => /^-[a-zA-Z]*i|^--in-place/.test(a.text)))
    f.add("WRITE", "sed -i edits files in place");
  if (program === "sort" && args.some((a) => /^-[a-zA-Z]*o|^--output/.test(a.text)))
    f.add("WRITE", "sort -o writes a file");
  if (program === "awk" || program === "gawk") return analyzeAwk(args, scan);
  if (program === "find") return analyzeFind(args, scan);
  if (program === "uniq" && args.filter((a) => !a.text.startsWith("-")).length >= 2)
    f.add("WRITE", "uniq writes its output file");
  if (program === "cd" || program === "pushd") {
    const target = args.find((a) => !a.text.startsWith("-"));
    if (target?.literal) {
      checkPathWord(target, scan, { writer: false });
      const dir = path.resolve(
        scan.cwds[0] ?? scan.ctx.cwd,
        target.text.replace(/^~(?=\/|$)/, scan.ctx.home),
      );
      if (!scan.cwds.includes(dir)) scan.cwds.push(dir);
    } else if (target) {
      f.add("UNKNOWN", "changes to a directory computed at run time");
    }
    return;
  }

  if (readsRecursively(program, args)) {
    for (const arg of args) checkRecursiveRoot(arg, scan, program);
  }
  const reader = READERS.has(program) && !f.has("WRITE");
  if (PRINTERS.has(program)) return f.add("READ");
  if (program === "env" || program === "printenv") return;
  f.add(reader ? "READ" : "WRITE", reader ? undefined : `runs \`${program}\``);
  checkArgs(
    args,
    scan,
    !reader,
    ["rm", "mv", "rmdir", "chmod", "chown", "ln", "unlink", "shred"].includes(program),
  );
}

/** Programs that read whole directory trees (contents, not just names). */
function readsRecursively(program: string, args: ShellWord[]): boolean {
  const flags = args.filter((a) => a.text.startsWith("-")).map((a) => a.text);
  const hasShort = (letters: string) =>
    flags.some((t) => /^-[a-zA-Z]+$/.test(t) && [...letters].some((l) => t.includes(l)));
  switch (program) {
    case "grep":
    case "egrep":
    case "fgrep":
      return (
        hasShort("rR") ||
        flags.some((t) => t.startsWith("--recursive") || t.startsWith("--dereference-recursive"))
      );
    case "cp":
    case "scp":
      return hasShort("rRa") || flags.includes("--recursive") || flags.includes("--archive");
    case "zip":
      return hasShort("r");
    case "tar":
    case "rsync":
    case "rclone":
    case "ag":
    case "ack":
    case "7z":
      return true;
    case "rg":
      return flags.some((t) => /^-[a-zA-Z]*[.u]|^--hidden|^--no-ignore/.test(t));
    default:
      return false;
  }
}

/** A recursive read rooted at HOME or above reaches ~/.ssh, ~/.aws and friends. */
function checkRecursiveRoot(arg: ShellWord, scan: ShellScan, program: string) {
  if (arg.text.startsWith("-") || !arg.literal) return;
  const expanded = arg.text.replace(/^~(?=\/|$)/, scan.ctx.home);
  for (const base of path.isAbsolute(expanded) ? [""] : scan.cwds) {
    const dir = base ? path.resolve(base, expanded) : path.resolve(expanded);
    if (scan.ctx.home === dir || scan.ctx.home.startsWith(dir === "/" ? "/" : `${dir}/`)) {
      scan.findings.add(
        "SECRET",
        `\`${program}\` reads ${arg.text} recursively, including credential files in HOME`,
      );
    }
  }
}

function checkArgs(args: ShellWord[], scan: ShellScan, writer: boolean, ancestors = false) {
  for (const arg of args) checkPathWord(arg, scan, { writer, ancestors });
}

function interpreterName(program: string): string | undefined {
  if (/^python[0-9.]*$/.test(program) || program === "pypy" || program === "pypy3") return "python";
  if (/^(node|nodejs)[0-9.]*$/.test(program)) return "node";
  if (/^(perl|ruby|php|lua)[0-9.]*$/.test(program)) return program.replace(/[0-9.]+$/, "");
  return program in INTERPRETERS ? program : undefined;
}

function analyzeInterpreter(
  program: string,
  kind: string,
  args: ShellWord[],
  scan: ShellScan,
  command: CommandContext,
) {
  const f = scan.findings;
  if (args.length === 1 && VERSION_FLAGS.has(textAt(args, 0))) return f.add("READ");
  const codeFlags = INTERPRETERS[kind] ?? [];
  for (const arg of args) {
    if (
      codeFlags.includes(arg.text) ||
      codeFlags.some((flag) => flag.startsWith("--") && arg.text.startsWith(`${flag}=`))
    ) {
      return f.opaque(`\`${program} ${arg.text}\` runs code given on the command line`);
    }
    if (/^-[a-zA-Z]*[ceEr]$/.test(arg.text) && codeFlags.some((flag) => arg.text.endsWith(flag.slice(1)))) {
      return f.opaque(`\`${program} ${arg.text}\` runs code given on the command line`);
    }
  }
  if (kind === "python") {
    const m = args.findIndex((a) => a.text === "-m");
    if (m !== -1 && args[m + 1]) return analyzeNested(args.slice(m + 1), scan, command);
  }
  const script = args.find((a) => !a.text.startsWith("-"));
  if (!script || script.text === "-") return f.opaque(`\`${program}\` reads code from stdin`);
  if (!script.literal) return f.opaque(`\`${program}\` runs a script path computed at run time`);
  f.add("WRITE", `runs the ${program} script ${script.text}`);
  checkArgs(args, scan, true);
}

function analyzeShell(program: string, args: ShellWord[], scan: ShellScan, command: CommandContext) {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg) break;
    if (!arg.literal) return scan.findings.opaque(`\`${program}\` with arguments computed at run time`);
    if (arg.text === "--") {
      const script = args[i + 1];
      return script
        ? runScriptFile(program, script, scan)
        : scan.findings.opaque(`\`${program}\` reads commands from stdin`);
    }
    if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(arg.text)) return scanNested(args[i + 1], scan, `${program} -c`);
    if (
      arg.text === "-o" ||
      arg.text === "+o" ||
      arg.text === "-O" ||
      arg.text === "+O" ||
      arg.text === "--rcfile" ||
      arg.text === "--init-file"
    ) {
      i++;
      continue;
    }
    if (/^-[a-zA-Z]*s[a-zA-Z]*$/.test(arg.text))
      return scan.findings.opaque(`\`${program} -s\` reads commands from stdin`);
    if (arg.text.startsWith("-") || arg.text.startsWith("+")) continue;
    return runScriptFile(program, arg, scan);
  }
  // No script and no -c: the shell runs whatever arrives on stdin (a pipe, a heredoc, a terminal).
  scan.findings.opaque(
    `\`${program}\` reads commands from stdin${command.stdinIsData ? " (piped or heredoc)" : ""}`,
  );
}

function runScriptFile(program: string, script: ShellWord, scan: ShellScan) {
  checkPathWord(script, scan, { writer: false });
  scan.findings.add("WRITE", `${program} runs the script ${script.text}`);
}

function scanNestedJoined(args: ShellWord[], scan: ShellScan, what: string) {
  if (args.some((a) => !a.literal)) return scan.findings.opaque(`${what} of text computed at run time`);
  scanScript(args.map((a) => a.text).join(" "), {
    ...scan,
    vars: new Map(scan.vars),
    cwds: [...scan.cwds],
    depth: scan.depth + 1,
  });
}

function unwrap(
  program: string,
  args: ShellWord[],
  optionsWithValue: string[],
  scan: ShellScan,
  command: CommandContext,
) {
  const rest = skipOptions(args, optionsWithValue);
  if (program === "npx" || program === "bunx" || program === "uvx" || program === "pnpx") {
    const call = args.findIndex((a) => a.text === "-c" || a.text === "--call");
    if (call !== -1) return scanNested(args[call + 1], scan, `${program} -c`);
  }
  if (program === "dotenv" || program === "dotenv-cli")
    scan.findings.add("SECRET", "loads an environment file");
  while (rest[0] && /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[0].text)) rest.shift();
  if (rest.length === 0) return scan.findings.add("WRITE", `runs \`${program}\``);
  analyzeNested(rest, scan, command);
}

function analyzeEnv(args: ShellWord[], scan: ShellScan, command: CommandContext) {
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i];
    if (!arg) break;
    if (!arg.literal && i === 0) return scan.findings.opaque("env with computed arguments");
    if (
      arg.text === "-S" ||
      arg.text === "--split-string" ||
      arg.text.startsWith("--split-string=") ||
      /^-[a-zA-Z]*S./.test(arg.text)
    ) {
      const inline = arg.text.startsWith("--split-string=")
        ? arg.text.slice(15)
        : /^-[a-zA-Z]*S(.+)$/.exec(arg.text)?.[1];
      const script = inline !== undefined ? { ...arg, text: inline } : args[i + 1];
      const tail = args.slice(inline !== undefined ? i + 1 : i + 2);
      if (!script?.literal || tail.some((t) => !t.literal))
        return scan.findings.opaque("env -S with computed text");
      return scanScript([script.text, ...tail.map((t) => quote(t.text))].join(" "), {
        ...scan,
        depth: scan.depth + 1,
      });
    }
    if (["-u", "--unset", "-C", "--chdir", "-P"].includes(arg.text)) {
      i++;
      continue;
    }
    if (arg.text === "--") {
      i++;
      break;
    }
    if (arg.text.startsWith("-")) continue;
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(arg.text)) {
      const name = arg.text.slice(0, arg.text.indexOf("="));
      if (
        /^(LD_PRELOAD|BASH_ENV|ENV|GIT_SSH_COMMAND|GIT_PAGER|PAGER|NODE_OPTIONS|GIT_CONFIG.*)$/.test(name)
      ) {
        scan.findings.opaque(`sets ${name}, which can make programs run other commands`);
      }
      continue;
    }
    break;
  }
  const rest = args.slice(i);
  if (rest.length === 0) return scan.findings.add("SECRET", "`env` prints environment variables");
  analyzeNested(rest, scan, command);
}

function quote(text: string): string {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

function analyzeTimeout(args: ShellWord[], scan: ShellScan, command: CommandContext) {
  const rest = skipOptions(args, ["-s", "--signal", "-k", "--kill-after"]);
  rest.shift(); // the duration
  if (rest.length === 0) return;
  analyzeNested(rest, scan, command);
}

/** Drops leading options (and the values of those that take one); stops at `--` or the first operand. */
function skipOptions(args: ShellWord[], withValue: string[]): ShellWord[] {
  let i = 0;
  while (i < args.length) {
    const text = textAt(args, i);
    if (text === "--") return args.slice(i + 1);
    if (!text.startsWith("-") || text === "-") break;
    i += withValue.includes(text) ? 2 : 1;
  }
  return args.slice(i);
}

function textAt(args: ShellWord[], index: number): string {
  return args[index]?.text ?? "";
}

function firstOperand(args: ShellWord[]): ShellWord | undefined {
  return args.find((a) => !a.text.startsWith("-"));
}

// ---- git ----

const GIT_GLOBAL_WITH_VALUE = new Set([
  "-C",
  "-c",
  "--git-dir",
  "--work-tree",
  "--namespace",
  "--exec-path",
  "--super-prefix",
  "--config-env",
  "--list-cmds",
  "--attr-source",
]);
/** Subcommands that only read the repository (a subset of the local ones below). */
const GIT_READ_ONLY = new Set([
  "status",
  "log",
  "diff",
  "show",
  "grep",
  "blame",
  "ls-files",
  "ls-tree",
  "rev-parse",
  "rev-list",
  "describe",
  "shortlog",
  "reflog",
  "version",
  "help",
  "cat-file",
  "show-ref",
  "merge-base",
  "name-rev",
  "for-each-ref",
  "diff-tree",
  "diff-files",
  "diff-index",
  "count-objects",
  "check-ignore",
  "check-attr",
  "whatchanged",
  "var",
  "ls-remote",
  "range-diff",
  "verify-commit",
  "verify-tag",
]);
const GIT_LOCAL = new Set([
  ...GIT_READ_ONLY,
  "add",
  "commit",
  "checkout",
  "switch",
  "branch",
  "merge",
  "rebase",
  "reset",
  "stash",
  "tag",
  "init",
  "clone",
  "fetch",
  "pull",
  "rm",
  "mv",
  "restore",
  "cherry-pick",
  "revert",
  "worktree",
  "clean",
  "apply",
  "am",
  "format-patch",
  "bisect",
  "notes",
  "gc",
  "fsck",
  "hash-object",
  "symbolic-ref",
  "update-ref",
  "mergetool",
  "difftool",
  "sparse-checkout",
  "maintenance",
  "prune",
  "repack",
  "stripspace",
  "interpret-trailers",
  "read-tree",
  "write-tree",
  "commit-tree",
  "update-index",
  "lfs",
  "submodule",
  "remote",
  "config",
  "archive",
  "bundle",
]);
const GIT_EXEC_CONFIG =
  /^(alias\.|core\.(pager|hookspath|sshcommand|editor|fsmonitor|askpass|gitproxy)|pager\.|credential|url\.|remote\.|include|filter\.|diff\..*\.(textconv|command)|diff\.external|merge\..*\.driver|gpg\.|sequence\.editor|http\.|sendemail\.|protocol\.|uploadpack\.|receivepack\.)/i;
const GIT_HARMLESS_CONFIG =
  /^(color\.|user\.|core\.quotepath|advice\.|init\.defaultbranch|safe\.directory|log\.|format\.pretty|column\.)/i;

function analyzeGit(args: ShellWord[], scan: ShellScan) {
  const f = scan.findings;
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i];
    if (!arg) break;
    if (!arg.literal) return f.opaque("git option computed at run time");
    const text = arg.text;
    if (!text.startsWith("-")) break;
    const [flag, inline] = text.includes("=")
      ? [text.slice(0, text.indexOf("=")), text.slice(text.indexOf("=") + 1)]
      : [text, undefined];
    if (flag === "-c" || flag === "--config-env") {
      const value = inline ?? args[i + 1]?.text ?? "";
      if (flag === "--config-env" || !GIT_HARMLESS_CONFIG.test(value)) {
        f.add("EXIT", `\`git ${flag} ${value}\` can set aliases, hooks or a pager that run commands`);
      }
    }
    if (flag === "--exec-path" && inline !== undefined)
      f.add("EXIT", "git --exec-path runs git commands from another directory");
    if (GIT_GLOBAL_WITH_VALUE.has(flag) && inline === undefined) i++;
  }
  const subWord = args[i];
  if (!subWord) return f.add("READ");
  if (!subWord.literal) return f.opaque("git subcommand computed at run time");
  const sub = subWord.text;
  const rest = args.slice(i + 1);
  const restText = rest.map((a) => a.text);
  if (rest.some((a) => !a.literal) && ["config", "remote", "push", "credential", "submodule"].includes(sub)) {
    f.opaque(`git ${sub} with arguments computed at run time`);
  }
  if (
    restText.some((t) => /^--(upload-pack|receive-pack|exec|config)(=|$)/.test(t) || t === "-c" || t === "-u")
  ) {
    if (
      sub !== "add" &&
      sub !== "commit" &&
      sub !== "log" &&
      sub !== "branch" &&
      sub !== "status" &&
      sub !== "push"
    ) {
      f.add("EXIT", `\`git ${sub}\` option can run commands or set config`);
    }
  }
  switch (sub) {
    case "push":
    case "send-email":
    case "request-pull":
    case "svn":
    case "p4":
      return f.add("EXIT", `\`git ${sub}\` sends commits to a remote`);
    case "credential":
    case "credential-store":
    case "credential-cache":
      return f.add("SECRET", `\`git ${sub}\` reads stored credentials`);
    case "remote": {
      const action = restText.find((t) => !t.startsWith("-"));
      if (action && !["show", "get-url", "prune", "update"].includes(action))
        f.add("EXIT", `\`git remote ${action}\` changes where git pushes`);
      return f.add("READ");
    }
    case "config": {
      const reading = restText.some((t) =>
        ["--get", "--get-all", "--get-regexp", "--list", "-l", "get", "list"].includes(t),
      );
      const key = restText.find(
        (t) => !t.startsWith("-") && t !== "set" && t !== "get" && t !== "list" && t !== "unset",
      );
      if (!reading && key && !GIT_HARMLESS_CONFIG.test(key)) {
        f.add("EXIT", `\`git config ${key}\` may set an alias, hook, pager or remote that runs or sends`);
      } else if (!reading && key && GIT_EXEC_CONFIG.test(key)) {
        f.add("EXIT", `\`git config ${key}\` may run commands`);
      }
      if (reading && restText.some((t) => /credential|token|password/i.test(t)))
        f.add("SECRET", "reads credential config");
      return f.add(reading ? "READ" : "WRITE", reading ? undefined : "git config writes configuration");
    }
    case "lfs":
      if (restText[0] === "push") f.add("EXIT", "`git lfs push` uploads objects");
      return f.add("WRITE");
    case "submodule":
      if (restText.includes("foreach")) return f.opaque("git submodule foreach runs a command");
      return f.add("WRITE", "git submodule");
    case "rebase":
      if (restText.some((t) => t === "-x" || t.startsWith("--exec")))
        return f.opaque("git rebase --exec runs commands");
      return f.add("WRITE", "git rebase");
    case "bisect":
      if (restText[0] === "run") return analyzeNested(rest.slice(1), scan, { stdinIsData: false });
      return f.add("WRITE", "git bisect");
    case "filter-branch":
      return f.opaque("git filter-branch runs filter commands");
    case "archive":
      if (restText.some((t) => t.startsWith("--remote")))
        f.add("EXIT", "git archive --remote contacts a remote");
      return f.add("WRITE", "git archive");
  }
  if (!GIT_LOCAL.has(sub)) return f.add("EXIT", `unknown git subcommand \`${sub}\` (may be an alias)`);
  if (GIT_READ_ONLY.has(sub)) return f.add("READ");
  f.add("WRITE", `\`git ${sub}\` changes the repository`);
  for (const arg of rest) if (!arg.text.startsWith("-")) checkPathWord(arg, scan, { writer: true });
}

// ---- gh, curl, wget, httpie, rsync, awk, find ----

function analyzeGh(args: ShellWord[], scan: ShellScan) {
  const f = scan.findings;
  const operands = args.filter((a) => !a.text.startsWith("-"));
  if (operands.some((a) => !a.literal)) return f.opaque("gh with arguments computed at run time");
  const [group, action] = operands.map((a) => a.text);
  if (
    group === "auth" &&
    (action === "token" || args.some((a) => a.text === "--show-token" || a.text === "-t"))
  ) {
    return f.add("SECRET", "`gh auth` prints the GitHub token");
  }
  if (group === "api") return f.add("EXIT", "`gh api` can write to GitHub");
  const readActions = new Set([
    "list",
    "view",
    "status",
    "diff",
    "checks",
    "checkout",
    "download",
    "watch",
    "browse",
    "search",
    "clone",
    "--help",
  ]);
  if (
    group &&
    [
      "release",
      "pr",
      "issue",
      "repo",
      "gist",
      "secret",
      "variable",
      "workflow",
      "run",
      "label",
      "project",
      "ruleset",
      "cache",
      "codespace",
      "extension",
      "ssh-key",
      "gpg-key",
    ].includes(group)
  ) {
    if (!action || !readActions.has(action))
      return f.add("EXIT", `\`gh ${group}${action ? ` ${action}` : ""}\` changes GitHub`);
  }
  f.add("READ");
}

function analyzeCurl(args: ShellWord[], scan: ShellScan) {
  const f = scan.findings;
  for (let i = 0; i < args.length; i++) {
    const t = textAt(args, i);
    const sendsLong =
      /^--(data|data-[a-z]+|form|form-string|upload-file|json|post301|post302|post303|mail-rcpt|mail-from|ftp-create-dirs)(=|$)/.test(
        t,
      );
    const sendsShort = /^-[a-zA-Z]*[dFT]/.test(t) && !t.startsWith("--");
    const method =
      t === "-X" || t === "--request" ? textAt(args, i + 1) : /^(?:-X|--request=)(.+)$/.exec(t)?.[1];
    if (sendsLong || sendsShort) f.add("EXIT", "curl uploads or posts data");
    if (method && !/^(GET|HEAD|OPTIONS)$/i.test(method)) f.add("EXIT", `curl sends a ${method} request`);
    if (t === "-K" || t.startsWith("--config")) f.opaque("curl reads options from a config file");
    if (
      /^(-[a-zA-Z]*u|--user|--oauth2-bearer|-H|--header)$/.test(t) &&
      args[i + 1] &&
      CREDENTIAL_LIKE.test(textAt(args, i + 1))
    ) {
      f.add("SECRET", "curl sends credentials");
    }
    if (/^(smtp|smtps|ftp|ftps|tftp|scp|sftp|telnet|dict|gopher|ldap|mqtt):\/\//i.test(t))
      f.add("EXIT", `curl to ${t.split(":")[0]}`);
  }
  f.add("READ");
  checkArgs(
    args.filter((a) => !/^[a-z]+:\/\//i.test(a.text)),
    scan,
    false,
  );
}
const CREDENTIAL_LIKE = /(token|secret|passw|bearer|authorization|api[-_]?key)/i;

function analyzeWget(args: ShellWord[], scan: ShellScan) {
  for (const arg of args) {
    if (/^--(post-data|post-file|body-data|body-file|method)(=|$)/.test(arg.text))
      scan.findings.add("EXIT", "wget sends data");
    if (/^--(ftp-)?password|^--http-password/.test(arg.text))
      scan.findings.add("SECRET", "wget sends a password");
  }
  scan.findings.add("WRITE", "wget downloads to a file");
  checkArgs(
    args.filter((a) => !/^[a-z]+:\/\//i.test(a.text)),
    scan,
    true,
  );
}

function analyzeHttpie(program: string, args: ShellWord[], scan: ShellScan) {
  const operands = args.filter((a) => !a.text.startsWith("-"));
  const first = operands[0]?.text ?? "";
  const method = /^[A-Z]+$/.test(first) ? first : undefined;
  const items = operands.slice(method ? 2 : 1);
  if (
    (method && !/^(GET|HEAD|OPTIONS)$/.test(method)) ||
    items.some((a) => /^[^:=]*(:=|=|@|:=@)/.test(a.text) && !/^[^:=]*==/.test(a.text)) ||
    args.some((a) => a.text === "-f" || a.text === "--form" || a.text === "--raw")
  ) {
    scan.findings.add("EXIT", `\`${program}\` sends data`);
  }
  if (!scan.findings.has("EXIT") && args.some((a) => !a.literal))
    scan.findings.add("EXIT", `\`${program}\` request built from computed data`);
  scan.findings.add("READ");
}

function analyzeRsync(args: ShellWord[], scan: ShellScan) {
  const remote = args.some(
    (a) => !a.text.startsWith("-") && (/^[^/]*:/.test(a.text) || a.text.startsWith("rsync://")),
  );
  if (remote || args.some((a) => a.text === "-e" || a.text.startsWith("--rsh")))
    scan.findings.add("EXIT", "rsync to a remote host");
  scan.findings.add("WRITE", "rsync copies files");
  checkArgs(args, scan, true, true);
}

function analyzeAwk(args: ShellWord[], scan: ShellScan) {
  const program = args.find(
    (a, i) => !a.text.startsWith("-") && !["-F", "-v", "-f"].includes(args[i - 1]?.text ?? ""),
  );
  if (args.some((a) => a.text === "-f")) return scan.findings.add("WRITE", "awk runs a program file");
  if (!program?.literal) return scan.findings.opaque("awk program computed at run time");
  if (/system\s*\(|\|\s*(getline|&)|\|\s*"|print[^;]*>|ENVIRON|inplace/.test(program.text)) {
    if (/ENVIRON/.test(program.text)) scan.findings.add("SECRET", "awk reads ENVIRON");
    if (/system\s*\(|\|/.test(program.text)) return scan.findings.opaque("awk program runs commands");
    scan.findings.add("WRITE", "awk program writes files");
  }
  scan.findings.add("READ");
  checkArgs(
    args.filter((a) => a !== program),
    scan,
    false,
  );
}

function analyzeFind(args: ShellWord[], scan: ShellScan) {
  const f = scan.findings;
  for (let i = 0; i < args.length; i++) {
    const t = textAt(args, i);
    if (["-exec", "-execdir", "-ok", "-okdir"].includes(t)) {
      const end = args.findIndex((a, j) => j > i && (a.text === ";" || a.text === "+"));
      const inner = args
        .slice(i + 1, end === -1 ? undefined : end)
        .map((w) => (w.text === "{}" ? { ...w, text: "found-file" } : w));
      if (inner.length === 0) return f.opaque("find -exec without a command");
      analyzeNested(inner, scan, { stdinIsData: false });
      for (const root of args.slice(
        0,
        Math.max(
          0,
          args.findIndex((a) => /^[-(!]/.test(a.text)),
        ),
      )) {
        checkRecursiveRoot(root, scan, "find -exec");
      }
      if (end === -1) break;
      i = end;
    } else if (["-delete", "-fprint", "-fprint0", "-fprintf", "-fls"].includes(t)) {
      f.add("WRITE", `find ${t} writes or deletes files`);
    }
  }
  f.add("READ");
  const roots = args.slice(
    0,
    Math.max(
      0,
      args.findIndex((a) => /^[-(!]/.test(a.text)),
    ),
  );
  checkArgs(
    roots.length ? roots : args.filter((a) => !a.text.startsWith("-")).slice(0, 1),
    scan,
    f.has("WRITE"),
    f.has("WRITE"),
  );
  if (args.some((a) => a.text === "-name" || a.text === "-path" || a.text === "-iname")) {
    for (let i = 0; i < args.length; i++) {
      if (["-name", "-iname", "-path"].includes(textAt(args, i)) && args[i + 1]) {
        const pattern = textAt(args, i + 1);
        if (
          /^(\.env|id_|\*\.pem|\*\.key|credentials|\.netrc|\.git-credentials|auth\.json|hosts\.yml|token)/i.test(
            pattern.replace(/^\*\//, ""),
          )
        ) {
          f.add("SECRET", `find looks for credential files (${pattern})`);
        }
      }
    }
  }
}
