// Tool results (and streamed partial results) with every known credential value withheld before they leave the
// process that ran the tool (issue 19, point 4): text, image data and the result's details are scanned in one pass
// each (secret-matcher.ts); a match is replaced by a marker naming where the value came from, never the value, and
// a note says so. What it cannot catch is in docs/threat-model.md: a value transformed beyond the encodings the
// matcher knows (base64, hex, URL encoding, case), or split across results.
import { redact, type SecretMatcher } from "./secret-matcher.ts";
import { SecretSnapshot } from "./secret-values.ts";

export interface Withheld {
  /** Values (matches) withheld. */
  count: number;
  /** Where they came from (files, `$VARIABLES`). */
  sources: string[];
}

interface ResultLike {
  content: unknown[];
  details?: unknown;
}

/** Details larger than this (as JSON) are not scanned: withheld as a whole. */
const MAX_DETAILS_CHARS = 8 * 1024 * 1024;

/** The result with credential values withheld, and what was withheld (undefined: nothing). */
export function withholdSecrets<T extends ResultLike>(
  result: T,
  matcher: SecretMatcher,
): { result: T; withheld?: Withheld } {
  if (matcher.empty) return { result };
  const sources = new Set<string>();
  let count = 0;
  const clean = (text: string): string => {
    const out = redact(text, matcher);
    count += out.count;
    for (const source of out.sources) sources.add(source);
    return out.text;
  };
  const content = result.content.map((item) => {
    if (!isRecord(item)) return item;
    if (item.type === "text" && typeof item.text === "string") return { ...item, text: clean(item.text) };
    if (item.type === "image" && typeof item.data === "string") {
      const before = count;
      clean(item.data);
      if (count === before) return item;
      return { type: "text", text: "[withheld: an image whose data holds a credential value]" };
    }
    return item;
  });
  const details = result.details === undefined ? undefined : cleanDetails(result.details, clean);
  if (count === 0) return { result };
  const names = [...sources].join(", ");
  content.push({
    type: "text",
    text: `[chat-ui-agent withheld ${count} credential value${count === 1 ? "" : "s"} from this output (from ${names}). The values did not reach the model.]`,
  });
  return {
    result: { ...result, content, ...(details !== undefined ? { details } : {}) },
    withheld: { count, sources: [...sources] },
  };
}

/**
 * `details` cleaned as its JSON text, in one linear pass (no walk over the structure). A match that would break the
 * JSON (a value holding quotes) makes the details withheld as a whole.
 */
function cleanDetails(details: unknown, clean: (text: string) => string): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(details);
  } catch {
    return "[withheld: details that cannot be checked]";
  }
  if (text === undefined) return details;
  if (text.length > MAX_DETAILS_CHARS) return "[withheld: details too large to check]";
  const cleaned = clean(text);
  if (cleaned === text) return details;
  try {
    return JSON.parse(cleaned) as unknown;
  } catch {
    return "[withheld: details holding a credential value]";
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Where the credentials the tools can reach live, and the variables they are given. */
export interface SecretScope {
  home: string;
  workspace: string;
  env: Readonly<Record<string, string | undefined>>;
}

/** Partial results refresh the snapshot at most this often; a final result always does. */
const PARTIAL_REFRESH_MS = 200;

/**
 * The filter one process keeps (the executor's, or Pi's in local mode): a snapshot of the known values, refreshed
 * before a call's result is filtered (a command may have just read or made a credential file).
 */
export class SecretFilter {
  private readonly snapshot = new SecretSnapshot();
  private matcher: SecretMatcher | undefined;
  private refreshedAt = 0;

  filter<T extends ResultLike>(
    result: T,
    scope: SecretScope,
    options: { final: boolean },
  ): { result: T; withheld?: Withheld & { degraded?: string } } {
    const now = performance.now();
    if (!this.matcher || options.final || now - this.refreshedAt > PARTIAL_REFRESH_MS) {
      this.matcher = this.snapshot.refresh({ home: scope.home, workspace: scope.workspace }, scope.env);
      this.refreshedAt = now;
    }
    const out = withholdSecrets(result, this.matcher);
    if (!out.withheld) return out;
    const degraded = this.snapshot.degraded;
    return { result: out.result, withheld: { ...out.withheld, ...(degraded ? { degraded } : {}) } };
  }
}
