// Tells the bridge when a small file an operator may change under it (the policy, the network mode) may have
// changed. Writers replace the file by rename, so the directory is watched (a watch on the file would follow the
// old inode); events are coalesced. Where the kernel refuses a watch (inotify limits), a slow poll stands in.
import { type FSWatcher, watch } from "node:fs";
import path from "node:path";

/** Changes within this window become one reread. */
const COALESCE_MS = 25;
/** The poll interval when no watch can be set. */
const POLL_MS = 1_000;

export interface FileWatch {
  close(): void;
}

export function watchFile(
  file: string,
  onChange: () => void,
  onProblem: (message: string) => void,
  pollMs: number = POLL_MS,
): FileWatch {
  const name = path.basename(file);
  let timer: NodeJS.Timeout | undefined;
  let poll: NodeJS.Timeout | undefined;
  let closed = false;
  const fire = () => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      if (!closed) onChange();
    }, COALESCE_MS);
    timer.unref();
  };
  const startPolling = (why: string) => {
    if (poll || closed) return;
    onProblem(`cannot watch ${path.dirname(file)} (${why}): polling every ${pollMs} ms`);
    poll = setInterval(fire, pollMs);
    poll.unref();
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(path.dirname(file), { persistent: false }, (_event, changed) => {
      // Some platforms give no name: then any change in the directory counts.
      if (changed === null || changed === name) fire();
    });
    watcher.on("error", (err) => {
      watcher?.close();
      startPolling((err as NodeJS.ErrnoException).code ?? err.message);
    });
  } catch (err) {
    startPolling((err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
  return {
    close() {
      closed = true;
      watcher?.close();
      if (timer) clearTimeout(timer);
      if (poll) clearInterval(poll);
    },
  };
}
