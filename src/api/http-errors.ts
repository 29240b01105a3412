/*
 * Every error the API answers with, in one registry: its code, its status, and the words it says when
 * the error brings none of its own (the way Fastify keeps its FST_ERR_* codes in lib/errors.js). The
 * domain's errors carry their codes (domain/errors.ts) and the HTTP exchange's are HttpErrors; the
 * API's error handler answers either by looking its code up here.
 */
import type { DomainErrorCode } from "../domain/errors.js";

export const REALM = "Bridgeline";

export const MAX_BODY_BYTES = 64 * 1024;
export const TOO_LARGE_MESSAGE = `Request body is larger than ${MAX_BODY_BYTES} bytes`;
/** What a 503 for an unreachable database suggests as the wait: about a restart's length. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

interface ErrorEntry {
  readonly status: number;
  /** Said when the error has no words of its own (a domain error always has). */
  readonly message?: string;
  /** Sent with every answer of the code; an error's own headers are added to them. */
  readonly headers?: Readonly<Record<string, string>>;
}

export const API_ERRORS = {
  // The domain's conditions: the error's messages are the answer's.
  BL_ERR_BAD_REQUEST: { status: 400 },
  BL_ERR_FORBIDDEN: { status: 403 },
  BL_ERR_NOT_FOUND: { status: 404 },
  BL_ERR_STALE_LOCK_VERSION: { status: 409 },
  BL_ERR_VALIDATION_FAILED: { status: 422 },
  // The HTTP exchange's conditions.
  BL_ERR_MALFORMED_INPUT: {
    status: 400,
    message: "The request is not UTF-8, or holds a character XML 1.0 does not allow",
  },
  BL_ERR_AUTHENTICATION_REQUIRED: {
    status: 401,
    message: "Authentication required",
    headers: { "www-authenticate": `Basic realm="${REALM}", charset="UTF-8"` },
  },
  /** The console's session (a cookie, not Basic: no challenge, so that browsers ask nothing). */
  BL_ERR_NOT_SIGNED_IN: { status: 401, message: "Not signed in" },
  BL_ERR_CSRF_TOKEN: { status: 403, message: "X-CSRF-Token is missing or does not match the session" },
  BL_ERR_NO_ROUTE: { status: 404, message: "No resource at this path" },
  BL_ERR_NO_SUCH_FILE: { status: 404, message: "No such console file" },
  BL_ERR_METHOD_NOT_ALLOWED: { status: 405, message: "The resource does not allow this method" },
  BL_ERR_NOT_ACCEPTABLE: { status: 406, message: "This API answers only application/xml" },
  /** The resource's state does not allow the change now (a conference not started, a call not connected). */
  BL_ERR_CONFLICT: { status: 409, message: "The resource's state does not allow this now" },
  /** Fastify's FST_ERR_CTP_BODY_TOO_LARGE, in the API's words. */
  BL_ERR_BODY_TOO_LARGE: { status: 413, message: TOO_LARGE_MESSAGE },
  BL_ERR_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message:
      "Request bodies must be XML or JSON (Content-Type: application/xml, text/xml or application/json)",
  },
  BL_ERR_TOO_MANY_REQUESTS: { status: 429, message: "Too many attempts from this address; try again later" },
  BL_ERR_INTERNAL: { status: 500, message: "Internal server error" },
  /** The service is at a limit of its own (open event streams): not the client's doing. */
  BL_ERR_SERVICE_BUSY: { status: 503, message: "The service is busy; try again shortly" },
  /** PostgreSQL away (restarting, failing over): the request was not carried out and may be sent again. */
  BL_ERR_DATABASE_UNAVAILABLE: {
    status: 503,
    message: "The database is unavailable; try again shortly",
    headers: { "retry-after": String(DATABASE_RETRY_AFTER_SECONDS) },
  },
} as const satisfies Record<`BL_ERR_${string}`, ErrorEntry>;

export type ApiErrorCode = keyof typeof API_ERRORS;
/** The codes of the HTTP exchange's own conditions. */
export type HttpErrorCode = Exclude<ApiErrorCode, DomainErrorCode>;

/** Fastify's own client errors that the API words itself; the others keep Fastify's status and words. */
const FASTIFY_ERRORS: Readonly<Record<string, HttpErrorCode>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "BL_ERR_BODY_TOO_LARGE",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "BL_ERR_UNSUPPORTED_MEDIA_TYPE",
};

/** Conditions of the HTTP exchange itself, beside the domain's. */
export class HttpError extends Error {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    readonly code: HttpErrorCode,
    message?: string,
    headers: Readonly<Record<string, string>> = {},
  ) {
    const entry: ErrorEntry = API_ERRORS[code];
    super(message ?? entry.message);
    this.name = "HttpError";
    this.statusCode = entry.status;
    this.headers = { ...entry.headers, ...headers };
  }
}

/** What the API answers for an error: the status and headers of its code, and its words. */
export interface ErrorAnswer {
  readonly code: string;
  readonly status: number;
  readonly messages: readonly string[];
  readonly headers: Readonly<Record<string, string>>;
}

/** The answer to an error of the registry's: its messages, else the code's own words. */
export function answerFor(
  code: ApiErrorCode,
  messages: readonly string[] = [],
  headers: Readonly<Record<string, string>> = {},
): ErrorAnswer {
  const entry: ErrorEntry = API_ERRORS[code];
  return {
    code,
    status: entry.status,
    messages: messages.length > 0 ? messages : [entry.message ?? code],
    headers: { ...entry.headers, ...headers },
  };
}

/** Fastify's own client error (body too large, bad framing...) by its code, or undefined when it is none. */
export function fastifyClientError(error: unknown): ErrorAnswer | undefined {
  const { code, statusCode, message } = error as { code?: unknown; statusCode?: unknown; message?: unknown };
  if (typeof statusCode !== "number" || statusCode < 400 || statusCode >= 500) return undefined;
  const ours = typeof code === "string" ? FASTIFY_ERRORS[code] : undefined;
  if (ours !== undefined) return answerFor(ours);
  return { code: String(code), status: statusCode, messages: [String(message)], headers: {} };
}

export function authenticationRequired(message?: string): HttpError {
  return new HttpError("BL_ERR_AUTHENTICATION_REQUIRED", message);
}

export function tooManyRequests(retryAfterSeconds: number): HttpError {
  return new HttpError("BL_ERR_TOO_MANY_REQUESTS", undefined, { "retry-after": String(retryAfterSeconds) });
}
