// A bounded reader of a git repository's objects, so the gate can judge history, the index, stashes and revisions
// by the files inside them (issue 19): which paths a revision holds, which paths commits change. Loose objects and
// packs (idx v2, offset and ref deltas) are read through BoundedFile (non-blocking, regular files, byte budgets);
// every object read ticks the decision's budget, and any bound or anything unexpected ends in "unknown", never in
// a guess. Commits are immutable, so what a commit changes is remembered across decisions (bounded).
import path from "node:path";
import { inflateSync } from "node:zlib";
import { BoundedFile, readBounded } from "./bounded-read.ts";
import { listDirectory } from "./disk-walk.ts";

/** Thrown (and turned into "unknown") when a repository cannot be read within bounds. */
export class GitReadLimit extends Error {}

const MAX_OBJECT_BYTES = 8 * 1024 * 1024;
const MAX_PACK_BYTES = 4 * 1024 * 1024 * 1024;
const MAX_PACK_READ = 64 * 1024 * 1024;
const MAX_DELTA_DEPTH = 64;
const MAX_PACKS = 64;
/** Entries a tree listing or a diff may produce. */
export const MAX_TREE_ENTRIES = 20_000;
/** Commits a history walk may visit. */
export const MAX_COMMITS = 2_000;

type ObjectType = "commit" | "tree" | "blob" | "tag";
interface GitObject {
  type: ObjectType;
  data: Buffer;
}

export interface Pack {
  file: BoundedFile;
  /** The pack index (v2): searched in place, never turned into strings. */
  idx: Buffer;
  count: number;
}

const TYPES: Record<number, ObjectType> = { 1: "commit", 2: "tree", 3: "blob", 4: "tag" };

export class GitObjects {
  readonly commonDir: string;
  private readonly tick: () => void;
  private packs: Pack[] | undefined;
  private readonly cache = new Map<string, GitObject>();

  constructor(commonDir: string, tick: () => void) {
    this.commonDir = commonDir;
    this.tick = tick;
  }

  close(): void {
    for (const pack of this.packs ?? []) pack.file.close();
  }

  /** An object by id, or throws GitReadLimit. */
  read(id: string): GitObject {
    const cached = this.cache.get(id);
    if (cached) return cached;
    this.tick();
    const object = this.readLoose(id) ?? this.readPacked(id);
    if (!object) throw new GitReadLimit(`object ${id.slice(0, 12)} is not in the repository`);
    if (this.cache.size > 4096) this.cache.clear();
    this.cache.set(id, object);
    return object;
  }

  private readLoose(id: string): GitObject | undefined {
    const read = readBounded(
      path.join(this.commonDir, "objects", id.slice(0, 2), id.slice(2)),
      MAX_OBJECT_BYTES,
    );
    if (!read.ok) {
      if (read.reason === "missing") return undefined;
      throw new GitReadLimit(`a loose object is ${read.reason.replace("_", " ")}`);
    }
    const raw = inflate(read.bytes);
    const nul = raw.indexOf(0);
    const header = raw.subarray(0, nul).toString("latin1");
    const type = header.split(" ")[0] as ObjectType;
    if (!["commit", "tree", "blob", "tag"].includes(type))
      throw new GitReadLimit("a loose object has an unknown type");
    return { type, data: raw.subarray(nul + 1) };
  }

  /** The repository's packs, loaded once. */
  loadPacks(): Pack[] {
    if (this.packs) return this.packs;
    const packs: Pack[] = [];
    const dir = path.join(this.commonDir, "objects", "pack");
    const listed = listDirectory(dir, 4 * MAX_PACKS);
    if ("incomplete" in listed) throw new GitReadLimit(listed.incomplete);
    for (const entry of listed.entries) {
      if (!entry.name.endsWith(".idx")) continue;
      if (packs.length >= MAX_PACKS)
        throw new GitReadLimit("the repository has more packs than the gate reads");
      const idx = readBounded(path.join(dir, entry.name), 64 * 1024 * 1024);
      if (!idx.ok) throw new GitReadLimit(`${entry.name} is ${idx.reason.replace("_", " ")}`);
      const file = BoundedFile.open(
        path.join(dir, entry.name.replace(/\.idx$/, ".pack")),
        MAX_PACK_BYTES,
        MAX_PACK_READ,
      );
      if (typeof file === "string") throw new GitReadLimit(`a pack is ${file.replace("_", " ")}`);
      packs.push(parseIndex(idx.bytes, file));
    }
    this.packs = packs;
    return packs;
  }

  private readPacked(id: string): GitObject | undefined {
    const key = Buffer.from(id, "hex");
    for (const pack of this.loadPacks()) {
      const index = packLowerBound(pack, key);
      if (index < pack.count && packId(pack, index).equals(key))
        return this.readAtOffset(pack, packOffset(pack, index));
    }
    return undefined;
  }

  /** The object at a pack offset, deltas resolved iteratively (bounded depth). */
  private readAtOffset(pack: Pack, start: number): GitObject {
    const chain: Buffer[] = [];
    let offset = start;
    for (let depth = 0; depth <= MAX_DELTA_DEPTH; depth++) {
      this.tick();
      // Objects carry no length of their compressed data: read a window, and a larger one if the stream is cut.
      const bytes = pack.file.readAt(offset, 64 * 1024);
      let pos = 0;
      let byte = bytes[pos++] ?? 0;
      const kind = (byte >> 4) & 7;
      while (byte & 0x80) byte = bytes[pos++] ?? 0;
      if (kind === 6) {
        // OFS_DELTA: a negative offset to the base.
        byte = bytes[pos++] ?? 0;
        let back = byte & 0x7f;
        while (byte & 0x80) {
          byte = bytes[pos++] ?? 0;
          back = ((back + 1) << 7) | (byte & 0x7f);
        }
        chain.push(this.inflateAt(pack, offset, pos, bytes));
        offset -= back;
        continue;
      }
      if (kind === 7) {
        // REF_DELTA: the base by id.
        const base = bytes.subarray(pos, pos + 20).toString("hex");
        chain.push(this.inflateAt(pack, offset, pos + 20, bytes));
        const object = this.read(base);
        return { type: object.type, data: applyDeltas(object.data, chain) };
      }
      const type = TYPES[kind];
      if (!type) throw new GitReadLimit("a packed object has an unknown type");
      return { type, data: applyDeltas(this.inflateAt(pack, offset, pos, bytes), chain) };
    }
    throw new GitReadLimit("a delta chain is deeper than the gate follows");
  }

  /** Inflates the stream at `offset + skip` (trailing data is ignored), widening the read while it is cut short. */
  private inflateAt(pack: Pack, offset: number, skip: number, first: Buffer): Buffer {
    let window = first;
    for (let size = first.length; ; size *= 4) {
      try {
        return inflateSync(window.subarray(skip), { maxOutputLength: MAX_OBJECT_BYTES });
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code !== "Z_BUF_ERROR" || size >= MAX_OBJECT_BYTES || offset + size >= pack.file.size)
          throw new GitReadLimit("an object cannot be inflated within bounds");
        this.tick();
        window = pack.file.readAt(offset, size * 4);
      }
    }
  }

  /** A commit's tree and parents. */
  commit(id: string): { tree: string; parents: string[] } {
    let object = this.read(id);
    for (let hops = 0; object.type === "tag" && hops < 8; hops++) {
      const target = /^object ([0-9a-f]{40})/.exec(object.data.toString("latin1"))?.[1];
      if (!target) throw new GitReadLimit("a tag names no object");
      object = this.read(target);
    }
    if (object.type !== "commit") throw new GitReadLimit(`${id.slice(0, 12)} is not a commit`);
    const text = object.data.toString("latin1", 0, Math.min(object.data.length, 64 * 1024));
    const tree = /^tree ([0-9a-f]{40})/m.exec(text)?.[1];
    if (!tree) throw new GitReadLimit("a commit names no tree");
    const head = text.slice(0, text.indexOf("\n\n") === -1 ? text.length : text.indexOf("\n\n"));
    const parents = [...head.matchAll(/^parent ([0-9a-f]{40})$/gm)].map((m) => m[1] as string);
    return { tree, parents };
  }

  /** A tree's entries: name, id, whether it is a folder. */
  tree(id: string): Array<{ name: string; id: string; folder: boolean }> {
    const object = this.read(id);
    if (object.type !== "tree") throw new GitReadLimit(`${id.slice(0, 12)} is not a tree`);
    const entries: Array<{ name: string; id: string; folder: boolean }> = [];
    const data = object.data;
    let pos = 0;
    while (pos < data.length) {
      const space = data.indexOf(0x20, pos);
      const nul = data.indexOf(0, space);
      if (space === -1 || nul === -1 || nul + 21 > data.length) throw new GitReadLimit("a tree is malformed");
      const mode = data.toString("latin1", pos, space);
      entries.push({
        name: data.toString("utf8", space + 1, nul),
        id: data.subarray(nul + 1, nul + 21).toString("hex"),
        folder: mode === "40000",
      });
      pos = nul + 21;
    }
    return entries;
  }

  /** Every path in a tree (files and folders), bounded. */
  paths(treeId: string): string[] {
    const out: string[] = [];
    const queue: Array<{ prefix: string; id: string }> = [{ prefix: "", id: treeId }];
    for (let item = queue.shift(); item; item = queue.shift()) {
      for (const entry of this.tree(item.id)) {
        const full = item.prefix + entry.name;
        out.push(full);
        if (out.length > MAX_TREE_ENTRIES)
          throw new GitReadLimit("a tree holds more files than the gate reads");
        if (entry.folder) queue.push({ prefix: `${full}/`, id: entry.id });
      }
    }
    return out;
  }

  /** The entry at `file` in a tree (undefined when absent). */
  lookup(treeId: string, file: string): { id: string; folder: boolean } | undefined {
    let id = treeId;
    let folder = true;
    for (const part of file.split("/").filter((p) => p.length > 0)) {
      if (!folder) return undefined;
      const entry = this.tree(id).find((e) => e.name === part);
      if (!entry) return undefined;
      id = entry.id;
      folder = entry.folder;
    }
    return { id, folder };
  }

  /** Paths that differ between two trees (either may be absent), skipping identical subtrees. */
  changed(a: string | undefined, b: string | undefined, out: Set<string>, prefix = ""): void {
    const queue: Array<{ prefix: string; a: string | undefined; b: string | undefined }> = [{ prefix, a, b }];
    for (let item = queue.shift(); item; item = queue.shift()) {
      if (item.a === item.b) continue;
      const left = new Map((item.a ? this.tree(item.a) : []).map((e) => [e.name, e]));
      const right = new Map((item.b ? this.tree(item.b) : []).map((e) => [e.name, e]));
      for (const name of new Set([...left.keys(), ...right.keys()])) {
        const l = left.get(name);
        const r = right.get(name);
        if (l?.id === r?.id) continue;
        const full = item.prefix + name;
        out.add(full);
        if (out.size > MAX_TREE_ENTRIES)
          throw new GitReadLimit("the change touches more files than the gate reads");
        if (l?.folder || r?.folder)
          queue.push({
            prefix: `${full}/`,
            a: l?.folder ? l.id : undefined,
            b: r?.folder ? r.id : undefined,
          });
      }
    }
  }
}

/** What a commit changes (against each parent), remembered across decisions: commits never change. */
const commitChanges = new Map<string, readonly string[]>();

export function changesOf(objects: GitObjects, commitId: string): readonly string[] {
  const key = `${objects.commonDir}\0${commitId}`;
  const known = commitChanges.get(key);
  if (known) return known;
  const { tree, parents } = objects.commit(commitId);
  const out = new Set<string>();
  if (parents.length === 0) objects.changed(undefined, tree, out);
  for (const parent of parents) objects.changed(objects.commit(parent).tree, tree, out);
  const list = [...out];
  if (commitChanges.size > 20_000) commitChanges.clear();
  commitChanges.set(key, list);
  return list;
}

/** Commits reachable from `tips`, breadth first, bounded. */
export function history(objects: GitObjects, tips: readonly string[]): string[] {
  const seen = new Set<string>(tips);
  const queue = [...tips];
  const out: string[] = [];
  for (let id = queue.shift(); id; id = queue.shift()) {
    out.push(id);
    if (out.length > MAX_COMMITS) throw new GitReadLimit("the history is longer than the gate reads");
    for (const parent of objects.commit(id).parents) {
      if (!seen.has(parent)) {
        seen.add(parent);
        queue.push(parent);
      }
    }
  }
  return out;
}

// ---- refs and revisions ----

/** Every ref's commit (loose refs, packed refs), HEAD included; bounded. */
export function allRefs(gitDir: string, commonDir: string): Map<string, string> {
  const refs = new Map<string, string>();
  const packed = readBounded(path.join(commonDir, "packed-refs"), 16 * 1024 * 1024);
  if (packed.ok)
    for (const match of packed.bytes.toString("latin1").matchAll(/^([0-9a-f]{40}) (refs\/\S+)$/gm))
      refs.set(match[2] as string, match[1] as string);
  const queue = ["refs"];
  let entries = 0;
  for (let dir = queue.shift(); dir !== undefined; dir = queue.shift()) {
    const listed = listDirectory(path.join(commonDir, dir), 4096);
    if ("incomplete" in listed) throw new GitReadLimit(listed.incomplete);
    for (const entry of listed.entries) {
      if (++entries > 20_000) throw new GitReadLimit("the repository has more refs than the gate reads");
      const name = `${dir}/${entry.name}`;
      if (entry.isDirectory()) queue.push(name);
      else {
        const id = readRefFile(commonDir, name);
        if (id) refs.set(name, id);
      }
    }
  }
  const head = resolveRef(gitDir, commonDir, "HEAD", refs);
  if (head) refs.set("HEAD", head);
  return refs;
}

function readRefFile(dir: string, name: string): string | undefined {
  const read = readBounded(path.join(dir, name), 4096);
  if (!read.ok) return undefined;
  return read.bytes.toString("latin1").trim();
}

/** A ref's commit, following symbolic refs (bounded). */
function resolveRef(
  gitDir: string,
  commonDir: string,
  name: string,
  packed: Map<string, string>,
): string | undefined {
  let current = name;
  for (let hops = 0; hops < 8; hops++) {
    const text = readRefFile(gitDir, current) ?? readRefFile(commonDir, current) ?? packed.get(current);
    if (text === undefined) return undefined;
    const symbolic = /^ref: (\S+)$/.exec(text);
    if (!symbolic) return /^[0-9a-f]{40}$/.test(text) ? text : undefined;
    current = symbolic[1] as string;
  }
  return undefined;
}

/**
 * The commit a revision names: a ref (branch, tag, remote branch, HEAD, ORIG_HEAD, stash), `stash@{n}`, a full or
 * abbreviated id, with `~n` and `^n` suffixes. Undefined when the gate does not know the syntax or the name.
 */
export function resolveRevision(
  objects: GitObjects,
  gitDir: string,
  revision: string,
  refs: Map<string, string>,
): string | undefined {
  const match = /^([^~^@:]*)(?:@\{(\d{1,4})\})?((?:[~^]\d{0,4})*)$/.exec(revision);
  if (!match) return undefined;
  const [, base = "", stashIndex, suffix = ""] = match;
  let id: string | undefined;
  const name = base === "" || base === "@" ? "HEAD" : base;
  if (stashIndex !== undefined) {
    if (name !== "stash" && name !== "refs/stash") return undefined;
    const log = readBounded(path.join(objects.commonDir, "logs", "refs", "stash"), 4 * 1024 * 1024);
    if (!log.ok) return undefined;
    const lines = log.bytes.toString("latin1").trim().split("\n").reverse();
    id = /^[0-9a-f]{40} ([0-9a-f]{40})/.exec(lines[Number(stashIndex)] ?? "")?.[1];
  } else {
    for (const candidate of [
      name,
      `refs/${name}`,
      `refs/tags/${name}`,
      `refs/heads/${name}`,
      `refs/remotes/${name}`,
      `refs/remotes/${name}/HEAD`,
    ]) {
      id = refs.get(candidate) ?? resolveRef(gitDir, objects.commonDir, candidate, refs);
      if (id) break;
    }
    if (!id && /^[0-9a-f]{4,40}$/.test(name)) id = abbreviated(objects, name);
  }
  for (const step of suffix.matchAll(/([~^])(\d*)/g)) {
    if (!id) return undefined;
    const count = step[2] === "" ? 1 : Number(step[2]);
    if (step[1] === "~") {
      for (let i = 0; i < count && id; i++) id = objects.commit(id).parents[0];
    } else id = count === 0 ? id : objects.commit(id).parents[count - 1];
  }
  return id;
}

function abbreviated(objects: GitObjects, prefix: string): string | undefined {
  if (prefix.length === 40) return prefix;
  const listed = listDirectory(path.join(objects.commonDir, "objects", prefix.slice(0, 2)), 65_536);
  const matches = new Set<string>();
  if ("entries" in listed)
    for (const entry of listed.entries) {
      const id = prefix.slice(0, 2) + entry.name;
      if (id.startsWith(prefix)) matches.add(id);
    }
  const key = Buffer.from(prefix.length % 2 ? `${prefix}0` : prefix, "hex");
  for (const pack of objects.loadPacks()) {
    for (let index = packLowerBound(pack, key); index < pack.count && matches.size < 2; index++) {
      const id = packId(pack, index).toString("hex");
      if (!id.startsWith(prefix)) break;
      matches.add(id);
    }
  }
  return matches.size === 1 ? [...matches][0] : undefined;
}

// ---- the index ----

/** Every path in the index (`.git/index`, versions 2–4), bounded. */
export function indexPaths(gitDir: string): string[] {
  const read = readBounded(path.join(gitDir, "index"), 64 * 1024 * 1024);
  if (!read.ok) {
    if (read.reason === "missing") return [];
    throw new GitReadLimit(`the index is ${read.reason.replace("_", " ")}`);
  }
  const data = read.bytes;
  if (data.toString("latin1", 0, 4) !== "DIRC") throw new GitReadLimit("the index is not a git index");
  const version = data.readUInt32BE(4);
  const count = data.readUInt32BE(8);
  if (count > MAX_TREE_ENTRIES) throw new GitReadLimit("the index holds more files than the gate reads");
  const out: string[] = [];
  let pos = 12;
  let previous = "";
  for (let i = 0; i < count; i++) {
    const start = pos;
    const flags = data.readUInt16BE(pos + 60);
    pos += 62;
    if (version >= 3 && flags & 0x4000) pos += 2;
    if (version === 4) {
      let strip = 0;
      let byte = data[pos++] ?? 0;
      strip = byte & 0x7f;
      while (byte & 0x80) {
        byte = data[pos++] ?? 0;
        strip = ((strip + 1) << 7) | (byte & 0x7f);
      }
      const nul = data.indexOf(0, pos);
      if (nul === -1) throw new GitReadLimit("the index is malformed");
      previous = previous.slice(0, previous.length - strip) + data.toString("utf8", pos, nul);
      pos = nul + 1;
    } else {
      const nul = data.indexOf(0, pos);
      if (nul === -1) throw new GitReadLimit("the index is malformed");
      previous = data.toString("utf8", pos, nul);
      pos = start + Math.ceil((nul - start + 1) / 8) * 8;
    }
    out.push(previous);
  }
  return out;
}

// ---- packs ----

function parseIndex(idx: Buffer, file: BoundedFile): Pack {
  if (idx.length < 8 + 256 * 4 || idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) {
    file.close();
    throw new GitReadLimit("a pack index is not version 2");
  }
  const count = idx.readUInt32BE(8 + 255 * 4);
  if (idx.length < 8 + 256 * 4 + count * 28) {
    file.close();
    throw new GitReadLimit("a pack index is truncated");
  }
  return { file, idx, count };
}

const IDS_AT = 8 + 256 * 4;

function packId(pack: Pack, index: number): Buffer {
  return pack.idx.subarray(IDS_AT + index * 20, IDS_AT + index * 20 + 20);
}

function packOffset(pack: Pack, index: number): number {
  const offsetsAt = IDS_AT + pack.count * 24;
  const raw = pack.idx.readUInt32BE(offsetsAt + index * 4);
  if (!(raw & 0x80000000)) return raw;
  return Number(pack.idx.readBigUInt64BE(offsetsAt + pack.count * 4 + (raw & 0x7fffffff) * 8));
}

/** The first index whose id is ≥ key, searched within the fan-out range of its first byte. */
function packLowerBound(pack: Pack, key: Buffer): number {
  const first = key[0] ?? 0;
  let low = first === 0 ? 0 : pack.idx.readUInt32BE(8 + (first - 1) * 4);
  let high = pack.idx.readUInt32BE(8 + first * 4);
  while (low < high) {
    const mid = (low + high) >> 1;
    if (Buffer.compare(packId(pack, mid), key) < 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

function inflate(bytes: Buffer): Buffer {
  try {
    return inflateSync(bytes, { maxOutputLength: MAX_OBJECT_BYTES });
  } catch {
    throw new GitReadLimit("an object cannot be inflated within bounds");
  }
}

/** Applies deltas (innermost last in `chain`) to a base. */
function applyDeltas(base: Buffer, chain: Buffer[]): Buffer {
  let result = base;
  for (let i = chain.length - 1; i >= 0; i--) result = applyDelta(result, chain[i] as Buffer);
  return result;
}

function applyDelta(base: Buffer, delta: Buffer): Buffer {
  let pos = 0;
  const varint = () => {
    let value = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = delta[pos++] ?? 0;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80 && shift < 56);
    return value;
  };
  varint(); // base size
  const size = varint();
  if (size > MAX_OBJECT_BYTES) throw new GitReadLimit("a delta result is larger than the gate reads");
  const out = Buffer.allocUnsafe(size);
  let written = 0;
  while (pos < delta.length) {
    const op = delta[pos++] ?? 0;
    if (op & 0x80) {
      let offset = 0;
      let length = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) offset |= (delta[pos++] ?? 0) << (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (0x10 << bit)) length |= (delta[pos++] ?? 0) << (8 * bit);
      if (length === 0) length = 0x10000;
      offset >>>= 0;
      if (offset + length > base.length || written + length > size)
        throw new GitReadLimit("a delta is malformed");
      base.copy(out, written, offset, offset + length);
      written += length;
    } else if (op > 0) {
      if (written + op > size || pos + op > delta.length) throw new GitReadLimit("a delta is malformed");
      delta.copy(out, written, pos, pos + op);
      pos += op;
      written += op;
    } else throw new GitReadLimit("a delta is malformed");
  }
  if (written !== size) throw new GitReadLimit("a delta is malformed");
  return out;
}
