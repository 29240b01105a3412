/**
 * Limits of the HTTP(S) listeners themselves. Fastify is handed servers made in main.ts, so it sets
 * none of them: they are set here, on each.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { MAX_BODY_BYTES, TOO_LARGE_MESSAGE } from "./http-errors.js";
import { errorsDocument } from "./xml.js";

/** A client has this long to send a request's headers (slow senders hold a connection). */
export const HEADERS_TIMEOUT_MS = 20_000;
/** And this long to send the whole request, its body included; else 408 and the connection closes. */
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Caps the listener's open connections (each holds at most one request at a time, so this bounds the
 * requests in flight too; event streams count): past `maxConnections` a new one is closed unanswered.
 * A body announced too large is refused before the client is asked for it (refuseBeforeContinue).
 */
export function limitListener<S extends Server>(server: S, maxConnections: number): S {
  server.maxConnections = maxConnections;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.on("checkContinue", (request: IncomingMessage, response: ServerResponse) =>
    refuseBeforeContinue(server, request, response),
  );
  return server;
}

const TOO_LARGE_BODY = errorsDocument([TOO_LARGE_MESSAGE]);

/**
 * `Expect: 100-continue` (RFC 9110 §10.1.1): Node would answer 100 Continue to every such request, so
 * a client announcing 50 MB would start sending them, and be cut off mid-body by the 413 that
 * follows (often seen as a reset, over TLS). A length over the limit gets its 413 at once instead,
 * with the connection closed, since the body is never read; any other request is asked to continue
 * and goes on to Fastify as usual.
 */
function refuseBeforeContinue(server: Server, request: IncomingMessage, response: ServerResponse): void {
  if (Number(request.headers["content-length"]) > MAX_BODY_BYTES) {
    response.writeHead(413, {
      "content-type": "application/xml; charset=utf-8",
      "content-length": Buffer.byteLength(TOO_LARGE_BODY),
      connection: "close",
    });
    response.end(TOO_LARGE_BODY);
    return;
  }
  response.writeContinue();
  server.emit("request", request, response);
}
