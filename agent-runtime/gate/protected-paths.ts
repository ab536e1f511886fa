// Paths whose change would change the gate itself: the policy file (and its directory), the gate's
// install directory, and Pi's agent dir (settings, extensions, auth) plus a project's .pi directory.
import path from "node:path";
import { POLICY_DIR } from "../runtime-paths.ts";
import { isWithin, type PathContext } from "./path-context.ts";

export { POLICY_DIR };

/**
 * `ancestors`: also count a directory above a protected path (moving or deleting it takes the policy with it).
 */
export function tamperReasonFor(
  file: string,
  ctx: PathContext,
  options: { ancestors?: boolean } = {},
): string | undefined {
  const policy = `changes the approval policy (${ctx.policyPath})`;
  if (file === ctx.policyPath || isWithin(file, POLICY_DIR)) return policy;
  if (options.ancestors && isWithin(ctx.policyPath, file)) return policy;
  for (const dir of ctx.gateDirs) {
    if (isWithin(file, dir)) return `changes the approval gate (${dir})`;
  }
  if (isWithin(file, ctx.agentDir))
    return `changes Pi's agent settings, extensions or auth (${ctx.agentDir})`;
  const projectPi = path.join(ctx.cwd, ".pi");
  if (isWithin(file, projectPi)) return `changes the project's Pi settings or extensions (${projectPi})`;
  if (options.ancestors) {
    for (const dir of [...ctx.gateDirs, ctx.agentDir]) {
      if (isWithin(dir, file)) return `moves or removes a directory holding the approval gate (${dir})`;
    }
  }
  return undefined;
}

/**
 * Files that other programs run or obey later (git hooks and config today): writing one is a possible exit,
 * because a later, innocent-looking command runs what it says. `ctx` gives HOME and cwd for per-user files.
 */
export function laterExecReasonFor(file: string, _ctx: PathContext): string | undefined {
  const parts = file.split(path.sep);
  const gitIndex = parts.lastIndexOf(".git");
  if (gitIndex === -1) return undefined;
  const inside = parts.slice(gitIndex + 1);
  if (inside[0] === "hooks") return "writes a git hook (runs on later git commands)";
  if (inside[0] === "config" && inside.length === 1)
    return "writes git config (aliases, hooks, pager can run commands)";
  return undefined;
}
