/**
 * The store side of conferences that take place: claiming due conferences so that exactly one
 * instance starts each, the running instance's heartbeat, attendee call states as calls progress, the
 * end of a conference, and recovery of conferences whose instance died.
 */
import { sql } from "kysely";
import type { Attendee, AttendeeState } from "../domain/attendee.js";
import type { Conference } from "../domain/conference.js";
import { toAttendee } from "./attendees.js";
import { toConference } from "./conferences.js";
import type { Store, StoreDialect } from "./database.js";
import { flag, nextLockVersion, timestamp } from "./values.js";

/** Attendee states that stand for a call in progress. */
const IN_CALL: AttendeeState[] = ["calling", "connected"];

/**
 * Starts the next pending conference whose time has come, if any: state started, started-at, and
 * this instance as its runner, in one statement. On PostgreSQL the row is picked with FOR UPDATE SKIP
 * LOCKED, so instances polling together each get a different conference and none gets one twice;
 * SQLite has a single writer.
 */
export async function claimDueConference(
  store: Store,
  runner: string,
  now: Date,
): Promise<Conference | undefined> {
  const at = timestamp(now);
  let due = store.db
    .selectFrom("conferences")
    .select("id")
    .where("state", "=", "pending")
    .where("scheduled_to_start_at", "<=", at)
    .orderBy("scheduled_to_start_at")
    .limit(1);
  if (store.dialect === "postgres") due = due.forUpdate().skipLocked();
  const row = await store.db
    .updateTable("conferences")
    .set({
      state: "started",
      started_at: at,
      runner,
      runner_heartbeat_at: at,
      updated_at: at,
      lock_version: nextLockVersion(),
    })
    .where("id", "=", (eb) => eb.selectFrom(due.as("due")).select("due.id"))
    .where("state", "=", "pending")
    .returningAll()
    .executeTakeFirst();
  return row === undefined ? undefined : toConference(row);
}

/** The running instance says it still runs its conferences. */
export async function renewHeartbeat(store: Store, runner: string, now: Date): Promise<void> {
  await store.db
    .updateTable("conferences")
    .set({ runner_heartbeat_at: timestamp(now) })
    .where("runner", "=", runner)
    .where("state", "=", "started")
    .execute();
}

/** A running conference as its runner sees it: the row (undefined once deleted) and its attendees. */
export async function loadRoom(
  store: Store,
  conferenceId: number,
): Promise<{ conference: Conference | undefined; attendees: Attendee[] }> {
  const [conference, attendees] = await Promise.all([
    store.db.selectFrom("conferences").selectAll().where("id", "=", conferenceId).executeTakeFirst(),
    store.db
      .selectFrom("attendees")
      .selectAll()
      .where("conference_id", "=", conferenceId)
      .orderBy("id")
      .execute(),
  ]);
  return {
    conference: conference === undefined ? undefined : toConference(conference),
    attendees: attendees.map(toAttendee),
  };
}

/** The name of a conference's owner, for the invitation its attendees hear. */
export async function ownerName(store: Store, userId: number): Promise<string | undefined> {
  const row = await store.db.selectFrom("users").select("name").where("id", "=", userId).executeTakeFirst();
  return row?.name;
}

export type AttendeeCallEvent =
  | { kind: "calling" }
  | { kind: "connected"; muted: boolean }
  | { kind: "failed"; state: AttendeeState; result: string }
  | { kind: "disconnected"; result: string };

/**
 * Records how an attendee's call goes. Connected starts the live duration (connected-at) with muted
 * and hand-up set; disconnected adds the call's seconds to duration. False when the attendee is gone.
 */
export async function recordAttendeeCall(
  store: Store,
  attendeeId: number,
  event: AttendeeCallEvent,
  now: Date,
): Promise<boolean> {
  const at = timestamp(now);
  const common = { updated_at: at, lock_version: nextLockVersion() };
  let update = store.db.updateTable("attendees").where("id", "=", attendeeId);
  switch (event.kind) {
    case "calling":
      update = update.set({ ...common, state: "calling", call_result: null });
      break;
    case "connected":
      update = update.set({
        ...common,
        state: "connected",
        connected_at: at,
        muted: flag(event.muted),
        hand_up: flag(false),
      });
      break;
    case "failed":
      update = update.set({ ...common, state: event.state, call_result: event.result, connected_at: null });
      break;
    case "disconnected":
      update = update.set({
        ...common,
        state: "disconnected",
        call_result: event.result,
        duration: connectedDurationSql(store.dialect, at),
        connected_at: null,
      });
      break;
  }
  const result = await update.executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Sets muted and hand-up as they are in the room. */
export async function recordAttendeeControls(
  store: Store,
  attendeeId: number,
  controls: { muted?: boolean; handUp?: boolean },
  now: Date,
): Promise<void> {
  await store.db
    .updateTable("attendees")
    .set({
      updated_at: timestamp(now),
      lock_version: nextLockVersion(),
      ...(controls.muted !== undefined && { muted: flag(controls.muted) }),
      ...(controls.handUp !== undefined && { hand_up: flag(controls.handUp) }),
    })
    .where("id", "=", attendeeId)
    .execute();
}

/**
 * Ends a conference: state ended, ended-at, no runner; any attendee still marked in a call is
 * disconnected with its seconds counted up to `callsEndedAt`.
 */
export async function endConference(
  store: Store,
  conferenceId: number,
  now: Date,
  callsEndedAt: Date = now,
): Promise<void> {
  const at = timestamp(now);
  await store.db.transaction().execute(async (trx) => {
    await trx
      .updateTable("attendees")
      .set({
        state: "disconnected",
        duration: connectedDurationSql(store.dialect, timestamp(callsEndedAt)),
        connected_at: null,
        updated_at: at,
        lock_version: nextLockVersion(),
      })
      .where("conference_id", "=", conferenceId)
      .where("state", "in", IN_CALL)
      .execute();
    await trx
      .updateTable("conferences")
      .set({
        state: "ended",
        ended_at: at,
        runner: null,
        runner_heartbeat_at: null,
        updated_at: at,
        lock_version: nextLockVersion(),
      })
      .where("id", "=", conferenceId)
      .where("state", "=", "started")
      .execute();
  });
}

export interface RecoveredConference {
  id: number;
  name: string;
  runner: string | null;
  disconnectedAttendees: number;
}

/**
 * Crash recovery: ends started conferences whose runner is gone: this instance before a restart
 * (`ownRunner`, given once at start-up) or any runner silent since `staleBefore`. Calls still marked in progress are
 * disconnected with their seconds counted up to the runner's last heartbeat, the last moment they
 * are known to have existed. Each conference is claimed with FOR UPDATE SKIP LOCKED on PostgreSQL.
 */
export async function recoverAbandonedConferences(
  store: Store,
  abandoned: { ownRunner?: string; staleBefore: Date },
  now: Date,
): Promise<RecoveredConference[]> {
  const recovered: RecoveredConference[] = [];
  for (;;) {
    const found = await store.db.transaction().execute(async (trx) => {
      let query = trx
        .selectFrom("conferences")
        .select(["id", "name", "runner", "runner_heartbeat_at", "started_at"])
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
      const disconnected = await trx
        .updateTable("attendees")
        .set({
          state: "disconnected",
          duration: connectedDurationSql(store.dialect, lastSeen),
          connected_at: null,
          call_result: "call lost: the service stopped",
          updated_at: at,
          lock_version: nextLockVersion(),
        })
        .where("conference_id", "=", row.id)
        .where("state", "in", IN_CALL)
        .executeTakeFirst();
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
      return {
        id: row.id,
        name: row.name,
        runner: row.runner,
        disconnectedAttendees: Number(disconnected.numUpdatedRows),
      };
    });
    if (found === undefined) return recovered;
    recovered.push(found);
  }
}

/**
 * duration + the seconds from connected-at to `until`, in SQL so that it reads the row's own values
 * (no read-modify-write race); an attendee that was never connected keeps its duration.
 */
function connectedDurationSql(dialect: StoreDialect, until: string) {
  const seconds =
    dialect === "postgres"
      ? sql<number>`greatest(0, floor(extract(epoch from (cast(${until} as timestamptz) - connected_at))))::integer`
      : sql<number>`max(0, cast(strftime('%s', ${until}) as integer) - cast(strftime('%s', connected_at) as integer))`;
  return sql<number>`case when connected_at is null then duration else coalesce(duration, 0) + ${seconds} end`;
}
