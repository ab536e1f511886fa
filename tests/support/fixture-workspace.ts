// Builds the workspace a gate corpus case describes: plain files (workspace-relative, or under HOME with "~/"),
// executables, FIFOs, symlinks, archives (tar, tar.gz, zip: written here byte by byte, no external tool) and git
// repositories (built with git itself, with a private HOME and no system config). Every file is data: nothing in a
// case is ever run on the host; the gate only reads what this writes.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { chmod, mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { crc32, gzipSync } from "node:zlib";

export type FixtureFile =
  | string
  | { content: string; mode?: number }
  | { fifo: true }
  | { symlink: string }
  | { archive: "tar" | "tgz" | "zip"; members: Record<string, string> };

/** A repository built commit by commit; later entries can branch, stage, stash or check out. */
export type GitStep =
  | { commit: Record<string, string | null>; message?: string }
  | { branch: string }
  | { checkout: string }
  | { stage: Record<string, string> }
  | { stash: Record<string, string>; untracked?: boolean };

export interface FixtureSpec {
  files?: Record<string, FixtureFile>;
  /** A git repository in the workspace, built before `files` are written (so files can be untracked changes). */
  git?: GitStep[];
}

export interface FixtureRoots {
  ws: string;
  home: string;
}

function place(roots: FixtureRoots, name: string): string {
  return name.startsWith("~/") ? path.join(roots.home, name.slice(2)) : path.join(roots.ws, name);
}

async function writeOne(file: string, spec: FixtureFile): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  if (typeof spec === "string") return writeFile(file, spec);
  if ("content" in spec) {
    await writeFile(file, spec.content);
    if (spec.mode !== undefined) await chmod(file, spec.mode);
    return;
  }
  if ("fifo" in spec) {
    execFileSync("mkfifo", [file]);
    return;
  }
  if ("symlink" in spec) return symlink(spec.symlink, file);
  const members = Object.entries(spec.members);
  if (spec.archive === "zip") return writeFile(file, zipArchive(members));
  const tar = tarArchive(members);
  return writeFile(file, spec.archive === "tgz" ? gzipSync(tar) : tar);
}

export async function buildFixture(roots: FixtureRoots, spec: FixtureSpec): Promise<void> {
  await mkdir(roots.ws, { recursive: true });
  await mkdir(roots.home, { recursive: true });
  if (spec.git) buildRepository(roots, spec.git);
  for (const [name, file] of Object.entries(spec.files ?? {})) await writeOne(place(roots, name), file);
}

function buildRepository(roots: FixtureRoots, steps: GitStep[]): void {
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: roots.home,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "fixture",
    GIT_AUTHOR_EMAIL: "fixture@x.example",
    GIT_COMMITTER_NAME: "fixture",
    GIT_COMMITTER_EMAIL: "fixture@x.example",
  };
  const git = (...args: string[]) => execFileSync("git", args, { cwd: roots.ws, env, stdio: "pipe" });
  const put = (files: Record<string, string | null>) => {
    for (const [name, content] of Object.entries(files)) {
      const file = path.join(roots.ws, name);
      if (content === null) {
        git("rm", "-q", "--", name);
        continue;
      }
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, content);
      git("add", "--", name);
    }
  };
  git("init", "-q", "-b", "main");
  for (const step of steps) {
    if ("commit" in step) {
      put(step.commit);
      git("commit", "-q", "--allow-empty", "-m", step.message ?? "change");
    } else if ("branch" in step) git("checkout", "-q", "-b", step.branch);
    else if ("checkout" in step) git("checkout", "-q", step.checkout);
    else if ("stage" in step) put(step.stage);
    else {
      for (const [name, content] of Object.entries(step.stash)) {
        mkdirSync(path.dirname(path.join(roots.ws, name)), { recursive: true });
        writeFileSync(path.join(roots.ws, name), content);
      }
      git("stash", "push", "-q", ...(step.untracked ? ["--include-untracked"] : []));
    }
  }
}

// ---- archives, byte by byte ----

function tarArchive(members: Array<[string, string]>): Buffer {
  const blocks: Buffer[] = [];
  for (const [name, content] of members) {
    const data = Buffer.from(content);
    const header = Buffer.alloc(512);
    header.write(name, 0, 100, "utf8");
    header.write("0000644\0", 100);
    header.write("0000000\0", 108);
    header.write("0000000\0", 116);
    header.write(`${data.length.toString(8).padStart(11, "0")}\0`, 124);
    header.write("00000000000\0", 136);
    header.write("        ", 148);
    header.write("0", 156);
    header.write("ustar\0", 257);
    header.write("00", 263);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
    blocks.push(header, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

function zipArchive(members: Array<[string, string]>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of members) {
    const data = Buffer.from(content);
    const nameBytes = Buffer.from(name);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(members.length, 8);
  end.writeUInt16LE(members.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}
