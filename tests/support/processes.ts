// Finding test processes by their command line (a marker the test put there), through /proc.
import { readdirSync, readFileSync } from "node:fs";

/** Pids of live processes whose command line contains `needle`. */
export function processesWithCmdline(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "latin1");
      if (/\) [ZX] /.test(stat)) continue; // dead, waiting to be reaped
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmdline.includes(needle)) found.push(Number(entry));
    } catch {}
  }
  return found;
}
