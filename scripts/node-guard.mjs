// The one definition of "Node too old" for our scripts and bundles. Plain JS, no dependencies,
// so it runs (and explains itself in one line) on any Node. Pi 0.84.2 needs >= 22.19.
export const MIN_NODE = "22.19";

/** JS source that exits with one line when the running Node is too old (esbuild banner, npm scripts). */
export function guardSource(program) {
  const [major, minor] = MIN_NODE.split(".").map(Number);
  return (
    "{const v=process.versions.node.split('.').map(Number);" +
    `if(v[0]<${major}||(v[0]===${major}&&v[1]<${minor})){process.stderr.write(` +
    `${JSON.stringify(`${program}: Node `)}+process.versions.node+` +
    `${JSON.stringify(` is too old; Node >= ${MIN_NODE} is required (run "npm ci": npm scripts then use the pinned Node 22 from node_modules/.bin).\n`)}` +
    ");process.exit(1);}}"
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  new Function(guardSource(process.argv[2] ?? "chat-ui-agent-runtime"))();
}
