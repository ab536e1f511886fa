// A node:test reporter for failures only, on stderr beside node-test-reporter: node-test-reporter prints that a
// test failed but not always why (an assertion's own message, the error a `before` hook threw, the cause of
// "failed running before hook"). This prints, once per failed test or hook, its name, file and line, and the
// error's message, cause and the first lines of its stack, bounded, so a CI log always says why.
const MAX_CHARS = 4000;
const STACK_LINES = 8;

function describe(error, depth = 0) {
  if (error === null || error === undefined || depth > 3) return "";
  if (typeof error !== "object") return String(error);
  const lines = [];
  const head = `${error.name ?? "Error"}: ${error.message ?? ""}`.trim();
  lines.push(head);
  if (typeof error.stack === "string") {
    const frames = error.stack.split("\n").filter((l) => /^\s+at /.test(l));
    lines.push(...frames.slice(0, STACK_LINES));
  }
  // node:test wraps what the test threw: the interesting part is usually the cause.
  if (error.cause !== undefined && error.cause !== error)
    lines.push(`cause: ${describe(error.cause, depth + 1)}`);
  return lines.join("\n");
}

export default async function* failuresOnly(source) {
  for await (const event of source) {
    if (event.type !== "test:fail") continue;
    const { name, file, line, details } = event.data;
    // A subtest cancelled because its parent's hook failed says nothing new: the parent's failure has it.
    if (details?.error?.failureType === "cancelledByParent") continue;
    const where = file ? ` (${file}${line ? `:${line}` : ""})` : "";
    const text = `\n✖ ${name}${where}\n${describe(details?.error)}\n`;
    yield text.length > MAX_CHARS ? `${text.slice(0, MAX_CHARS)}\n… (cut)\n` : text;
  }
}
