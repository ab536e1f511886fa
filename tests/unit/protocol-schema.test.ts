// docs/protocol.schema.json is the JSON Schema zod generates from bridge/protocol.ts, never a stale copy.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { BRIDGE_FRAME_TYPES, CLIENT_FRAME_TYPES, PROTOCOL_VERSION, schemas } from "../../bridge/protocol.ts";
import { protocolJsonSchema, renderProtocolSchema, SCHEMA_PATH } from "../../bridge/protocol-schema.ts";

type Json = { [key: string]: unknown };

test("the checked-in docs/protocol.schema.json is up to date with bridge/protocol.ts", () => {
  assert.equal(
    readFileSync(SCHEMA_PATH, "utf8"),
    renderProtocolSchema(),
    "docs/protocol.schema.json is stale: run npm run docs:protocol",
  );
});

test("it names every frame type both ways, with every schema a definition and every $ref resolvable", () => {
  const document = protocolJsonSchema();
  assert.equal(document.$schema, "https://json-schema.org/draft/2020-12/schema");
  assert.match(String(document.title), new RegExp(`protocol ${PROTOCOL_VERSION}$`));
  const defs = document.$defs as Record<string, Json>;
  for (const name of Object.keys(schemas)) assert.ok(defs[name], `${name} is a definition`);
  const text = JSON.stringify(document);
  for (const [, target] of text.matchAll(/"\$ref":"#\/\$defs\/([^"]+)"/g))
    assert.ok(defs[target ?? ""], `$ref to ${target} resolves`);
  const typeOf = (ref: unknown) => {
    const id = String((ref as Json).$ref).replace("#/$defs/", "");
    const type = ((defs[id]?.properties as Json | undefined)?.type ?? {}) as Json;
    return type.const ?? type.enum;
  };
  const clientTypes = ((defs.ClientFrame?.oneOf ?? []) as unknown[]).flatMap(
    (ref) => typeOf(ref) as string[],
  );
  for (const type of CLIENT_FRAME_TYPES) assert.ok(clientTypes.includes(type), `ClientFrame covers ${type}`);
  const bridgeTypes = ((defs.BridgeFrame?.anyOf ?? []) as unknown[]).map(typeOf);
  for (const type of BRIDGE_FRAME_TYPES) assert.ok(bridgeTypes.includes(type), `BridgeFrame covers ${type}`);
  // Bounds survive the conversion: a hello's nonce is 64 hex characters, a welcome admits no other field.
  const hello = defs.HelloFrame?.properties as Record<string, Json>;
  assert.equal(hello.nonce?.pattern, "^[0-9a-f]{64}$");
  assert.equal(defs.WelcomeFrame?.additionalProperties, false);
});
