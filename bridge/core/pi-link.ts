// The link to the Pi that runs now: every line the bridge writes to it goes out with one of the bridge's own
// ids, and the route kept under that id says where Pi's response goes (a client command, a dialog answer, an
// internal request, or nowhere). When Pi goes, every route is failed at once (`failAll`).
import type { AgentUnit } from "../pi-child.ts";
import type { Clock } from "./clock.ts";
import { type Frame, isRecord } from "./frames.ts";

export type Route =
  | {
      kind: "client";
      clientId: string | undefined;
      command: string;
      /** Sent to a Pi still being probed (early-answers.ts): its answer waits for the verdict. */
      early?: true;
    }
  | { kind: "dialog"; dialogId: string; clientId: string | undefined }
  | { kind: "internal"; resolve: (response: Frame | undefined) => void }
  | { kind: "ignore" };

export class PiLink {
  private unit: AgentUnit | undefined;
  private readonly routes = new Map<string, Route>();
  private nextId = 1;
  private readonly clock: Clock;

  constructor(clock: Clock) {
    this.clock = clock;
  }

  /** The Pi lines are written to from now on (routes of an earlier one must have been failed). */
  connect(unit: AgentUnit): void {
    this.unit = unit;
  }

  allocId(): string {
    return `b${this.nextId++}`;
  }

  /** Writes `command` under a new id of ours, its response going to `route`; returns that id. */
  send(command: Frame, route: Route): string {
    const piId = this.allocId();
    this.routes.set(piId, route);
    this.write({ ...command, id: piId });
    return piId;
  }

  /** Keeps a route for an id given out already (an exchange whose lines carry their own ids). */
  track(piId: string, route: Route): void {
    this.routes.set(piId, route);
  }

  write(command: Frame): void {
    this.unit?.write(`${JSON.stringify(command)}\n`);
  }

  /** Sends an internal command; its response, or undefined after `timeoutMs` or when Pi goes. */
  request(command: Frame, timeoutMs: number): Promise<Frame | undefined> {
    const piId = this.allocId();
    return new Promise((resolve) => {
      const timer = this.clock.set(timeoutMs, () => {
        this.routes.delete(piId);
        resolve(undefined);
      });
      this.routes.set(piId, {
        kind: "internal",
        resolve: (response) => {
          this.clock.clear(timer);
          resolve(response);
        },
      });
      this.write({ ...command, id: piId });
    });
  }

  /** The route of a response (removed: a response comes once). */
  take(piId: string): Route | undefined {
    const route = this.routes.get(piId);
    this.routes.delete(piId);
    return route;
  }

  /** The route of a line that is not the response (bash_execution_update carries its command's id). */
  peek(piId: string): Route | undefined {
    return this.routes.get(piId);
  }

  forget(piId: string): void {
    this.routes.delete(piId);
  }

  /** Pi is gone: internal requests resolve undefined; the client and dialog routes are returned to fail. */
  failAll(): Route[] {
    const routes = [...this.routes.values()];
    this.routes.clear();
    for (const route of routes) if (route.kind === "internal") route.resolve(undefined);
    return routes.filter((r) => r.kind === "client" || r.kind === "dialog");
  }

  /** A client command or a dialog answer waits for Pi (the agent is not idle). */
  get busy(): boolean {
    for (const route of this.routes.values())
      if (route.kind === "client" || route.kind === "dialog") return true;
    return false;
  }
}

/** Pi writes every line with JSON.stringify, so an event's text starts with its type. */
const TYPE_PREFIX = '{"type":"';

/** Pi line types the bridge looks into; every other line is relayed as is. */
const ROUTED_PI_TYPES: ReadonlySet<string> = new Set([
  "response",
  "extension_ui_request",
  "queue_update",
  "agent_start",
  "agent_settled",
  "bash_execution_update",
]);

export type PiLine =
  /** Relayed as it is (no parse): the bulk of Pi's output. */
  { kind: "relay"; type: string } | { kind: "parsed"; line: Frame } | { kind: "garbage" };

/** Reads one stdout line of Pi: only the types the bridge acts on are parsed. */
export function readPiLine(raw: string): PiLine {
  if (raw.startsWith(TYPE_PREFIX)) {
    const type = raw.slice(TYPE_PREFIX.length, raw.indexOf('"', TYPE_PREFIX.length));
    if (!ROUTED_PI_TYPES.has(type) && !raw.includes('"seq":')) return { kind: "relay", type };
  }
  try {
    const parsed: unknown = JSON.parse(raw);
    return isRecord(parsed) ? { kind: "parsed", line: parsed } : { kind: "garbage" };
  } catch {
    return { kind: "garbage" };
  }
}
