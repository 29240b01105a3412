/**
 * Console sign-in sessions, shared by every instance through the database. Only the SHA-256 of the
 * cookie's token is stored, so a copy of the table opens no session.
 */
import type { Store } from "./database.js";

/** A session ends after this long without a request. */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000;
/** Sessions one user keeps; signing in again past it ends the least recently used. */
export const MAX_SESSIONS_PER_USER = 20;
/** last-seen-at is written at most this often, not on every request. */
const TOUCH_INTERVAL_MS = 60 * 1000;

export interface ConsoleSession {
  userId: number;
  csrfToken: string;
}

export async function createConsoleSession(
  store: Store,
  session: { tokenHash: string; userId: number; csrfToken: string },
  now: Date,
): Promise<void> {
  const at = now.toISOString();
  await store.db
    .deleteFrom("console_sessions")
    .where("last_seen_at", "<", new Date(now.getTime() - SESSION_IDLE_MS).toISOString())
    .execute();
  await store.db
    .insertInto("console_sessions")
    .values({
      token_hash: session.tokenHash,
      user_id: session.userId,
      csrf_token: session.csrfToken,
      created_at: at,
      last_seen_at: at,
    })
    .execute();
  const othersKept = store.db
    .selectFrom("console_sessions")
    .select("token_hash")
    .where("user_id", "=", session.userId)
    .where("token_hash", "!=", session.tokenHash)
    .orderBy("last_seen_at", "desc")
    .limit(MAX_SESSIONS_PER_USER - 1);
  await store.db
    .deleteFrom("console_sessions")
    .where("user_id", "=", session.userId)
    .where("token_hash", "!=", session.tokenHash)
    .where("token_hash", "not in", othersKept)
    .execute();
}

/** The live session with this token hash, its idle time restarted; undefined when none or expired. */
export async function findConsoleSession(
  store: Store,
  tokenHash: string,
  now: Date,
): Promise<ConsoleSession | undefined> {
  const row = await store.db
    .selectFrom("console_sessions")
    .select(["user_id", "csrf_token", "last_seen_at"])
    .where("token_hash", "=", tokenHash)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  const idle = now.getTime() - Date.parse(row.last_seen_at);
  if (idle > SESSION_IDLE_MS) return undefined;
  if (idle > TOUCH_INTERVAL_MS) {
    await store.db
      .updateTable("console_sessions")
      .set({ last_seen_at: now.toISOString() })
      .where("token_hash", "=", tokenHash)
      .execute();
  }
  return { userId: row.user_id, csrfToken: row.csrf_token };
}

export async function deleteConsoleSession(store: Store, tokenHash: string): Promise<void> {
  await store.db.deleteFrom("console_sessions").where("token_hash", "=", tokenHash).execute();
}
