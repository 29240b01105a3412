/**
 * Attempts counted per key in fixed windows, in a table every instance shares, so that N instances
 * allow the limit and not N times it. The callers prefix their keys with what they count (failed
 * logins and sign-ups per client address at the API, wrong PINs per caller at dial-in); this module
 * knows none of them. Windows that ended are swept at most once a SWEEP_INTERVAL_MS per instance, so
 * the table holds only the keys seen within the longest window.
 */
import { createHash } from "node:crypto";
import { sql } from "kysely";
import type { Store } from "./database.js";

/** How often an instance deletes the windows that ended, on its next count. */
export const SWEEP_INTERVAL_MS = 60_000;
/** Keys longer than this (a caller ID is outside input) are stored as their SHA-256. */
export const MAX_KEY_LENGTH = 128;

export interface AttemptWindow {
  /** Attempts counted in the window. */
  readonly count: number;
  /** When the window ends, in ms since the epoch. */
  readonly endsAt: number;
}

export interface AttemptCounts {
  /** Counts one attempt under `key`: in its open window, or in a new one of `windowMs` from `now`. */
  count(key: string, windowMs: number, now?: Date): Promise<AttemptWindow>;
  /** The open window of `key`, without counting; undefined when none is open. */
  read(key: string, now?: Date): Promise<AttemptWindow | undefined>;
  /** Takes back one attempt of `key`'s open window (counted first, found harmless after). */
  uncount(key: string, now?: Date): Promise<void>;
}

export function attemptCounts(store: Store): AttemptCounts {
  let sweptAt = Number.NEGATIVE_INFINITY;
  return {
    async count(key, windowMs, now = new Date()) {
      if (now.getTime() - sweptAt >= SWEEP_INTERVAL_MS) {
        sweptAt = now.getTime();
        await store.db
          .deleteFrom("attempt_counts")
          .where("window_ends_at", "<=", now.toISOString())
          .execute();
      }
      const at = now.toISOString();
      // One statement, so that two instances counting the same key at once both count.
      const row = await store.db
        .insertInto("attempt_counts")
        .values({
          key: storedKey(key),
          count: 1,
          window_ends_at: new Date(now.getTime() + windowMs).toISOString(),
        })
        .onConflict((conflict) =>
          conflict.column("key").doUpdateSet({
            count: sql<number>`case when attempt_counts.window_ends_at <= ${at} then 1 else attempt_counts.count + 1 end`,
            window_ends_at: sql<string>`case when attempt_counts.window_ends_at <= ${at} then excluded.window_ends_at else attempt_counts.window_ends_at end`,
          }),
        )
        .returning(["count", "window_ends_at"])
        .executeTakeFirstOrThrow();
      return { count: row.count, endsAt: Date.parse(row.window_ends_at) };
    },

    async read(key, now = new Date()) {
      const row = await store.db
        .selectFrom("attempt_counts")
        .select(["count", "window_ends_at"])
        .where("key", "=", storedKey(key))
        .where("window_ends_at", ">", now.toISOString())
        .executeTakeFirst();
      return row && { count: row.count, endsAt: Date.parse(row.window_ends_at) };
    },

    async uncount(key, now = new Date()) {
      await store.db
        .updateTable("attempt_counts")
        .set({ count: sql<number>`count - 1` })
        .where("key", "=", storedKey(key))
        .where("count", ">", 0)
        .where("window_ends_at", ">", now.toISOString())
        .execute();
    },
  };
}

function storedKey(key: string): string {
  return key.length <= MAX_KEY_LENGTH ? key : `sha256:${createHash("sha256").update(key).digest("hex")}`;
}
