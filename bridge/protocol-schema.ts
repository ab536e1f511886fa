// The protocol as a JSON Schema (draft 2020-12), generated from the zod schemas in bridge/protocol.ts by zod's own
// z.toJSONSchema, for clients in other languages. Pure: importing it never writes; `npm run docs:protocol` writes
// docs/protocol.schema.json (tests/unit/protocol-schema.test.ts fails when that file is stale).
import path from "node:path";
import { z } from "zod";
import { BRIDGE_FRAME_TYPES, ClientFrame, PROTOCOL_VERSION, schemas } from "./protocol.ts";

export const SCHEMA_PATH = path.join(import.meta.dirname, "..", "docs", "protocol.schema.json");

type Json = { [key: string]: unknown };

/** Every named schema, each one definition; a schema used inside another is a $ref to its definition. */
function definitions(): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries({ ...schemas, ClientFrame })) registry.add(schema, { id });
  const generated = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    // Nothing in the protocol is unrepresentable today; should it be, the field is documented as "any".
    unrepresentable: "any",
    uri: (id) => `#/$defs/${id}`,
  }).schemas as Record<string, Json>;
  return Object.fromEntries(
    Object.entries(generated).map(([id, { $schema: _s, $id: _i, ...schema }]) => [id, schema]),
  );
}

/** The document: every frame a client sends (ClientFrame) or receives (BridgeFrame), and their parts. */
export function protocolJsonSchema(): Json {
  const defs = definitions();
  // A frame the bridge makes itself is a definition whose `type` is one of BRIDGE_FRAME_TYPES.
  const bridgeMade = Object.entries(defs)
    .filter(([, schema]) => {
      const type = (schema.properties as { type?: { const?: unknown } } | undefined)?.type?.const;
      return typeof type === "string" && BRIDGE_FRAME_TYPES.includes(type);
    })
    .map(([id]) => id);
  const BridgeFrame = {
    description:
      "Every frame the bridge sends: its own frames, and Pi's events passed through with a seq (PiEventFrame).",
    anyOf: [...bridgeMade, "PiEventFrame"].map((id) => ({ $ref: `#/$defs/${id}` })),
  };
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `chat-ui-agent-bridge/protocol-${PROTOCOL_VERSION}.schema.json`,
    title: `chat-ui-agent bridge protocol ${PROTOCOL_VERSION}`,
    description:
      "Generated from bridge/protocol.ts (npm run docs:protocol): do not edit by hand. A frame is one JSON text per WebSocket message; see docs/protocol.md.",
    anyOf: [{ $ref: "#/$defs/ClientFrame" }, { $ref: "#/$defs/BridgeFrame" }],
    $defs: { ...defs, BridgeFrame },
  };
}

/** The file's exact text. */
export function renderProtocolSchema(): string {
  return `${JSON.stringify(protocolJsonSchema(), null, 2)}\n`;
}
