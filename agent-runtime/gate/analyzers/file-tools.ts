// File tools: readers (content or names only), writers, deleters, archivers, searchers, and the "read-only"
// programs that can run code (sed's `e`, tar's checkpoint actions, sort's compressor, less's `!`, vim's `:!`).
import { parseArgs } from "../shell-options.ts";
import type { Analyzer, PathAccess } from "../shell-scan.ts";
import { DYNAMIC, type ShellWord, syntheticWord } from "../shell-words.ts";
import { checkOperands, distinct, FamilyBuilder, MAX_PROGRAM_TEXT, onlyAsksVersion } from "./common.ts";

/** Programs whose operands are files they read and print or copy (content). */
const CONTENT_READERS = distinct("content readers", [
  "cat",
  "tac",
  "head",
  "tail",
  "nl",
  "od",
  "xxd",
  "hexdump",
  "hd",
  "strings",
  "base64",
  "base32",
  "basenc",
  "uuencode",
  "uudecode",
  "fold",
  "fmt",
  "column",
  "expand",
  "unexpand",
  "rev",
  "paste",
  "join",
  "comm",
  "cut",
  "tr",
  "cmp",
  "sdiff",
  "diff3",
  "zcat",
  "bzcat",
  "xzcat",
  "zstdcat",
  "lz4cat",
  "zless",
  "zmore",
  "iconv",
  "pr",
  "look",
  "tsort",
  "shuf",
  "csvlook",
  "csvcut",
  "csvgrep",
  "mlr",
  "bat",
  "batcat",
  "pygmentize",
  "highlight",
  "colordiff",
  "wdiff",
  "vimdiff",
  "sum",
  "xmllint",
  "lsar",
  "cabextract",
  "pdftotext",
  "exiftool",
  "identify",
]);
/** Programs that look at names, sizes, types or hashes only. */
const STAT_READERS = distinct("stat readers", [
  "ls",
  "dir",
  "vdir",
  "stat",
  "file",
  "wc",
  "du",
  "df",
  "tree",
  "md5sum",
  "sha1sum",
  "sha224sum",
  "sha256sum",
  "sha384sum",
  "sha512sum",
  "b2sum",
  "cksum",
  "realpath",
  "readlink",
  "basename",
  "dirname",
  "locate",
  "plocate",
  "mlocate",
  "namei",
  "lsattr",
  "getfacl",
  "exa",
  "eza",
  "lsd",
  "pwd",
  "date",
  "whoami",
  "id",
  "uname",
  "hostname",
  "nproc",
  "tty",
  "locale",
  "getconf",
  "cal",
  "bc",
  "dc",
  "expr",
  "seq",
  "free",
  "uptime",
  "arch",
  "groups",
  "users",
  "w",
  "who",
  "lsb_release",
  "yes",
  "factor",
  "numfmt",
  "sync",
  "mountpoint",
  "lscpu",
  "lsblk",
  "lsmem",
  "lspci",
  "lsusb",
  "pgrep",
  "pidof",
  "top",
  "htop",
  "vmstat",
  "iostat",
  "info",
  "apropos",
  "whatis",
  "tput",
  "stty",
  "clear",
  "reset",
  "cowsay",
  "figlet",
]);

function reader(access: PathAccess): Analyzer {
  return (call, scan) => {
    scan.findings.reads();
    checkOperands(call.args, scan, access);
  };
}

/** Every operand is a file the program writes (touch, mkdir, chmod's files…); `skip` leading operands are not. */
function writer(skip = 0, access: PathAccess = "write"): Analyzer {
  return (call, scan) => {
    scan.findings.writes(`runs \`${call.name}\``);
    const parsed = parseArgs(call.args, {
      shortWithValue: call.name === "truncate" ? "sr" : call.name === "install" ? "gmoStM" : "",
    });
    const reference = parsed.values("reference", "r");
    for (const file of reference) scan.path(file, "stat");
    const operands = parsed.operands.slice(reference.length > 0 ? 0 : skip);
    for (const operand of operands) scan.path(operand, access);
  };
}

const deleter: Analyzer = (call, scan) => {
  scan.findings.writes(`runs \`${call.name}\``);
  for (const operand of parseArgs(call.args).operands) scan.path(operand, "delete");
};

/** cp, mv, install, ln: sources are read (moved sources deleted), the destination written. */
function copier(mode: "copy" | "move" | "link"): Analyzer {
  return (call, scan) => {
    scan.findings.writes(`runs \`${call.name}\``);
    const parsed = parseArgs(call.args, {
      shortWithValue: call.name === "install" ? "gmotSC" : "tS",
      longWithValue: [
        "target-directory",
        "suffix",
        "backup",
        "reflink",
        "sparse",
        "preserve",
        "no-preserve",
        "context",
        "mode",
        "owner",
        "group",
        "strip-program",
      ],
      abbreviations: true,
    });
    if (call.name === "install" && parsed.has("d", "directory")) {
      for (const dir of parsed.operands) scan.path(dir, "write");
      return;
    }
    const targetDir = parsed.values("t", "target-directory").at(-1);
    const operands = parsed.operands;
    const destination = targetDir ?? (operands.length > 1 ? operands.at(-1) : undefined);
    const sources = targetDir ? operands : operands.slice(0, -1);
    if (!destination) {
      if (mode === "link" && operands[0]) scan.path(operands[0], "read"); // `ln -s target` links into cwd
      return;
    }
    const recursive = mode === "move" || parsed.has("r", "R", "a", "recursive", "archive");
    const symbolic = parsed.has("s", "symbolic");
    for (const source of sources) {
      if (mode === "link" && symbolic) scan.path(source, "read");
      else scan.path(source, mode === "move" ? "delete" : "read");
      if (mode === "move") scan.path(source, "read");
      if (recursive && mode !== "link") {
        scan.recursiveRead(source, call.name);
        scan.treeCopy(source, destination, call.name);
      }
      // What really gets written: DEST/basename(SOURCE) when DEST is a directory.
      if (source.literal && destination.literal && !parsed.has("T", "no-target-directory")) {
        const base = source.text.replace(/\/+$/, "").split("/").at(-1) ?? "";
        if (base && base !== "." && base !== "..")
          scan.path(syntheticWord(`${destination.text.replace(/\/+$/, "")}/${base}`), "write");
      }
    }
    scan.path(destination, "write");
  };
}

const tee: Analyzer = (call, scan) => {
  scan.findings.writes("tee writes files");
  for (const file of parseArgs(call.args, { longWithValue: ["output-error"] }).operands)
    scan.path(file, "write");
};

const dd: Analyzer = (call, scan) => {
  scan.findings.reads();
  for (const arg of call.args) {
    const match = /^(if|of)=/.exec(arg.text);
    if (!match) continue;
    const forms = arg.forms.map((f) => f.slice(3));
    const word: ShellWord = { text: forms[0] ?? "", forms, literal: arg.literal, source: arg.source };
    if (match[1] === "if") scan.path(word, "read");
    else {
      scan.findings.writes("dd writes a file");
      scan.path(word, "write");
    }
  }
};

const split: Analyzer = (call, scan) => {
  scan.findings.writes(`\`${call.name}\` writes pieces of a file`);
  const parsed = parseArgs(call.args, {
    shortWithValue: "abCdlnt",
    longWithValue: [
      "additional-suffix",
      "bytes",
      "line-bytes",
      "lines",
      "number",
      "separator",
      "filter",
      "suffix-length",
      "prefix",
      "digits",
    ],
    abbreviations: true,
  });
  if (parsed.has("filter")) scan.findings.opaque("`split --filter` runs a shell command");
  const [input, prefix] = parsed.operands;
  if (input) scan.path(input, "read");
  scan.path(prefix ?? syntheticWord(call.name === "csplit" ? "xx" : "x"), "write");
};

const sponge: Analyzer = (call, scan) => {
  scan.findings.writes("sponge writes a file");
  for (const file of parseArgs(call.args).operands) scan.path(file, "write");
};

// ---- sed ----

/**
 * What a sed script does beyond editing text: runs commands (`e`, `s///e`), writes files (`w`, `W`, `s///w`),
 * reads files (`r`, `R`). A linear walk over commands; anything it does not recognise makes the script opaque.
 */
export interface SedEffects {
  runs?: string;
  writes: string[];
  reads: string[];
  unknown?: string;
}

export function sedScriptEffects(script: string): SedEffects {
  const effects: SedEffects = { writes: [], reads: [] };
  const n = script.length;
  let i = 0;
  const skipBlanks = () => {
    while (i < n && /[ \t;]/.test(script.charAt(i))) i++;
  };
  const restOfLine = () => {
    const start = i;
    while (i < n && script.charAt(i) !== "\n") i++;
    return script.slice(start, i).trim();
  };
  /** Skips a delimited section starting after the delimiter; returns false if it never closes. */
  const delimited = (delimiter: string) => {
    while (i < n && script.charAt(i) !== delimiter) {
      if (script.charAt(i) === "\\") i++;
      if (script.charAt(i) === "\n" && delimiter !== "\n") return false;
      i++;
    }
    if (i >= n) return false;
    i++;
    return true;
  };
  const address = () => {
    const c = script.charAt(i);
    if (/[0-9]/.test(c)) {
      while (i < n && /[0-9~]/.test(script.charAt(i))) i++;
    } else if (c === "$") i++;
    else if (c === "/") {
      i++;
      if (!delimited("/")) return false;
      while (i < n && /[IM]/.test(script.charAt(i))) i++;
    } else if (c === "\\") {
      const delimiter = script.charAt(i + 1);
      i += 2;
      if (!delimited(delimiter)) return false;
      while (i < n && /[IM]/.test(script.charAt(i))) i++;
    }
    return true;
  };
  while (i < n) {
    skipBlanks();
    if (i >= n) break;
    if (script.charAt(i) === "\n" || script.charAt(i) === "}") {
      i++;
      continue;
    }
    if (script.charAt(i) === "#") {
      restOfLine();
      continue;
    }
    if (!address()) return { ...effects, unknown: "unterminated address" };
    if (script.charAt(i) === ",") {
      i++;
      if (script.charAt(i) === "+" || script.charAt(i) === "~") i++;
      if (!address()) return { ...effects, unknown: "unterminated address" };
    }
    while (i < n && /[ \t!]/.test(script.charAt(i))) i++;
    const command = script.charAt(i);
    i++;
    switch (command) {
      case "{":
      case "}":
      case "=":
      case "d":
      case "D":
      case "g":
      case "G":
      case "h":
      case "H":
      case "l":
      case "n":
      case "N":
      case "p":
      case "P":
      case "x":
      case "z":
      case "F":
        break;
      case "q":
      case "Q":
      case "L":
        while (i < n && /[ \t0-9]/.test(script.charAt(i))) i++;
        break;
      case ":":
      case "b":
      case "t":
      case "T":
      case "v":
        while (i < n && !/[;\n]/.test(script.charAt(i))) i++;
        break;
      case "a":
      case "i":
      case "c": {
        // Text to the end of the line; a trailing backslash continues it.
        for (;;) {
          const line = restOfLine();
          if (!line.endsWith("\\") || i >= n) break;
          i++;
        }
        break;
      }
      case "e": {
        const what = restOfLine();
        effects.runs ??= what ? `e ${what}` : "e (runs the pattern space)";
        break;
      }
      case "r":
      case "R":
        effects.reads.push(restOfLine());
        break;
      case "w":
      case "W":
        effects.writes.push(restOfLine());
        break;
      case "y": {
        const delimiter = script.charAt(i);
        i++;
        if (!delimited(delimiter) || !delimited(delimiter))
          return { ...effects, unknown: "unterminated y command" };
        break;
      }
      case "s": {
        const delimiter = script.charAt(i);
        if (!delimiter || delimiter === "\n" || delimiter === "\\")
          return { ...effects, unknown: "bad s command" };
        i++;
        if (!delimited(delimiter) || !delimited(delimiter))
          return { ...effects, unknown: "unterminated s command" };
        while (i < n && /[gpiImMe0-9w]/.test(script.charAt(i))) {
          const flag = script.charAt(i);
          i++;
          if (flag === "e") effects.runs ??= "s///e (runs the pattern space as a command)";
          if (flag === "w") {
            effects.writes.push(restOfLine());
            break;
          }
        }
        break;
      }
      default:
        return { ...effects, unknown: `sed command ${JSON.stringify(command)}` };
    }
  }
  return effects;
}

const sed: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: "efl",
    longWithValue: ["expression", "file", "line-length"],
    abbreviations: true,
  });
  const inPlace = parsed.has("i", "in-place");
  const sandboxed = parsed.has("sandbox");
  const scripts = parsed.values("e", "expression");
  const scriptFiles = parsed.values("f", "file");
  let operands = parsed.operands;
  if (scripts.length === 0 && scriptFiles.length === 0) {
    const first = operands[0];
    if (!first) return scan.findings.reads();
    scripts.push(first);
    operands = operands.slice(1);
  }
  if (scriptFiles.length > 0 && !sandboxed)
    return scan.findings.opaque("`sed -f` runs a script file the gate does not read");
  for (const script of scripts) {
    if (!script.literal) return scan.findings.opaque("sed script computed at run time");
    if (sandboxed) continue;
    if (script.text.length > MAX_PROGRAM_TEXT) return scan.findings.opaque("sed script too long to inspect");
    const effects = sedScriptEffects(script.text);
    if (effects.unknown) return scan.findings.opaque(`sed script the gate cannot read (${effects.unknown})`);
    if (effects.runs) return scan.findings.opaque(`sed runs a command (${effects.runs.slice(0, 80)})`);
    for (const file of effects.writes) {
      scan.findings.writes("sed script writes a file");
      scan.path(syntheticWord(file), "write");
    }
    for (const file of effects.reads) scan.path(syntheticWord(file), "read");
  }
  if (inPlace) scan.findings.writes("sed -i edits files in place");
  else scan.findings.reads();
  for (const operand of operands) {
    scan.path(operand, "read");
    if (inPlace) scan.path(operand, "write");
  }
};

// ---- sort ----

const sort: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "ktoST",
    longWithValue: [
      "key",
      "field-separator",
      "output",
      "buffer-size",
      "temporary-directory",
      "compress-program",
      "files0-from",
      "random-source",
      "batch-size",
      "parallel",
      "sort",
    ],
    abbreviations: true,
  });
  if (parsed.has("compress-program")) return scan.findings.opaque("`sort --compress-program` runs a program");
  if (parsed.has("files0-from")) {
    for (const file of parsed.values("files0-from")) scan.path(file, "read");
    scan.findings.readsSecret("sort reads files named in a list the gate cannot see");
  }
  for (const file of parsed.values("o", "output")) {
    scan.findings.writes("sort -o writes a file");
    scan.path(file, "write");
  }
  for (const file of parsed.values("random-source")) scan.path(file, "read");
  scan.findings.reads();
  for (const operand of parsed.operands) scan.path(operand, "read");
};

const uniq: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "fsw",
    longWithValue: ["skip-fields", "skip-chars", "check-chars", "all-repeated", "group"],
  });
  scan.findings.reads();
  const [input, output] = parsed.operands;
  if (input) scan.path(input, "read");
  if (output) {
    scan.findings.writes("uniq writes its output file");
    scan.path(output, "write");
  }
};

const diff: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "CDFIlLSUWxX",
    longWithValue: [
      "from-file",
      "to-file",
      "exclude-from",
      "label",
      "ignore-matching-lines",
      "starting-file",
      "show-function-line",
      "horizon-lines",
      "width",
      "tabsize",
      "palette",
      "color",
      "unified",
      "context",
      "changed-group-format",
      "new-group-format",
      "old-group-format",
      "unchanged-group-format",
      "line-format",
      "new-line-format",
      "old-line-format",
      "unchanged-line-format",
    ],
    abbreviations: true,
  });
  scan.findings.reads();
  const recursive = parsed.has("r", "recursive");
  for (const file of [...parsed.operands, ...parsed.values("from-file", "to-file", "X", "exclude-from")]) {
    scan.path(file, "read");
    if (recursive) scan.recursiveRead(file, call.name);
  }
};

// ---- archives and patches ----

const TAR_OLD_STYLE_VALUES = new Set(["f", "b", "L", "N", "T", "V", "X", "g", "K", "C", "I", "F", "H"]);

/** GNU tar's old-style first argument (`tar czf out.tgz dir`): letters, whose values follow in order. */
function tarArguments(args: readonly ShellWord[]): ShellWord[] {
  const first = args[0];
  if (!first || first.text.startsWith("-") || !/^[A-Za-z]+$/.test(first.text)) return [...args];
  const out: ShellWord[] = [];
  let next = 1;
  for (const letter of first.text) {
    out.push(syntheticWord(`-${letter}`, first.literal));
    if (TAR_OLD_STYLE_VALUES.has(letter) && args[next]) out.push(args[next++] as ShellWord);
  }
  return [...out, ...args.slice(next)];
}

const tar: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const bsd = call.name === "bsdtar";
  const parsed = parseArgs(tarArguments(call.args), {
    // bsdtar's -s takes a substitution; GNU tar's -s (same order) takes nothing.
    shortWithValue: bsd ? "fbLNTVXgKCIFHs" : "fbLNTVXgKCIFH",
    longWithValue: [
      "file",
      "blocking-factor",
      "tape-length",
      "newer",
      "after-date",
      "files-from",
      "label",
      "exclude-from",
      "listed-incremental",
      "starting-file",
      "directory",
      "use-compress-program",
      "info-script",
      "new-volume-script",
      "format",
      "checkpoint-action",
      "to-command",
      "rsh-command",
      "rmt-command",
      "index-file",
      "volno-file",
      "transform",
      "xform",
      "exclude",
      "owner",
      "group",
      "mode",
      "mtime",
      "strip-components",
      "checkpoint",
      "warning",
      "record-size",
      "occurrence",
      "sparse-version",
      "quoting-style",
      "quote-chars",
      "no-quote-chars",
      "backup",
      "suffix",
      "exclude-tag",
      "exclude-tag-under",
      "exclude-tag-all",
      "atime-preserve",
      "hole-detection",
      "pax-option",
      "newer-mtime",
      "numeric-owner",
      "group-map",
      "owner-map",
      "clamp-mtime",
      "level",
      "xattrs-include",
      "xattrs-exclude",
      "acls",
      "one-top-level",
      "keep-directory-symlink",
      "recursive-unlink",
    ],
    abbreviations: true,
  });
  const f = scan.findings;
  for (const [option, why] of [
    ["checkpoint-action", "runs checkpoint actions (exec=…)"],
    ["to-command", "pipes extracted files to a command"],
    ["I", "runs a compression program the command chose"],
    ["use-compress-program", "runs a compression program the command chose"],
    ["rsh-command", "runs a remote shell command"],
    ["rmt-command", "runs a remote tape command"],
    ["F", "runs a volume script"],
    ["info-script", "runs a volume script"],
    ["new-volume-script", "runs a volume script"],
  ] as const) {
    if (parsed.has(option)) return f.opaque(`tar ${why}`);
  }
  const archives = parsed.values("f", "file");
  for (const archive of archives) {
    if (/^[^/]*:/.test(archive.text) && !parsed.has("force-local"))
      f.sends(`tar uses a remote archive (${archive.source})`);
  }
  const directory = parsed.values("C", "directory").at(-1);
  const create = parsed.has("c", "create", "r", "append", "u", "update", "A", "catenate", "concatenate");
  const extract = parsed.has("x", "extract", "get");
  const toStdout = parsed.has("O", "to-stdout");
  for (const file of parsed.values("T", "files-from")) {
    scan.path(file, "read");
    if (create) f.readsSecret("tar archives files listed in a file (the gate cannot see them)");
  }
  for (const file of parsed.values("X", "exclude-from")) scan.path(file, "read");
  for (const file of parsed.values("g", "listed-incremental", "index-file", "volno-file"))
    scan.path(file, "write");
  if (create) {
    f.writes("tar writes an archive");
    for (const archive of archives) scan.path(archive, "write");
    for (const member of parsed.operands) {
      const word =
        directory && member.literal && !member.text.startsWith("/") && directory.literal
          ? syntheticWord(`${directory.text.replace(/\/$/, "")}/${member.text}`)
          : member;
      scan.recursiveRead(word, "tar");
      scan.path(word, "read");
    }
    return;
  }
  for (const archive of archives) scan.path(archive, "read");
  // The archive: -f's file (`-` is stdin), else stdin's redirect.
  const named = archives.at(-1);
  const archive = named && named.text !== "-" ? named : call.stdinFile;
  if (extract && toStdout) return scan.printArchive(archive, call.name);
  if (extract) {
    f.writes("tar extracts files");
    const strip = parsed.values("strip-components").at(-1);
    return scan.extractArchive(archive, directory, call.name, {
      ...(strip?.literal && /^\d+$/.test(strip.text) ? { strip: Number(strip.text) } : {}),
      absolute: parsed.has("P", "absolute-names"),
      transforms: parsed.values("transform", "xform", ...(bsd ? ["s"] : [])),
    });
  }
  f.reads();
};

const unzip: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, { shortWithValue: "dxP" });
  const [archive] = parsed.operands;
  if (archive) scan.path(archive, "read");
  if (parsed.has("p", "c")) return scan.printArchive(archive, call.name);
  if (parsed.has("l", "t", "v", "Z", "z")) return scan.findings.reads();
  scan.findings.writes("unzip extracts files");
  // `-:` keeps "../" in names; `-j` keeps base names only.
  scan.extractArchive(archive, parsed.values("d").at(-1), call.name, {
    absolute: call.args.some((a) => a.text === "-:"),
    junkPaths: parsed.has("j"),
  });
};

const zip: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "bintxPZ",
    longWithValue: ["unzip-command", "temp-path", "password", "include", "exclude", "out"],
    abbreviations: true,
  });
  if (
    parsed.has("TT", "unzip-command") ||
    call.args.some((a) => a.text === "-TT" || a.text.startsWith("--unzip-command"))
  )
    return scan.findings.opaque("`zip -TT` runs a test command");
  scan.findings.writes("zip writes an archive");
  const [archive, ...members] = parsed.operands;
  if (archive) scan.path(archive, "write");
  const recursive = parsed.has("r", "R", "recurse-paths");
  for (const member of members) {
    scan.path(member, "read");
    if (recursive) scan.recursiveRead(member, "zip");
  }
  if (call.stdinIsData || parsed.has("@")) scan.findings.readsSecret("zip archives files named on stdin");
};

const sevenZip: Analyzer = (call, scan) => {
  const [command, ...rest] = call.args;
  const parsed = parseArgs(rest);
  const archive = parsed.operands[0];
  if (archive) scan.path(archive, command?.text === "a" || command?.text === "u" ? "write" : "read");
  switch (command?.text) {
    case "x":
    case "e": {
      const output = call.args.find((a) => a.text.startsWith("-o"));
      scan.findings.writes("7z extracts files");
      return scan.treeWrite(
        output ? syntheticWord(output.text.slice(2), output.literal) : undefined,
        `${call.name} ${command.text}`,
      );
    }
    case "a":
    case "u":
      scan.findings.writes("7z writes an archive");
      for (const member of parsed.operands.slice(1)) scan.recursiveRead(member, call.name);
      return;
    default:
      scan.findings.reads();
  }
};

const cpio: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "DEFHIMORs",
    longWithValue: [
      "directory",
      "pattern-file",
      "file",
      "format",
      "message",
      "owner",
      "rsh-command",
      "block-size",
      "io-size",
    ],
    abbreviations: true,
  });
  if (parsed.has("rsh-command")) return scan.findings.opaque("cpio runs a remote shell command");
  for (const archive of parsed.values("F", "I", "O", "file"))
    if (/^[^/]*:/.test(archive.text)) scan.findings.sends("cpio uses a remote archive");
  if (parsed.has("o", "create"))
    return scan.findings.readsSecret("cpio archives files named on stdin (the gate cannot see them)");
  if (parsed.has("p", "pass-through")) {
    scan.findings.readsSecret("cpio copies files named on stdin");
    return scan.treeWrite(parsed.operands[0], "cpio -p");
  }
  if (parsed.has("i", "extract")) return scan.treeWrite(parsed.values("D", "directory").at(-1), "cpio -i");
  scan.findings.reads();
};

const ar: Analyzer = (call, scan) => {
  const mode = call.args[0]?.text ?? "";
  const archive = call.args[1];
  if (archive) scan.path(archive, /[rqdm]/.test(mode) ? "write" : "read");
  if (/x/.test(mode.replace(/^-/, ""))) {
    scan.findings.writes("ar extracts members");
    return scan.treeWrite(undefined, "ar x");
  }
  for (const member of call.args.slice(2)) scan.path(member, "read");
  if (/[rqdm]/.test(mode)) scan.findings.writes("ar changes an archive");
  else scan.findings.reads();
};

const jar: Analyzer = (call, scan) => {
  const mode = call.args[0]?.text ?? "";
  if (/x/.test(mode)) {
    const archive = /f/.test(mode) ? call.args[1] : call.stdinFile;
    if (archive) scan.path(archive, "read");
    return scan.extractArchive(archive, undefined, "jar x");
  }
  for (const operand of call.args.slice(1)) scan.path(operand, "read");
  if (/[cu]/.test(mode)) scan.findings.writes("jar writes an archive");
  else scan.findings.reads();
};

/** GNU patch writes the files the patch names (it does not refuse `.git/`): the gate cannot list them. */
const patch: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "BdDFgiopPrVYzz",
    longWithValue: [
      "directory",
      "input",
      "output",
      "strip",
      "reject-file",
      "backup-if-mismatch",
      "prefix",
      "basename-prefix",
      "suffix",
      "ifdef",
      "fuzz",
      "get",
      "quoting-style",
      "version-control",
      "reject-format",
      "read-only",
    ],
    abbreviations: true,
  });
  for (const file of parsed.values("i", "input")) scan.path(file, "read");
  for (const file of parsed.values("o", "output", "r", "reject-file")) scan.path(file, "write");
  if (parsed.has("dry-run", "C", "check")) return scan.findings.reads();
  scan.findings.writes("patch edits files");
  const [original, patchFile] = parsed.operands;
  if (patchFile) scan.path(patchFile, "read");
  if (original && !parsed.has("o", "output")) scan.path(original, "write");
  if (original) return;
  const strip = parsed.values("p", "strip").at(-1);
  scan.applyPatch(
    parsed.values("i", "input").at(-1) ?? call.stdinFile,
    parsed.values("d", "directory").at(-1),
    "patch",
    strip?.literal && /^\d+$/.test(strip.text) ? Number(strip.text) : undefined,
  );
};

/** gzip and friends compress or decompress in place: operands are written; -c/-t/-l only read. */
const compressor: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "S",
    longWithValue: ["suffix", "rsyncable"],
    abbreviations: true,
  });
  const readOnly = parsed.has("c", "stdout", "to-stdout", "t", "test", "l", "list") || /cat$/.test(call.name);
  if (readOnly) scan.findings.reads();
  else scan.findings.writes(`\`${call.name}\` rewrites files`);
  for (const operand of parsed.operands) {
    scan.path(operand, "read");
    if (!readOnly) scan.path(operand, "write");
  }
  if (parsed.has("r", "recursive"))
    for (const operand of parsed.operands) scan.recursiveRead(operand, call.name);
};

// ---- search ----

/** grep family: content of matching lines; -r reads trees; -f reads a pattern file. */
const grep: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "efmABCDd",
    longWithValue: [
      "regexp",
      "file",
      "max-count",
      "after-context",
      "before-context",
      "context",
      "devices",
      "directories",
      "include",
      "exclude",
      "exclude-from",
      "exclude-dir",
      "label",
      "color",
      "colour",
      "binary-files",
      "group-separator",
    ],
    abbreviations: true,
  });
  scan.findings.reads();
  for (const file of parsed.values("f", "file", "exclude-from")) scan.path(file, "read");
  const patternGiven = parsed.has("e", "regexp", "f", "file");
  const files = patternGiven ? parsed.operands : parsed.operands.slice(1);
  const recursive =
    call.name === "ack" || // ack searches trees by default
    parsed.has("r", "R", "recursive", "dereference-recursive") ||
    parsed.values("d", "directories").some((v) => v.text === "recurse");
  if (recursive && files.length === 0) scan.recursiveRead(syntheticWord("."), call.name);
  for (const file of files) {
    scan.path(file, "read");
    if (recursive) scan.recursiveRead(file, call.name);
  }
};

/** ripgrep: recursive by default; `--pre` runs a program on every file. */
const rg: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "efgmABCEjMtTrd",
    longWithValue: [
      "regexp",
      "file",
      "glob",
      "iglob",
      "max-count",
      "after-context",
      "before-context",
      "context",
      "encoding",
      "threads",
      "max-columns",
      "type",
      "type-not",
      "replace",
      "max-depth",
      "pre",
      "pre-glob",
      "type-add",
      "type-clear",
      "ignore-file",
      "path-separator",
      "sort",
      "sortr",
      "max-filesize",
      "dfa-size-limit",
      "regex-size-limit",
      "colors",
      "color",
      "context-separator",
      "field-context-separator",
      "field-match-separator",
      "engine",
      "hostname-bin",
      "hyperlink-format",
    ],
    abbreviations: true,
  });
  if (parsed.has("pre")) return scan.findings.opaque("`rg --pre` runs a program on every file");
  if (parsed.has("hostname-bin")) return scan.findings.opaque("`rg --hostname-bin` runs a program");
  scan.findings.reads();
  for (const file of parsed.values("f", "file", "ignore-file")) scan.path(file, "read");
  const patternGiven = parsed.has("e", "regexp", "f", "file") || parsed.has("files", "type-list");
  const paths = patternGiven ? parsed.operands : parsed.operands.slice(1);
  // rg and ag skip hidden files (`.env`, `~/.aws`) unless told otherwise; ack does not.
  const hidden =
    call.name === "ack" ||
    parsed.has(
      "hidden",
      ".",
      "u",
      "unrestricted",
      "no-ignore",
      "no-ignore-vcs",
      "no-ignore-dot",
      "no-config",
      "all-types",
      "skip-vcs-ignores",
    );
  // ripgrep reads our exclude config (ag and ack do not); its own globs come after it.
  const excludes =
    call.name === "rg" && !parsed.has("no-config")
      ? {
          globs: parsed.values("g", "glob", "iglob"),
          caseInsensitive: parsed.has("iglob", "glob-case-insensitive"),
        }
      : undefined;
  const roots = paths.length > 0 ? paths : [syntheticWord(".")];
  for (const root of roots) {
    scan.path(root, "read");
    scan.recursiveRead(root, call.name, { hidden, ...(excludes ? { excludes } : {}) });
  }
};

/** find: lists names; `-exec` runs a command on found files (their paths are patterns under the roots). */
const find: Analyzer = (call, scan) => {
  const f = scan.findings;
  const args = call.args;
  let i = 0;
  while (i < args.length && /^-[HLP]$|^-D$|^-O\d?$/.test(args[i]?.text ?? ""))
    i += args[i]?.text === "-D" ? 2 : 1;
  const rootsStart = i;
  while (i < args.length && !/^[-(!,]/.test(args[i]?.text ?? "")) i++;
  const roots = args.slice(rootsStart, i);
  const expression = args.slice(i);
  const searched = roots.length > 0 ? roots : [syntheticWord(".")];
  for (const root of searched) scan.path(root, "stat");
  const names = expression.flatMap((a, k) =>
    a.text === "-name" && expression[k + 1] ? [expression[k + 1] as ShellWord] : [],
  );
  const alternatives = expression.some((a) => ["-o", "-or", "!", "-not", ","].includes(a.text));
  const nameFilter = !alternatives && names.length === 1 && names[0]?.literal ? names[0].text : undefined;
  /** What `{}` stands for: any path under the roots (narrowed by a single -name). */
  const found = (): ShellWord => {
    const forms = searched.flatMap((root) => {
      const base = root.literal ? root.text.replace(/\/+$/, "") || "/" : DYNAMIC;
      return [`${base}/${DYNAMIC}${nameFilter ?? ""}`];
    });
    return { text: forms[0] ?? DYNAMIC, forms, literal: false, source: "{} (files find found)" };
  };
  for (let k = 0; k < expression.length; k++) {
    const text = expression[k]?.text ?? "";
    if (["-exec", "-execdir", "-ok", "-okdir"].includes(text)) {
      let end = k + 1;
      while (end < expression.length && expression[end]?.text !== ";" && expression[end]?.text !== "+") end++;
      const payload = expression
        .slice(k + 1, end)
        .map((word) => (word.text.includes("{}") ? substitute(word, found()) : word));
      if (payload.length === 0) return f.opaque("find -exec without a command");
      scan.command(payload, { stdinIsData: false });
      k = end;
    } else if (text === "-delete") {
      f.writes("find -delete removes files");
      scan.path(found(), "delete");
    } else if (["-fprint", "-fprint0", "-fprintf", "-fls"].includes(text)) {
      f.writes(`find ${text} writes a file`);
      const file = expression[k + 1];
      if (file) scan.path(file, "write");
    } else if (text === "-files0-from") {
      const file = expression[k + 1];
      if (file) scan.path(file, "read");
    } else if (["-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename"].includes(text)) {
      const pattern = expression[k + 1]?.text ?? "";
      if (
        /^(\*?\/)?(\.env|id_|\*\.pem|\*\.key|credentials|\.netrc|\.git-credentials|auth\.json|hosts\.yml|token|\.npmrc|\.pypirc)/i.test(
          pattern.replace(/^\*\//, ""),
        )
      )
        f.readsSecret(`find looks for credential files (${pattern})`);
    }
  }
  f.reads();
};

/** Replaces `{}` in a word with what it stands for (each form of `value`). */
function substitute(word: ShellWord, value: ShellWord): ShellWord {
  const forms = word.forms.flatMap((form) => value.forms.map((v) => form.replaceAll("{}", v)));
  return { text: forms[0] ?? "", forms, literal: false, source: word.source };
}

/** fd: lists names; `-x`/`-X` run a command on results. */
const fd: Analyzer = (call, scan) => {
  const exec = call.args.findIndex((a) => ["-x", "--exec", "-X", "--exec-batch"].includes(a.text));
  const head = exec === -1 ? call.args : call.args.slice(0, exec);
  const parsed = parseArgs(head, {
    shortWithValue: "edtESjcg",
    longWithValue: [
      "extension",
      "max-depth",
      "type",
      "exclude",
      "size",
      "threads",
      "changed-within",
      "changed-before",
      "owner",
      "base-directory",
      "search-path",
      "color",
      "ignore-file",
      "max-results",
      "path-separator",
      "format",
    ],
    abbreviations: true,
  });
  scan.findings.reads();
  const roots = parsed.operands.slice(1);
  for (const root of roots) scan.path(root, "stat");
  if (exec !== -1) {
    const forms = (roots.length ? roots : [syntheticWord(".")]).map(
      (r) => `${r.literal ? r.text.replace(/\/+$/, "") : DYNAMIC}/${DYNAMIC}`,
    );
    const value: ShellWord = {
      text: forms[0] ?? DYNAMIC,
      forms,
      literal: false,
      source: "{} (files fd found)",
    };
    const payload = call.args
      .slice(exec + 1)
      .map((w) =>
        /\{[/.]*\}|\{\/\/\}/.test(w.text)
          ? substitute({ ...w, forms: w.forms.map((f) => f.replace(/\{[/.]*\}|\{\/\/\}/g, "{}")) }, value)
          : w,
      );
    if (payload.length === 0) return scan.findings.opaque("fd -x without a command");
    const appended = payload.some((w) => w.source.includes("{")) ? payload : [...payload, value];
    scan.command(appended, { stdinIsData: false });
  }
};

// ---- pagers and editors ----

const less: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "bhjkoOpPtTxyz#",
    longWithValue: [
      "lesskey-file",
      "lesskey-src",
      "log-file",
      "LOG-FILE",
      "tag",
      "tag-file",
      "pattern",
      "prompt",
    ],
    abbreviations: true,
  });
  if (
    call.args.some(
      (a) => a.text.startsWith("+") && a.text.length > 1 && !/^\+(\d+|\/[^!]*|G|g)$/.test(a.text),
    )
  )
    return scan.findings.opaque("`less +cmd` runs less commands (`!` runs a shell)");
  if (parsed.has("k", "lesskey-file", "lesskey-src"))
    return scan.findings.opaque("less loads key bindings that can run commands");
  for (const file of parsed.values("o", "O", "log-file", "LOG-FILE")) scan.path(file, "write");
  scan.findings.reads();
  for (const file of parsed.operands) scan.path(file, "read");
};

const man: Analyzer = (call, scan) => {
  const parsed = parseArgs(call.args, {
    shortWithValue: "CdDeHLmMpPrRsSEt",
    longWithValue: [
      "config-file",
      "pager",
      "html",
      "browser",
      "manpath",
      "systems",
      "sections",
      "extension",
      "preprocessor",
      "locale",
      "encoding",
      "prompt",
      "troff-device",
    ],
    abbreviations: true,
  });
  if (parsed.has("P", "pager", "H", "html", "browser", "p", "preprocessor", "C", "config-file"))
    return scan.findings.opaque("man runs a pager, browser or preprocessor the command chose");
  scan.findings.reads();
  if (parsed.has("l", "local-file")) for (const file of parsed.operands) scan.path(file, "read");
};

const VIM_COMMAND_OPTIONS = [
  "c",
  "S",
  "s",
  "u",
  "U",
  "w",
  "W",
  "cmd",
  "remote",
  "remote-send",
  "remote-expr",
  "remote-silent",
  "remote-wait",
  "remote-tab",
  "servername",
];

const vim: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  const parsed = parseArgs(call.args, {
    shortWithValue: "cSsuUwWiTtqrV",
    longWithValue: ["cmd", "remote", "remote-send", "remote-expr", "servername", "startuptime", "log"],
  });
  const plusCommand = call.args.find((a) => a.text.startsWith("+") && !/^\+(\d*|\/[^|]*)$/.test(a.text));
  const exMode = parsed.has("e", "E") || call.name === "ex";
  if (plusCommand || VIM_COMMAND_OPTIONS.some((o) => parsed.has(o)) || exMode)
    return scan.findings.opaque(`\`${call.name}\` runs editor commands (\`:!\` runs a shell)`);
  scan.findings.writes(`\`${call.name}\` edits files`);
  for (const file of parsed.operands) {
    scan.path(file, "read");
    scan.path(file, "write");
  }
};

const emacs: Analyzer = (call, scan) => {
  if (
    call.args.some((a) =>
      /^(--eval|-l|--load|-f|--funcall|-x|--script|--batch|-batch|--execute|-e)/.test(a.text),
    )
  )
    return scan.findings.opaque(`\`${call.name}\` evaluates Lisp (which can run commands)`);
  scan.findings.writes(`\`${call.name}\` edits files`);
  checkOperands(call.args, scan, "write");
};

const nano: Analyzer = (call, scan) => {
  if (call.args.some((a) => /^(--rcfile|-f|--speller|-s)/.test(a.text)))
    return scan.findings.opaque("nano loads configuration or a speller program");
  scan.findings.writes("nano edits files");
  checkOperands(call.args, scan, "write");
};

/** ed reads its commands (which include `!cmd`) from stdin. */
const ed: Analyzer = (call, scan) => {
  if (call.stdinIsData)
    return scan.findings.opaque(`\`${call.name}\` runs editor commands from stdin (\`!\` runs a shell)`);
  scan.findings.writes(`\`${call.name}\` edits files`);
  checkOperands(call.args, scan, "write");
};

const FILE_TOOLS = new FamilyBuilder("file-tools")
  .add(CONTENT_READERS, reader("read"))
  .add(STAT_READERS, reader("stat"))
  // dos2unix and unix2dos convert in place; tidy rewrites with -m and writes -o files.
  .add(
    ["touch", "mkdir", "mkfifo", "mknod", "truncate", "chattr", "shred", "dos2unix", "unix2dos", "tidy"],
    writer(),
  )
  .add(["chmod", "chown", "chgrp", "setfacl"], writer(1))
  .add(["rm", "rmdir", "unlink"], deleter)
  .add(
    [
      "gzip",
      "gunzip",
      "bzip2",
      "bunzip2",
      "xz",
      "unxz",
      "zstd",
      "unzstd",
      "lz4",
      "lzma",
      "unlzma",
      "compress",
      "uncompress",
      "brotli",
      "pigz",
      "pbzip2",
    ],
    compressor,
  )
  .addAll({
    cp: copier("copy"),
    install: copier("copy"),
    mv: copier("move"),
    ln: copier("link"),
    link: copier("link"),
    tee,
    dd,
    split,
    csplit: split,
    sponge,
    sed,
    gsed: sed,
    sort,
    uniq,
    diff,
    tar,
    gtar: tar,
    bsdtar: tar,
    unzip,
    zip,
    "7z": sevenZip,
    "7za": sevenZip,
    "7zz": sevenZip,
    cpio,
    ar,
    jar,
    patch,
    grep,
    egrep: grep,
    fgrep: grep,
    zgrep: grep,
    ugrep: grep,
    rg,
    ag: rg,
    ack: grep,
    find,
    gfind: find,
    fd,
    fdfind: fd,
    less,
    more: less,
    most: less,
    pg: less,
    man,
    vim,
    vi: vim,
    nvim: vim,
    view: vim,
    gvim: vim,
    ex: vim,
    rvim: vim,
    emacs,
    emacsclient: emacs,
    nano,
    pico: nano,
    ed,
    red: ed,
  })
  .build();

export const FILE_TOOL_ANALYZERS: Readonly<Record<string, Analyzer>> = FILE_TOOLS;
