// What a test runner will run, found as the runner finds it: test files and the files every run loads
// (pytest's conftest.py, a jest/vitest/mocha config), by the runners' own naming conventions, in a bounded walk of
// the directory it runs in. The gate then reads them like any local code (write, then `pytest`). Runners whose
// code the gate cannot read (go, cargo, ctest) and trees it cannot list are reported as such, never as plain.
import { statSync } from "node:fs";
import path from "node:path";
import { readBounded } from "./bounded-read.ts";
import { listDirectory, MAX_WALK_ENTRIES } from "./disk-walk.ts";

export type TestDiscovery =
  | { files: string[] }
  /** The runner's code cannot be read, or its tests cannot all be listed: the reason. */
  | { unreadable: string };

interface RunnerFamily {
  /** Test files the runner collects when none are named. */
  tests: RegExp;
  /** Files every run loads, named or not (conftest.py, configs). */
  always: RegExp;
}

const PYTHON: RunnerFamily = {
  tests: /^(?:test_.*|.*_test)\.py$/,
  always: /^conftest\.py$/,
};
const NODE: RunnerFamily = {
  // jest/vitest/mocha/node --test/bun/deno conventions: *.test.*, *.spec.*, test.*, and any script in test(s)/,
  // __tests__/ or spec/ folders (matched on the path, below).
  tests: /(?:^|[./_-])(?:test|spec)s?\.[cm]?[jt]sx?$|^test\.[cm]?[jt]s$/,
  always: /^(?:jest|vitest|vite|playwright|cypress|ava|karma)\.config\.[cm]?[jt]s$|^\.mocharc\.[cm]?js$/,
};
const RUBY: RunnerFamily = { tests: /_spec\.rb$/, always: /^spec_helper\.rb$|^rails_helper\.rb$/ };
const PHP: RunnerFamily = { tests: /Test\.php$/, always: /^bootstrap\.php$/ };

const NODE_TEST_FOLDERS = /(?:^|\/)(?:tests?|__tests__|spec)\/.*\.[cm]?[jt]sx?$/;

/** Folders no runner collects from by default (dependencies, build output, virtualenvs) or that are hidden. */
const SKIPPED = new Set(["node_modules", "__pycache__", "venv", "dist", "build", "target", "coverage"]);

function familyOf(program: string): RunnerFamily | "compiled" | undefined {
  if (/pytest|py\.test|unittest|nose2|^(?:hatch|pdm|poetry|rye|uv) test/.test(program)) return PYTHON;
  if (/^(?:go|cargo|ctest|mvnw?|gradlew?|dotnet)\b/.test(program)) return "compiled";
  if (/rspec/.test(program)) return RUBY;
  if (/phpunit/.test(program)) return PHP;
  if (/jest|vitest|mocha|ava|tap|tape|jasmine|karma|playwright|cypress|node|bun|deno/.test(program))
    return NODE;
  return undefined;
}

/**
 * The files `program` (as the local-code run names it: `pytest`, `python3 -m unittest`, `node --test`, `go test`)
 * loads when run in `cwd`. `named` are the files given on its command line (then only the always-loaded ones are
 * added). `tick` counts work against the decision's budget.
 */
export function discoverTests(
  program: string,
  cwd: string,
  named: readonly string[],
  tick: () => void,
): TestDiscovery {
  const family = familyOf(program);
  if (family === "compiled")
    return { unreadable: `\`${program}\` builds and runs compiled code, which the gate cannot read` };
  if (!family) return { unreadable: `\`${program}\` finds its tests in ways the gate does not follow` };
  // Named folders are searched for tests like the working directory is when nothing is named.
  const namedFiles = named.filter((file) => !isDirectory(file));
  const roots = named.length === 0 ? [cwd] : named.filter((file) => isDirectory(file));
  const inRoot = (file: string) => roots.some((root) => file === root || file.startsWith(`${root}/`));
  if (family === PYTHON) {
    const plugins = pytestPlugins(cwd);
    if (plugins) return { unreadable: plugins };
  }
  const files: string[] = [];
  const queue = [cwd];
  let entries = 0;
  for (let dir = queue.shift(); dir !== undefined; dir = queue.shift()) {
    const listed = listDirectory(dir, MAX_WALK_ENTRIES - entries);
    if ("incomplete" in listed)
      return { unreadable: `the gate cannot list the tests \`${program}\` finds (${listed.incomplete})` };
    entries += listed.entries.length;
    for (const entry of listed.entries) {
      tick();
      if (entry.name.startsWith(".") && !family.always.test(entry.name)) continue;
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED.has(entry.name)) queue.push(file);
        continue;
      }
      const relative = path.relative(cwd, file);
      const collected =
        inRoot(file) &&
        (family.tests.test(entry.name) || (family === NODE && NODE_TEST_FOLDERS.test(relative)));
      if (family.always.test(entry.name) || collected) files.push(file);
    }
  }
  return { files: [...new Set([...namedFiles, ...files])] };
}

const PYTEST_CONFIGS = ["pytest.ini", ".pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"];

/** pytest loads plugins its config names (`-p name` in addopts, required_plugins, python_files widening what
 * counts as a test): modules the gate does not find by name. */
function pytestPlugins(cwd: string): string | undefined {
  for (const name of PYTEST_CONFIGS) {
    const file = path.join(cwd, name);
    // Non-blocking and bounded: a FIFO named pytest.ini must not hang Pi's main thread (issue 17 item 6).
    const read = readBounded(file, 256 * 1024);
    if (!read.ok) {
      if (read.reason === "missing") continue;
      return `${file} ${read.reason === "too_large" ? "is larger than the gate reads" : "is not a regular file the gate can read"}: pytest's configuration is unknown`;
    }
    const text = read.bytes.toString("utf8");
    if (/(?:^|[\s"'=])(?:-p\s*\S|--plugins?\b)|\bpython_files\b|\bpytest_plugins\b/m.test(text))
      return `${file} makes pytest load modules the gate does not find by name (-p, python_files)`;
  }
  return undefined;
}

/**
 * Would `program`, run in `cwd`, load `file` if it existed (a file the same command writes first)? Unknown
 * runners: yes.
 */
export function testRunnerLoads(
  program: string,
  cwd: string,
  named: readonly string[],
  file: string,
): boolean {
  const family = familyOf(program);
  if (family === undefined || family === "compiled") return true;
  const relative = path.relative(cwd, file);
  if (relative.startsWith("..") || path.isAbsolute(relative)) return false;
  const parts = relative.split("/");
  if (parts.slice(0, -1).some((part) => SKIPPED.has(part) || part.startsWith("."))) return false;
  const name = path.basename(file);
  if (family.always.test(name)) return true;
  const roots = named.length === 0 ? [cwd] : named.filter((n) => isDirectory(n) || !path.extname(n));
  const inRoot = roots.some((root) => file.startsWith(`${root}/`)) || named.includes(file);
  return inRoot && (family.tests.test(name) || (family === NODE && NODE_TEST_FOLDERS.test(relative)));
}

function isDirectory(file: string): boolean {
  try {
    return statSync(file).isDirectory();
  } catch {
    return false;
  }
}
