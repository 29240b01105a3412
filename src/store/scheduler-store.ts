/**
 * The store side of the scheduler (the SchedulerStore of scheduler/ports.ts): claiming due
 * conferences so that exactly one instance starts each, the running instance's leases, the due
 * conferences no instance had room for, and the take-over of conferences whose instance died or
 * stopped; each change with its events for live views, in its transaction.
 */
import { type Kysely, sql } from "kysely";
import { CALL_IN_PROGRESS } from "../domain/attendee.js";
import { type RecoveryDetails, RUNNER_GONE_REASON } from "../domain/event.js";
import type {
  Claimant,
  ClaimedConference,
  DelayedConference,
  HeldLease,
  RecoveredConference,
  SchedulerStore,
  TakenOverConference,
} from "../scheduler/ports.js";
import { disconnectCallsInProgress } from "./conference-store.js";
import { toConference } from "./conferences.js";
import type { Store } from "./database.js";
import { appendEvents } from "./events.js";
import { roomEvent } from "./live-events.js";
import type { Database } from "./schema.js";
import { renewSipInstance } from "./sip-instances.js";
import { nextLockVersion, timestamp } from "./values.js";

export function schedulerStore(store: Store): SchedulerStore {
  return {
    claimDueConference: (claimant, now) => claimDueConference(store, claimant, now),
    markDelayedConferences: (dueBefore, now) => markDelayedConferences(store, dueBefore, now),
    renewLeases: (runner, now) => renewLeases(store, runner, now),
    takeOverConferences: (claimant, gone, now) => takeOverConferences(store, claimant, gone, now),
    releaseLeases: (runner, leases, now) => releaseLeases(store, runner, leases, now),
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
        runner_released_at: null,
        runner_generation: sql<number>`runner_generation + 1`,
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
    const attendees = await countAttendees(trx, row.id);
    return { conference: toConference(row), attendees, lease: Number(row.runner_generation) };
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

/**
 * The running instance says it still runs its conferences: their heartbeat is now. Returns the
 * leases it still holds (not taken over, not handed over).
 */
async function renewLeases(store: Store, runner: string, now: Date): Promise<HeldLease[]> {
  const rows = await store.db
    .updateTable("conferences")
    .set({ runner_heartbeat_at: timestamp(now) })
    .where("runner", "=", runner)
    .where("state", "=", "started")
    .where("runner_released_at", "is", null)
    .returning(["id", "runner_generation"])
    .execute();
  return rows.map((row) => ({ conferenceId: row.id, lease: Number(row.runner_generation) }));
}

/**
 * Takes over, one at a time, the started conferences whose runner is gone (see
 * SchedulerStore.takeOverConferences): the conference gets `claimant` as its runner and a new lease;
 * the calls still marked in progress are disconnected with their seconds counted up to the runner's
 * last heartbeat (the last moment they are known to have existed), their placed calls end then, and
 * the attendees the service had called are returned to be called back (those connected) or again
 * (those still being called). A conference last heard of
 * before `endBefore` is ended instead; one too big for the claimant's room is left to another. Each
 * conference is locked with FOR UPDATE SKIP LOCKED on PostgreSQL, so instances looking together take
 * each once.
 */
async function takeOverConferences(
  store: Store,
  claimant: Claimant,
  gone: { readonly ownRunner?: string; readonly silentBefore?: Date; readonly endBefore: Date },
  now: Date,
): Promise<{ takenOver: TakenOverConference[]; ended: RecoveredConference[] }> {
  const takenOver: TakenOverConference[] = [];
  const ended: RecoveredConference[] = [];
  /** Looked at already: taken over here, or too big for what is left of this instance's room. */
  const passed: number[] = [];
  let room = claimant.room;
  const at = timestamp(now);
  for (;;) {
    const done = await store.db.transaction().execute(async (trx) => {
      let query = trx
        .selectFrom("conferences")
        .selectAll()
        .where("state", "=", "started")
        .where((eb) =>
          eb.or([
            eb("runner_released_at", "is not", null),
            eb("runner_heartbeat_at", "is", null),
            ...(gone.silentBefore === undefined
              ? []
              : [eb("runner_heartbeat_at", "<", timestamp(gone.silentBefore))]),
            ...(gone.ownRunner === undefined ? [] : [eb("runner", "=", gone.ownRunner)]),
          ]),
        )
        .$if(passed.length > 0, (q) => q.where("id", "not in", passed))
        .orderBy("id")
        .limit(1);
      if (store.dialect === "postgres") query = query.forUpdate().skipLocked();
      const row = await query.executeTakeFirst();
      if (row === undefined) return true;
      const lastSeen = row.runner_released_at ?? row.runner_heartbeat_at ?? row.started_at ?? at;
      const endIt = new Date(lastSeen) < gone.endBefore;
      const attendees = await countAttendees(trx, row.id);
      if (!endIt && room !== null && Math.max(1, attendees) > room) {
        passed.push(row.id);
        return false;
      }
      const scope = { userId: row.user_id, conferenceId: row.id };
      const inProgress = await trx
        .selectFrom("attendees")
        .select(["id", "state", "dial_in", "phone_number_subscriber_number"])
        .where("conference_id", "=", row.id)
        .where("state", "in", CALL_IN_PROGRESS)
        .orderBy("id")
        .execute();
      const disconnected = await disconnectCallsInProgress(trx, store.dialect, row.id, {
        until: lastSeen,
        at,
        result: RUNNER_GONE_REASON,
      });
      await trx
        .updateTable("placed_calls")
        .set({ ended_at: lastSeen })
        .where("conference_id", "=", row.id)
        .where("ended_at", "is", null)
        .execute();
      const disconnectedEvents = disconnected.map((id) =>
        roomEvent(scope, "attendee-disconnected", id, RUNNER_GONE_REASON),
      );
      if (endIt) {
        await trx
          .updateTable("conferences")
          .set({
            state: "ended",
            ended_at: lastSeen,
            runner: null,
            runner_heartbeat_at: null,
            runner_released_at: null,
            updated_at: at,
            lock_version: nextLockVersion(),
          })
          .where("id", "=", row.id)
          .execute();
        await appendEvents(
          trx,
          [...disconnectedEvents, roomEvent(scope, "conference-ended", null, RUNNER_GONE_REASON)],
          now,
        );
        ended.push({
          id: row.id,
          name: row.name,
          runner: row.runner,
          disconnectedAttendees: disconnected.length,
        });
        return false;
      }
      const lease = Number(row.runner_generation) + 1;
      const taken = await trx
        .updateTable("conferences")
        .set({
          runner: claimant.runner,
          runner_sip_uri: claimant.sipUri,
          runner_heartbeat_at: at,
          runner_released_at: null,
          runner_generation: lease,
          updated_at: at,
          lock_version: nextLockVersion(),
        })
        .where("id", "=", row.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      const dialled = inProgress.filter(
        (attendee) => !attendee.dial_in && attendee.phone_number_subscriber_number !== null,
      );
      // Those in the room are called back into it; those still being called (ringing, or at the
      // greeting) had accepted nothing yet: they are called again as before, greeting and all.
      const callBack = dialled
        .filter((attendee) => attendee.state === "connected")
        .map((attendee) => attendee.id);
      const redial = dialled
        .filter((attendee) => attendee.state !== "connected")
        .map((attendee) => attendee.id);
      const recovery: RecoveryDetails = {
        previousInstance: row.runner,
        instance: claimant.runner,
        gapSeconds: Math.max(0, Math.round((now.getTime() - Date.parse(lastSeen)) / 100) / 10),
        calledBack: callBack.length + redial.length,
        cause: row.runner_released_at === null ? "runner-silent" : "handed-over",
      };
      await appendEvents(
        trx,
        [...disconnectedEvents, { ...roomEvent(scope, "conference-recovered"), recovery }],
        now,
      );
      takenOver.push({ conference: toConference(taken), attendees, lease, callBack, redial, recovery });
      // Its own (ownRunner) would match again; and it takes room as a claim does.
      passed.push(row.id);
      if (room !== null) room -= Math.max(1, attendees);
      return false;
    });
    if (done) return { takenOver, ended };
  }
}

/**
 * Hands the conferences over, all or none: released now, with a new generation (a stopping room's
 * write still in flight lands before it, any later one is refused); any instance takes them over at
 * its next renewal.
 */
async function releaseLeases(
  store: Store,
  runner: string,
  leases: readonly HeldLease[],
  now: Date,
): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    for (const { conferenceId, lease } of leases) {
      await trx
        .updateTable("conferences")
        .set((eb) => ({
          runner_released_at: timestamp(now),
          runner_heartbeat_at: timestamp(now),
          runner_generation: eb("runner_generation", "+", 1),
        }))
        .where("id", "=", conferenceId)
        .where("runner", "=", runner)
        .where("runner_generation", "=", lease)
        .where("state", "=", "started")
        .execute();
    }
  });
}

async function countAttendees(db: Kysely<Database>, conferenceId: number): Promise<number> {
  const { attendees } = await db
    .selectFrom("attendees")
    .select((eb) => eb.fn.countAll<number>().as("attendees"))
    .where("conference_id", "=", conferenceId)
    .executeTakeFirstOrThrow();
  return Number(attendees);
}
