// A Scan that records what an analyzer asks of the classifier, so each analyzer is tested on its own (no parser,
// no file system): which nested commands and scripts it hands back, which paths it checks and how.
import path from "node:path";
import { Findings, type LocalCodeKind } from "../../agent-runtime/gate/effects.ts";
import type {
  Analyzer,
  ContentRequest,
  NestedCommand,
  PathAccess,
  ProgramCall,
  Scan,
} from "../../agent-runtime/gate/shell-scan.ts";
import { DYNAMIC, type ShellWord, syntheticWord } from "../../agent-runtime/gate/shell-words.ts";

export interface Recorded {
  findings: Findings;
  commands: Array<{
    words: string[];
    cwd?: string;
    stdinIsData?: boolean;
    environmentCleared?: boolean;
    unset?: string[];
  }>;
  scripts: Array<{ text: string | undefined; literal: boolean | undefined; what: string }>;
  assignments: Array<{ name: string; value: string | undefined }>;
  paths: Array<{ path: string; access: PathAccess }>;
  recursiveReads: Array<{ path: string; hidden: boolean; excludes?: string[] }>;
  treeWrites: Array<string | undefined>;
  treeCopies: Array<{ from: string; to: string }>;
  localCode: Array<{
    kind: LocalCodeKind;
    program: string;
    files: string[];
    targets?: string[];
    optional: boolean;
  }>;
  chdirs: Array<string | undefined>;
  forgotten: string[];
  repositoryReads: Array<{ request: ContentRequest; pathspecs: string[] }>;
  checkouts: Array<{ revisions: string[]; pathspecs: string[] }>;
}

export const HOME = "/home/agent";
export const CWD = "/work/project";

export function recordingScan(): { scan: Scan; record: Recorded } {
  const record: Recorded = {
    findings: new Findings(),
    commands: [],
    scripts: [],
    assignments: [],
    paths: [],
    recursiveReads: [],
    treeWrites: [],
    treeCopies: [],
    localCode: [],
    chdirs: [],
    forgotten: [],
    repositoryReads: [],
    checkouts: [],
  };
  const shown = (word: ShellWord) => word.text.replaceAll(DYNAMIC, "…");
  const scan: Scan = {
    findings: record.findings,
    home: HOME,
    cwd: CWD,
    command(words: readonly ShellWord[], options: NestedCommand = {}) {
      record.commands.push({
        words: words.map(shown),
        ...(options.cwd ? { cwd: shown(options.cwd) } : {}),
        ...(options.stdinIsData !== undefined ? { stdinIsData: options.stdinIsData } : {}),
        ...(options.environment?.cleared ? { environmentCleared: true } : {}),
        ...(options.environment?.unset?.length ? { unset: options.environment.unset.map(shown) } : {}),
      });
    },
    script(word, what) {
      record.scripts.push({ text: word ? shown(word) : undefined, literal: word?.literal, what });
    },
    assignment(name, value) {
      record.assignments.push({ name, value: value ? shown(value) : undefined });
    },
    path(word, access) {
      for (const form of word.forms) record.paths.push({ path: form.replaceAll(DYNAMIC, "…"), access });
    },
    recursiveRead(word, _program, options) {
      record.recursiveReads.push({
        path: shown(word),
        hidden: options?.hidden ?? true,
        ...(options?.excludes ? { excludes: options.excludes.globs.map(shown) } : {}),
      });
    },
    treeWrite(dir) {
      record.treeWrites.push(dir ? shown(dir) : undefined);
    },
    treeCopy(source, destination) {
      record.treeCopies.push({ from: shown(source), to: shown(destination) });
    },
    localCode(kind, program, files, targets, options) {
      record.localCode.push({
        kind,
        program,
        files: files.map(shown),
        ...(targets ? { targets: [...targets] } : {}),
        optional: options?.optional ?? false,
      });
    },
    chdir(word) {
      record.chdirs.push(word ? shown(word) : undefined);
    },
    forget(variable) {
      record.forgotten.push(variable);
    },

    exists() {
      return false;
    },
    config() {
      return undefined;
    },
    extractArchive(archive, into) {
      record.treeWrites.push(into ? shown(into) : undefined);
      if (archive) record.paths.push({ path: shown(archive), access: "read" });
    },
    printArchive(archive) {
      if (archive) record.paths.push({ path: shown(archive), access: "read" });
    },
    applyPatch(_patch, into) {
      record.treeWrites.push(into ? shown(into) : undefined);
    },
    repositoryRead(request, pathspecs) {
      record.repositoryReads.push({ request, pathspecs: pathspecs.map(shown) });
    },
    repositoryCheckout(revisions, pathspecs) {
      record.checkouts.push({ revisions: revisions.map(shown), pathspecs: pathspecs.map(shown) });
    },
    resolve(word) {
      return word.literal ? path.resolve(CWD, word.text.replace(/^~(?=\/|$)/, HOME)) : undefined;
    },
  };
  return { scan, record };
}

/** A literal word, or with `…` marking parts computed at run time (a non-literal word). */
export function word(text: string): ShellWord {
  if (!text.includes("…")) return syntheticWord(text);
  const value = text.replaceAll("…", DYNAMIC);
  return { text: value, forms: [value], literal: false, source: text };
}

/** Runs one analyzer on `name args…` (each arg a word as above). */
export function runAnalyzer(
  analyzer: Analyzer,
  name: string,
  args: readonly string[],
  options: { stdinIsData?: boolean } = {},
): Recorded {
  const { scan, record } = recordingScan();
  const call: ProgramCall = {
    name,
    invokedAs: name,
    args: args.map(word),
    stdinIsData: options.stdinIsData ?? false,
  };
  analyzer(call, scan);
  return record;
}
