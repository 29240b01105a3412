/**
 * Limits of the HTTP(S) listeners themselves. Fastify is handed servers made in main.ts, so it sets
 * none of them: they are set here, on each.
 */
import type { Server } from "node:http";

/** A client has this long to send a request's headers (slow senders hold a connection). */
export const HEADERS_TIMEOUT_MS = 20_000;
/** And this long to send the whole request, its body included; else 408 and the connection closes. */
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Caps the listener's open connections (each holds at most one request at a time, so this bounds the
 * requests in flight too; event streams count): past `maxConnections` a new one is closed unanswered.
 */
export function limitListener<S extends Server>(server: S, maxConnections: number): S {
  server.maxConnections = maxConnections;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  return server;
}
