// The tool supervisor's control channel (sandbox-supervise.c): the commands the bridge sends (one a line) and
// the reports it reads (one JSON object a line), defined once; and the supervisor's command line.
import * as z from "zod/mini";
import type { EgressFilter, NetworkMode } from "./egress.ts";

/** The fds the supervisor gets: the executor's channel to Pi, and its own control channel to the bridge. */
export const SUPERVISOR_CHANNEL_FD = 3;
export const SUPERVISOR_CONTROL_FD = 4;

/** A call label (the supervisor reads it back from the call helper's command line). */
export const CALL_LABEL = /^[A-Za-z0-9._:-]{1,128}$/;

export type SupervisorCommand =
  | { type: "go" }
  | { type: "mode"; mode: NetworkMode }
  | { type: "grant"; call: string }
  | { type: "revoke"; call: string }
  | { type: "end" };

export function commandLine(command: SupervisorCommand): string {
  switch (command.type) {
    case "go":
    case "end":
      return `${command.type}\n`;
    case "mode":
      return `mode ${command.mode}\n`;
    case "grant":
    case "revoke":
      if (!CALL_LABEL.test(command.call))
        throw new Error("a call label is [A-Za-z0-9._:-], 1-128 characters");
      return `${command.type} ${command.call}\n`;
  }
}

const integer = () => z.number().check(z.int());
const pid = integer();
const call = z.nullable(z.string().check(z.regex(CALL_LABEL)));
const mode = z.enum(["lockdown", "registries", "open"]);

export const ConnectEvent = z.strictObject({
  type: z.literal("connect"),
  pid,
  call,
  family: z.enum(["inet", "inet6"]),
  address: z.string().check(z.maxLength(64)),
  port: z.number().check(z.int(), z.minimum(0), z.maximum(65535)),
  /** The local port of the socket the tool got (0: none or unknown): the egress proxy pairs its connection by it. */
  localPort: z.number().check(z.int(), z.minimum(0), z.maximum(65535)),
  /** performed: the supervisor connected (errno: the connect's result); continued: a datagram socket's own. */
  verdict: z.enum(["performed", "refused", "continued"]),
  errno: integer(),
});
export type ConnectEvent = z.infer<typeof ConnectEvent>;

export const DatagramEvent = z.strictObject({
  type: z.literal("datagram"),
  pid,
  call,
  verdict: z.enum(["allowed", "refused"]),
});
export type DatagramEvent = z.infer<typeof DatagramEvent>;

export const SupervisorMessage = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("ready"),
    pid,
    executorPid: pid,
    filter: z.enum(["none", "no-inet", "notify"]),
    landlockTcp: z.boolean(),
    nproc: integer(),
    oomScoreAdj: integer(),
    mode,
    held: z.boolean(),
    /** Linux ≥ 6.6: each notification hands the CPU to the supervisor and back (faster connects, same checks). */
    syncWakeup: z.boolean(),
  }),
  z.strictObject({ type: z.literal("released"), by: z.enum(["bridge", "channel"]) }),
  ConnectEvent,
  DatagramEvent,
  z.strictObject({ type: z.literal("mode"), mode }),
  z.strictObject({ type: z.literal("granted"), call: z.string() }),
  z.strictObject({ type: z.literal("revoked"), call: z.string() }),
  z.strictObject({ type: z.literal("dropped"), events: integer() }),
  z.strictObject({ type: z.literal("error"), message: z.string().check(z.maxLength(200)) }),
  z.strictObject({ type: z.literal("failed") }),
  z.strictObject({
    type: z.literal("exit"),
    code: integer(),
    signal: integer(),
    killed: integer(),
  }),
]);
export type SupervisorMessage = z.infer<typeof SupervisorMessage>;
export type EgressEvent = ConnectEvent | DatagramEvent;

export interface SupervisorOptions {
  /** Hold the executor's exec until `go` or the first bytes Pi sends on the channel. */
  hold: boolean;
  nproc: number;
  oomScoreAdj: number;
  filter: EgressFilter;
  mode: NetworkMode;
  /** Variables the executor gets that the supervisor itself must not carry (the run marker). */
  setenv: Record<string, string>;
  graceMs: number;
  /** The egress proxy's loopback port: connects to it are reported at once and name their call (attribution). */
  proxyPort?: number;
}

/** The supervisor's options (before the Landlock rules and `-- program`). */
export function supervisorArgs(options: SupervisorOptions): string[] {
  const args = [
    "--supervise",
    "--control-fd",
    String(SUPERVISOR_CONTROL_FD),
    "--channel-fd",
    String(SUPERVISOR_CHANNEL_FD),
    "--nproc",
    String(options.nproc),
    "--oom-score-adj",
    String(options.oomScoreAdj),
    "--egress",
    options.filter,
    "--mode",
    options.mode,
    "--grace-ms",
    String(Math.max(0, Math.min(600_000, Math.round(options.graceMs)))),
  ];
  if (options.hold) args.push("--hold");
  if (options.proxyPort !== undefined) args.push("--proxy-port", String(options.proxyPort));
  for (const [name, value] of Object.entries(options.setenv)) args.push("--setenv", `${name}=${value}`);
  return args;
}
