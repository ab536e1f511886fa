// One logger for every runtime process: to stderr (stdout is protocol only), secrets redacted. JSON with ISO
// times by default; a readable one-line-per-entry form when stderr is a terminal or LOG_FORMAT=pretty. A process
// whose stderr goes nowhere adds a rotated log file (log-file.ts), which is always JSON.
import pino, { type DestinationStream, type Logger, type MultiStreamRes } from "pino";
import { prettyFactory } from "pino-pretty";

const REDACT = [
  "token",
  "*.token",
  "authorization",
  "*.authorization",
  "headers.authorization",
  'headers["x-sandbox-token"]',
  "apiKey",
  "*.apiKey",
  "env",
  "*.env",
];

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export const LOG_FORMATS = ["json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface LogSettings {
  level: (typeof LOG_LEVELS)[number];
  format: LogFormat;
  /** What was wrong with LOG_LEVEL or LOG_FORMAT (the logger reports it once, then uses the default). */
  problems: string[];
}

/** LOG_LEVEL (default info) and LOG_FORMAT (default: pretty on a terminal, else json), validated. */
export function logSettings(env: NodeJS.ProcessEnv, stderrIsTty: boolean): LogSettings {
  const problems: string[] = [];
  const rawLevel = env.LOG_LEVEL?.trim().toLowerCase();
  let level: LogSettings["level"] = "info";
  if (rawLevel) {
    if ((LOG_LEVELS as readonly string[]).includes(rawLevel)) level = rawLevel as LogSettings["level"];
    else problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}; using info`);
  }
  const rawFormat = env.LOG_FORMAT?.trim().toLowerCase();
  let format: LogFormat = stderrIsTty ? "pretty" : "json";
  if (rawFormat) {
    if ((LOG_FORMATS as readonly string[]).includes(rawFormat)) format = rawFormat as LogFormat;
    else problems.push(`LOG_FORMAT must be json or pretty; using ${format}`);
  }
  return { level, format, problems };
}

const streams = new WeakMap<Logger, MultiStreamRes>();

/** stderr, synchronously (a line logged just before a crash is written), prettified when asked. */
function stderrStream(format: LogFormat, colorize: boolean): DestinationStream {
  const destination = pino.destination({ fd: 2, sync: true });
  if (format === "json") return destination;
  const pretty = prettyFactory({
    colorize,
    translateTime: "SYS:yyyy-mm-dd'T'HH:MM:ss.lo",
    ignore: "pid,hostname",
    singleLine: true,
  });
  return { write: (line: string) => destination.write(pretty(line)) };
}

export function createLogger(name: string, level?: string): Logger {
  const settings = logSettings(
    level === undefined ? process.env : { ...process.env, LOG_LEVEL: level },
    process.stderr.isTTY === true,
  );
  const multi = pino.multistream([
    {
      level: "trace" as const,
      stream: stderrStream(settings.format, process.stderr.isTTY === true && !process.env.NO_COLOR),
    },
  ]);
  const logger = pino(
    {
      name,
      level: settings.level,
      redact: { paths: REDACT, censor: "[redacted]" },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    multi,
  );
  for (const problem of settings.problems) logger.warn({ problem }, "ignored a logging setting");
  streams.set(logger, multi);
  return logger;
}

/** The multistream behind a logger made here (log-file.ts adds a file to it). */
export function streamsOf(logger: Logger): MultiStreamRes | undefined {
  return streams.get(logger);
}

export type { Logger };
