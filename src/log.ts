import pino, { type DestinationStream, type Logger } from "pino";
import type { LogLevel } from "./config.js";

/** Paths that could carry a secret; they are replaced before a line is written. */
const REDACTED = [
  "req.headers.authorization",
  "req.headers.cookie",
  "*.password",
  "*.password_hash",
  "*.passwordHash",
  "*.number",
  "*.security_code",
];

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino({ level, base: { service: "bridgeline" }, redact: REDACTED }, destination);
}
