// The runtime's logger: LOG_LEVEL and LOG_FORMAT validated; JSON with ISO times by default; a readable form on
// a terminal or with LOG_FORMAT=pretty; secrets redacted in both.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, it } from "node:test";
import { logSettings } from "../../agent-runtime/log.ts";

const logModule = path.resolve(import.meta.dirname, "../../agent-runtime/log.ts");

/** Runs a child that logs one line with a token in it; returns its stderr. */
function logOnce(env: Record<string, string>): string {
  const code = `const { createLogger } = await import(${JSON.stringify(logModule)}); createLogger("t").info({ token: "s3cret-value", n: 1 }, "hello there");`;
  const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
    env: { PATH: process.env.PATH, ...env },
    encoding: "utf8",
  });
  assert.equal(child.status, 0, child.stderr);
  return child.stderr;
}

describe("log settings", () => {
  it("defaults to info, JSON off a terminal and pretty on one", () => {
    assert.deepEqual(logSettings({}, false), { level: "info", format: "json", problems: [] });
    assert.deepEqual(logSettings({}, true), { level: "info", format: "pretty", problems: [] });
    assert.deepEqual(logSettings({ LOG_FORMAT: "json" }, true).format, "json");
    assert.deepEqual(logSettings({ LOG_LEVEL: "DEBUG", LOG_FORMAT: "Pretty" }, false), {
      level: "debug",
      format: "pretty",
      problems: [],
    });
  });

  it("reports a bad LOG_LEVEL or LOG_FORMAT and keeps the default, never throws", () => {
    const settings = logSettings({ LOG_LEVEL: "verbose", LOG_FORMAT: "xml" }, false);
    assert.equal(settings.level, "info");
    assert.equal(settings.format, "json");
    assert.equal(settings.problems.length, 2);
    assert.match(settings.problems.join("\n"), /LOG_LEVEL must be one of .*debug/);
  });
});

describe("log output", () => {
  it("writes JSON with an ISO time, the secret redacted", () => {
    const line = JSON.parse(logOnce({}).trim()) as Record<string, unknown>;
    assert.match(String(line.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(line.msg, "hello there");
    assert.equal(line.token, "[redacted]");
  });

  it("LOG_FORMAT=pretty writes one readable line with an ISO time, the secret redacted", () => {
    const out = logOnce({ LOG_FORMAT: "pretty" });
    const lines = out.trim().split("\n");
    assert.equal(lines.length, 1, out);
    assert.match(
      lines[0] ?? "",
      /^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4}\] INFO \(t\): hello there/,
    );
    assert.doesNotMatch(out, /s3cret-value/);
    assert.doesNotMatch(out, /"pid"/);
  });

  it("a bad LOG_LEVEL is reported on the log and does not stop the process", () => {
    const out = logOnce({ LOG_LEVEL: "loud" });
    assert.match(out, /ignored a logging setting/);
    assert.match(out, /hello there/);
  });
});
