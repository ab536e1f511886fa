// The secret filter (issue 19, point 4): credential values from the credential files in the workspace and HOME and
// from credential-named variables are withheld from tool results, as printed and in common encodings (base64 at
// every alignment, URL-safe base64, hex in either case, URL encoding), with a note naming the source and never the
// value; the snapshot follows changes; everything else passes untouched.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import fc from "fast-check";
import { SecretFilter, withholdSecrets } from "../../agent-runtime/gate/result-filter.ts";
import { encodings, redact, SecretMatcher } from "../../agent-runtime/gate/secret-matcher.ts";
import { SecretSnapshot, valuesInFile } from "../../agent-runtime/gate/secret-values.ts";
import { fakeHex, fakeToken } from "../support/fake-secrets.ts";
import { tempDir } from "../support/workspace.ts";

const SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY9";

test("every encoding of a value is found, at any offset, inside other text", () => {
  const matcher = new SecretMatcher([{ value: SECRET, source: "~/.aws/credentials" }]);
  const forms = [
    SECRET,
    SECRET.toUpperCase(),
    Buffer.from(SECRET).toString("hex"),
    Buffer.from(SECRET).toString("hex").toUpperCase(),
    encodeURIComponent(SECRET),
    ...[0, 1, 2].flatMap((shift) => {
      const encoded = Buffer.concat([Buffer.from("xyz".slice(0, shift)), Buffer.from(SECRET)]).toString(
        "base64",
      );
      return [encoded, encoded.replaceAll("+", "-").replaceAll("/", "_")];
    }),
  ];
  for (const form of forms) {
    const text = `before ${form} after`;
    const out = redact(text, matcher);
    assert.deepEqual(out.sources, ["~/.aws/credentials"], form);
    assert.ok(!out.text.includes(form), form);
    assert.match(out.text, /^before .*\[withheld: credential value from ~\/\.aws\/credentials\].* after$/);
  }
  assert.deepEqual(redact("nothing secret here", matcher).sources, []);
  assert.ok(!encodings("short").includes("short"), "forms shorter than 8 characters are not patterns");
});

test("property: any value, embedded anywhere in random text in any encoding, is withheld", () => {
  fc.assert(
    fc.property(
      fc.string({ minLength: 10, maxLength: 60 }).filter((s) => Buffer.byteLength(s) >= 10),
      fc.string({ maxLength: 200 }),
      fc.string({ maxLength: 200 }),
      fc.integer({ min: 0, max: 2 }),
      fc.constantFrom("raw", "base64", "hex", "url"),
      (value, before, after, shift, encoding) => {
        const matcher = new SecretMatcher([{ value, source: "$TOKEN" }]);
        const bytes = Buffer.from(value);
        const form =
          encoding === "raw"
            ? value
            : encoding === "hex"
              ? bytes.toString("hex")
              : encoding === "url"
                ? encodeURIComponent(value)
                : Buffer.concat([Buffer.alloc(shift, 65), bytes]).toString("base64");
        const out = redact(`${before}${form}${after}`, matcher);
        assert.deepEqual(out.sources, ["$TOKEN"]);
      },
    ),
    { numRuns: 300 },
  );
});

test("values come from keyed lines, JSON strings, URL passwords, key bodies and one-token files", () => {
  const values = valuesInFile(
    [
      "[default]",
      "region = us-east-1",
      "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG",
      'export DB_PASSWORD="hunter2-horse"',
      "NODE_ENV=production",
      "url = https://user:s3cr3t-pass@git.x.example/repo",
      "machine x.example login me password p4ssw0rd-x",
      '{"client_secret": "GOCSPX-abc123def456"}',
    ].join("\n"),
  );
  for (const value of [
    "wJalrXUtnFEMI/K7MDENG",
    "hunter2-horse",
    "s3cr3t-pass",
    "p4ssw0rd-x",
    "GOCSPX-abc123def456",
  ])
    assert.ok(values.includes(value), value);
  for (const value of ["us-east-1", "production", "[default]"]) assert.ok(!values.includes(value), value);
  const hfToken = fakeToken("hf_", 32);
  assert.deepEqual(valuesInFile(`${hfToken}\n`), [hfToken]);
});

test("the snapshot reads the credential files of the workspace and HOME and the variables, and follows changes", async (t) => {
  const root = await tempDir(t, "gate-secrets-");
  const home = path.join(root, "home");
  const ws = path.join(root, "ws");
  await mkdir(path.join(home, ".aws"), { recursive: true });
  await mkdir(path.join(ws, "src"), { recursive: true });
  await mkdir(path.join(ws, "node_modules", "x"), { recursive: true });
  await writeFile(path.join(home, ".aws", "credentials"), `aws_secret_access_key = ${SECRET}\n`);
  await writeFile(path.join(ws, "src", "app.ts"), "const x = 'not-a-secret-at-all-12345';\n");
  await writeFile(path.join(ws, "node_modules", "x", ".env"), "SKIPPED_TOKEN=dependency-value-123\n");
  const snapshot = new SecretSnapshot();
  const githubToken = fakeToken("ghp_", 36);
  const [oldStripe, newStripe] = [`sk_live_${fakeHex(16)}`, `sk_live_${fakeHex(15)}0`];
  const env = { GITHUB_TOKEN: githubToken, PATH: "/usr/bin:/bin" };
  const check = (text: string) => redact(text, snapshot.refresh({ home, workspace: ws }, env)).sources;
  assert.deepEqual(check(`key ${SECRET}`), ["~/.aws/credentials"]);
  assert.deepEqual(check(`token ${githubToken}`), ["$GITHUB_TOKEN"]);
  assert.deepEqual(check("/usr/bin:/bin not-a-secret-at-all-12345 dependency-value-123"), []);
  await writeFile(path.join(ws, ".env"), `STRIPE_KEY=${oldStripe}\n`);
  assert.deepEqual(check(oldStripe), [path.join(ws, ".env")], "a new credential file is seen");
  await writeFile(path.join(ws, ".env"), `STRIPE_KEY=${newStripe}\n`);
  assert.deepEqual(check(oldStripe), [], "the old value is gone");
  assert.deepEqual(check(newStripe), [path.join(ws, ".env")], "the new one is in");
});

test("results: text, images and details are filtered; a note names the source; clean results are untouched", () => {
  const matcher = new SecretMatcher([{ value: SECRET, source: ".env" }]);
  const clean = { content: [{ type: "text", text: "hello" }], details: { n: 1 } };
  assert.deepEqual(withholdSecrets(clean, matcher), { result: clean });
  const dirty = {
    content: [
      { type: "text", text: `value=${SECRET}` },
      { type: "image", data: Buffer.from(`PNG${SECRET}`).toString("base64"), mimeType: "image/png" },
    ],
    details: { truncation: { content: `x ${SECRET} y` } },
  };
  const { result, withheld } = withholdSecrets(dirty, matcher);
  assert.equal(withheld?.count, 3);
  assert.deepEqual(withheld?.sources, [".env"]);
  const text = JSON.stringify(result);
  assert.ok(!text.includes(SECRET));
  assert.ok(!text.includes(Buffer.from(SECRET).toString("base64").slice(4, 20)));
  assert.match(text, /withheld 3 credential values from this output \(from \.env\)/);
  const filter = new SecretFilter();
  const out = filter.filter(
    dirty,
    { home: "/nonexistent", workspace: "/nonexistent", env: { API_KEY: SECRET } },
    { final: true },
  );
  assert.deepEqual(out.withheld?.sources, ["$API_KEY"]);
});
