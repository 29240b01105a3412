/*
 * Conditions a client can cause, each class with its code (named the way Fastify names its own,
 * FST_ERR_*). The domain knows no HTTP: the API answers each code by a lookup in its registry
 * (api/http-errors.ts); anything else that is thrown is a bug and answers 500 without detail.
 */

/** The code of every condition below, one per class. */
export type DomainErrorCode =
  | "BL_ERR_BAD_REQUEST"
  | "BL_ERR_VALIDATION_FAILED"
  | "BL_ERR_NOT_FOUND"
  | "BL_ERR_FORBIDDEN"
  | "BL_ERR_STALE_LOCK_VERSION";

export abstract class DomainError extends Error {
  abstract readonly code: DomainErrorCode;

  constructor(readonly messages: string[]) {
    super(messages.join("; "));
    this.name = new.target.name;
  }
}

/** The request itself is malformed: bad query string, bad document. */
export class BadRequest extends DomainError {
  readonly code = "BL_ERR_BAD_REQUEST";
}

/** The request is well-formed but breaks a rule. */
export class ValidationFailed extends DomainError {
  readonly code = "BL_ERR_VALIDATION_FAILED";
}

/** The resource does not exist, or not under this parent. */
export class NotFound extends DomainError {
  readonly code = "BL_ERR_NOT_FOUND";

  constructor(what: string) {
    super([`${what} not found`]);
  }
}

/** The authenticated user may not reach this resource. */
export class Forbidden extends DomainError {
  readonly code = "BL_ERR_FORBIDDEN";

  constructor() {
    super(["You may only access your own resources"]);
  }
}

/** The client's lock-version is stale. */
export class StaleLockVersion extends DomainError {
  readonly code = "BL_ERR_STALE_LOCK_VERSION";

  constructor(what: string) {
    super([`${what} was changed by someone else (lock-version does not match); fetch it and retry`]);
  }
}
