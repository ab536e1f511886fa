// Renders the reference part of docs/protocol.md from the zod schemas, so the document cannot drift.
// Pure: importing it never writes anything. `npm run docs:protocol` (scripts/docs-protocol.ts) updates the file.
import path from "node:path";
import { z } from "zod";
import {
  BRIDGE_FRAME_TYPES,
  BRIDGE_RESPONSE_ERRORS,
  CLIENT_FRAME_TYPES,
  CloseCode,
  DialogClosedFrame,
  ErrorCode,
  PI_COMMAND_TYPES,
  ResetReason,
  schemas,
} from "./protocol.ts";

export const BEGIN = "<!-- BEGIN GENERATED from bridge/protocol.ts: do not edit by hand -->";
export const END = "<!-- END GENERATED -->";
export const DOC_PATH = path.join(import.meta.dirname, "..", "docs", "protocol.md");

type Json = { [key: string]: unknown };

function typeOf(schema: Json): string {
  if ("const" in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" \\| ");
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Json[]).map(typeOf).join(" \\| ");
  if (schema.type === "array") return `${typeOf((schema.items as Json) ?? {})}[]`;
  if (schema.type === "object") return schema.properties ? "object" : "map";
  if (typeof schema.type === "string") {
    const bounds: string[] = [];
    if (typeof schema.pattern === "string") bounds.push(`\`${schema.pattern}\``);
    if (typeof schema.maxLength === "number") bounds.push(`≤ ${schema.maxLength} chars`);
    if (schema.type === "integer" && schema.minimum === 0) bounds.push("≥ 0");
    return bounds.length > 0 ? `${schema.type} (${bounds.join(", ")})` : schema.type;
  }
  return "any";
}

function fieldTable(name: string, schema: z.ZodType): string {
  const json = z.toJSONSchema(schema, { unrepresentable: "any" }) as Json;
  const properties = (json.properties ?? {}) as Record<string, Json>;
  const required = new Set((json.required as string[] | undefined) ?? []);
  const open = json.additionalProperties !== false;
  const rows = Object.entries(properties).map(
    ([field, s]) => `| \`${field}\` | ${typeOf(s)} | ${required.has(field) ? "yes" : "no"} |`,
  );
  return [
    `### ${name}`,
    "",
    "| field | type | required |",
    "|---|---|---|",
    ...rows,
    "",
    open ? "Other fields are allowed and passed on." : "No other fields are allowed.",
    "",
  ].join("\n");
}

const list = (values: readonly (string | number)[]) => values.map((v) => `\`${v}\``).join(", ");

export function renderProtocolReference(): string {
  const parts = [
    BEGIN,
    "",
    "## Reference (generated)",
    "",
    `Client frame types: ${list(CLIENT_FRAME_TYPES)}.`,
    "",
    `Pi commands forwarded: ${list(PI_COMMAND_TYPES)}.`,
    "",
    `Bridge frame types (besides Pi's own events, passed through with a \`seq\`): ${list(BRIDGE_FRAME_TYPES)}.`,
    "",
    `Error frame codes: ${list(ErrorCode.options)}.`,
    "",
    `Error codes in bridge-made responses: ${list(BRIDGE_RESPONSE_ERRORS)}.`,
    "",
    `Welcome reset reasons: ${list(ResetReason.options)}.`,
    "",
    `Dialog close reasons: ${list(DialogClosedFrame.shape.reason.options)}.`,
    "",
    `Close codes: ${Object.entries(CloseCode)
      .map(([name, code]) => `\`${code}\` ${name}`)
      .join(", ")}.`,
    "",
    ...Object.entries(schemas).map(([name, schema]) => fieldTable(name, schema as z.ZodType)),
    END,
  ];
  return parts.join("\n");
}

/** The generated block as it currently stands in the document (undefined if the markers are missing). */
export function documentedReference(text: string): string | undefined {
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (start === -1 || end === -1 || end < start) return undefined;
  return text.slice(start, end + END.length);
}

/** `text` with its generated block replaced by the current rendering (appended when the markers are missing). */
export function withCurrentReference(text: string): string {
  const current = documentedReference(text);
  return current
    ? text.replace(current, () => renderProtocolReference())
    : `${text.trimEnd()}\n\n${renderProtocolReference()}\n`;
}
