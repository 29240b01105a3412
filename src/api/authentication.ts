import { createHmac, randomBytes } from "node:crypto";
import type { Store } from "../store/database.js";
import { findCredentials } from "../store/users.js";
import { authenticationRequired, tooManyRequests } from "./http-errors.js";
import { hashPassword, verifyPassword } from "./passwords.js";
import type { Throttle } from "./throttle.js";

const CACHE_LIMIT = 10_000;

/**
 * HTTP Basic with the user's e-mail as username. scrypt costs tens of milliseconds by design, so
 * a successful check is remembered under a keyed hash of the credentials together with the
 * stored hash it matched: a password change anywhere invalidates it at the next request.
 */
export class Authenticator {
  private readonly cacheKey = randomBytes(32);
  private readonly verified = new Map<string, { userId: number; passwordHash: string }>();
  private readonly decoyHash = hashPassword(randomBytes(16).toString("base64"));

  constructor(
    private readonly store: Store,
    private readonly failedLogins: Throttle,
  ) {}

  /** The authenticated user's id; throws 401, or 429 once an address has failed too often. */
  async authenticate(authorization: string | undefined, clientAddress: string): Promise<number> {
    const retryAfter = this.failedLogins.retryAfter(clientAddress);
    if (retryAfter > 0) throw tooManyRequests(retryAfter);
    const credentials = parseBasic(authorization);
    if (!credentials) throw authenticationRequired();
    const stored = await findCredentials(this.store, credentials.username);
    if (!stored) {
      // The same scrypt cost as a wrong password, so response time does not reveal who has an account.
      await verifyPassword(credentials.password, await this.decoyHash);
    } else {
      const key = createHmac("sha256", this.cacheKey)
        .update(`${credentials.username.toLowerCase()}\0${credentials.password}`)
        .digest("base64");
      const cached = this.verified.get(key);
      if (cached && cached.userId === stored.id && cached.passwordHash === stored.passwordHash)
        return stored.id;
      if (await verifyPassword(credentials.password, stored.passwordHash)) {
        if (this.verified.size >= CACHE_LIMIT) this.verified.clear();
        this.verified.set(key, { userId: stored.id, passwordHash: stored.passwordHash });
        return stored.id;
      }
    }
    this.failedLogins.record(clientAddress);
    throw authenticationRequired("Invalid e-mail or password");
  }
}

function parseBasic(header: string | undefined): { username: string; password: string } | undefined {
  const match = header && /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 1) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
