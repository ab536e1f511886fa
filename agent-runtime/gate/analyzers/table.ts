// Program name → analyzer. One family per module; every name is listed once: a family's builder refuses a name
// given twice (FamilyBuilder), and buildTable refuses a name two families claim. A name listed nowhere gets the
// explicit `unlistedProgram` (code the gate does not model).
import type { Analyzer } from "../shell-scan.ts";
import { unlistedProgram } from "./common.ts";
import { DEV_TOOL_ANALYZERS } from "./dev-tools.ts";
import { ENVIRONMENT_ANALYZERS } from "./environment.ts";
import { FILE_TOOL_ANALYZERS } from "./file-tools.ts";
import { GIT_ANALYZERS } from "./git.ts";
import { INTERPRETER_ANALYZERS } from "./interpreters.ts";
import { NETWORK_ANALYZERS } from "./network.ts";
import { PUBLISHER_ANALYZERS } from "./publishers.ts";
import { RUNNER_ANALYZERS } from "./runners.ts";
import { SERVER_ANALYZERS } from "./servers.ts";
import { WRAPPER_ANALYZERS } from "./wrappers.ts";

export const ANALYZER_FAMILIES: Readonly<Record<string, Readonly<Record<string, Analyzer>>>> = {
  wrappers: WRAPPER_ANALYZERS,
  interpreters: INTERPRETER_ANALYZERS,
  git: GIT_ANALYZERS,
  network: NETWORK_ANALYZERS,
  publishers: PUBLISHER_ANALYZERS,
  runners: RUNNER_ANALYZERS,
  "file-tools": FILE_TOOL_ANALYZERS,
  servers: SERVER_ANALYZERS,
  environment: ENVIRONMENT_ANALYZERS,
  "dev-tools": DEV_TOOL_ANALYZERS,
};

/** The one table: every family's rows; a program name two families claim is refused at load. */
export function buildTable(
  families: Readonly<Record<string, Readonly<Record<string, Analyzer>>>>,
): ReadonlyMap<string, Analyzer> {
  const table = new Map<string, Analyzer>();
  const owner = new Map<string, string>();
  for (const [family, rows] of Object.entries(families)) {
    for (const [name, analyzer] of Object.entries(rows)) {
      const other = owner.get(name);
      if (other !== undefined)
        throw new Error(`\`${name}\` is listed by two analyzer families (${other} and ${family})`);
      owner.set(name, family);
      table.set(name, analyzer);
    }
  }
  return table;
}

const TABLE = buildTable(ANALYZER_FAMILIES);

/** Versioned names (`python3.12`, `node22`, `pip3.11`, `perl5.36`) fall back to their family's name. */
const VERSIONED =
  /^(python|pypy|pip|node|nodejs|perl|ruby|php|lua|luajit|gawk|tclsh|wish|bash|zsh|ksh|pydoc|pytest|Rscript|julia|gcc|g\+\+|clang|go)[0-9][0-9.]*$/;

/** The dynamic loader run as a program (`/lib64/ld-linux-x86-64.so.2 /usr/bin/curl …`) runs its argument. */
const LOADER = /^(ld|ld-linux(-[\w-]+)?|ld64|ld-musl-[\w-]+)\.so(\.\d+)*$/;
const loader: Analyzer = (call, scan) => {
  const args = call.args;
  let i = 0;
  for (; i < args.length; i++) {
    const text = args[i]?.text ?? "";
    if (text === "--preload" || text === "--audit")
      return scan.findings.opaque(`\`${call.name} ${text}\` loads a library into the program`);
    if (
      [
        "--library-path",
        "--argv0",
        "--inhibit-rpath",
        "--glibc-hwcaps-prepend",
        "--glibc-hwcaps-mask",
      ].includes(text)
    )
      i++;
    else if (!text.startsWith("--")) break;
  }
  if (args.some((a) => a.text === "--list" || a.text === "--verify")) return scan.findings.reads();
  if (i < args.length) scan.command(args.slice(i));
};

export function analyzerFor(name: string): Analyzer {
  const direct = TABLE.get(name);
  if (direct) return direct;
  if (LOADER.test(name)) return loader;
  const versioned = VERSIONED.exec(name);
  if (versioned?.[1]) return TABLE.get(versioned[1]) ?? unlistedProgram;
  return unlistedProgram;
}

/** True when `name` has an entry of its own (for tests and `explain`). */
export function isListedProgram(name: string): boolean {
  return TABLE.has(name) || VERSIONED.test(name) || LOADER.test(name);
}
