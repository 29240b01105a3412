/**
 * The store side of the scheduler (the SchedulerStore of scheduler/ports.ts): claiming due
 * conferences so that exactly one instance starts each, the running instance's heartbeat, the due
 * conferences no instance had room for, and recovery of conferences whose instance died; each change
 * with its events for live views, in its transaction.
 */
import { CALL_IN_PROGRESS } from "../domain/attendee.js";
import type {
  Claimant,
  ClaimedConference,
  DelayedConference,
  RecoveredConference,
  SchedulerStore,
} from "../scheduler/ports.js";
import { toConference } from "./conferences.js";
import type { Store } from "./database.js";
import { appendEvents } from "./events.js";
import { roomEvent } from "./live-events.js";
import { renewSipInstance } from "./sip-instances.js";
import { connectedDurationSql, nextLockVersion, timestamp } from "./values.js";

export function schedulerStore(store: Store): SchedulerStore {
  return {
    claimDueConference: (claimant, now) => claimDueConference(store, claimant, now),
    markDelayedConferences: (dueBefore, now) => markDelayedConferences(store, dueBefore, now),
    renewHeartbeat: (runner, now) => renewHeartbeat(store, runner, now),
    recoverAbandonedConferences: (abandoned, now) => recoverAbandonedConferences(store, abandoned, now),
    renewSipInstance: (instance, staleBefore, now) => renewSipInstance(store, instance, staleBefore, now),
  };
}

/**
 * Starts the next pending conference whose time has come, if any: state started, started-at, and
 * this instance as its runner, in one statement. On PostgreSQL the row is picked with FOR UPDATE SKIP
 * LOCKED, so instances polling together each get a different conference and none gets one twice;
 * SQLite has a single writer. With a limit on room, a conference takes room for each attendee (for
 * one caller at least, when it has none): one that does not fit is left to another instance.
 */
async function claimDueConference(
  store: Store,
  claimant: Claimant,
  now: Date,
): Promise<ClaimedConference | undefined> {
  const at = timestamp(now);
  const { runner, room } = claimant;
  let due = store.db
    .selectFrom("conferences")
    .select("id")
    .where("state", "=", "pending")
    .where("scheduled_to_start_at", "<=", at)
    .orderBy("scheduled_to_start_at")
    .limit(1);
  if (room !== null) {
    if (room < 1) return undefined;
    due = due.where(
      (eb) =>
        eb
          .selectFrom("attendees")
          .select((count) => count.fn.countAll<number>().as("attendees"))
          .whereRef("attendees.conference_id", "=", "conferences.id"),
      "<=",
      room,
    );
  }
  if (store.dialect === "postgres") due = due.forUpdate().skipLocked();
  return store.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable("conferences")
      .set({
        state: "started",
        started_at: at,
        runner,
        runner_sip_uri: claimant.sipUri,
        runner_heartbeat_at: at,
        updated_at: at,
        lock_version: nextLockVersion(),
      })
      .where("id", "=", (eb) => eb.selectFrom(due.as("due")).select("due.id"))
      .where("state", "=", "pending")
      .returningAll()
      .executeTakeFirst();
    if (row === undefined) return undefined;
    const scope = { userId: row.user_id, conferenceId: row.id };
    await appendEvents(trx, [roomEvent(scope, "conference-started")], now);
    const { attendees } = await trx
      .selectFrom("attendees")
      .select((eb) => eb.fn.countAll<number>().as("attendees"))
      .where("conference_id", "=", row.id)
      .executeTakeFirstOrThrow();
    return { conference: toConference(row), attendees: Number(attendees) };
  });
}

/**
 * Marks the pending conferences due since before `dueBefore`, long enough for any instance with
 * room to have claimed them, with a conference-delayed event, once after each scheduled start (a
 * conference rescheduled and delayed again is marked again); returns those marked now. On
 * PostgreSQL the rows are locked with SKIP LOCKED, so instances looking together mark each once.
 */
async function markDelayedConferences(
  store: Store,
  dueBefore: Date,
  now: Date,
): Promise<DelayedConference[]> {
  return store.db.transaction().execute(async (trx) => {
    let due = trx
      .selectFrom("conferences")
      .select(["id", "user_id", "scheduled_to_start_at"])
      .select((eb) =>
        eb
          .selectFrom("attendees")
          .select((count) => count.fn.countAll<number>().as("attendees"))
          .whereRef("attendees.conference_id", "=", "conferences.id")
          .as("attendees"),
      )
      .where("state", "=", "pending")
      .where("scheduled_to_start_at", "<=", timestamp(dueBefore))
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("events")
              .select("events.id")
              .whereRef("events.conference_id", "=", "conferences.id")
              .where("events.type", "=", "conference-delayed")
              .whereRef("events.created_at", ">=", "conferences.scheduled_to_start_at"),
          ),
        ),
      )
      .orderBy("scheduled_to_start_at");
    if (store.dialect === "postgres") due = due.forUpdate().skipLocked();
    const rows = await due.execute();
    await appendEvents(
      trx,
      rows.map((row) => ({
        ...roomEvent({ userId: row.user_id, conferenceId: row.id }, "conference-delayed"),
        reason: "no instance has room for it",
      })),
      now,
    );
    return rows.map((row) => ({
      id: row.id,
      attendees: Number(row.attendees),
      scheduledToStartAt: new Date(row.scheduled_to_start_at).toISOString(),
    }));
  });
}

/** The running instance says it still runs its conferences. */
async function renewHeartbeat(store: Store, runner: string, now: Date): Promise<void> {
  await store.db
    .updateTable("conferences")
    .set({ runner_heartbeat_at: timestamp(now) })
    .where("runner", "=", runner)
    .where("state", "=", "started")
    .execute();
}

/**
 * Crash recovery: ends started conferences whose runner is gone: this instance before a restart
 * (`ownRunner`, given once at start-up) or any runner silent since `staleBefore`. Calls still marked in progress are
 * disconnected with their seconds counted up to the runner's last heartbeat, the last moment they
 * are known to have existed. Each conference is claimed with FOR UPDATE SKIP LOCKED on PostgreSQL.
 */
async function recoverAbandonedConferences(
  store: Store,
  abandoned: { ownRunner?: string; staleBefore: Date },
  now: Date,
): Promise<RecoveredConference[]> {
  const recovered: RecoveredConference[] = [];
  for (;;) {
    const found = await store.db.transaction().execute(async (trx) => {
      let query = trx
        .selectFrom("conferences")
        .select(["id", "user_id", "name", "runner", "runner_heartbeat_at", "started_at"])
        .where("state", "=", "started")
        .where((eb) =>
          eb.or([
            eb("runner_heartbeat_at", "<", timestamp(abandoned.staleBefore)),
            eb("runner_heartbeat_at", "is", null),
            ...(abandoned.ownRunner === undefined ? [] : [eb("runner", "=", abandoned.ownRunner)]),
          ]),
        )
        .limit(1);
      if (store.dialect === "postgres") query = query.forUpdate().skipLocked();
      const row = await query.executeTakeFirst();
      if (row === undefined) return undefined;
      const lastSeen = row.runner_heartbeat_at ?? row.started_at ?? timestamp(now);
      const at = timestamp(now);
      const reason = "call lost: the service stopped";
      const disconnected = await trx
        .updateTable("attendees")
        .set({
          state: "disconnected",
          duration: connectedDurationSql(store.dialect, lastSeen),
          connected_at: null,
          call_result: reason,
          updated_at: at,
          lock_version: nextLockVersion(),
        })
        .where("conference_id", "=", row.id)
        .where("state", "in", CALL_IN_PROGRESS)
        .returning("id")
        .execute();
      await trx
        .updateTable("conferences")
        .set({
          state: "ended",
          ended_at: lastSeen,
          runner: null,
          runner_heartbeat_at: null,
          updated_at: at,
          lock_version: nextLockVersion(),
        })
        .where("id", "=", row.id)
        .execute();
      const scope = { userId: row.user_id, conferenceId: row.id };
      await appendEvents(
        trx,
        [
          ...disconnected.map((attendee) => roomEvent(scope, "attendee-disconnected", attendee.id, reason)),
          roomEvent(scope, "conference-ended", null, reason),
        ],
        now,
      );
      return {
        id: row.id,
        name: row.name,
        runner: row.runner,
        disconnectedAttendees: disconnected.length,
      };
    });
    if (found === undefined) return recovered;
    recovered.push(found);
  }
}
