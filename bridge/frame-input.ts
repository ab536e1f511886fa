// Checks on a client frame's raw text before anything walks it: nesting depth (a linear scan, no
// recursion), and the caps on what the bridge echoes back (ids, messages), so hostile input can neither
// overflow a stack nor make the bridge send megabytes back.

/** Deepest object/array nesting a client frame may have (Pi's commands need fewer than ten levels). */
export const MAX_FRAME_DEPTH = 64;
/** Longest id the bridge accepts or echoes (the protocol's command-id bound). */
export const MAX_ID_CHARS = 256;
/** Longest problem text the bridge puts in an error (zod messages can quote keys of any length). */
export const MAX_PROBLEM_CHARS = 512;

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_BRACE = 123;
const OPEN_BRACKET = 91;
const CLOSE_BRACE = 125;
const CLOSE_BRACKET = 93;

/**
 * True if the JSON text nests objects/arrays deeper than `max`. One pass: strings are skipped with
 * indexOf, and the backslashes before each quote are counted once (the runs between quotes are
 * disjoint), so the cost is linear in the text. Malformed text is left for JSON.parse to reject.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let j = i + 1;
      for (;;) {
        j = text.indexOf('"', j);
        if (j < 0) return false;
        let k = j - 1;
        while (k > i && text.charCodeAt(k) === BACKSLASH) k--;
        if ((j - 1 - k) % 2 === 0) break;
        j++;
      }
      i = j + 1;
      continue;
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
    i++;
  }
  return false;
}

/** The value as an id the bridge may use and echo: a string of 1..MAX_ID_CHARS chars, else undefined. */
export function usableId(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_ID_CHARS ? value : undefined;
}

/** Text cut to `max` chars with a marker, for anything echoed back that may carry client data. */
export function capText(text: string, max = MAX_PROBLEM_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more chars)`;
}
