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
import { Findings, type LocalCodeRun, type UnmodeledCause } from "./effects.ts";
import { gitConfiguredCommands, gitHooksDir } from "./git-hooks.ts";
import { MAKE_UNKNOWN, makefileRecipes } from "./makefile-recipes.ts";
import { canonicalIn, isWithin, type PathContext } from "./path-context.ts";
import {
  languageByName,
  type ScriptLanguage,
  scanScript,
  shebangArguments,
  shebangLanguage,
} from "./script-scan.ts";
import { secretDirectoryRuleFor, sensitiveRuleByName, sensitiveRuleFor } from "./sensitive-paths.ts";
import type { Budget } from "./shell-limits.ts";
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
  findings: Findings;
  shown: ShownScript[];
}

/** The shell classifier, as the inspection needs it: classify a script's text as if run in `ctx.cwd`. */
export type ClassifyShell = (script: string, parser: Parser, ctx: PathContext) => Findings;

interface Work {
  run: LocalCodeRun;
  depth: number;
  /** The findings whose writes and runs precede this run (the command's, or the script that runs it). */
  scope: Findings;
  /** The command's own run this one descends from (itself at the top). */
  root: LocalCodeRun;
}

/**
 * Inspects the local code a command runs (`command.localCode`). A file the command itself may change before the
 * run (a write, a copy, an extraction, a checkout, or other local code run earlier: `command.mayHaveWritten`) is
 * not what the gate would read now: it is unmodeled, whether it exists or not. A missing file nothing writes runs
 * nothing (the run fails, or git skips a hook that does not exist).
 */
export function inspectLocalCode(
  command: Findings,
  ctx: PathContext,
  parser: Parser,
  classify: ClassifyShell,
  options: { command?: string; budget?: Budget } = {},
): LocalCodeVerdict {
  const findings = new Findings();
  const shown: ShownScript[] = [];
  const seen = new Set<string>();
  let bytes = 0;
  /**
   * What each top-level run may write, once inspected: its shell findings (their written files), or "any" (code
   * that may write anything: another language that writes files, a binary, something unmodeled). Runs not yet
   * inspected may write anything too.
   */
  const writesOf = new Map<LocalCodeRun, Findings[] | "any">();
  let current: LocalCodeRun | undefined;
  const mayWriteAnything = () => {
    if (current) writesOf.set(current, "any");
  };
  const unmodeled = (cause: UnmodeledCause, why: string, subject?: string) => {
    findings.unmodeled(cause, why, subject);
    mayWriteAnything();
  };
  const queue: Work[] = command.localCode.map((run) => ({ run, depth: 0, scope: command, root: run }));
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
  const classifyText = (script: string, cwd: string, where: string, work: Work, step: number) => {
    const { depth, root } = work;
    classified += script.length;
    if (classified > MAX_CLASSIFIED_CHARS)
      return unmodeled(
        "construct",
        `${where}: more shell code than the gate reads in one decision (${MAX_CLASSIFIED_CHARS / 1024} KB)`,
      );
    const nested = classify(script, parser, atCwd(cwd));
    findings.merge(nested, where);
    if (current) {
      const before = writesOf.get(current) ?? [];
      if (nested.localCode.length > 0 || nested.has("runs-unmodeled")) writesOf.set(current, "any");
      else if (before !== "any") writesOf.set(current, [...before, nested]);
    }
    for (const run of nested.localCode) {
      // A nested run happens when its script runs: after what preceded that script in the command.
      queue.push({
        run: { ...run, step: Math.max(step, run.step ?? 0) },
        depth: depth + 1,
        scope: nested,
        root,
      });
    }
  };

  /**
   * Could the command have changed `file` before this run? Its own writes and unnamed tree writes, or another
   * local run before it (any code may write any file) count.
   */
  const changedBefore = (file: string, work: Work): boolean => {
    const step = work.run.step ?? Number.POSITIVE_INFINITY;
    const canonical = canonicalIn(ctx, file);
    if (work.scope.mayHaveWritten(canonical, step) || work.scope.mayHaveWritten(file, step)) return true;
    if (work.scope !== command && command.mayHaveWritten(canonical, work.run.step ?? 0)) return true;
    return command.localCode.some((other) => {
      if (
        other === work.run ||
        other === work.root ||
        other.kind === "git-config" ||
        (other.step ?? 0) >= step
      )
        return false;
      const writes = writesOf.get(other) ?? "any";
      if (writes === "any") return !other.optional || other.paths.some(isFile);
      return writes.some((w) => w.writesUnknown || w.mayHaveWritten(canonical, Number.POSITIVE_INFINITY));
    });
  };

  /** Reads one file for vetting (bounded); undefined when it cannot be inspected (the reason is recorded). */
  /** `onlyIfPresent`: a file that runs only when it exists (a git hook): missing means nothing runs. */
  const read = (
    file: string,
    what: string,
    work: Work,
    onlyIfPresent = false,
  ): { text: string; vetted: VettedFile } | undefined => {
    const canonical = canonicalIn(ctx, file);
    const secret = sensitiveRuleFor(canonical, ctx);
    if (secret) {
      findings.readsSecret(`runs ${what} ${file}, which is ${secret.why}`, file);
      return undefined;
    }
    if (!isWithin(canonical, ctx.cwd)) {
      unmodeled("program", `runs ${what} ${file}, outside the workspace, which the gate does not read`, file);
      return undefined;
    }
    // Read once; but a later run of a file an earlier step may have changed is not what was read.
    if (seen.has(file)) {
      if (changedBefore(file, work))
        unmodeled(
          "changed-before-run",
          `runs ${what} ${file}, which this same command may change before it runs`,
          file,
        );
      return undefined;
    }
    if (seen.size >= MAX_INSPECTED_FILES) {
      unmodeled("construct", `runs more than ${MAX_INSPECTED_FILES} local files, more than the gate reads`);
      return undefined;
    }
    seen.add(file);
    const result = readForVetting(file);
    if (!result.ok && result.reason === "missing" && onlyIfPresent) {
      // git runs only hooks that exist; a command that writes one is already an exit (laterExecReasonFor).
      seen.delete(file);
      return undefined;
    }
    const changed =
      changedBefore(file, work) || (!result.ok && result.reason === "missing" && mentionedTwice(file));
    if (changed) {
      unmodeled(
        "changed-before-run",
        `runs ${what} ${file}, which this same command may change before it runs: the gate cannot show what will run`,
        file,
      );
      return undefined;
    }
    if (!result.ok && result.reason === "missing") {
      // Nothing is there, and the command does not write it first: the run fails, or (a git hook) is skipped.
      seen.delete(file);
      if (current && !writesOf.has(current)) writesOf.set(current, []);
      return undefined;
    }
    if (!result.ok) {
      const why = {
        missing: "does not exist",
        not_a_file: "is not a regular file",
        too_large: "is larger than 256 KB",
        unreadable: "cannot be read",
      }[result.reason];
      unmodeled("program", `runs ${what} ${file}, which ${why}, so the gate cannot show what runs`, file);
      return undefined;
    }
    bytes += result.file.bytes;
    if (bytes > MAX_INSPECTED_BYTES) {
      unmodeled(
        "construct",
        `runs more than ${MAX_INSPECTED_BYTES / 1024} KB of local code, more than the gate reads`,
      );
      return undefined;
    }
    return { text: result.text, vetted: result.file };
  };

  /** A file the command text names twice (`… > x.py; python3 x.py`): written by something the gate cannot follow. */
  const mentionedTwice = (file: string): boolean => {
    if (options.command === undefined) return true;
    const name = path.basename(file).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const mentions = options.command.match(new RegExp(`(?<![\\w.-])${name}(?![\\w.-])`, "g"))?.length ?? 0;
    return mentions >= 2;
  };

  const show = (vetted: VettedFile, what: string, text: string) => {
    if (shown.some((s) => s.file.path === vetted.path)) return;
    if (text.length > MAX_SHOWN_CHARS)
      unmodeled(
        "construct",
        `${vetted.path} is longer than the dialog shows (${MAX_SHOWN_CHARS} characters)`,
      );
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
  const inspectScript = (file: string, language: ScriptLanguage | "shell", work: Work) => {
    const label = language === "shell" ? "shell script" : `${language} script`;
    const got = read(file, label, work);
    if (got) scanContent(file, got, language, work);
  };

  const scanContent = (
    file: string,
    got: { text: string; vetted: VettedFile },
    language: ScriptLanguage | "shell",
    work: Work,
  ) => {
    const { run, depth } = work;
    show(got.vetted, language === "shell" ? "shell script" : `${language} script`, got.text);
    const step = run.step ?? Number.POSITIVE_INFINITY;
    if (language === "shell") return classifyText(got.text, run.cwd, path.basename(file), work, step);
    // Bytecode, a zip application, a native module: what runs is not the text the scans read.
    if (isBinary(got.text) || got.text.startsWith("PK\u0003\u0004"))
      return unmodeled(
        "program",
        `${path.basename(file)} is compiled or packed code, which the gate cannot read`,
        file,
      );
    const scanned = scanScript(got.text, language, {
      file,
      isCredentialPath: credentialPath(path.dirname(file)),
    });
    if (scanned.writesFiles || scanned.localFiles.length > 0) mayWriteAnything();
    else if (current && !writesOf.has(current)) writesOf.set(current, []);
    for (const finding of scanned.findings) {
      const why = `${path.basename(file)}: ${finding.what}`;
      if (finding.kind === "sends") findings.sends(why, file);
      else if (finding.kind === "reads-secret") findings.readsSecret(why, file);
      else unmodeled(finding.cause, why, file);
    }
    for (const target of scanned.localFiles) {
      if (depth + 1 <= MAX_DEPTH)
        queue.push({
          run: { kind: language, program: "import", paths: [target], cwd: run.cwd, step },
          depth: depth + 1,
          scope: work.scope,
          root: work.root,
        });
    }
  };

  for (let head = 0; head < queue.length; head++) {
    const work = queue[head] as Work;
    const { run, depth } = work;
    options.budget?.tick();
    // Only a top-level run's own inspection says what it writes; its nested runs make it "any".
    current = depth === 0 ? run : undefined;
    if (depth > MAX_DEPTH) {
      unmodeled("construct", "local code runs other local code too deeply to follow");
      continue;
    }
    const step = run.step ?? Number.POSITIVE_INFINITY;
    switch (run.kind) {
      case "shell-script":
        for (const file of run.paths) inspectScript(file, "shell", work);
        break;
      case "python":
      case "node":
      case "ruby":
      case "perl":
      case "php":
        for (const file of run.paths) {
          if (path.basename(file) === "pyproject.toml") inspectBuildConfig(file, work);
          else inspectScript(file, run.kind, work);
        }
        break;
      case "executable":
        for (const file of run.paths) inspectExecutable(file, work);
        break;
      case "git-config":
        for (const dir of run.paths) {
          // Once per folder: the commands git's config names may run git again (`!git log` aliases).
          if (configsRead.has(`${run.program}\0${dir}`)) continue;
          configsRead.add(`${run.program}\0${dir}`);
          const found = gitConfiguredCommands(dir, ctx, {
            network: run.program === "git (network)",
            urls: run.targets ?? [],
          });
          if ("unknown" in found) {
            unmodeled("config", `cannot tell what git's config runs: ${found.unknown}`);
            continue;
          }
          for (const { file, key, command: text } of found.commands)
            classifyText(text, dir, `git config ${key} (${file})`, work, step);
        }
        break;
      case "git-hooks":
        for (const named of run.paths) {
          const found = gitHooksDir(path.dirname(named), ctx);
          if ("unknown" in found) unmodeled("config", `cannot tell which hooks git runs: ${found.unknown}`);
          else if ("dir" in found) inspectExecutable(path.join(found.dir, path.basename(named)), work, true);
          // Outside any repository git refuses to run, hooks included.
        }
        break;
      case "interpreter":
        for (const file of run.paths) {
          const got = read(file, `${run.program} script`, work);
          if (got) show(got.vetted, `${run.program} script`, got.text);
        }
        unmodeled("language", `\`${run.program}\` runs a script in a language the gate does not model`);
        break;
      case "makefile":
        inspectMakefile(work);
        break;
      case "package-script":
        inspectPackageScripts(work);
        break;
      case "task-runner":
        for (const file of run.paths) {
          const got = read(file, "task file", work);
          if (got) show(got.vetted, `${run.program} task file`, got.text);
        }
        unmodeled("language", `\`${run.program}\` runs recipes from a task file the gate does not parse`);
        break;
      case "test-runner": {
        // The runner finds its tests at run time: the gate finds them the same way (bounded).
        const discovered = discoverTests(run.program, run.cwd, run.paths, () => options.budget?.tick());
        if ("unreadable" in discovered) {
          unmodeled("language", discovered.unreadable);
          break;
        }
        // A test file or conftest.py the same command writes first is not on disk yet: what it holds is unknown.
        const fresh = [...work.scope.written.entries()].find(
          ([file, at]) =>
            at < step &&
            !discovered.files.includes(file) &&
            testRunnerLoads(run.program, run.cwd, run.paths, file),
        );
        if (fresh) {
          unmodeled(
            "changed-before-run",
            `\`${run.program}\` loads ${fresh[0]}, which the same command writes first`,
          );
          break;
        }
        if (work.scope.writesUnknownAt !== undefined && work.scope.writesUnknownAt < step) {
          unmodeled(
            "changed-before-run",
            `the same command writes files the gate cannot name before \`${run.program}\` collects its tests`,
          );
          break;
        }
        for (const file of discovered.files) {
          const language = languageByName(file);
          if (language) inspectScript(file, language, work);
        }
        break;
      }
    }
  }
  return { findings, shown };

  /** A project's build backend may live in the project itself (`backend-path`): code the gate does not follow. */
  function inspectBuildConfig(file: string, work: Work) {
    const got = read(file, "build configuration", work, true);
    if (got && /^\s*backend-path\s*=/m.test(got.text)) {
      show(got.vetted, "build configuration", got.text);
      unmodeled(
        "config",
        `${file} names a build backend inside the project (backend-path), which the gate does not follow`,
      );
    }
  }

  function inspectExecutable(file: string, work: Work, hook = false) {
    const got = read(file, hook ? "git hook" : "program", work, hook);
    if (!got) return;
    const language = shebangLanguage(got.text);
    if (language === "unknown") {
      show(got.vetted, "script", got.text);
      return unmodeled("language", `${file} names an interpreter the gate does not model`, file);
    }
    if (language === undefined && isBinary(got.text))
      return unmodeled("program", `runs ${file}, a compiled program, which the gate cannot read`, file);
    const shebang = shebangArguments(got.text);
    if (shebang) unmodeled("language", `${file}: its #! line passes ${shebang} to the interpreter`, file);
    // No "#!": bash runs a text file as a shell script.
    scanContent(file, got, language ?? "shell", work);
  }

  function inspectMakefile(work: Work) {
    const { run } = work;
    // make reads the first of GNUmakefile, makefile, Makefile that exists (or every -f file).
    const makefile = run.paths.find(isFile) ?? (run.paths.length === 1 ? run.paths[0] : undefined);
    if (!makefile) return; // no makefile: make fails without running anything
    const got = read(makefile, "Makefile", work);
    if (!got) return;
    const goals = run.targets ?? [];
    const recipes = makefileRecipes(got.text, goals);
    show(got.vetted, `Makefile recipes for ${goals.length ? goals.join(" ") : "the default goal"}`, got.text);
    const dir = path.dirname(makefile);
    const step = run.step ?? Number.POSITIVE_INFINITY;
    for (const why of recipes.opaque) unmodeled("construct", `${path.basename(makefile)}: ${why}`);
    if (recipes.tooLarge) return;
    for (const include of recipes.includes) {
      if (include.includes(MAKE_UNKNOWN))
        unmodeled("computed", `${path.basename(makefile)} includes a computed file`);
      else {
        const included = read(path.resolve(dir, include), "included makefile", work);
        if (included) {
          show(included.vetted, "included makefile", included.text);
          const scripts = makefileRecipes(included.text, []).scripts.map((r) => r.script);
          if (scripts.length) classifyText(scripts.join("\n"), run.cwd, include, work, step);
        }
      }
    }
    // One classification for all of it (one parse; the classifier bounds the size): what make runs while
    // reading the file, then every recipe that would run, each after a comment naming its target.
    const text = [
      ...recipes.parseTime,
      ...recipes.scripts.map(({ target, script }) => `# ${target.replace(/\n/g, " ")}\n${script}`),
    ].join("\n");
    if (text) classifyText(text, run.cwd, path.basename(makefile), work, step);
  }

  function inspectPackageScripts(work: Work) {
    const { run, depth } = work;
    const manifest = run.paths[0];
    if (!manifest) return;
    const got = read(manifest, "package.json", work);
    if (!got) return;
    let scripts: Record<string, unknown>;
    try {
      const parsed = JSON.parse(got.text) as { scripts?: unknown };
      scripts =
        typeof parsed.scripts === "object" && parsed.scripts !== null
          ? (parsed.scripts as Record<string, unknown>)
          : {};
    } catch {
      return unmodeled("construct", `${manifest} is not valid JSON, so the scripts that run cannot be read`);
    }
    const names = scriptNames(run.targets ?? []);
    const selected = names.filter((name) => typeof scripts[name] === "string");
    const text = selected.map((name) => `"${name}": ${JSON.stringify(scripts[name])}`).join("\n");
    show(got.vetted, `package.json scripts ${selected.join(", ") || "(none)"}`, text || "(no script runs)");
    const dir = path.dirname(manifest);
    const step = run.step ?? Number.POSITIVE_INFINITY;
    for (const name of selected)
      classifyText(String(scripts[name]), dir, `package.json "${name}"`, work, step);
    // `npm start` without a start script runs `node server.js`.
    if ((run.targets ?? []).includes("start") && scripts.start === undefined)
      queue.push({
        run: { kind: "node", program: "npm start", paths: [path.join(dir, "server.js")], cwd: dir, step },
        depth: depth + 1,
        scope: work.scope,
        root: work.root,
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
