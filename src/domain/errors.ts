/*
 * Conditions a client can cause. The API maps each class to one HTTP status; anything else that
 * is thrown is a bug and answers 500 without detail.
 */
export class DomainError extends Error {
  constructor(readonly messages: string[]) {
    super(messages.join("; "));
    this.name = new.target.name;
  }
}

/** The request is well-formed but breaks a rule (422). */
export class ValidationFailed extends DomainError {}

/** The resource does not exist, or not under this parent (404). */
export class NotFound extends DomainError {
  constructor(what: string) {
    super([`${what} not found`]);
  }
}

/** The authenticated user may not reach this resource (403). */
export class Forbidden extends DomainError {
  constructor() {
    super(["You may only access your own resources"]);
  }
}

/** The client's lock-version is stale (409). */
export class StaleLockVersion extends DomainError {
  constructor(what: string) {
    super([`${what} was changed by someone else (lock-version does not match); fetch it and retry`]);
  }
}

/** The request itself is malformed: bad query string, bad document (400). */
export class BadRequest extends DomainError {}
