// Class 7 of issue 10, write then run: a shell command that runs local code (`bash x.sh`, `./x`, `python3 x.py`,
// `node x.js`, `make`, `npm test`…, reported by the shell classifier as LocalCodeRun findings) is decided on
// what that code does. The files are read bounded (workspace files only, ≤ 256 KB each, ≤ 512 KB and 16 files per
// call, through readForVetting; ≤ 32 KB of shell text classified), shell text (scripts, package.json scripts and their pre/post and install
// hooks, Makefile recipes) goes through the same shell classifier, other languages through token scans
// (script-scan.ts), and local files they run or import are followed (bounded, breadth first). Whatever is
// found is merged into the decision, the files are shown in the dialog, and their exact bytes are what an
// approval covers (vetted-content.ts).
import { statSync } from "node:fs";
import path from "node:path";
import type { Parser } from "web-tree-sitter";
import { readForVetting, type VettedFile } from "../vetted-content.ts";
import type { Findings, GateClass, LocalCodeRun } from "./gate-classes.ts";
import { gitConfiguredCommands, gitHooksDir } from "./git-hooks.ts";
import { MAKE_UNKNOWN, makefileRecipes } from "./makefile-recipes.ts";
import { canonicalIn, isWithin, type PathContext } from "./path-context.ts";
import {
  languageByName,
  localImports,
  type ScriptLanguage,
  scanScriptText,
  shebangLanguage,
} from "./script-scan.ts";
import { secretDirectoryRuleFor, sensitiveRuleByName, sensitiveRuleFor } from "./sensitive-paths.ts";
import { discoverTests, testRunnerLoads } from "./test-discovery.ts";

export const MAX_INSPECTED_FILES = 64;
export const MAX_INSPECTED_BYTES = 512 * 1024;
/** Shell text classified per call, at most (one command's worth: the classifier's own bound and budget). */
export const MAX_CLASSIFIED_CHARS = 32 * 1024;
const MAX_DEPTH = 4;
/** How much of one file a dialog shows; a file cut short is said to be, and not covered by the approval. */
export const MAX_SHOWN_CHARS = 64 * 1024;

/** A file shown to the person: what runs, with the hash of the exact bytes. */
export interface ShownScript {
  file: VettedFile;
  /** What it is and why it runs (`shell script`, `Makefile recipes for build`, `package.json scripts test`). */
  what: string;
  /** The text shown (the whole file, or for package.json the scripts that run). */
  text: string;
}

export interface LocalCodeVerdict {
  classes: GateClass[];
  reasons: string[];
  shown: ShownScript[];
}

/** The shell classifier, as the inspection needs it: classify a script's text as if run in `ctx.cwd`. */
export type ClassifyShell = (script: string, parser: Parser, ctx: PathContext) => Findings;

interface Work {
  run: LocalCodeRun;
  depth: number;
}

/**
 * `command` (the whole command text) and `commandWrites` (it creates or replaces files other than by running the
 * local code: clones, checkouts, extractions, copies) decide what a file missing at decision time means: if the
 * command names that file again, or writes whole trees, it may create it before running it, so it is unknown;
 * otherwise nothing runs (the run fails, or git skips a hook that does not exist).
 */
export function inspectLocalCode(
  runs: readonly LocalCodeRun[],
  ctx: PathContext,
  parser: Parser,
  classify: ClassifyShell,
  options: {
    command?: string;
    /** The command writes files the gate cannot name (whole trees, patterns, computed paths). */
    commandWrites?: boolean;
    /** It runs other local code too, which may write what this run loads. */
    otherRuns?: boolean;
    /** Files it writes, by name. */
    written?: ReadonlySet<string>;
  } = {},
): LocalCodeVerdict {
  const classes = new Set<GateClass>();
  const reasons: string[] = [];
  const shown: ShownScript[] = [];
  const seen = new Set<string>();
  let bytes = 0;
  const add = (cls: GateClass | readonly GateClass[], reason: string) => {
    for (const c of Array.isArray(cls) ? cls : [cls]) classes.add(c as GateClass);
    if (!reasons.includes(reason) && reasons.length < 24) reasons.push(reason);
  };
  const opaque = (reason: string) => add(["UNKNOWN", "EXIT", "SECRET"], reason);
  const queue: Work[] = runs.map((run) => ({ run, depth: 0 }));
  const configsRead = new Set<string>();

  const atCwd = (cwd: string): PathContext => ({
    cwd: canonicalIn(ctx, cwd),
    home: ctx.home,
    agentDir: ctx.agentDir,
    policyPath: ctx.policyPath,
    gateDirs: ctx.gateDirs,
  });

  /** Shell text through the shell classifier; what it runs in turn is queued. */
  let classified = 0;
  const classifyText = (script: string, cwd: string, where: string, depth: number) => {
    classified += script.length;
    if (classified > MAX_CLASSIFIED_CHARS)
      return opaque(
        `${where}: more shell code than the gate reads in one decision (${MAX_CLASSIFIED_CHARS / 1024} KB)`,
      );
    const findings = classify(script, parser, atCwd(cwd));
    const notable = findings.sortedClasses().filter((cls) => cls !== "READ" && cls !== "WRITE");
    for (const cls of notable) classes.add(cls);
    if (notable.length > 0) for (const reason of findings.reasons) add([], `${where}: ${reason}`);
    for (const run of findings.localCode) queue.push({ run, depth: depth + 1 });
  };

  /** Reads one file for vetting (bounded); undefined when it cannot be inspected (the reason is recorded). */
  /** `onlyIfPresent`: a file that runs only when it exists (a git hook): missing means nothing runs. */
  const read = (
    file: string,
    what: string,
    onlyIfPresent = false,
  ): { text: string; vetted: VettedFile } | undefined => {
    const canonical = canonicalIn(ctx, file);
    const secret = sensitiveRuleFor(canonical, ctx);
    if (secret) {
      add("SECRET", `runs ${what} ${file}, which is ${secret.why}`);
      return undefined;
    }
    if (!isWithin(canonical, ctx.cwd)) {
      opaque(`runs ${what} ${file}, outside the workspace, which the gate does not read`);
      return undefined;
    }
    if (seen.has(file)) return undefined;
    if (seen.size >= MAX_INSPECTED_FILES) {
      opaque(`runs more than ${MAX_INSPECTED_FILES} local files, more than the gate reads`);
      return undefined;
    }
    seen.add(file);
    const result = readForVetting(file);
    if (!result.ok && result.reason === "missing" && !mayBeCreated(file)) {
      // Nothing is there, and the command does not write it first: the run fails, or (a git hook) is skipped.
      seen.delete(file);
      return undefined;
    }
    if (!result.ok && result.reason === "missing" && onlyIfPresent) {
      // git runs only hooks that exist; a command that writes one is already an exit (laterExecReasonFor).
      seen.delete(file);
      return undefined;
    }
    if (!result.ok) {
      const why = {
        missing: "does not exist yet (the same command may write it)",
        not_a_file: "is not a regular file",
        too_large: "is larger than 256 KB",
        unreadable: "cannot be read",
      }[result.reason];
      opaque(`runs ${what} ${file}, which ${why}, so the gate cannot show what runs`);
      return undefined;
    }
    bytes += result.file.bytes;
    if (bytes > MAX_INSPECTED_BYTES) {
      opaque(`runs more than ${MAX_INSPECTED_BYTES / 1024} KB of local code, more than the gate reads`);
      return undefined;
    }
    return { text: result.text, vetted: result.file };
  };

  /** Could the command itself write `file` before running it? (Unknown command text: assume so.) */
  const mayBeCreated = (file: string): boolean => {
    if (options.command === undefined || (options.commandWrites ?? true) || options.otherRuns) return true;
    // A file the command writes (`echo … > conftest.py; pytest`), named or loaded implicitly.
    if (options.written?.has(file) || options.written?.has(canonicalIn(ctx, file))) return true;
    const name = path.basename(file).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const mentions = options.command.match(new RegExp(`(?<![\\w.-])${name}(?![\\w.-])`, "g"))?.length ?? 0;
    return mentions >= 2;
  };

  const show = (vetted: VettedFile, what: string, text: string) => {
    if (shown.some((s) => s.file.path === vetted.path)) return;
    if (text.length > MAX_SHOWN_CHARS)
      add("UNKNOWN", `${vetted.path} is longer than the dialog shows (${MAX_SHOWN_CHARS} characters)`);
    shown.push({ file: vetted, what, text: text.slice(0, MAX_SHOWN_CHARS) });
  };

  const credentialPath = (cwd: string) => (literal: string) => {
    const candidates = literal.startsWith("~")
      ? [path.join(ctx.home, literal.slice(1))]
      : path.isAbsolute(literal)
        ? [literal]
        : [path.resolve(cwd, literal), path.resolve(ctx.home, literal)];
    for (const candidate of candidates) {
      const rule = sensitiveRuleByName(candidate, ctx) ?? secretDirectoryRuleFor(candidate, ctx);
      if (rule) return rule.why;
    }
    return undefined;
  };

  /** A script in some language: read, shown, then scanned (its local imports queued). */
  const inspectScript = (file: string, language: ScriptLanguage | "shell", cwd: string, depth: number) => {
    const label = language === "shell" ? "shell script" : `${language} script`;
    const got = read(file, label);
    if (got) scanContent(file, got, language, cwd, depth);
  };

  const scanContent = (
    file: string,
    got: { text: string; vetted: VettedFile },
    language: ScriptLanguage | "shell",
    cwd: string,
    depth: number,
  ) => {
    show(got.vetted, language === "shell" ? "shell script" : `${language} script`, got.text);
    if (language === "shell") return classifyText(got.text, cwd, path.basename(file), depth);
    const findings = scanScriptText(got.text, language, credentialPath(path.dirname(file)));
    for (const finding of findings) {
      if (finding.cls === "UNKNOWN") opaque(`${path.basename(file)} ${finding.what}`);
      else add(finding.cls, `${path.basename(file)}: ${finding.what}`);
    }
    for (const spec of localImports(got.text, language)) {
      const target = resolveImport(file, spec, language);
      if (target && depth + 1 <= MAX_DEPTH)
        queue.push({ run: { kind: language, program: "import", paths: [target], cwd }, depth: depth + 1 });
    }
  };

  for (let head = 0; head < queue.length; head++) {
    const { run, depth } = queue[head] as Work;
    if (depth > MAX_DEPTH) {
      opaque("local code runs other local code too deeply to follow");
      continue;
    }
    switch (run.kind) {
      case "shell-script":
        for (const file of run.paths) inspectScript(file, "shell", run.cwd, depth);
        break;
      case "python":
      case "node":
      case "ruby":
      case "perl":
      case "php":
        for (const file of run.paths) {
          if (path.basename(file) === "pyproject.toml") inspectBuildConfig(file);
          else inspectScript(file, run.kind, run.cwd, depth);
        }
        break;
      case "executable":
        for (const file of run.paths) inspectExecutable(file, run.cwd, depth);
        break;
      case "git-config":
        for (const dir of run.paths) {
          // Once per folder: the commands git's config names may run git again (`!git log` aliases).
          if (configsRead.has(`${run.program}\0${dir}`)) continue;
          configsRead.add(`${run.program}\0${dir}`);
          const found = gitConfiguredCommands(dir, ctx, { network: run.program === "git (network)" });
          if ("unknown" in found) {
            opaque(`cannot tell what git's config runs: ${found.unknown}`);
            continue;
          }
          for (const { file, key, command } of found.commands)
            classifyText(command, dir, `git config ${key} (${file})`, depth);
        }
        break;
      case "git-hooks":
        for (const named of run.paths) {
          const found = gitHooksDir(path.dirname(named), ctx);
          if ("unknown" in found) opaque(`cannot tell which hooks git runs: ${found.unknown}`);
          else if ("dir" in found)
            inspectExecutable(path.join(found.dir, path.basename(named)), run.cwd, depth, true);
          // Outside any repository git refuses to run, hooks included.
        }
        break;
      case "interpreter":
        for (const file of run.paths) {
          const got = read(file, `${run.program} script`);
          if (got) show(got.vetted, `${run.program} script`, got.text);
        }
        opaque(`\`${run.program}\` runs a script in a language the gate does not scan`);
        break;
      case "makefile":
        inspectMakefile(run, depth);
        break;
      case "package-script":
        inspectPackageScripts(run, depth);
        break;
      case "task-runner":
        for (const file of run.paths) {
          const got = read(file, "task file");
          if (got) show(got.vetted, `${run.program} task file`, got.text);
        }
        opaque(`\`${run.program}\` runs recipes from a task file the gate does not parse`);
        break;
      case "test-runner": {
        // The runner finds its tests at run time: the gate finds them the same way (bounded).
        const discovered = discoverTests(run.program, run.cwd, run.paths, () => {});
        if ("unreadable" in discovered) {
          opaque(discovered.unreadable);
          break;
        }
        // A test file or conftest.py the same command writes first is not on disk yet: what it holds is unknown.
        const fresh = [...(options.written ?? [])].find(
          (file) =>
            !discovered.files.includes(file) && testRunnerLoads(run.program, run.cwd, run.paths, file),
        );
        if (fresh) {
          opaque(`\`${run.program}\` loads ${fresh}, which the same command writes first`);
          break;
        }
        if (options.commandWrites) {
          opaque(
            `the same command writes files the gate cannot name before \`${run.program}\` collects its tests`,
          );
          break;
        }
        for (const file of discovered.files) {
          const language = languageByName(file);
          if (language) inspectScript(file, language, run.cwd, depth);
        }
        break;
      }
    }
  }
  return { classes: [...classes], reasons, shown };

  /** A project's build backend may live in the project itself (`backend-path`): code the gate does not follow. */
  function inspectBuildConfig(file: string) {
    const got = read(file, "build configuration", true);
    if (got && /^\s*backend-path\s*=/m.test(got.text)) {
      show(got.vetted, "build configuration", got.text);
      opaque(
        `${file} names a build backend inside the project (backend-path), which the gate does not follow`,
      );
    }
  }

  function inspectExecutable(file: string, cwd: string, depth: number, hook = false) {
    const got = read(file, hook ? "git hook" : "program", hook);
    if (!got) return;
    const language = shebangLanguage(got.text);
    if (language === "unknown") {
      show(got.vetted, "script", got.text);
      return opaque(`${file} names an interpreter the gate does not scan`);
    }
    if (language === undefined && isBinary(got.text))
      return opaque(`runs ${file}, a compiled program, which the gate cannot read`);
    // No "#!": bash runs a text file as a shell script.
    scanContent(file, got, language ?? "shell", cwd, depth);
  }

  function inspectMakefile(run: LocalCodeRun, depth: number) {
    // make reads the first of GNUmakefile, makefile, Makefile that exists (or every -f file).
    const makefile = run.paths.find(isFile) ?? (run.paths.length === 1 ? run.paths[0] : undefined);
    if (!makefile) return; // no makefile: make fails without running anything
    const got = read(makefile, "Makefile");
    if (!got) return;
    const goals = run.targets ?? [];
    const recipes = makefileRecipes(got.text, goals);
    show(got.vetted, `Makefile recipes for ${goals.length ? goals.join(" ") : "the default goal"}`, got.text);
    const dir = path.dirname(makefile);
    for (const why of recipes.opaque) opaque(`${path.basename(makefile)}: ${why}`);
    if (recipes.tooLarge) return;
    for (const include of recipes.includes) {
      if (include.includes(MAKE_UNKNOWN)) opaque(`${path.basename(makefile)} includes a computed file`);
      else {
        const included = read(path.resolve(dir, include), "included makefile");
        if (included) {
          show(included.vetted, "included makefile", included.text);
          const scripts = makefileRecipes(included.text, []).scripts.map((r) => r.script);
          if (scripts.length) classifyText(scripts.join("\n"), run.cwd, include, depth);
        }
      }
    }
    // One classification for all of it (one parse; the classifier bounds the size): what make runs while
    // reading the file, then every recipe that would run, each after a comment naming its target.
    const text = [
      ...recipes.parseTime,
      ...recipes.scripts.map(({ target, script }) => `# ${target.replace(/\n/g, " ")}\n${script}`),
    ].join("\n");
    if (text) classifyText(text, run.cwd, path.basename(makefile), depth);
  }

  function inspectPackageScripts(run: LocalCodeRun, depth: number) {
    const manifest = run.paths[0];
    if (!manifest) return;
    const got = read(manifest, "package.json");
    if (!got) return;
    let scripts: Record<string, unknown>;
    try {
      const parsed = JSON.parse(got.text) as { scripts?: unknown };
      scripts =
        typeof parsed.scripts === "object" && parsed.scripts !== null
          ? (parsed.scripts as Record<string, unknown>)
          : {};
    } catch {
      return opaque(`${manifest} is not valid JSON, so the scripts that run cannot be read`);
    }
    const names = scriptNames(run.targets ?? []);
    const selected = names.filter((name) => typeof scripts[name] === "string");
    const text = selected.map((name) => `"${name}": ${JSON.stringify(scripts[name])}`).join("\n");
    show(got.vetted, `package.json scripts ${selected.join(", ") || "(none)"}`, text || "(no script runs)");
    const dir = path.dirname(manifest);
    for (const name of selected) classifyText(String(scripts[name]), dir, `package.json "${name}"`, depth);
    // `npm start` without a start script runs `node server.js`.
    if ((run.targets ?? []).includes("start") && scripts.start === undefined)
      queue.push({
        run: { kind: "node", program: "npm start", paths: [path.join(dir, "server.js")], cwd: dir },
        depth: depth + 1,
      });
  }
}

/** The scripts npm runs for a target: pre<t>, t, post<t>; an install runs the root package's lifecycle hooks. */
export function scriptNames(targets: readonly string[]): string[] {
  const names: string[] = [];
  for (const target of targets) {
    if (target === "install" || target === "ci")
      names.push(
        "preinstall",
        "install",
        "postinstall",
        "prepublish",
        "preprepare",
        "prepare",
        "postprepare",
      );
    else names.push(`pre${target}`, target, `post${target}`);
  }
  return [...new Set(names)];
}

/** A local import's file, if it is one beside the importing file (relative specifiers, sibling modules). */
function resolveImport(from: string, spec: string, language: ScriptLanguage): string | undefined {
  const dir = path.dirname(from);
  const candidates: string[] = [];
  if (language === "node") {
    const base = path.resolve(dir, spec);
    candidates.push(
      base,
      ...[".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx"].map((ext) => base + ext),
    );
    candidates.push(...["index.js", "index.ts", "index.mjs"].map((name) => path.join(base, name)));
    if (/\.js$/.test(spec)) candidates.push(base.replace(/\.js$/, ".ts")); // TypeScript's ".js" imports
  } else if (language === "python") {
    const relative = spec.replace(/^\.+/, "").replace(/\./g, "/");
    if (!relative) return undefined;
    candidates.push(path.join(dir, `${relative}.py`), path.join(dir, relative, "__init__.py"));
  } else if (language === "ruby") {
    candidates.push(path.resolve(dir, spec), path.resolve(dir, `${spec}.rb`));
  } else {
    candidates.push(path.resolve(dir, spec));
  }
  return candidates.find(isFile);
}

function isFile(file: string): boolean {
  try {
    return statSync(file, { throwIfNoEntry: false })?.isFile() === true;
  } catch {
    return false;
  }
}

function isBinary(text: string): boolean {
  return text.slice(0, 8192).includes("\u0000") || text.startsWith("\u007fELF");
}
