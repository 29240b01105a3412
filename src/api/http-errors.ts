/** Conditions of the HTTP exchange itself, beside the domain's. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "HttpError";
  }
}

export const REALM = "Bridgeline";

export function authenticationRequired(message = "Authentication required"): HttpError {
  return new HttpError(401, message, { "www-authenticate": `Basic realm="${REALM}", charset="UTF-8"` });
}

export function tooManyRequests(retryAfterSeconds: number): HttpError {
  return new HttpError(429, "Too many attempts from this address; try again later", {
    "retry-after": String(retryAfterSeconds),
  });
}
