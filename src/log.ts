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

/** A join page's token in a path (/join/calls/<token>...): it opens its participant's event stream. */
const JOIN_TOKEN = /(\/join\/calls\/)[^/?]+/;

/** A request as logged (Fastify's fields), its path without a join page's token. */
function requestFields(request: {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}): object {
  return {
    method: request.method,
    url: request.url?.replace(JOIN_TOKEN, "$1[Redacted]"),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    { level, base: { service: "bridgeline" }, redact: REDACTED, serializers: { req: requestFields } },
    destination,
  );
}
