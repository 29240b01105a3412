/**
 * The calls each user's conferences place, counted against the calling policy's per-user limits
 * (toll fraud). Rows are kept while they count: a call in progress, or placed within the last hour.
 * A call's row stops counting as in progress when the call ends or its conference is no longer
 * started (a conference a dead instance ran is ended by recovery), so a crash leaves nothing held.
 */
import type { Kysely, Transaction } from "kysely";
import type { PlacedCallAllowance } from "../conference/ports.js";
import {
  CALL_RATE_WINDOW_MS,
  type CallingPolicy,
  callsWithinLimits,
  type PlacedCallCounts,
} from "../domain/phone.js";
import type { Store } from "./database.js";
import { checkLease } from "./leases.js";
import type { Database } from "./schema.js";
import { timestamp } from "./values.js";

async function countPlacedCalls(db: Kysely<Database>, userId: number, now: Date): Promise<PlacedCallCounts> {
  const [inProgress, lastHour] = await Promise.all([
    db
      .selectFrom("placed_calls")
      .innerJoin("conferences", "conferences.id", "placed_calls.conference_id")
      .select((eb) => eb.fn.countAll<number>().as("count"))
      .where("placed_calls.user_id", "=", userId)
      .where("placed_calls.ended_at", "is", null)
      .where("conferences.state", "=", "started")
      .executeTakeFirstOrThrow(),
    db
      .selectFrom("placed_calls")
      .select((eb) => eb.fn.countAll<number>().as("count"))
      .where("user_id", "=", userId)
      .where("placed_at", ">", timestamp(new Date(now.getTime() - CALL_RATE_WINDOW_MS)))
      .executeTakeFirstOrThrow(),
  ]);
  return { inProgress: Number(inProgress.count), lastHour: Number(lastHour.count) };
}

/** The calls a user's conferences have in progress and have placed in the last hour. */
export function placedCallCounts(store: Store, userId: number, now: Date): Promise<PlacedCallCounts> {
  return countPlacedCalls(store.db, userId, now);
}

/**
 * Takes one call each for `attendeeIds` of a conference, in order, as far as its owner's limits
 * allow; those refused get the reason. Counted and recorded in one transaction that holds the
 * owner's row, so instances placing calls for the same user at once cannot both take the last one.
 */
export async function reservePlacedCalls(
  store: Store,
  scope: { userId: number; conferenceId: number; lease?: number },
  attendeeIds: readonly number[],
  policy: CallingPolicy,
  now: Date,
): Promise<Map<number, PlacedCallAllowance>> {
  const at = timestamp(now);
  return store.db.transaction().execute(async (trx) => {
    await checkLease(trx, store.dialect, scope);
    await lockUser(trx, store, scope.userId);
    await sweepPlacedCalls(trx, scope.userId, now);
    const counts = await countPlacedCalls(trx, scope.userId, now);
    const { allowed, refusal } = callsWithinLimits(counts, attendeeIds.length, policy);
    const allowances = new Map<number, PlacedCallAllowance>();
    if (allowed > 0) {
      const rows = await trx
        .insertInto("placed_calls")
        .values(
          attendeeIds.slice(0, allowed).map((attendeeId) => ({
            user_id: scope.userId,
            conference_id: scope.conferenceId,
            attendee_id: attendeeId,
            placed_at: at,
          })),
        )
        .returning(["id", "attendee_id"])
        .execute();
      for (const row of rows) allowances.set(row.attendee_id, { placedCallId: row.id });
    }
    for (const attendeeId of attendeeIds.slice(allowed))
      allowances.set(attendeeId, { refused: refusal ?? "" });
    return allowances;
  });
}

/** The call is over (answered and hung up, or failed): it no longer counts as in progress. */
export async function endPlacedCall(store: Store, placedCallId: number, now: Date): Promise<void> {
  await store.db
    .updateTable("placed_calls")
    .set({ ended_at: timestamp(now) })
    .where("id", "=", placedCallId)
    .where("ended_at", "is", null)
    .execute();
}

async function lockUser(trx: Transaction<Database>, store: Store, userId: number): Promise<void> {
  // SQLite runs one transaction at a time: only PostgreSQL needs the row lock.
  if (store.dialect !== "postgres") return;
  await trx.selectFrom("users").select("id").where("id", "=", userId).forUpdate().execute();
}

/** Drops the user's rows that no longer count, so the table holds at most an hour of calls. */
async function sweepPlacedCalls(trx: Transaction<Database>, userId: number, now: Date): Promise<void> {
  const hourAgo = timestamp(new Date(now.getTime() - CALL_RATE_WINDOW_MS));
  await trx
    .deleteFrom("placed_calls")
    .where("user_id", "=", userId)
    .where("placed_at", "<=", hourAgo)
    .where((eb) =>
      eb.or([
        eb("ended_at", "is not", null),
        eb.not(
          eb.exists(
            eb
              .selectFrom("conferences")
              .select("conferences.id")
              .whereRef("conferences.id", "=", "placed_calls.conference_id")
              .where("conferences.state", "=", "started"),
          ),
        ),
      ]),
    )
    .execute();
}
