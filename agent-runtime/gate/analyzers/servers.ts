// Servers and tunnels that expose the workspace, a shell or a debugger to the network (issue 10, class 9): exits.
// The sandbox's port proxy can reach any listening port, so binding to loopback does not make them local.
import type { Analyzer, Scan } from "../shell-scan.ts";
import { onlyAsksVersion } from "./common.ts";

export function serverFinding(scan: Scan, what: string) {
  scan.findings.sends(`\`${what}\` serves files, a shell or code execution over the network`);
}

function server(what?: string): Analyzer {
  return (call, scan) => {
    if (onlyAsksVersion(call.args)) return scan.findings.reads();
    serverFinding(scan, what ?? call.name);
  };
}

/** Programs that serve only in some subcommands (`jupyter notebook`, `caddy file-server`, `git daemon`). */
function serverWhen(subcommands: readonly string[]): Analyzer {
  return (call, scan) => {
    const sub = call.args.find((a) => !a.text.startsWith("-"));
    if (!sub?.literal || subcommands.includes(sub.text))
      return serverFinding(scan, `${call.name} ${sub?.text ?? ""}`.trim());
    scan.findings.writes(`runs \`${call.name} ${sub.text}\``);
  };
}

const tunnel: Analyzer = (call, scan) => {
  if (onlyAsksVersion(call.args)) return scan.findings.reads();
  scan.findings.sends(`\`${call.name}\` opens a tunnel that exposes local ports`);
};

const jupyter: Analyzer = (call, scan) => {
  const sub = call.args.find((a) => !a.text.startsWith("-"));
  if (!sub?.literal) return serverFinding(scan, "jupyter");
  if (sub.text === "nbconvert" && call.args.some((a) => a.text === "--execute")) {
    const notebooks = call.args.filter((a) => /\.ipynb$/.test(a.text));
    return scan.localCode("python", "jupyter nbconvert --execute", notebooks);
  }
  if (["notebook", "lab", "server", "console", "qtconsole", "kernel", "execute", "run"].includes(sub.text))
    return serverFinding(scan, `jupyter ${sub.text}`);
  scan.findings.writes(`runs \`jupyter ${sub.text}\``);
};

export const SERVER_ANALYZERS: Readonly<Record<string, Analyzer>> = {
  "http-server": server(),
  serve: server(),
  "live-server": server(),
  "lite-server": server(),
  "browser-sync": server(),
  "static-server": server(),
  httpster: server(),
  "simple-http-server": server(),
  miniserve: server(),
  sfz: server(),
  updog: server(),
  uploadserver: server(),
  darkhttpd: server(),
  webfsd: server(),
  thttpd: server(),
  mini_httpd: server(),
  busybox_httpd: server(),
  httpd: server(),
  lighttpd: server(),
  nginx: server(),
  apache2: server(),
  apachectl: server(),
  caddy: serverWhen(["file-server", "run", "start", "reverse-proxy", "respond"]),
  twistd: server(),
  "code-server": server(),
  ttyd: server(),
  gotty: server(),
  sshd: server(),
  dropbear: server(),
  "python-http-server": server(),
  pyftpdlib: server(),
  jupyter,
  "jupyter-notebook": server(),
  "jupyter-lab": server(),
  ngrok: tunnel,
  cloudflared: tunnel,
  lt: tunnel,
  localtunnel: tunnel,
  bore: tunnel,
  frpc: tunnel,
  tailscale: tunnel,
  zrok: tunnel,
  "localhost.run": tunnel,
  // `python -m X` modules are dispatched here under the module's name.
  "http.server": server("python -m http.server"),
};
