// chat-ui imports the client by package name: the built library loads, and its types check in a consumer.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { answerFields } from "../../bridge/client.ts";
import type { PendingDialog } from "../../bridge/protocol.ts";
import { tempDir } from "../support/workspace.ts";

const root = path.resolve(import.meta.dirname, "..", "..");

test("`chat-ui-agent-runtime/client` resolves to the built library and exports the client", async () => {
  // A variable specifier: the typecheck runs before the build, so tsc must not resolve it statically.
  const specifier = "chat-ui-agent-runtime/client";
  const library = await import(specifier);
  assert.equal(typeof library.BridgeClient, "function");
  assert.equal(typeof library.answerFields, "function");
});

test("a strict NodeNext consumer type-checks against the published declarations", async (t) => {
  const dir = await tempDir(t, "client-consumer-");
  const tsconfig = path.join(dir, "tsconfig.json");
  await writeFile(
    tsconfig,
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        target: "ES2023",
        noEmit: true,
        skipLibCheck: false,
        types: ["node"],
        typeRoots: [path.join(root, "node_modules", "@types")],
      },
      files: [path.join(root, "tests", "support", "fixtures", "client-consumer.mts")],
    }),
  );
  const result = spawnSync(
    process.execPath,
    [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", tsconfig],
    {
      cwd: root,
      encoding: "utf8",
    },
  );
  assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
});

const confirm: PendingDialog = { id: "d1", method: "confirm", title: "Allow?", seq: 3 };
const select: PendingDialog = { id: "d2", method: "select", title: "Pick", options: ["a", "b"], seq: 4 };
const input: PendingDialog = { id: "d3", method: "input", title: "Name", seq: 5 };

test("answers are shaped by the dialog's kind", () => {
  assert.deepEqual(answerFields(confirm, { kind: "confirm", confirmed: true }), {
    id: "d1",
    confirmed: true,
  });
  assert.deepEqual(answerFields(select, { kind: "select", value: "b" }), { id: "d2", value: "b" });
  assert.deepEqual(answerFields(input, { kind: "text", value: "x" }), { id: "d3", value: "x" });
  for (const dialog of [confirm, select, input]) {
    assert.deepEqual(answerFields(dialog, { kind: "cancel" }), { id: dialog.id, cancelled: true });
  }
});

test("an answer that does not fit its dialog is refused before anything is sent", () => {
  assert.throws(() => answerFields(select, { kind: "select", value: "c" }), /not one of the offered options/);
  assert.throws(() => answerFields(confirm, { kind: "text", value: "yes" }), /does not fit a confirm dialog/);
  assert.throws(
    () => answerFields(input, { kind: "confirm", confirmed: true }),
    /does not fit a input dialog/,
  );
  assert.throws(
    () => answerFields(select, { kind: "confirm", confirmed: true }),
    /does not fit a select dialog/,
  );
});
