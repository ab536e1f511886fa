// Package managers, package runners, registries, clouds and deploy tools: publishing, uploading, deploying and
// changing accounts are exits; installs, builds and tests are local work; scripts they run are local code
// (class 7); config they write that later commands obey is an exit (class 6); computed arguments are exits.
import { parseArgs } from "../shell-options.ts";
import type { Analyzer, ProgramCall, Scan } from "../shell-scan.ts";
import { type ShellWord, syntheticWord } from "../shell-words.ts";
import { checkOperands, exitOnComputedArguments, onlyAsksVersion, remoteTool } from "./common.ts";

/** Script and target names that usually ship something somewhere. */
export const SHIPPING_NAME = /(deploy|publish|release|upload|push|ship|promote|rollout)/i;

function shippingTarget(call: ProgramCall, scan: Scan, targets: readonly ShellWord[]) {
  const target = targets.find((t) => !t.literal || SHIPPING_NAME.test(t.text));
  if (target)
    scan.findings.sends(
      `\`${call.name} … ${target.literal ? target.text : "(computed)"}\` runs a script that may deploy or publish`,
    );
}

// ---- npm ----

type NpmKind =
  | "exit"
  | "script"
  | "lifecycle"
  | "install"
  | "runner"
  | "config"
  | "explore"
  | "init"
  | "local";
/**
 * Every npm command and alias (npm 10 and 11, lib/utils/cmd-list.js), by what it does. npm also accepts any
 * unambiguous abbreviation; `npmCommand` resolves a word to every command it could mean.
 */
export const NPM_COMMANDS: Record<string, NpmKind> = {
  access: "exit",
  adduser: "exit",
  "approve-scripts": "local",
  audit: "local",
  bugs: "local",
  cache: "local",
  ci: "lifecycle",
  completion: "local",
  config: "config",
  dedupe: "lifecycle",
  "deny-scripts": "local",
  deprecate: "exit",
  diff: "local",
  "dist-tag": "exit",
  docs: "local",
  doctor: "local",
  edit: "local",
  exec: "runner",
  explain: "local",
  explore: "explore",
  "find-dupes": "local",
  fund: "local",
  get: "config",
  help: "local",
  "help-search": "local",
  hook: "exit",
  init: "init",
  install: "install",
  "install-ci-test": "lifecycle",
  "install-scripts": "lifecycle",
  "install-test": "lifecycle",
  link: "lifecycle",
  ll: "local",
  login: "exit",
  logout: "exit",
  ls: "local",
  org: "exit",
  outdated: "local",
  owner: "exit",
  pack: "lifecycle",
  ping: "local",
  pkg: "local",
  prefix: "local",
  profile: "exit",
  prune: "lifecycle",
  publish: "exit",
  query: "local",
  rebuild: "lifecycle",
  repo: "local",
  restart: "script",
  root: "local",
  run: "script",
  sbom: "local",
  search: "local",
  set: "config",
  shrinkwrap: "local",
  stage: "exit",
  star: "exit",
  stars: "local",
  start: "script",
  stop: "script",
  team: "exit",
  test: "script",
  token: "exit",
  trust: "exit",
  undeprecate: "exit",
  uninstall: "local",
  unpublish: "exit",
  unstar: "exit",
  update: "install",
  version: "lifecycle",
  view: "local",
  whoami: "local",
};
export const NPM_ALIASES: Record<string, string> = {
  author: "owner",
  home: "docs",
  issues: "bugs",
  info: "view",
  show: "view",
  find: "search",
  add: "install",
  unlink: "uninstall",
  remove: "uninstall",
  rm: "uninstall",
  r: "uninstall",
  un: "uninstall",
  rb: "rebuild",
  list: "ls",
  ln: "link",
  create: "init",
  i: "install",
  it: "install-test",
  cit: "install-ci-test",
  u: "update",
  up: "update",
  c: "config",
  s: "search",
  se: "search",
  tst: "test",
  t: "test",
  ddp: "dedupe",
  v: "view",
  "run-script": "run",
  "clean-install": "ci",
  "clean-install-test": "install-ci-test",
  x: "exec",
  why: "explain",
  la: "ll",
  verison: "version",
  ic: "ci",
  innit: "init",
  in: "install",
  ins: "install",
  inst: "install",
  insta: "install",
  instal: "install",
  isnt: "install",
  isnta: "install",
  isntal: "install",
  isntall: "install",
  "install-clean": "ci",
  "isntall-clean": "ci",
  hlep: "help",
  "dist-tags": "dist-tag",
  upgrade: "update",
  udpate: "update",
  rum: "run",
  sit: "install-ci-test",
  urn: "run",
  ogr: "org",
  "add-user": "adduser",
};

/** Every npm command a word could resolve to: exact, alias, or any abbreviation (npm's `deref`), camelCase too. */
export function npmCommand(word: string): string[] {
  const name = /[A-Z]/.test(word) ? word.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`) : word;
  if (NPM_COMMANDS[name]) return [name];
  const alias = NPM_ALIASES[name];
  if (alias) return [alias];
  if (name.length === 0) return [];
  const matches = new Set<string>();
  for (const candidate of [...Object.keys(NPM_COMMANDS), ...Object.keys(NPM_ALIASES)]) {
    if (candidate.startsWith(name)) matches.add(NPM_ALIASES[candidate] ?? candidate);
  }
  return [...matches];
}

/** npm config keys that change only output, caching or what gets installed. */
const HARMLESS_NPM_CONFIG =
  /^(loglevel|fund|audit|progress|color|update-notifier|save(-exact|-prefix|-dev)?|package-lock|engine-strict|legacy-peer-deps|prefer-(offline|online)|offline|ignore-scripts|init[.-](author|license|version)[\w.-]*|cache|unicode|timing|strict-peer-deps|fetch-retries|fetch-timeout)$/;

const NPM_GLOBAL_WITH_VALUE = [
  "prefix",
  "C",
  "workspace",
  "w",
  "registry",
  "userconfig",
  "globalconfig",
  "script-shell",
  "node-options",
  "loglevel",
  "cache",
  "tag",
  "otp",
  "access",
  "scope",
  "omit",
  "include",
  "before",
  "call",
  "package",
  "p",
];

const npm: Analyzer = (call, scan) => {
  const f = scan.findings;
  if (onlyAsksVersion(call.args)) return f.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: "Cwpc",
    longWithValue: NPM_GLOBAL_WITH_VALUE,
    stopAtOperand: true,
  });
  if (parsed.has("script-shell", "node-options", "userconfig", "globalconfig"))
    return f.opaque("npm runs scripts with a shell, node options or config the command chose");
  exitOnComputedArguments(call, scan);
  if (configRunsCode("npm", scan)) return;
  chosenRegistry("npm", parsed.values("registry"), scan);
  const [commandWord, ...rest] = parsed.operands;
  if (!commandWord) return f.reads();
  if (!commandWord.literal) return f.opaque("npm command computed at run time");
  const commands = npmCommand(commandWord.text);
  if (commands.length === 0) return f.sends(`unknown npm command \`${commandWord.text}\``);
  const cwd = parsed.values("prefix", "C").at(-1);
  for (const command of commands) npmRun(call, scan, command, NPM_COMMANDS[command] ?? "exit", rest, cwd);
};

function npmRun(
  call: ProgramCall,
  scan: Scan,
  command: string,
  kind: NpmKind,
  rest: readonly ShellWord[],
  cwd: ShellWord | undefined,
) {
  const f = scan.findings;
  const manifest = syntheticWord(
    cwd?.literal ? `${cwd.text.replace(/\/+$/, "")}/package.json` : "package.json",
  );
  const sub = parseArgs(rest, {
    shortWithValue: "wp",
    longWithValue: ["workspace", "tag", "otp", "access", "registry", "package", "call", "prefix"],
    stopAtOperand: kind === "runner" || kind === "explore",
  });
  switch (kind) {
    case "exit":
      return f.sends(`\`npm ${command}\` publishes or changes the registry account`);
    case "script": {
      const target = command === "run" ? sub.operands[0] : syntheticWord(command);
      if (!target) return f.reads(); // `npm run` lists scripts
      shippingTarget(call, scan, [target]);
      return scan.localCode("package-script", `npm ${command}`, [manifest], [target.text]);
    }
    case "lifecycle": {
      const lifecycle = command.includes("test")
        ? [command.startsWith("install") ? "install" : command, "test"]
        : [command];
      if (/^(?:ci|rebuild|link|install-test|install-ci-test|install-scripts|dedupe|prune)$/.test(command))
        dependencyScripts(`${call.name} ${command}`, rest, scan);
      return scan.localCode("package-script", `npm ${command}`, [manifest], lifecycle);
    }
    case "install": {
      const named = sub.operands.filter((o) => !o.text.startsWith("-"));
      for (const spec of named) packageSpec(spec, scan);
      dependencyScripts(`${call.name} ${command}`, rest, scan);
      chosenRegistry(`${call.name} ${command}`, sub.values("registry"), scan);
      installPrefix(`${call.name} ${command}`, rest, sub.values("prefix").at(-1) ?? cwd, scan);
      return scan.localCode("package-script", `npm ${command}`, [manifest], ["install"]);
    }
    case "runner":
      return packageRunner({ ...call, name: `npm ${command}` }, scan, rest);
    case "init": {
      const initializer = sub.operands[0];
      if (!initializer) return f.writes("npm init writes package.json");
      const name = initializer.text.startsWith("@")
        ? initializer.text.replace(/^(@[^/]+)(\/?)/, "$1/create-")
        : `create-${initializer.text}`;
      return packageRunner({ ...call, name: "npm init" }, scan, [
        syntheticWord(name, initializer.literal),
        ...sub.operands.slice(1),
      ]);
    }
    case "explore": {
      const dash = rest.findIndex((a) => a.text === "--");
      const payload = dash === -1 ? rest.slice(1) : rest.slice(dash + 1);
      if (payload.length === 0) return f.opaque("`npm explore` starts a shell");
      return scan.script(
        {
          ...syntheticWord(
            payload.map((w) => w.text).join(" "),
            payload.every((w) => w.literal),
          ),
        },
        "npm explore",
      );
    }
    case "config": {
      const action = command === "get" ? "get" : command === "set" ? "set" : sub.operands[0]?.text;
      const operands = command === "get" || command === "set" ? sub.operands : sub.operands.slice(1);
      const keys = configKeys(
        operands.map((o) => o.text),
        action === "set",
      );
      if (action === "get" || action === "list" || action === "ls" || action === undefined) {
        if (
          keys.some((k) => /_auth|token|password|cert|key/i.test(k)) ||
          action === "list" ||
          action === "ls" ||
          action === undefined
        )
          f.readsSecret("npm config shows settings that can hold registry tokens");
        return f.reads();
      }
      if (action === "edit" || action === "fix")
        return f.sends(`\`npm config ${action}\` can set script-shell, node-options or a registry`);
      const risky = keys.find((k) => !HARMLESS_NPM_CONFIG.test(k.replace(/^--/, "")));
      if (risky !== undefined)
        f.sends(
          `\`npm config ${action} ${risky}\` writes npm config other commands obey (script-shell, node-options, registry)`,
        );
      return f.writes("npm config writes .npmrc");
    }
    default:
      f.writes(`\`npm ${command}\``);
      checkOperands(sub.operands, scan, "operand");
  }
}

/** The keys of `config set k v k2=v2 …` (pairs, or `key=value` words); every operand of get/delete. */
function configKeys(operands: readonly string[], pairs: boolean): string[] {
  const keys: string[] = [];
  for (let i = 0; i < operands.length; i++) {
    const text = operands[i] ?? "";
    const eq = text.indexOf("=");
    keys.push(eq === -1 ? text : text.slice(0, eq));
    if (pairs && eq === -1) i++; // the next word is this key's value
  }
  return keys;
}

/** A package name or spec given to an installer: a URL, git or file spec fetches code from where it says. */
function packageSpec(spec: ShellWord, scan: Scan) {
  if (!spec.literal) return scan.findings.sends(`installs a package named at run time (${spec.source})`);
  if (/^(\.{0,2}\/|~|file:)/.test(spec.text)) scan.path(spec, "read");
}

// ---- what a package manager's config and installs run ----

/** npm config keys whose values run programs or code. */
const NPMRC_CODE = /^\s*(?:onload-script|node-options|script-shell|shell|git|editor|browser|viewer)\s*=/m;

/**
 * Config files that make a package manager run code, by program: with `key`, only when a line matches it; without,
 * by existing. Read bounded and non-blocking (Scan.config); one the gate cannot read counts as running code.
 */
const CODE_CONFIGS: Readonly<Record<string, ReadonlyArray<{ file: string; key?: RegExp }>>> = {
  npm: [
    { file: ".npmrc", key: NPMRC_CODE },
    { file: "~/.npmrc", key: NPMRC_CODE },
  ],
  pnpm: [
    { file: ".npmrc", key: NPMRC_CODE },
    { file: "~/.npmrc", key: NPMRC_CODE },
    { file: ".pnpmfile.cjs" },
    { file: ".pnpmfile.mjs" },
  ],
  yarn: [
    { file: ".yarnrc.yml", key: /^\s*(?:yarnPath|plugins)\s*:/m },
    { file: ".yarnrc", key: /^\s*yarn-path\s/m },
    { file: ".npmrc", key: NPMRC_CODE },
  ],
  bun: [
    { file: "bunfig.toml", key: /\bpreload\b/ },
    { file: "~/.bunfig.toml", key: /\bpreload\b/ },
  ],
};

/** True (and reported) when the package manager's config runs code the gate does not model. */
function configRunsCode(manager: string, scan: Scan): boolean {
  for (const { file, key } of CODE_CONFIGS[manager] ?? []) {
    const text = scan.config(file);
    if (text === undefined) continue;
    if (text === null || !key || key.test(text)) {
      scan.findings.unmodeled(
        "config",
        `\`${manager}\` reads ${file}, ${text === null ? "which the gate cannot read" : "which makes it run code the gate does not model"}`,
      );
      return true;
    }
  }
  return false;
}

/**
 * An install runs the lifecycle scripts of every dependency it installs or rebuilds, which the gate does not
 * read (unless scripts are off). The root package's own scripts are local code (inspected).
 */
function dependencyScripts(manager: string, args: readonly ShellWord[], scan: Scan) {
  if (args.some((a) => a.text === "--ignore-scripts" || a.text === "--ignore-scripts=true")) return;
  scan.findings.unmodeled(
    "dependencies",
    `\`${manager}\` runs its dependencies' install scripts, which the gate does not read`,
  );
}

/** `--registry URL` and the like: code comes from a host the command chose. */
function chosenRegistry(manager: string, values: readonly ShellWord[], scan: Scan) {
  for (const value of values)
    scan.findings.sends(
      `\`${manager}\` installs from ${value.literal ? value.text : "a registry computed at run time"}`,
    );
}

/** `--prefix DIR` and `-g`: where the packages and their programs land (a folder on PATH, the gate's files…). */
function installPrefix(
  manager: string,
  args: readonly ShellWord[],
  prefix: ShellWord | undefined,
  scan: Scan,
) {
  if (prefix)
    scan.path(syntheticWord(`${prefix.text.replace(/\/+$/, "")}/node_modules`, prefix.literal), "write");
  if (args.some((a) => a.text === "-g" || a.text === "--global" || a.text === "--location=global"))
    scan.findings.writesRunsLater(
      `\`${manager}\` installs programs globally (a later command of that name runs them)`,
    );
}

/**
 * npx, npm exec, pnpm dlx, yarn dlx, bunx, uvx, pipx run: the payload names a package's program. The program
 * the package provides is analyzed under its name (`npx vercel@latest deploy` is `vercel deploy`).
 */
function packageRunner(call: ProgramCall, scan: Scan, args: readonly ShellWord[]) {
  const parsed = parseArgs(args, {
    shortWithValue: "pc",
    longWithValue: [
      "package",
      "call",
      "from",
      "with",
      "python",
      "spec",
      "prefix",
      "workspace",
      "w",
      "shell",
      "index-url",
      "index",
    ],
    stopAtOperand: true,
  });
  const inline = parsed.get("c", "call")?.value;
  if (inline) return scan.script(inline, `${call.name} -c`);
  for (const spec of [...parsed.values("p", "package", "from", "with", "spec")]) packageSpec(spec, scan);
  let payload = parsed.operands;
  if (payload[0]?.text === "--") payload = payload.slice(1);
  const first = payload[0];
  if (!first) return scan.findings.reads();
  if (!first.literal) return scan.findings.opaque(`\`${call.name}\` runs a package computed at run time`);
  const program = binName(first.text);
  if (program === undefined)
    return scan.findings.opaque(
      `\`${call.name}\` runs a package from ${first.source} (code the gate cannot name)`,
    );
  scan.command([{ ...syntheticWord(program), source: first.source }, ...payload.slice(1)]);
}

/** Scoped packages whose command is not the name after the scope. */
const SCOPED_BINS: Record<string, string> = {
  "@angular/cli": "ng",
  "@vue/cli": "vue",
  "@nestjs/cli": "nest",
  "@sentry/cli": "sentry-cli",
  "@changesets/cli": "changeset",
  "@aws-amplify/cli": "amplify",
  "@railway/cli": "railway",
  "@expo/cli": "expo",
  "@capacitor/cli": "cap",
  "@ionic/cli": "ionic",
  "@shopify/cli": "shopify",
  "@salesforce/cli": "sf",
  "@microsoft/rush": "rush",
  "@nrwl/cli": "nx",
  "@google/clasp": "clasp",
  "@cloudflare/wrangler": "wrangler",
  "@vercel/ncc": "ncc",
  "@biomejs/biome": "biome",
};

/** The program a package spec runs: `@scope/name@1.2` → `name`; URL, git and path specs → undefined. */
export function binName(spec: string): string | undefined {
  if (
    /^(https?:|git(\+\w+)?:|github:|gitlab:|bitbucket:|file:|\.{0,2}\/|~)/.test(spec) ||
    spec.includes("://")
  )
    return undefined;
  const scoped = spec.startsWith("@");
  const bare = scoped
    ? `@${spec.slice(1).split("@")[0] ?? ""}`
    : (spec.split("@")[0]?.split("==")[0]?.split("[")[0] ?? "");
  if (scoped) {
    const known = SCOPED_BINS[bare];
    if (known) return known;
    const [scope = "", name = ""] = bare.slice(1).split("/");
    // `@vendor/cli` usually installs the vendor's command; other scoped packages their own name.
    const guess = name === "cli" ? scope : name;
    return /^[\w.-]+$/.test(guess) ? guess : undefined;
  }
  return /^[\w.-]+$/.test(bare) ? bare : undefined;
}

const npx: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  exitOnComputedArguments(call, scan);
  packageRunner(call, scan, call.args);
};

// ---- pnpm, yarn, bun ----

const PNPM_COMMANDS: Record<string, NpmKind> = {
  add: "install",
  install: "install",
  i: "install",
  update: "install",
  up: "install",
  upgrade: "install",
  remove: "local",
  rm: "local",
  uninstall: "local",
  un: "local",
  link: "lifecycle",
  ln: "lifecycle",
  unlink: "local",
  import: "local",
  rebuild: "lifecycle",
  rb: "lifecycle",
  prune: "local",
  fetch: "local",
  "install-test": "lifecycle",
  it: "lifecycle",
  dedupe: "local",
  patch: "local",
  "patch-commit": "local",
  "patch-remove": "local",
  audit: "local",
  list: "local",
  ls: "local",
  ll: "local",
  outdated: "local",
  why: "local",
  licenses: "local",
  run: "script",
  "run-script": "script",
  test: "script",
  t: "script",
  tst: "script",
  start: "script",
  restart: "script",
  stop: "script",
  exec: "runner",
  dlx: "runner",
  create: "init",
  publish: "exit",
  pack: "lifecycle",
  server: "local",
  store: "local",
  root: "local",
  bin: "local",
  setup: "local",
  init: "local",
  deploy: "local",
  doctor: "local",
  config: "config",
  c: "config",
  get: "config",
  set: "config",
  env: "local",
  "self-update": "local",
  "cat-file": "local",
  "cat-index": "local",
  "find-hash": "local",
  recursive: "local",
  m: "local",
  multi: "local",
  help: "local",
  login: "exit",
  adduser: "exit",
  logout: "exit",
  owner: "exit",
  "dist-tag": "exit",
  deprecate: "exit",
  unpublish: "exit",
  access: "exit",
  team: "exit",
  token: "exit",
  whoami: "local",
  view: "local",
  info: "local",
  search: "local",
  approve: "local",
  "approve-builds": "local",
  "ignored-builds": "local",
  cache: "local",
  catalog: "local",
  sbom: "local",
  version: "lifecycle",
};

/** pnpm and yarn run a package script when the command is not one of theirs. */
function scriptManager(commands: Record<string, NpmKind>): Analyzer {
  return (call, scan) => {
    const f = scan.findings;
    if (onlyAsksVersion(call.args)) return f.reads();
    exitOnComputedArguments(call, scan);
    const parsed = parseArgs(call.args, {
      shortWithValue: "CFw",
      longWithValue: ["dir", "filter", "workspace", "cwd", "reporter", "registry", "config"],
      stopAtOperand: true,
    });
    if (parsed.has("config")) return f.opaque(`\`${call.name}\` loads config the command chose`);
    if (configRunsCode(call.name === "yarnpkg" ? "yarn" : call.name, scan)) return;
    chosenRegistry(call.name, parsed.values("registry"), scan);
    const [commandWord, ...rest] = parsed.operands;
    if (!commandWord) {
      dependencyScripts(call.name, call.args, scan);
      return scan.localCode("package-script", call.name, [syntheticWord("package.json")], ["install"]);
    }
    if (!commandWord.literal) return f.opaque(`\`${call.name}\` command computed at run time`);
    const command = commandWord.text;
    if (call.name === "yarn") {
      if (command === "npm" && rest[0]?.text === "publish")
        return f.sends("`yarn npm publish` publishes a package");
      if (command === "workspaces" && rest[0]?.text === "foreach") {
        const inner = parseArgs(rest.slice(1), {
          shortWithValue: "jFx",
          longWithValue: ["jobs", "from", "exclude", "include"],
          stopAtOperand: true,
        }).operands;
        return scan.command([syntheticWord("yarn"), ...inner]);
      }
      if (command === "workspace" && rest.length > 1)
        return scan.command([syntheticWord("yarn"), ...rest.slice(1)]);
      if (command === "node") return scan.command([syntheticWord("node"), ...rest]);
      if (command === "plugin" && rest[0]?.text === "import")
        return f.opaque("`yarn plugin import` downloads and runs a plugin");
      if (command === "set" && rest[0]?.text === "version")
        return f.opaque("`yarn set version` downloads and runs another yarn");
      if (command === "tag" || command === "npm") return f.sends(`\`yarn ${command}\` changes the registry`);
    }
    if (
      call.name === "pnpm" &&
      (command === "-r" || command === "recursive" || command === "m" || command === "multi")
    )
      return scan.command([syntheticWord("pnpm"), ...rest]);
    const kind = commands[command];
    if (!kind) {
      const exit = Object.entries(commands).find(([name, k]) => k === "exit" && name.startsWith(command));
      if (exit) return f.sends(`\`${call.name} ${command}\` may be an abbreviation of \`${exit[0]}\``);
      shippingTarget(call, scan, [commandWord]);
      return scan.localCode(
        "package-script",
        `${call.name} ${command}`,
        [syntheticWord("package.json")],
        [command],
      );
    }
    if (kind === "runner") return packageRunner({ ...call, name: `${call.name} ${command}` }, scan, rest);
    if (kind === "init")
      return packageRunner(
        { ...call, name: `${call.name} create` },
        scan,
        rest.length ? [syntheticWord(`create-${rest[0]?.text}`, rest[0]?.literal), ...rest.slice(1)] : [],
      );
    npmRun(call, scan, command === "t" || command === "tst" ? "test" : command, kind, rest, undefined);
  };
}

const YARN_COMMANDS: Record<string, NpmKind> = {
  add: "install",
  install: "install",
  up: "install",
  upgrade: "install",
  "upgrade-interactive": "install",
  remove: "local",
  dedupe: "local",
  rebuild: "lifecycle",
  run: "script",
  test: "script",
  start: "script",
  exec: "runner",
  dlx: "runner",
  create: "init",
  publish: "exit",
  login: "exit",
  logout: "exit",
  owner: "exit",
  team: "exit",
  pack: "lifecycle",
  version: "lifecycle",
  why: "local",
  info: "local",
  list: "local",
  audit: "local",
  outdated: "local",
  cache: "local",
  config: "config",
  global: "local",
  link: "local",
  unlink: "local",
  bin: "local",
  init: "local",
  import: "local",
  licenses: "local",
  check: "local",
  autoclean: "local",
  constraints: "local",
  explain: "local",
  patch: "local",
  "patch-commit": "local",
  unplug: "local",
  help: "local",
  versions: "local",
  policies: "exit",
  "generate-lock-entry": "local",
  workspaces: "local",
  workspace: "local",
  set: "local",
  plugin: "local",
  node: "local",
  npm: "local",
  stage: "local",
  search: "local",
  tag: "exit",
};

const bun: Analyzer = (call, scan) => {
  const f = scan.findings;
  if (onlyAsksVersion(call.args)) return f.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: "erp",
    longWithValue: ["eval", "print", "preload", "config", "cwd", "env-file", "filter"],
    stopAtOperand: true,
  });
  if (parsed.has("e", "eval", "p", "print")) return f.opaque("`bun -e` runs code given on the command line");
  if (parsed.has("preload", "config"))
    return f.unmodeled("config", "`bun` preloads code or loads config the command chose");
  if (configRunsCode("bun", scan)) return;
  for (const file of parsed.values("env-file")) scan.path(file, "read");
  const [commandWord, ...rest] = parsed.operands;
  if (!commandWord) return f.opaque("`bun` starts a REPL reading stdin");
  if (!commandWord.literal) return f.opaque("bun command computed at run time");
  const command = commandWord.text;
  switch (command) {
    case "publish":
      return f.sends("`bun publish` publishes a package");
    case "x":
      return packageRunner({ ...call, name: "bun x" }, scan, rest);
    case "create":
    case "c":
      return f.opaque("`bun create` downloads a template and runs its setup");
    case "repl":
      return f.opaque("`bun repl` reads code from stdin");
    case "test":
      return scan.localCode("test-runner", "bun test", []);
    case "install":
    case "i":
    case "add":
    case "a":
    case "update":
      for (const spec of rest.filter((o) => !o.text.startsWith("-"))) packageSpec(spec, scan);
      dependencyScripts(`bun ${command}`, rest, scan);
      return scan.localCode("package-script", `bun ${command}`, [syntheticWord("package.json")], ["install"]);
    case "remove":
    case "rm":
    case "pm":
    case "build":
    case "link":
    case "unlink":
    case "outdated":
    case "audit":
    case "init":
    case "upgrade":
    case "patch":
    case "info":
    case "why":
      f.writes(`\`bun ${command}\``);
      return checkOperands(rest, scan, "operand");
    case "run": {
      const target = rest.find((o) => !o.text.startsWith("-"));
      if (!target) return f.reads();
      return bunTarget(call, scan, target, rest.slice(rest.indexOf(target) + 1));
    }
    default:
      return bunTarget(call, scan, commandWord, rest);
  }
};

/** `bun run x` / `bun x`: a file (local code) or a package.json script. */
function bunTarget(call: ProgramCall, scan: Scan, target: ShellWord, rest: readonly ShellWord[]) {
  if (!target.literal) return scan.findings.opaque("bun runs a target computed at run time");
  if (/\.(m?[jt]sx?|c[jt]s)$/.test(target.text) || target.text.includes("/")) {
    scan.localCode("node", call.name, [target]);
    return checkOperands(rest, scan, "operand");
  }
  shippingTarget(call, scan, [target]);
  scan.localCode("package-script", `bun run ${target.text}`, [syntheticWord("package.json")], [target.text]);
}

// ---- Python packaging ----

const pip: Analyzer = (call, scan) => {
  const f = scan.findings;
  if (onlyAsksVersion(call.args)) return f.reads();
  exitOnComputedArguments(call, scan);
  const parsed = parseArgs(call.args, {
    shortWithValue: "rcieCt",
    longWithValue: [
      "requirement",
      "constraint",
      "index-url",
      "extra-index-url",
      "find-links",
      "target",
      "prefix",
      "root",
      "src",
      "editable",
      "config-settings",
      "global-option",
      "proxy",
      "cert",
      "client-cert",
      "cache-dir",
      "log",
      "python",
      "platform",
      "python-version",
      "implementation",
      "abi",
      "trusted-host",
      "upgrade-strategy",
      "progress-bar",
      "report",
      "exists-action",
      "keyring-provider",
    ],
    abbreviations: true,
  });
  if (parsed.has("proxy")) f.sends("pip sends traffic through a proxy the command chose");
  const [command, ...rest] = parsed.operands;
  if (!command) return f.reads();
  switch (command.text) {
    case "install":
    case "download":
    case "wheel": {
      const requirements = parsed.values("r", "requirement", "c", "constraint");
      for (const file of requirements) scan.path(file, "read");
      chosenRegistry("pip", parsed.values("i", "index-url", "extra-index-url", "f", "find-links"), scan);
      for (const dir of parsed.values("t", "target", "prefix", "root", "src", "d", "dest"))
        scan.path(dir, "write");
      if (call.args.some((a) => a.text === "--user"))
        f.writesRunsLater(
          "`pip install --user` puts programs in ~/.local/bin (a later command of that name runs them)",
        );
      const local = [
        ...parsed.values("e", "editable").filter((o) => !/^[a-z+]+:\/\//.test(o.text)),
        ...rest.filter((o) => /^(\.{0,2}\/|\.$|~|file:)/.test(o.text)),
        ...requirementFiles(requirements, scan),
      ];
      for (const dir of local) {
        const root = dir.text.replace(/^file:(\/\/)?/, "").replace(/\/+$/, "") || ".";
        scan.localCode("python", `pip ${command.text} (build backend)`, buildBackendFiles(root, dir.literal));
      }
      // Source distributions run their own setup code; only wheels do not.
      if (
        !call.args.some(
          (a, i) =>
            /^--only-binary(?:=:all:)?$/.test(a.text) &&
            (a.text.endsWith(":all:") || call.args[i + 1]?.text === ":all:"),
        )
      )
        dependencyScripts(`pip ${command.text}`, [], scan);
      return f.writes(`\`pip ${command.text}\``);
    }
    case "config": {
      const action = rest[0]?.text;
      if (action && ["set", "unset", "edit"].includes(action))
        return f.sends(`\`pip config ${action}\` changes where pip installs from`);
      return f.reads();
    }
    default:
      f.writes(`\`pip ${command.text}\``);
      checkOperands(rest, scan, "operand");
  }
};

/**
 * Requirements files, read bounded (nested `-r` followed to a fixed depth): the local projects they install (their
 * build backends run) and the indexes they install from (code from a host the file chose).
 */
function requirementFiles(files: readonly ShellWord[], scan: Scan): ShellWord[] {
  const local: ShellWord[] = [];
  const queue = files.filter((f) => f.literal).map((f) => ({ file: f.text, depth: 0 }));
  for (let item = queue.shift(); item; item = queue.shift()) {
    const text = scan.config(item.file);
    if (text === undefined) continue;
    if (text === null) {
      scan.findings.unmodeled("config", `pip reads ${item.file}, which the gate cannot read`);
      continue;
    }
    const dir = item.file.includes("/") ? item.file.slice(0, item.file.lastIndexOf("/")) : ".";
    for (const raw of text.split("\n").slice(0, 4096)) {
      const line = raw.replace(/\s+#.*$/, "").trim();
      const option = /^(-[a-z]|--[a-z-]+)[=\s]\s*(\S+)/.exec(line);
      if (option?.[1] && option[2]) {
        const [, name, value] = option;
        if (/^(?:-r|--requirement|-c|--constraint)$/.test(name) && item.depth < 4)
          queue.push({ file: `${dir}/${value}`, depth: item.depth + 1 });
        else if (/^(?:-e|--editable)$/.test(name) && !/^[a-z+]+:\/\//.test(value))
          local.push(syntheticWord(`${dir}/${value}`));
        else if (/^(?:-i|--index-url|--extra-index-url|-f|--find-links)$/.test(name))
          scan.findings.sends(`pip installs from ${value} (named in ${item.file})`);
      } else if (/^(?:\.{0,2}\/|file:)/.test(line))
        local.push(syntheticWord(line.startsWith("file:") ? line : `${dir}/${line}`));
    }
  }
  return local;
}

/**
 * What a Python project's build runs from the project itself: setup.py (setuptools) and the build hooks of
 * hatchling, poetry-core and pdm-backend; pyproject.toml for an in-tree backend (local-code.ts reads it).
 */
export function buildBackendFiles(root: string, literal = true): ShellWord[] {
  return ["setup.py", "hatch_build.py", "build.py", "pdm_build.py", "pyproject.toml"].map((file) =>
    syntheticWord(`${root}/${file}`, literal),
  );
}

/** `uv sync`, `uv build` and `uv run` build and install the project first (its build backend runs). */
function uvBuildsProject(call: ProgramCall, scan: Scan, sub: string) {
  if (call.args.some((a) => /^--(?:no-project|no-install-project|script)$/.test(a.text))) return;
  scan.localCode("python", `uv ${sub} (build backend)`, buildBackendFiles("."));
}

/** uv: `uv run` is a payload runner, `uv tool run`/`uvx` a package runner, `uv publish` an exit. */
const uv: Analyzer = (call, scan) => {
  const f = scan.findings;
  if (onlyAsksVersion(call.args)) return f.reads();
  exitOnComputedArguments(call, scan);
  const parsed = parseArgs(call.args, {
    longWithValue: [
      "directory",
      "project",
      "config-file",
      "cache-dir",
      "python",
      "color",
      "index",
      "default-index",
      "index-url",
      "extra-index-url",
      "find-links",
    ],
    stopAtOperand: true,
  });
  if (parsed.has("config-file")) return f.opaque("uv loads config the command chose");
  const [command, ...rest] = parsed.operands;
  if (!command) return f.reads();
  switch (command.text) {
    case "publish":
      return f.sends("`uv publish` uploads a package");
    case "pip":
      return scan.command([syntheticWord("pip"), ...rest]);
    case "tool":
      if (rest[0]?.text === "run")
        return packageRunner({ ...call, name: "uv tool run" }, scan, rest.slice(1));
      return f.writes("uv tool");
    case "sync":
    case "build":
      uvBuildsProject(call, scan, command.text);
      return f.writes(`\`uv ${command.text}\``);
    case "run":
      uvBuildsProject(call, scan, "run");
      return payloadRunner({ ...call, name: "uv run" }, scan, rest, [
        "with",
        "with-requirements",
        "python",
        "package",
        "env-file",
        "index",
        "directory",
        "project",
        "extra",
        "group",
      ]);
    default:
      f.writes(`\`uv ${command.text}\``);
      checkOperands(rest, scan, "operand");
  }
};

/** `poetry run cmd`, `pdm run x`, `conda run cmd`, `bundle exec cmd`, `pipenv run cmd`: the payload is a command. */
function payloadRunner(
  call: ProgramCall,
  scan: Scan,
  args: readonly ShellWord[],
  withValue: readonly string[],
) {
  const parsed = parseArgs(args, { shortWithValue: "npw", longWithValue: withValue, stopAtOperand: true });
  for (const file of parsed.values("env-file")) scan.path(file, "read");
  let payload = parsed.operands;
  if (payload[0]?.text === "--") payload = payload.slice(1);
  if (payload.length === 0) return scan.findings.reads();
  const first = payload[0];
  if (first && /\.py$/.test(first.text)) return scan.localCode("python", call.name, [first]);
  scan.command(payload);
}

/** A Python project manager: run → payload; publish → exit; shell → opaque; config set → exit. */
function projectManager(runCommand: string): Analyzer {
  return (call, scan) => {
    const f = scan.findings;
    if (onlyAsksVersion(call.args)) return f.reads();
    exitOnComputedArguments(call, scan);
    const parsed = parseArgs(call.args, {
      shortWithValue: "CPn",
      longWithValue: ["directory", "project", "name", "prefix", "env", "config-file"],
      stopAtOperand: true,
    });
    const [command, ...rest] = parsed.operands;
    if (!command) return f.reads();
    switch (command.text) {
      case runCommand:
        return payloadRunner({ ...call, name: `${call.name} ${runCommand}` }, scan, rest, [
          "env-file",
          "name",
          "prefix",
          "env",
        ]);
      case "publish":
      case "upload":
        return f.sends(`\`${call.name} ${command.text}\` uploads a package`);
      case "shell":
      case "activate":
        return f.opaque(`\`${call.name} ${command.text}\` starts a shell`);
      case "config":
        if (
          rest.some((a) => !a.text.startsWith("-")) &&
          !rest.some((a) => a.text === "--list" || a.text === "list")
        )
          return f.sends(`\`${call.name} config\` changes repositories or credentials`);
        return f.reads();
      case "test":
        return scan.localCode("test-runner", `${call.name} test`, []);
      case "install":
      case "sync":
      case "build":
        // The project itself is built and installed (unless told not to): its build backend runs.
        if (!call.args.some((a) => /^--no-(?:root|install-project|self)$/.test(a.text)))
          scan.localCode("python", `${call.name} ${command.text} (build backend)`, buildBackendFiles("."));
        f.writes(`\`${call.name} ${command.text}\``);
        return checkOperands(rest, scan, "operand");
      default:
        f.writes(`\`${call.name} ${command.text}\``);
        checkOperands(rest, scan, "operand");
    }
  };
}

// ---- other ecosystems ----

/** A tool whose listed subcommands (anywhere among the operands) publish or change remote state. */
function subcommandExits(
  exits: readonly string[],
  extra?: (call: ProgramCall, scan: Scan, operands: readonly ShellWord[]) => boolean,
): Analyzer {
  return (call, scan) => {
    const f = scan.findings;
    if (onlyAsksVersion(call.args)) return f.reads();
    exitOnComputedArguments(call, scan);
    const operands = call.args.filter((a) => !a.text.startsWith("-"));
    if (extra?.(call, scan, operands)) return;
    const shipping = operands.find((a) => exits.includes(a.text));
    if (shipping) f.sends(`\`${call.name} ${shipping.text}\` publishes, uploads or deploys`);
    f.writes(`runs \`${call.name}\``);
    checkOperands(call.args, scan, "operand");
  };
}

/** Cargo commands that compile: build scripts and procedural macros (the crate's and its dependencies') run. */
const CARGO_COMPILES = /^(?:build|b|check|c|clippy|doc|d|install|rustc|rustdoc|fix|package|bench)$/;

const cargo = subcommandExits(["publish", "login", "owner", "yank", "logout"], (call, scan, operands) => {
  const sub = operands[0]?.text;
  if (call.args.some((a) => a.text === "--config" || a.text.startsWith("--config=") || /^-Z/.test(a.text))) {
    scan.findings.unmodeled(
      "config",
      "`cargo --config` sets configuration that can name wrappers and runners",
    );
    return true;
  }
  if (sub && CARGO_COMPILES.test(sub))
    scan.findings.unmodeled(
      "dependencies",
      `\`cargo ${sub}\` runs build scripts and procedural macros (the crate's and its dependencies'), which the gate does not read`,
    );
  if (sub === "test" || sub === "bench" || sub === "nextest" || sub === "run" || sub === "r" || sub === "t") {
    scan.localCode("test-runner", `cargo ${sub}`, []);
    return true;
  }
  if (sub === "config" && operands[1]?.text === "set") {
    scan.findings.sends("`cargo config set` writes config other builds obey");
    return true;
  }
  return false;
});

/** Goals and tasks that run the project's compiled code (its tests, its main class), not only build it. */
const MVN_RUNS =
  /^(?:test|verify|integration-test|package|install|exec:\w+|spring-boot:run|quarkus:dev|jetty:run)$/;
const GRADLE_RUNS = /^(?::?[\w-]+:)*(?:test|check|run|bootRun|build|integrationTest|connectedCheck)$/;

/** A build tool whose `goals` evaluate build files that are code (`what`): unmodeled; then `next`, if any. */
function buildFileRuns(
  goals: RegExp,
  what: string,
  next?: (call: ProgramCall, scan: Scan, operands: readonly ShellWord[]) => boolean,
) {
  return (call: ProgramCall, scan: Scan, operands: readonly ShellWord[]): boolean => {
    const goal = operands.find((operand) => goals.test(operand.text));
    if (goal)
      scan.findings.unmodeled(
        "config",
        `\`${call.name} ${goal.text}\` runs ${what}, which the gate does not model`,
      );
    return next?.(call, scan, operands) ?? false;
  };
}

/** A build tool whose `goal` runs the project's own compiled code: a test run the gate cannot read. */
function runsCompiled(goals: RegExp) {
  return (call: ProgramCall, scan: Scan, operands: readonly ShellWord[]): boolean => {
    const goal = operands.find((operand) => goals.test(operand.text));
    if (!goal) return false;
    scan.localCode("test-runner", `${call.name} ${goal.text}`, []);
    return true;
  };
}

const go: Analyzer = (call, scan) => {
  const f = scan.findings;
  if (onlyAsksVersion(call.args)) return f.reads();
  exitOnComputedArguments(call, scan);
  const [sub, ...rest] = call.args;
  if (rest.some((a) => /^--?(toolexec|exec|vettool|overlay)(=|$)/.test(a.text)))
    return f.opaque(`\`go ${sub?.text}\` runs every tool through a program the command chose`);
  switch (sub?.text) {
    case "test":
      return scan.localCode("test-runner", "go test", []);
    case "generate":
      return scan.localCode("task-runner", "go generate", [], ["generate"]);
    case "run": {
      const file = rest.find((a) => !a.text.startsWith("-"));
      return file ? scan.localCode("interpreter", "go run", [file]) : f.writes("go run");
    }
    case "env":
      if (rest.some((a) => a.text === "-w" || a.text === "-u"))
        return f.sends("`go env -w` writes settings other go commands obey (GOFLAGS, GOPROXY)");
      return f.reads();
    default:
      f.writes(`\`go ${sub?.text ?? ""}\``);
      checkOperands(rest, scan, "operand");
  }
};

const docker: Analyzer = (call, scan) => {
  const f = scan.findings;
  if (onlyAsksVersion(call.args)) return f.reads();
  exitOnComputedArguments(call, scan);
  const parsed = parseArgs(call.args, {
    shortWithValue: "Hcl",
    longWithValue: ["host", "context", "config", "log-level", "tlscacert", "tlscert", "tlskey"],
    stopAtOperand: true,
  });
  if (parsed.has("H", "host"))
    f.sends(`\`${call.name}\` talks to a daemon the command chose (the build context and data go there)`);
  if (parsed.has("config")) f.opaque(`\`${call.name}\` loads config the command chose`);
  let [sub, ...rest] = parsed.operands;
  if (sub && ["image", "container", "buildx", "builder", "compose"].includes(sub.text) && rest[0]) {
    if (sub.text === "compose" && rest[0].text === "push")
      return f.sends("`docker compose push` pushes images");
    [sub, ...rest] = rest;
  }
  switch (sub?.text) {
    case "push":
    case "login":
      if (sub.text === "login") f.readsSecret(`\`${call.name} login\` uses registry credentials`);
      return f.sends(`\`${call.name} ${sub.text}\` publishes, uploads or deploys`);
    case "build":
      if (
        rest.some(
          (a) =>
            a.text === "--push" || /^--output=.*type=registry/.test(a.text) || /^--(secret|ssh)/.test(a.text),
        )
      )
        f.sends(`\`${call.name} build\` pushes the image or passes secrets into it`);
      return f.writes(`\`${call.name} build\` runs the Dockerfile's steps`);
    case "run":
    case "exec":
    case "create": {
      const spec = parseArgs(rest, {
        shortWithValue: "eEvpuwlhmc",
        longWithValue: [
          "env",
          "env-file",
          "volume",
          "mount",
          "publish",
          "user",
          "workdir",
          "label",
          "hostname",
          "memory",
          "cpus",
          "name",
          "network",
          "entrypoint",
          "platform",
          "pull",
          "restart",
          "device",
          "cap-add",
          "security-opt",
          "add-host",
          "dns",
          "ulimit",
          "gpus",
          "log-driver",
          "ipc",
          "pid",
          "shm-size",
          "tmpfs",
          "volumes-from",
          "runtime",
        ],
        stopAtOperand: true,
      });
      if (
        spec.has("privileged") ||
        spec.values("pid", "ipc", "network").some((v) => v.text === "host") ||
        spec.values("v", "volume", "mount").some((v) => /(^|=)\/(:|,|$)|docker\.sock/.test(v.text))
      )
        f.sends(
          `\`${call.name} ${sub.text}\` gives the container the host (privileged, host namespaces or the root file system)`,
        );
      for (const file of spec.values("env-file")) scan.path(file, "read");
      // A bind mount hands the container a host directory: what it can read there, it can print or send.
      for (const mount of spec.values("v", "volume", "mount")) {
        const source =
          mount.text.startsWith("type=") || mount.text.includes("source=") || mount.text.includes("src=")
            ? (/(?:^|,)(?:source|src)=([^,]*)/.exec(mount.text)?.[1] ?? "")
            : (mount.text.split(":")[0] ?? "");
        if (
          !source ||
          (!source.startsWith("/") &&
            !source.startsWith("~") &&
            !source.startsWith(".") &&
            !source.includes("\u0000"))
        )
          continue;
        const word = { ...mount, text: source, forms: [source] };
        scan.path(word, "read");
        scan.recursiveRead(word, `${call.name} ${sub.text} -v`);
      }
      if (spec.has("p", "publish", "P", "publish-all"))
        f.sends(`\`${call.name} ${sub.text}\` publishes ports`);
      const payload = spec.operands.slice(1);
      if (payload.length > 0) scan.command(payload);
      return f.writes(`\`${call.name} ${sub.text}\` runs a container`);
    }
    case "cp":
      return f.writes(`\`${call.name} cp\` copies files to or from a container`);
    default:
      f.writes(`runs \`${call.name} ${sub?.text ?? ""}\``);
  }
};

const KUBECTL_READS = new Set([
  "get",
  "describe",
  "logs",
  "top",
  "explain",
  "api-resources",
  "api-versions",
  "version",
  "cluster-info",
  "auth",
  "diff",
  "wait",
  "events",
  "completion",
  "plugin",
  "options",
  "kustomize",
]);

const kubectl: Analyzer = (call, scan) => {
  const f = scan.findings;
  if (onlyAsksVersion(call.args)) return f.reads();
  exitOnComputedArguments(call, scan);
  const operands = call.args.filter((a) => !a.text.startsWith("-"));
  const sub = operands[0]?.text;
  if (sub === "config") {
    if (
      operands[1]?.text === "view" &&
      call.args.some((a) => a.text === "--raw" || a.text.startsWith("--flatten"))
    )
      return f.readsSecret("kubectl config view --raw shows cluster credentials");
    if (
      operands[1] &&
      !["view", "get-contexts", "current-context", "get-clusters", "get-users"].includes(operands[1].text)
    )
      return f.sends("kubectl config changes which cluster later commands reach");
    return f.reads();
  }
  if (sub === undefined || KUBECTL_READS.has(sub)) return f.reads();
  f.sends(`\`${call.name} ${sub}\` changes or reaches into a cluster`);
};

const gh: Analyzer = (call, scan) => {
  const f = scan.findings;
  const operands = call.args.filter((a) => !a.text.startsWith("-"));
  if (operands.some((a) => !a.literal)) return f.opaque("gh with arguments computed at run time");
  const [group, action] = operands.map((a) => a.text);
  if (
    group === "auth" &&
    (action === "token" || call.args.some((a) => a.text === "--show-token" || a.text === "-t"))
  )
    return f.readsSecret("`gh auth` prints the GitHub token");
  if (group === "api") return f.sends("`gh api` can write to GitHub");
  if (group === "extension" && action && ["install", "upgrade", "exec"].includes(action))
    return f.opaque("`gh extension` downloads or runs extension code");
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
    "ls",
  ]);
  const remoteGroups = [
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
    "org",
    "alias",
    "config",
    "attestation",
  ];
  if (group && remoteGroups.includes(group) && (!action || !readActions.has(action))) {
    if (group === "config" && action === "get") return f.reads();
    if (group === "alias" || group === "config")
      return f.sends(`\`gh ${group} ${action ?? ""}\` changes commands or settings gh runs later`);
    return f.sends(`\`gh ${group}${action ? ` ${action}` : ""}\` changes GitHub`);
  }
  checkOperands(call.args, scan, "read");
  f.reads();
};

const huggingface: Analyzer = (call, scan) => {
  const f = scan.findings;
  if (onlyAsksVersion(call.args)) return f.reads();
  exitOnComputedArguments(call, scan);
  const operands = call.args.filter((a) => !a.text.startsWith("-")).map((a) => a.text);
  if (operands.includes("token") || (operands[0] === "auth" && operands[1] !== "whoami"))
    f.readsSecret("prints or stores the Hugging Face token");
  const shipping = [
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
    "delete-cache",
    "collections",
    "inference-endpoints",
  ].find((s) => operands.includes(s));
  if (shipping) return f.sends(`\`${call.name} ${shipping}\` publishes, uploads or deploys`);
  f.reads();
};

const twine = subcommandExits(["upload", "register"]);

export const PUBLISHER_ANALYZERS: Readonly<Record<string, Analyzer>> = {
  npm,
  npx,
  pnpx: npx,
  bunx: npx,
  uvx: npx,
  pnpm: scriptManager(PNPM_COMMANDS),
  yarn: scriptManager(YARN_COMMANDS),
  yarnpkg: scriptManager(YARN_COMMANDS),
  bun,
  pip,
  pip3: pip,
  uv,
  pipx: (call, scan) =>
    call.args[0]?.text === "run"
      ? packageRunner({ ...call, name: "pipx run" }, scan, call.args.slice(1))
      : pip({ ...call, name: "pipx" }, scan),
  poetry: projectManager("run"),
  pdm: projectManager("run"),
  hatch: projectManager("run"),
  rye: projectManager("run"),
  pipenv: projectManager("run"),
  conda: projectManager("run"),
  mamba: projectManager("run"),
  micromamba: projectManager("run"),
  flit: subcommandExits(["publish"]),
  twine,
  anaconda: subcommandExits(["upload"]),
  cargo,
  go,
  gem: subcommandExits(
    ["push", "owner", "yank", "signin"],
    buildFileRuns(/^(?:build|install|update)$/, "a gemspec or native extensions"),
  ),
  bundle: (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    // Every bundler command evaluates the Gemfile, which is Ruby.
    scan.findings.unmodeled(
      "config",
      "`bundle` evaluates the Gemfile (Ruby code) and installs gems with native extensions",
    );
    return call.args[0]?.text === "exec"
      ? payloadRunner({ ...call, name: "bundle exec" }, scan, call.args.slice(1), [])
      : subcommandExits(["config"])(call, scan);
  },
  mvn: subcommandExits(
    ["deploy", "release:perform", "release:prepare", "deploy:deploy-file"],
    buildFileRuns(/./, "the pom's plugins", runsCompiled(MVN_RUNS)),
  ),
  mvnw: subcommandExits(
    ["deploy", "release:perform", "release:prepare", "deploy:deploy-file"],
    buildFileRuns(/./, "the pom's plugins", runsCompiled(MVN_RUNS)),
  ),
  gradle: subcommandExits(
    ["publish", "publishToMavenLocal", "publishPlugins"],
    buildFileRuns(/./, "the build scripts (Groovy or Kotlin code)", runsCompiled(GRADLE_RUNS)),
  ),
  gradlew: subcommandExits(
    ["publish", "publishToMavenLocal", "publishPlugins"],
    buildFileRuns(/./, "the build scripts (Groovy or Kotlin code)", runsCompiled(GRADLE_RUNS)),
  ),
  dotnet: subcommandExits(
    ["nuget"],
    buildFileRuns(
      /^(?:build|restore|pack|publish|msbuild)$/,
      "MSBuild targets and tasks",
      runsCompiled(/^(?:test|run|watch)$/),
    ),
  ),
  nuget: subcommandExits(["push", "delete"]),
  pod: subcommandExits(["trunk"]),
  helm: subcommandExits(["push", "install", "upgrade", "uninstall", "rollback", "repo", "plugin"]),
  terraform: subcommandExits(["apply", "destroy", "import", "state", "taint", "login", "push", "refresh"]),
  tofu: subcommandExits(["apply", "destroy", "import", "state", "taint", "login", "refresh"]),
  docker,
  podman: docker,
  nerdctl: docker,
  buildah: subcommandExits(["push", "login"]),
  skopeo: subcommandExits(["copy", "login", "sync", "delete"]),
  crane: subcommandExits(["push", "copy", "append", "mutate", "delete", "tag"]),
  kubectl,
  oc: kubectl,
  gh,
  hf: huggingface,
  "huggingface-cli": huggingface,
  jfrog: subcommandExits(["rt", "npm-publish"]),
  lerna: subcommandExits(["publish", "version"]),
  changeset: subcommandExits(["publish"]),
  nx: subcommandExits(["release", "deploy", "publish"]),
  turbo: subcommandExits(["deploy", "publish", "login", "link"]),
  // Deploy and cloud tools: any use talks to a remote account.
  ...Object.fromEntries(
    [
      "aws",
      "gsutil",
      "gcloud",
      "bq",
      "az",
      "azcopy",
      "rclone",
      "s3cmd",
      "vercel",
      "netlify",
      "netlify-cli",
      "fly",
      "flyctl",
      "heroku",
      "wrangler",
      "firebase",
      "firebase-tools",
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
      "b2",
      "mc",
      "gdrive",
      "dropbox_uploader",
      "ansible",
      "ansible-playbook",
      "gh-pages",
      "np",
      "release-it",
      "semantic-release",
      "clasp",
      "eas",
      "expo",
      "cap",
      "supabase",
      "vault",
      "doppler",
      "infisical",
      "modal",
      "replicate",
      "kaggle",
      "wandb",
      "vastai",
      "runpod",
      "sky",
      "databricks",
      "snowsql",
      "twilio",
      "stripe",
      "shopify",
      "amplify",
      "copilot",
      "cf",
      "appcenter",
      "fastlane",
      "codecov",
    ].map((name) => [name, remoteTool("sends data to a remote host or account")]),
  ),
};
