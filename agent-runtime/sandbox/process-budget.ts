// How many tasks the tools may have: below the container's pids budget, with a reserve for the bridge, Pi and
// sbx-server (thread per connection). RLIMIT_NPROC counts every task of the tools' real uid, threads included;
// under `--user 1000` that uid is also the bridge's, Pi's and sbx-server's, so the cap is the budget minus the
// reserve in both modes: whatever the tools hold, the reserve stays for the others (who have no such limit).
import { readFileSync } from "node:fs";

/** Where a container's pids budget is (cgroup v2, then v1). */
export const PIDS_MAX_FILES = ["/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"] as const;
/** The tools' cap when the container has no pids budget ("max", or no pids controller). */
export const UNBUDGETED_TOOLS_NPROC = 4096;
/** The tools' score for the OOM killer: first in line (they cannot lower it: /proc is read-only in their domain). */
export const TOOLS_OOM_SCORE_ADJ = 1000;
const MIN_RESERVE = 32;
const MAX_RESERVE = 512;
const MIN_TOOLS = 16;

export interface ProcessBudget {
  /** The container's pids.max (null: none found, or "max"). */
  containerMax: number | null;
  source: string | null;
  /** RLIMIT_NPROC for the tools. */
  toolsNproc: number;
  /** Tasks left for the bridge, Pi and sbx-server when the tools hold all theirs. */
  reserve: number | null;
}

export function processBudget(
  read: (file: string) => string = (file) => readFileSync(file, "utf8"),
): ProcessBudget {
  for (const file of PIDS_MAX_FILES) {
    let text: string;
    try {
      text = read(file).trim();
    } catch {
      continue;
    }
    if (text === "max")
      return { containerMax: null, source: file, toolsNproc: UNBUDGETED_TOOLS_NPROC, reserve: null };
    if (!/^\d{1,9}$/.test(text)) continue;
    const max = Number(text);
    const reserve = Math.min(MAX_RESERVE, Math.max(MIN_RESERVE, Math.round(max / 4)));
    const toolsNproc = Math.max(MIN_TOOLS, max - reserve);
    return { containerMax: max, source: file, toolsNproc, reserve: Math.max(0, max - toolsNproc) };
  }
  return { containerMax: null, source: null, toolsNproc: UNBUDGETED_TOOLS_NPROC, reserve: null };
}
