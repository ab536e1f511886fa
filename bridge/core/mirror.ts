// What the bridge knows of Pi's state without asking: the last get_state data, the queues (queue_update),
// whether a turn runs (agent_start … agent_settled) and which session Pi is on. A client that cannot replay
// rebuilds its view from this snapshot.
import type { QueueSnapshot } from "../protocol.ts";
import { type Frame, isRecord } from "./frames.ts";

export interface SessionInfo {
  sessionId: string;
  sessionFile: string | null;
}

export class Mirror {
  state: Record<string, unknown> | null = null;
  queue: QueueSnapshot = { steering: [], followUp: [] };
  /** A turn runs (between agent_start and agent_settled). */
  agentBusy = false;
  session: SessionInfo | undefined;
  private readonly onSession: ((session: SessionInfo) => void) | undefined;

  constructor(options: { onSession?: (session: SessionInfo) => void }) {
    this.onSession = options.onSession;
  }

  /** Takes what a parsed Pi line says about the state; true when agentBusy changed. */
  noteLine(line: Frame): boolean {
    switch (line.type) {
      case "queue_update":
        if (Array.isArray(line.steering) && Array.isArray(line.followUp)) {
          this.queue = { steering: line.steering as string[], followUp: line.followUp as string[] };
        }
        return false;
      case "agent_start":
        return this.setBusy(true);
      case "agent_settled":
        return this.setBusy(false);
      default:
        return false;
    }
  }

  /** Keeps Pi's state, and tells the owner when Pi is on another session than last reported. */
  noteState(data: unknown): void {
    if (!isRecord(data)) return;
    this.state = data;
    const sessionId = typeof data.sessionId === "string" ? data.sessionId : undefined;
    if (!sessionId) return;
    const sessionFile = typeof data.sessionFile === "string" ? data.sessionFile : null;
    if (this.session?.sessionId === sessionId && this.session.sessionFile === sessionFile) return;
    this.session = { sessionId, sessionFile };
    this.onSession?.(this.session);
  }

  /** Pi started a new session object: its queues are gone without a queue_update. */
  sessionReplaced(): void {
    this.queue = { steering: [], followUp: [] };
  }

  /** Pi is gone: no turn runs any more. */
  agentGone(): void {
    this.agentBusy = false;
  }

  queueCopy(): QueueSnapshot {
    return { steering: [...this.queue.steering], followUp: [...this.queue.followUp] };
  }

  private setBusy(busy: boolean): boolean {
    const changed = this.agentBusy !== busy;
    this.agentBusy = busy;
    return changed;
  }
}
