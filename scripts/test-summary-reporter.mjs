// A node:test reporter that prints only the runner's own closing summary (`ℹ tests N`, `ℹ pass N`, `ℹ fail N`…),
// exactly as the built-in spec reporter prints it. `npm test` sends it to stdout, where CI reads the totals,
// and the human-facing output (node-test-reporter) to stderr. The runner emits those totals as diagnostics
// that belong to no test file; every per-file diagnostic carries its file.
//
// stdout belongs to this reporter: node-test-reporter prints its "tests seem to hang" error list with
// console.log, past its own destination. Reporters run in the runner's process (test files run in their own,
// their output arrives as events), so console output there is routed to stderr.
for (const method of ["log", "info"]) {
  console[method] = (...args) => console.error(...args);
}

export default async function* summaryOnly(source) {
  for await (const event of source) {
    if (event.type === "test:diagnostic" && event.data.file === undefined && event.data.nesting === 0) {
      yield `ℹ ${event.data.message}\n`;
    }
  }
}
