// GitHub workflows and Dependabot config: schema-valid (@action-validator/cli) and saying what the issue asks.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { findTokens } from "../image/support/credential-scan.ts";
import { tempDir } from "../support/workspace.ts";

const root = path.resolve(import.meta.dirname, "../..");
const workflowsDir = path.join(root, ".github", "workflows");
const validator = path.join(root, "node_modules", ".bin", "action-validator");

function validate(file: string) {
  return spawnSync(validator, [file], { encoding: "utf8" });
}

const read = (relative: string) => readFileSync(path.join(root, relative), "utf8");

describe("GitHub workflows", () => {
  it("ci.yml and image.yml exist and pass the workflow schema", () => {
    const files = readdirSync(workflowsDir).filter((name) => /\.ya?ml$/.test(name));
    assert.deepEqual(files.sort(), ["ci.yml", "image.yml"]);
    for (const name of files) {
      const result = validate(path.join(workflowsDir, name));
      assert.equal(result.status, 0, `${name}:\n${result.stdout}${result.stderr}`);
    }
  });

  it("the validator rejects a broken workflow (so the check above can fail)", async (t) => {
    const dir = await tempDir(t, "workflow-");
    const broken = path.join(dir, "broken.yml");
    writeFileSync(
      broken,
      "name: broken\non: push\njobs:\n  test:\n    steps:\n      - run: [not, a, string]\n",
    );
    const result = validate(broken);
    assert.notEqual(result.status, 0, "a workflow without runs-on and with a list as run must fail");
  });

  it("ci.yml runs the README's test command on Node 22", () => {
    const ci = read(".github/workflows/ci.yml");
    assert.match(ci, /node-version: 22\b/);
    assert.match(ci, /- run: npm ci\n\s+- run: npm test\n/);
  });

  it("image.yml runs the image tests on the official base, builds, and pushes only on tags with secrets", () => {
    const image = read(".github/workflows/image.yml");
    assert.match(image, /IMAGE_TEST_BASE: node:22-bookworm-slim/);
    assert.match(image, /run: npm run test:image/);
    assert.match(image, /docker build --network host/);
    assert.match(image, /if: startsWith\(github\.ref, 'refs\/tags\/v'\)/);
    assert.match(image, /--password-stdin/);
    assert.doesNotMatch(image, /--build-arg/, "nothing, secret or not, is passed into the build");
    for (const line of image.split("\n").filter((l) => /REGISTRY|TOKEN|USERNAME|REPOSITORY/.test(l))) {
      if (/^\s+[A-Z_]+: /.test(line)) assert.match(line, /\$\{\{ secrets\.[A-Z_]+ \}\}/, line);
    }
  });

  it("Dependabot updates actions and npm, never Pi", () => {
    const dependabot = read(".github/dependabot.yml");
    assert.match(dependabot, /^version: 2$/m);
    assert.match(dependabot, /package-ecosystem: github-actions/);
    assert.match(dependabot, /package-ecosystem: npm/);
    assert.match(dependabot, /- dependency-name: "@earendil-works\/\*"\n/);
  });

  it("no file under .github holds a token-like string", () => {
    for (const file of [
      ".github/dependabot.yml",
      ".github/workflows/ci.yml",
      ".github/workflows/image.yml",
    ]) {
      assert.deepEqual(findTokens(read(file)), [], file);
    }
  });
});
