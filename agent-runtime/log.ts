// One logger for every runtime process: JSON to stderr (stdout is protocol only), secrets redacted. A process
// whose stderr goes nowhere adds a rotated log file (log-file.ts).
import pino, { type Logger, type MultiStreamRes } from "pino";

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

const streams = new WeakMap<Logger, MultiStreamRes>();

export function createLogger(name: string, level = process.env.LOG_LEVEL ?? "info"): Logger {
  const multi = pino.multistream([
    { level: "trace" as const, stream: pino.destination({ fd: 2, sync: true }) },
  ]);
  const logger = pino(
    { name, level, redact: { paths: REDACT, censor: "[redacted]" }, base: { pid: process.pid } },
    multi,
  );
  streams.set(logger, multi);
  return logger;
}

/** The multistream behind a logger made here (log-file.ts adds a file to it). */
export function streamsOf(logger: Logger): MultiStreamRes | undefined {
  return streams.get(logger);
}

export type { Logger };
