/**
 * One delivery attempt on the wire: a JSON POST with a deadline for the whole exchange. Redirects
 * are not followed (Standard Webhooks: the receiver should update its URL instead), and no
 * connection is kept for later: each attempt connects anew, to addresses checked just before.
 */
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import type { AttemptOutcome } from "../domain/webhook.js";
import { CONNECTION_ERRORS } from "../network-errors.js";

export interface PostResult {
  outcome: AttemptOutcome;
  /** The receiver's Retry-After, as sent. */
  retryAfter?: string | undefined;
}

export interface PostOptions {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Where to connect (the checked addresses); the system's DNS when undefined. */
  lookup?: LookupFunction | undefined;
}

const USER_AGENT = "Bridgeline-Webhooks/1";

export function postJson(url: URL, options: PostOptions): Promise<PostResult> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(result);
    };
    const transport = url.protocol === "https:" ? https : http;
    const request = transport.request(url, {
      method: "POST",
      agent: false,
      lookup: options.lookup,
      headers: {
        ...options.headers,
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(options.body)),
        "user-agent": USER_AGENT,
      },
    });
    const timer = setTimeout(
      () => finish({ outcome: { error: `no answer within ${options.timeoutMs / 1000} s` } }),
      options.timeoutMs,
    );
    request.on("response", (response) => {
      // The status is the answer; the body is not read (nor kept in the log).
      const retryAfter = response.headers["retry-after"];
      finish({ outcome: { status: response.statusCode ?? 0 }, retryAfter });
    });
    request.on("error", (error: NodeJS.ErrnoException) => {
      finish({ outcome: { error: connectionError(error) } });
    });
    request.end(options.body);
  });
}

function connectionError(error: NodeJS.ErrnoException): string {
  return (error.code === undefined ? undefined : CONNECTION_ERRORS[error.code]) ?? error.message;
}
