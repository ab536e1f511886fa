// Relations that must hold whatever the lists contain, so they keep holding as the lists grow:
// - every credential path the sensitive-path rules cover, read through any shell reader, spelling or wrapper,
//   needs a dialog with SECRET (as the read tool does);
// - a shell write to a path is at least as strict as the write tool writing it (TAMPER blocks, a file other
//   programs run later is an EXIT), whatever program or redirection writes it;
// - wrapping or re-spelling a gated command never makes it less strict.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import fc from "fast-check";
import { type Decision, decide } from "../../agent-runtime/gate/decide.ts";
import type { PathContext } from "../../agent-runtime/gate/path-context.ts";
import { SENSITIVE_RULES } from "../../agent-runtime/gate/sensitive-paths.ts";
import { CORPUS_CONTEXT, SHELL_CORPUS } from "../support/fixtures/gate-shell-corpus.ts";
import { gateParser } from "../support/gate-parser.ts";

const context = CORPUS_CONTEXT;
const parser = await gateParser();
const bash = (command: string): Decision =>
  decide({ policy: "auto", toolName: "bash", input: { command }, context, parser });
const STRICTNESS = { allow: 0, confirm: 1, block: 2 } as const;

/** Quotes a path for the shell (single quotes; the gate must see through them). */
const q = (p: string) => `'${p.replaceAll("'", "'\\''")}'`;

/** Ways to read a file's content into the output or elsewhere. */
const READERS: Array<(p: string) => string> = [
  (p) => `cat ${q(p)}`,
  (p) => `head -c 100 ${q(p)}`,
  (p) => `tail -n 5 -- ${q(p)}`,
  (p) => `base64 ${q(p)}`,
  (p) => `xxd ${q(p)}`,
  (p) => `strings ${q(p)}`,
  (p) => `sed -n p ${q(p)}`,
  (p) => `awk 1 ${q(p)}`,
  (p) => `sort ${q(p)}`,
  (p) => `grep -h . ${q(p)}`,
  (p) => `less ${q(p)}`,
  (p) => `cp ${q(p)} /tmp/copy`,
  (p) => `dd if=${q(p)}`,
  (p) => `tar cf - ${q(p)}`,
  (p) => `zip -r out.zip ${q(p)}`,
  (p) => `cat < ${q(p)}`,
  (p) => `< ${q(p)} wc -c`,
  (p) => `xargs -a ${q(p)} echo`,
  (p) => `curl file://${p}`,
  (p) => `git diff --no-index /dev/null ${q(p)}`,
  (p) => `ln -s ${q(p)} x && cat x`,
  (p) => `jq -R . ${q(p)}`,
  (p) => `python3 tool.py ${q(p)}`,
  (p) => `some-unknown-tool --input=${p}`,
  (p) => `cat "${p}"`,
  (p) => `cat ${p.replace(/.$/, "?")}`,
  (p) => `cat ${path.dirname(p)}/*`,
  (p) => `cat {${p},/dev/null}`,
  (p) => `cat ${p.startsWith(`${home()}/`) ? `~${p.slice(home().length)}` : p}`,
  (p) => `cat ${p.startsWith(`${home()}/`) ? `$HOME${p.slice(home().length)}` : p}`,
  (p) => `cat $(printf %s ${q(p)})`,
  (p) => `sudo cat ${q(p)}`,
  (p) => `env -i cat ${q(p)}`,
  (p) => `bash -c "cat ${p}"`,
  (p) => `timeout 5 nice cat ${q(p)}`,
  (p) => `find ${q(path.dirname(p))} -type f -exec cat {} +`,
  (p) => `grep -r . ${q(path.dirname(p))}`,
  (p) => `rg --hidden -uu . ${q(path.dirname(p))}`,
  (p) => `cd ${q(path.dirname(p))} && cat ${q(path.basename(p))}`,
];

/** A real tree (cwd and HOME in a temp dir) holding every credential file the rules give as an example. */
let realContext: PathContext | undefined;
const home = () => realContext?.home ?? context.home;

function sensitiveProbes(ctx: PathContext): string[] {
  return [
    ...new Set(SENSITIVE_RULES.flatMap((rule) => rule.probes(ctx).filter((p) => rule.matches(p, ctx)))),
  ];
}

test("every credential path, through every reader, spelling and wrapper, needs a dialog with SECRET", (t) => {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), "gate-relations-")));
  t.after(() => {
    realContext = undefined;
    rmSync(root, { recursive: true, force: true });
  });
  realContext = {
    cwd: path.join(root, "work", "project"),
    home: path.join(root, "home", "agent"),
    agentDir: path.join(root, "home", "agent", ".pi", "agent"),
    policyPath: "/run/chat-ui-agent/policy",
    gateDirs: ["/opt/chat-ui-agent"],
  };
  mkdirSync(realContext.cwd, { recursive: true });
  const probes = sensitiveProbes(realContext);
  assert.ok(probes.length >= 10, `${probes.length} probes`);
  for (const probe of probes) {
    if (!probe.startsWith(`${root}/`)) continue; // /proc and /run/secrets: matched by name
    mkdirSync(path.dirname(probe), { recursive: true });
    writeFileSync(probe, "not-a-real-secret\n");
  }
  const ctx = realContext;
  const failures: string[] = [];
  for (const probe of probes) {
    for (const reader of READERS) {
      const command = reader(probe);
      const d = decide({ policy: "auto", toolName: "bash", input: { command }, context: ctx, parser });
      if (d.decision === "allow" || !(d.classes.includes("SECRET") || d.classes.includes("UNKNOWN")))
        failures.push(`${command}: ${d.decision} [${d.classes}]`);
    }
  }
  assert.deepEqual(failures, []);
});

/** Ways to write a file. */
const WRITERS: Array<(p: string) => string> = [
  (p) => `echo x > ${q(p)}`,
  (p) => `echo x >> ${q(p)}`,
  (p) => `echo x >| ${q(p)}`,
  (p) => `echo x &> ${q(p)}`,
  (p) => `printf x | tee ${q(p)}`,
  (p) => `printf x | tee -a ${q(p)}`,
  (p) => `cp src.txt ${q(p)}`,
  (p) => `cp ${q(path.basename(p))} ${q(path.dirname(p))}/`,
  (p) => `mv src.txt ${q(p)}`,
  (p) => `ln -sf /tmp/x ${q(p)}`,
  (p) => `install -m 755 src.txt ${q(p)}`,
  (p) => `dd if=src.txt of=${q(p)}`,
  (p) => `sed -i s/a/b/ ${q(p)}`,
  (p) => `sort -o ${q(p)} src.txt`,
  (p) => `curl -s -o ${q(p)} https://x.example/f`,
  (p) => `wget -q -O ${q(p)} https://x.example/f`,
  (p) => `rsync src.txt ${q(p)}`,
  (p) => `cat > ${q(p)} <<'EOF'\nx\nEOF`,
  (p) => `bash -c 'echo x > ${p}'`,
  (p) => `sudo tee ${q(p)} < src.txt`,
  (p) => `env cp src.txt ${q(p)}`,
  (p) => `truncate -s 0 ${q(p)}`,
  (p) => `chmod +x ${q(p)}`,
  (p) => `touch ${q(p)}`,
  (p) => `awk 'BEGIN{print "x" > "${p}"}'`,
  (p) => `find . -maxdepth 0 -fprint ${q(p)}`,
  (p) => `P=${q(p)}; echo x > "$P"`,
  (p) => `cd ${q(path.dirname(p))} && echo x > ${q(path.basename(p))}`,
  (p) => `echo x > ${p.replace(/^\/home\/agent(?=\/)/, "~")}`,
];

/** Files the gate protects or that other programs run later; the write tool's decision is the reference. */
const WRITE_TARGETS = [
  "/work/project/.git/hooks/pre-commit",
  "/work/project/.git/hooks/post-checkout",
  "/work/project/.git/config",
  "/work/project/sub/.git/hooks/pre-push",
  "/home/agent/.gitconfig",
  "/home/agent/.config/git/config",
  "/home/agent/.npmrc",
  "/work/project/.npmrc",
  "/home/agent/.ssh/config",
  "/home/agent/.ssh/authorized_keys",
  "/home/agent/.bashrc",
  "/home/agent/.profile",
  "/work/project/.envrc",
  "/home/agent/.curlrc",
  "/home/agent/.wgetrc",
  "/home/agent/.git-templates/hooks/post-checkout",
  "/run/chat-ui-agent/policy",
  "/opt/chat-ui-agent/approval-gate.mjs",
  "/home/agent/.pi/agent/settings.json",
  "/home/agent/.pi/agent/extensions/x.ts",
  "/work/project/.pi/settings.json",
];

test("a shell write is at least as strict as the write tool on the same path (TAMPER blocks, later-run files exit)", () => {
  const failures: string[] = [];
  for (const target of WRITE_TARGETS) {
    const reference = decide({
      policy: "auto",
      toolName: "write",
      input: { path: target, content: "x" },
      context,
      parser: undefined,
    });
    for (const writer of WRITERS) {
      const command = writer(target);
      const d = bash(command);
      if (STRICTNESS[d.decision] < STRICTNESS[reference.decision])
        failures.push(
          `${command}: ${d.decision}, the write tool ${reference.decision} [${reference.classes}]`,
        );
      for (const cls of ["TAMPER", "EXIT", "SECRET"] as const) {
        if (reference.classes.includes(cls) && !d.classes.includes(cls) && !d.classes.includes("UNKNOWN"))
          failures.push(`${command}: lacks ${cls} [${d.classes}]`);
      }
    }
  }
  assert.deepEqual(failures, []);
});

/** Wrappers that run one simple command (they apply to the first command only, so only simple ones). */
const PREFIX_WRAPPINGS: Array<(c: string) => string> = [
  (c) => `sudo ${c}`,
  (c) => `sudo -u root -- ${c}`,
  (c) => `env ${c}`,
  (c) => `env -i PATH=/usr/bin ${c}`,
  (c) => `timeout 10 ${c}`,
  (c) => `nice -n 5 ${c}`,
  (c) => `nohup ${c}`,
  (c) => `command ${c}`,
  (c) => `exec ${c}`,
  (c) => `time ${c}`,
  (c) => `stdbuf -oL ${c}`,
  (c) => `setsid ${c}`,
  (c) => `busybox ${c}`,
];

/** Wrappers and re-spellings that run any command. */
const WRAPPINGS: Array<(c: string) => string> = [
  (c) => `bash -c ${q(c)}`,
  (c) => `sh -c ${q(c)}`,
  (c) => `bash -c "bash -c ${q(c).replaceAll('"', '\\"')}"`,
  (c) => `su -c ${q(c)} agent`,
  (c) => `script -qc ${q(c)} /dev/null`,
  (c) => `watch -n 1 ${q(c)}`,
  (c) => `flock /tmp/l -c ${q(c)}`,
  (c) => `true && ${c}`,
  (c) => `false || ${c}`,
  (c) => `: ; ${c}`,
  (c) => `${c} || true`,
  (c) => `(${c})`,
  (c) => `{ ${c}; }`,
  (c) => `echo "$(${c})"`,
  (c) => `x=$(${c})`,
  (c) => `cat <(${c})`,
  (c) => `if true; then ${c}; fi`,
  (c) => `for i in 1; do ${c}; done`,
  (c) => `f() { ${c}; }; f`,
  (c) => `${c} &`,
  (c) => `! ${c}`,
  (c) => `${c} 2>/dev/null`,
  (c) => `${c} # comment`,
  (c) => `! ${c}`,
  (c) => `! ! ${c}`,
  (c) => `time ${c}`,
  (c) => `while false; do :; done; ${c}`,
  (c) => `until ${c}; do break; done`,
  (c) => `case x in *) ${c};; esac`,
  (c) => `[[ -n "$(${c})" ]]`,
  (c) => `(( $(${c}) ))`,
  (c) => `echo $((1 + $(${c})))`,
  (c) => `cat <<EOF\n$(${c})\nEOF`,
  (c) => `cat <<< "$(${c})"`,
  (c) => `a=($(${c}))`,
  (c) => `echo "\${x:-$(${c})}"`,
  (c) => `export X="$(${c})"`,
  (c) => `f() { local x; x=$(${c}); }; f`,
  (c) => `trap ${q(c)} EXIT`,
  (c) => `${c} | cat`,
  (c) => `echo x | ${c}`,
  (c) => `${c} > /dev/null`,
  (c) => `echo x > >(${c})`,
  (c) => `coproc { ${c}; }`,
  (c) => `${c} &\nwait`,
  (c) => `${c};`,
  (c) => `\\\n${c}`,
];

/** Re-spellings of one argument word that bash passes unchanged. */
const RESPELL_WORD: Array<(word: string) => string> = [
  (w) => `'${w}'`,
  (w) => `"${w}"`,
  (w) => `${w.slice(0, 1)}''${w.slice(1)}`,
  (w) => `${w.slice(0, 1)}\\\n${w.slice(1)}`,
  (w) => (/^[a-z0-9]/.test(w) ? `\\${w}` : w),
  (w) => `$'${w}'`,
];

/** Re-spellings of a simple command's program name that bash reads as the same name. */
const RESPELL: Array<(name: string) => string> = [
  (n) => `"${n}"`,
  (n) => `'${n}'`,
  (n) => `\\${n}`,
  (n) => `${n.slice(0, 1)}""${n.slice(1)}`,
  (n) => `${n.slice(0, 1)}\\\n${n.slice(1)}`,
  (n) => `$'${[...n].map((c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("")}'`,
  (n) => (n.includes("/") ? n : `/usr/bin/${n}`),
];

const gated = SHELL_CORPUS.filter((c) => c.auto !== "allow" && !c.cmd.includes("\n") && c.cmd.length < 200);
/** Simple commands (no lists, pipes, substitutions or redirections): prefix wrappers apply to them whole. */
const isSimple = (cmd: string) =>
  !/[;&|<>()`$\n{}!#]/.test(cmd) && !/^(cd|export|declare|alias|set|IFS=|[A-Za-z_]+=)/.test(cmd);

test("wrapping a gated command never makes it less strict (random wrappers, nested)", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...gated),
      fc.array(fc.constantFrom(...WRAPPINGS, ...PREFIX_WRAPPINGS), { minLength: 1, maxLength: 3 }),
      (entry, wraps) => {
        let command = entry.cmd;
        for (const wrap of wraps) {
          if (PREFIX_WRAPPINGS.includes(wrap) && !isSimple(command)) continue;
          command = wrap(command);
        }
        const d = bash(command);
        const base = bash(entry.cmd);
        // TAMPER blocks what the gate can see; a wrapper that hides the literal path (a coprocess, a
        // subshell that loses the variable) leaves a computed path: a dialog (UNKNOWN), never an allow.
        const hiddenTamper =
          base.decision === "block" && d.decision === "confirm" && d.classes.includes("UNKNOWN");
        assert.ok(
          STRICTNESS[d.decision] >= STRICTNESS[base.decision] || hiddenTamper,
          `${JSON.stringify(command)} is ${d.decision}, ${JSON.stringify(entry.cmd)} is ${base.decision}`,
        );
      },
    ),
    { numRuns: 3000, seed: 1010 },
  );
});

test("re-spelling any argument of a gated simple command never makes it less strict", () => {
  const failures: string[] = [];
  for (const entry of gated) {
    if (!isSimple(entry.cmd) || /["'\\]/.test(entry.cmd)) continue;
    const words = entry.cmd.split(" ");
    const base = bash(entry.cmd);
    for (let i = 1; i < words.length; i++) {
      const word = words[i] ?? "";
      if (!/^[\w./:@%+,=~-]+$/.test(word)) continue;
      for (const respell of RESPELL_WORD) {
        const command = [...words.slice(0, i), respell(word), ...words.slice(i + 1)].join(" ");
        const d = bash(command);
        if (STRICTNESS[d.decision] < STRICTNESS[base.decision])
          failures.push(`${JSON.stringify(command)}: ${d.decision}, base ${base.decision}`);
      }
    }
  }
  assert.deepEqual(failures, []);
});

test("re-spelling the program name of a gated simple command never makes it less strict", () => {
  const failures: string[] = [];
  for (const entry of gated) {
    const match = /^([a-z][\w.-]*)( .*)?$/s.exec(entry.cmd);
    if (!match?.[1] || /[;&|<>()$`]/.test(entry.cmd)) continue;
    const base = bash(entry.cmd);
    for (const respell of RESPELL) {
      const command = `${respell(match[1])}${match[2] ?? ""}`;
      const d = bash(command);
      if (STRICTNESS[d.decision] < STRICTNESS[base.decision])
        failures.push(`${JSON.stringify(command)}: ${d.decision}, base ${base.decision}`);
    }
  }
  assert.deepEqual(failures, []);
});
