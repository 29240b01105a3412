import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { createConsoleSession, deleteConsoleSession, findConsoleSession } from "../store/console-sessions.js";
import type { Store } from "../store/database.js";
import { findCredentials } from "../store/users.js";
import { authenticationRequired, HttpError, tooManyRequests } from "./http-errors.js";
import { hashPassword, verifyPassword } from "./passwords.js";
import { clientSource, type RequestLimiter } from "./rate-limits.js";

/** Verified credentials remembered (then forgotten all at once): bounds the cache an attacker can grow. */
export const VERIFIED_CACHE_LIMIT = 10_000;
/**
 * How long verified credentials are taken as still right without reading them again: a password or
 * e-mail changed on another instance stops working here within this long (on this instance, at
 * once), and so does an address locked out by failed logins counted elsewhere.
 */
export const CREDENTIALS_RECHECK_MS = 1_000;

/** The console's session cookie. */
export const SESSION_COOKIE = "bridgeline_session";
/** The header that must carry a cookie session's CSRF token on every change. */
const CSRF_HEADER = "x-csrf-token";

/** Password checks per client address, counted by every instance (see server.ts). */
export interface LoginAttempts {
  /** Counts one, or with `{ increment: false }` reads how many were counted in the window. */
  readonly limiter: RequestLimiter;
  /** Takes back the attempt of a request whose password was right. */
  giveBack(request: FastifyRequest): Promise<void>;
}
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** A console session just opened: the cookie's token and the token its changes must carry. */
export interface OpenedSession {
  userId: number;
  token: string;
  csrfToken: string;
}

/** Credentials that were right, from one client address. */
interface VerifiedLogin {
  userId: number;
  /** The stored hash they matched: read again, a different one means the password changed. */
  passwordHash: string;
  /** Until when (epoch ms) they are taken as right, and the address as not locked out, unread. */
  trustedUntil: number;
  /** The store's credentialChanges then: a change made through this store since ends the trust. */
  credentialChanges: number;
  /** This instance's failed-login counts then: one since ends the trust in the address's lockout. */
  attemptsCounted: number;
}

/**
 * HTTP Basic with the user's e-mail as username, or the console's session cookie. scrypt costs tens
 * of milliseconds by design, so a successful check is remembered under a keyed hash of the client
 * address and the credentials as sent (loginKey), together with the stored hash it matched. For
 * CREDENTIALS_RECHECK_MS they are trusted as they are; after that each request reads the stored hash
 * again (no scrypt) and the address's lockout. A change of e-mail or password made on this instance
 * ends the trust at once (Store.credentialChanges), and so does any password check begun here (it
 * counts a failed login for its address until found right); one made on another instance, within
 * CREDENTIALS_RECHECK_MS, the bound the failed-login counts already had (UNDER_LIMIT_MEMO_MS).
 * A cookie session's changes (POST, PUT, DELETE) must carry its CSRF token in X-CSRF-Token: another
 * site can make a browser send the cookie, but cannot read the token. Failed logins count against the
 * client address (`attempts`, shared by the instances); once it has none left, even the right
 * password is answered 429 until the window ends. A password check takes its attempt before scrypt
 * runs, and gives it back when right, so that many checks at once cannot pass the limit together.
 */
export class Authenticator {
  private readonly cacheKey = randomBytes(32);
  private readonly verified = new Map<string, VerifiedLogin>();
  /** Failed-login attempts this instance has counted (each password check counts one first). */
  private attemptsCounted = 0;
  /** Checked against when the user is unknown, at the cost real hashes are made with. */
  private readonly decoyHash: Promise<string>;

  constructor(
    private readonly store: Store,
    private readonly attempts: LoginAttempts,
    passwordCost: number,
  ) {
    this.decoyHash = hashPassword(randomBytes(16).toString("base64"), passwordCost);
  }

  /**
   * The user a request is made by: HTTP Basic when it has an Authorization header, else its session
   * cookie (with the CSRF token on changes). Throws 401, 403 for a missing or wrong CSRF token, or
   * 429 once an address has failed too often.
   */
  async authenticateRequest(request: FastifyRequest): Promise<number> {
    const token = request.cookies[SESSION_COOKIE];
    if (request.headers.authorization !== undefined || token === undefined) return this.authenticate(request);
    const session = await findConsoleSession(this.store, hashToken(token), new Date());
    // No WWW-Authenticate: a browser would answer it with its own password dialog.
    if (!session) throw new HttpError("BL_ERR_NOT_SIGNED_IN", "The console session has ended; sign in again");
    if (!SAFE_METHODS.has(request.method) && !sameToken(request.headers[CSRF_HEADER], session.csrfToken))
      throw new HttpError("BL_ERR_CSRF_TOKEN");
    return session.userId;
  }

  /** The session a request's cookie names, with its CSRF token; undefined when none or ended. */
  async session(request: FastifyRequest): Promise<{ userId: number; csrfToken: string } | undefined> {
    const token = request.cookies[SESSION_COOKIE];
    return token === undefined ? undefined : findConsoleSession(this.store, hashToken(token), new Date());
  }

  /** Checks an e-mail and password as Basic does (same throttle) and opens a console session. */
  async openSession(email: string, password: string, request: FastifyRequest): Promise<OpenedSession> {
    const key = this.loginKey(request, `form\0${email.toLowerCase()}\0${password}`);
    // Always checked against the stored hash, never a trusted login: a session outlives the
    // second of trust, and must not be opened with a password changed on another instance meanwhile.
    const userId = await this.verify(key, email, password, request, () => {
      throw new HttpError("BL_ERR_NOT_SIGNED_IN", "Invalid e-mail or password");
    });
    const token = randomBytes(32).toString("base64url");
    const csrfToken = randomBytes(32).toString("base64url");
    await createConsoleSession(this.store, { tokenHash: hashToken(token), userId, csrfToken }, new Date());
    return { userId, token, csrfToken };
  }

  /** Ends the session a request's cookie names, if any. */
  async closeSession(request: FastifyRequest): Promise<void> {
    const token = request.cookies[SESSION_COOKIE];
    if (token !== undefined) await deleteConsoleSession(this.store, hashToken(token));
  }

  /** The Basic-authenticated user's id; throws 401, or 429 once an address has failed too often. */
  private async authenticate(request: FastifyRequest): Promise<number> {
    const header = request.headers.authorization;
    // Known by the header as sent: a trusted login is not even decoded.
    const key = header === undefined ? undefined : this.loginKey(request, `basic\0${header}`);
    const trusted = key === undefined ? undefined : this.trustedUser(key);
    if (trusted !== undefined) return trusted;
    const credentials = parseBasic(header);
    if (key === undefined || !credentials) {
      await this.refuseWhenLockedOut(request);
      throw authenticationRequired();
    }
    return this.verify(key, credentials.username, credentials.password, request, () => {
      throw authenticationRequired("Invalid e-mail or password");
    });
  }

  /**
   * What a login is remembered under: a keyed SHA-256 of the client address and `presented` (the
   * credentials as the client sent them), so that no password is kept. The hash is never shown,
   * so HMAC's guard against length extension would add nothing but its cost (twice this one).
   */
  private loginKey(request: FastifyRequest, presented: string): string {
    return createHash("sha256")
      .update(this.cacheKey)
      .update(`${clientSource(request)}\0${presented}`)
      .digest("base64");
  }

  /** The user whose login `key` stands for, while it is trusted unread (see the class). */
  private trustedUser(key: string): number | undefined {
    const known = this.verified.get(key);
    return known !== undefined &&
      known.trustedUntil > performance.now() &&
      known.credentialChanges === (this.store.credentialChanges ?? 0) &&
      known.attemptsCounted === this.attemptsCounted
      ? known.userId
      : undefined;
  }

  /** 429 when the request's client address has no failed logins left in the window. */
  private async refuseWhenLockedOut(request: FastifyRequest): Promise<void> {
    const failures = await this.attempts.limiter(request, { increment: false });
    if (!failures.isAllowed && failures.remaining === 0) throw tooManyRequests(failures.ttlInSeconds);
  }

  /** Checks a login not trusted as it is (trustedUser), remembered under `key` when right. */
  private async verify(
    key: string,
    username: string,
    password: string,
    request: FastifyRequest,
    refuse: () => never,
  ): Promise<number> {
    const known = this.verified.get(key);
    if (known !== undefined) {
      const credentialChanges = this.store.credentialChanges ?? 0;
      const attemptsCounted = this.attemptsCounted;
      const stored = await findCredentials(this.store, username);
      if (stored && known.userId === stored.id && known.passwordHash === stored.passwordHash) {
        await this.refuseWhenLockedOut(request);
        // What was current before the reads: a change made during them ends this trust too.
        known.trustedUntil = performance.now() + CREDENTIALS_RECHECK_MS;
        known.credentialChanges = credentialChanges;
        known.attemptsCounted = attemptsCounted;
        return stored.id;
      }
    }
    // Counted before the account is even looked up: a locked-out address costs one count and no more.
    this.attemptsCounted += 1;
    const attemptsCounted = this.attemptsCounted;
    const attempt = await this.attempts.limiter(request);
    if (!attempt.isAllowed && attempt.isExceeded) throw tooManyRequests(attempt.ttlInSeconds);
    const credentialChanges = this.store.credentialChanges ?? 0;
    const stored = await findCredentials(this.store, username);
    if (!stored) {
      // The same scrypt cost as a wrong password, so response time does not reveal who has an account.
      await verifyPassword(password, await this.decoyHash);
    } else if (await verifyPassword(password, stored.passwordHash)) {
      await this.attempts.giveBack(request);
      if (this.verified.size >= VERIFIED_CACHE_LIMIT) this.verified.clear();
      this.verified.set(key, {
        userId: stored.id,
        passwordHash: stored.passwordHash,
        trustedUntil: performance.now() + CREDENTIALS_RECHECK_MS,
        credentialChanges,
        attemptsCounted,
      });
      return stored.id;
    }
    return refuse();
  }
}

/** Sessions are stored under the SHA-256 of their token. */
function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

function sameToken(given: string | string[] | undefined, expected: string): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function parseBasic(header: string | undefined): { username: string; password: string } | undefined {
  const match = header && /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 1) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
