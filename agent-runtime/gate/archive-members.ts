// The member names of an archive (tar, gzip/zstd-compressed tar, zip/jar) and the files a patch writes, read
// bounded and non-blocking, so extractions and patches are decided by the paths they write (issue 19). Formats the
// gate does not read (xz, bzip2, 7z, rar, cpio…), and anything past the bounds, are "unknown".
import path from "node:path";
// A namespace import: a named import of zstdDecompressSync would fail to link on a Node without it, before the
// bundle's Node guard could say why (the guard runs first only if every static import links).
import * as zlib from "node:zlib";
import { BoundedFile, readBounded } from "./bounded-read.ts";

export type Members = { members: string[] } | { unknown: string };

const MAX_ARCHIVE_BYTES = 32 * 1024 * 1024;
const MAX_EXPANDED_BYTES = 128 * 1024 * 1024;
export const MAX_MEMBERS = 5_000;

/** Member names, as stored (not yet stripped or transformed). */
export function archiveMembers(file: string, tick: () => void): Members {
  const head = readBounded(file, 512, { prefix: true });
  if (!head.ok)
    return {
      unknown: `the archive ${head.reason === "missing" ? "does not exist" : `is ${head.reason.replace("_", " ")}`}`,
    };
  const magic = head.bytes;
  if (magic.readUInt32LE(0) === 0x04034b50 || magic.readUInt32LE(0) === 0x06054b50)
    return zipMembers(file, tick);
  if (magic[0] === 0x1f && magic[1] === 0x8b)
    return expandedTar(file, tick, (b) => zlib.gunzipSync(b, { maxOutputLength: MAX_EXPANDED_BYTES }));
  if (magic.readUInt32LE(0) === 0xfd2fb528)
    return expandedTar(file, tick, (b) =>
      zlib.zstdDecompressSync(b, { maxOutputLength: MAX_EXPANDED_BYTES }),
    );
  if (magic.length >= 262 && magic.toString("latin1", 257, 262) === "ustar")
    return expandedTar(file, tick, (b) => b);
  if (magic.length >= 512 && tarChecksumOk(magic)) return expandedTar(file, tick, (b) => b);
  return { unknown: "the archive is in a format the gate does not read" };
}

function expandedTar(file: string, tick: () => void, expand: (bytes: Buffer) => Buffer): Members {
  const read = readBounded(file, MAX_ARCHIVE_BYTES);
  if (!read.ok) return { unknown: `the archive is ${read.reason.replace("_", " ")}` };
  let data: Buffer;
  try {
    data = expand(read.bytes);
  } catch {
    return { unknown: "the archive cannot be decompressed within bounds" };
  }
  return tarMembers(data, tick);
}

function tarChecksumOk(header: Buffer): boolean {
  const stored = Number.parseInt(header.toString("latin1", 148, 156).replace(/\0.*$/, "").trim(), 8);
  if (!Number.isFinite(stored)) return false;
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : (header[i] ?? 0);
  return sum === stored;
}

function tarMembers(data: Buffer, tick: () => void): Members {
  const members: string[] = [];
  let pos = 0;
  let longName: string | undefined;
  while (pos + 512 <= data.length) {
    tick();
    const header = data.subarray(pos, pos + 512);
    if (header.every((b) => b === 0)) return { members };
    if (!tarChecksumOk(header)) return { unknown: "the archive has a damaged header" };
    const size = tarSize(header);
    const type = String.fromCharCode(header[156] ?? 48);
    const body = data.subarray(pos + 512, pos + 512 + size);
    pos += 512 + Math.ceil(size / 512) * 512;
    if (type === "L") {
      longName = body.toString("utf8").replace(/\0.*$/s, "");
      continue;
    }
    if (type === "x") {
      const pax = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString("utf8"))?.[1];
      if (pax !== undefined) longName = pax;
      continue;
    }
    if (type === "g" || type === "K") continue;
    const name = field(header, 0, 100);
    const prefix = header.toString("latin1", 257, 262) === "ustar" ? field(header, 345, 155) : "";
    members.push(longName ?? (prefix ? `${prefix}/${name}` : name));
    longName = undefined;
    if (members.length > MAX_MEMBERS) return { unknown: "the archive holds more files than the gate reads" };
  }
  return { members };
}

function tarSize(header: Buffer): number {
  if ((header[124] ?? 0) & 0x80) {
    let size = 0;
    for (let i = 125; i < 136; i++) size = size * 256 + (header[i] ?? 0);
    return size;
  }
  return Number.parseInt(field(header, 124, 12).trim() || "0", 8) || 0;
}

function field(header: Buffer, start: number, length: number): string {
  const raw = header.subarray(start, start + length);
  const end = raw.indexOf(0);
  return raw.toString("utf8", 0, end === -1 ? raw.length : end);
}

function zipMembers(file: string, tick: () => void): Members {
  const opened = BoundedFile.open(file, 4 * 1024 * 1024 * 1024, 16 * 1024 * 1024);
  if (typeof opened === "string") return { unknown: `the archive is ${opened.replace("_", " ")}` };
  try {
    const tailLength = Math.min(opened.size, 65_557);
    const tail = opened.readAt(opened.size - tailLength, tailLength);
    const end = tail.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
    if (end === -1 || end + 22 > tail.length) return { unknown: "the zip archive has no directory" };
    const count = tail.readUInt16LE(end + 10);
    const size = tail.readUInt32LE(end + 12);
    const offset = tail.readUInt32LE(end + 16);
    if (count === 0xffff || size === 0xffffffff || offset === 0xffffffff)
      return { unknown: "the zip archive is zip64, which the gate does not read" };
    if (count > MAX_MEMBERS) return { unknown: "the archive holds more files than the gate reads" };
    const directory = opened.readAt(offset, size);
    const members: string[] = [];
    let pos = 0;
    for (let i = 0; i < count; i++) {
      tick();
      if (pos + 46 > directory.length || directory.readUInt32LE(pos) !== 0x02014b50)
        return { unknown: "the zip archive's directory is damaged" };
      const nameLength = directory.readUInt16LE(pos + 28);
      const extra = directory.readUInt16LE(pos + 30);
      const comment = directory.readUInt16LE(pos + 32);
      members.push(directory.toString("utf8", pos + 46, pos + 46 + nameLength));
      pos += 46 + nameLength + extra + comment;
    }
    return { members };
  } catch {
    return { unknown: "the zip archive cannot be read within bounds" };
  } finally {
    opened.close();
  }
}

/**
 * Where extracted members land: leading components stripped, then the program's own rules: GNU tar and unzip
 * drop a leading "/" and refuse ".." (unless told to keep absolute names); the result is relative to `into`.
 * Undefined for a member that is not extracted.
 */
export function memberDestination(
  member: string,
  into: string,
  options: { strip?: number; absolute?: boolean; junkPaths?: boolean; transform?: (name: string) => string },
): string | undefined {
  let name = options.transform ? options.transform(member) : member;
  if (options.junkPaths) name = path.basename(name);
  let parts = name.split("/").filter((part) => part !== "" && part !== ".");
  if (options.strip) parts = parts.slice(options.strip);
  if (parts.length === 0) return undefined;
  if (parts.includes("..") && !options.absolute) return undefined;
  return options.absolute && name.startsWith("/")
    ? path.resolve("/", ...parts)
    : path.resolve(into, ...parts);
}

/**
 * A GNU tar `--transform` / bsdtar `-s` expression (`s,regex,replacement,flags`) as a function, for the simple
 * forms: a literal or `^`-anchored regex without nested repetition. Undefined for anything else.
 */
export function substitution(expression: string): ((name: string) => string) | undefined {
  const delimiter = expression.charAt(1);
  if (expression.charAt(0) !== "s" || !delimiter || /[\w\\]/.test(delimiter)) return undefined;
  const parts = expression.slice(2).split(delimiter);
  if (parts.length < 2 || parts.length > 3) return undefined;
  const [source = "", replacement = "", flags = ""] = parts;
  if (!/^[\w./^$*+?[\]-]*$/.test(source) || /[*+?]\)?[*+?]/.test(source) || source.length > 128)
    return undefined;
  if (!/^[gixrRsSpHh]*$/.test(flags) || /[&\\]/.test(replacement)) return undefined;
  let regex: RegExp;
  try {
    regex = new RegExp(source, flags.includes("g") ? "g" : "");
  } catch {
    return undefined;
  }
  return (name) => name.replace(regex, replacement);
}

/**
 * The files a unified or git diff writes (new names of renames and copies, targets of edits and creations),
 * after stripping `strip` leading components; with no strip given (GNU patch), the basename and `-p1` both.
 */
export function patchTargets(text: string, strip: number | undefined): string[] {
  const names = new Set<string>();
  const add = (raw: string) => {
    const name = raw
      .replace(/\t.*$/, "")
      .trim()
      .replace(/^"(.*)"$/, "$1");
    if (name === "/dev/null" || name === "") return;
    const parts = name.split("/").filter((p) => p.length > 0);
    if (strip === undefined) {
      names.add(parts.at(-1) ?? name);
      names.add(parts.slice(1).join("/") || name);
    } else names.add(parts.slice(strip).join("/") || (parts.at(-1) ?? name));
  };
  for (const match of text
    .slice(0, 8 * 1024 * 1024)
    .matchAll(/^(?:\+\+\+|---) (.+)$|^diff --git (\S+) (\S+)$|^(?:rename|copy) to (.+)$/gm)) {
    if (match[1] !== undefined) add(match[1]);
    if (match[3] !== undefined) add(match[3]);
    if (match[2] !== undefined) add(match[2]);
    if (match[4] !== undefined) names.add(match[4].trim());
    if (names.size > MAX_MEMBERS) break;
  }
  return [...names];
}
