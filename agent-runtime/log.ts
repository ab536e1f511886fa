// One logger for every runtime process: JSON to stderr (stdout is protocol only), secrets redacted.
import pino, { type Logger } from "pino";

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

export function createLogger(name: string, level = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino(
    { name, level, redact: { paths: REDACT, censor: "[redacted]" }, base: { pid: process.pid } },
    pino.destination({ fd: 2, sync: true }),
  );
}

export type { Logger };
