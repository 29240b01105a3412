/**
 * The store side of conferences that take place: claiming due conferences so that exactly one
 * instance starts each, the running instance's heartbeat, attendee call states as calls progress, the
 * end of a conference, and recovery of conferences whose instance died; each change with its events
 * for live views, in its transaction. Also the API's live controls: what it changes in a started
 * conference, and its requests to the room (call an attendee again, end the conference).
 */
import { type Kysely, sql } from "kysely";
import type { Attendee, AttendeeState } from "../domain/attendee.js";
import type { Conference } from "../domain/conference.js";
import type { CallEncryption } from "../domain/encryption.js";
import { attendeeControlEvents, conferenceControlEvents, type LiveControls } from "../domain/event.js";
import { toAttendee } from "./attendees.js";
import { toConference } from "./conferences.js";
import type { Store, StoreDialect } from "./database.js";
import { appendEvents } from "./events.js";
import { type RoomScope, roomEvent } from "./live-events.js";
import type { Database } from "./schema.js";
import { flag, nextLockVersion, readFlag, timestamp } from "./values.js";

/** Attendee states that stand for a call in progress. */
const IN_CALL: AttendeeState[] = ["calling", "connected"];

/** A conference just claimed, with how many attendees it has (the room it takes). */
export interface ClaimedConference {
  readonly conference: Conference;
  readonly attendees: number;
}

/** Who claims a conference. */
export interface Claimant {
  /** The instance's name as the runner. */
  readonly runner: string;
  /** Where the instance takes calls for its rooms. */
  readonly sipUri: string | null;
  /** Participants it can still take on: it claims only a conference whose attendees fit; null for no limit. */
  readonly room: number | null;
}

/**
 * Starts the next pending conference whose time has come, if any: state started, started-at, and
 * this instance as its runner, in one statement. On PostgreSQL the row is picked with FOR UPDATE SKIP
 * LOCKED, so instances polling together each get a different conference and none gets one twice;
 * SQLite has a single writer. With a limit on room, a conference takes room for each attendee (for
 * one caller at least, when it has none): one that does not fit is left to another instance.
 */
export async function claimDueConference(
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

/** A due conference that no instance has claimed, each being full. */
export interface DelayedConference {
  readonly id: number;
  readonly attendees: number;
  readonly scheduledToStartAt: string;
}

/**
 * Marks the pending conferences due since before `dueBefore`, long enough for any instance with
 * room to have claimed them, with a conference-delayed event, once after each scheduled start (a
 * conference rescheduled and delayed again is marked again); returns those marked now. On
 * PostgreSQL the rows are locked with SKIP LOCKED, so instances looking together mark each once.
 */
export async function markDelayedConferences(
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
export async function renewHeartbeat(store: Store, runner: string, now: Date): Promise<void> {
  await store.db
    .updateTable("conferences")
    .set({ runner_heartbeat_at: timestamp(now) })
    .where("runner", "=", runner)
    .where("state", "=", "started")
    .execute();
}

/** A running conference as its runner sees it, with what the API asked of the room. */
export interface RoomState {
  /** The row; undefined once deleted. */
  conference: Conference | undefined;
  attendees: Attendee[];
  /** Set when the API asked the room to end the conference. */
  endRequestedAt: string | null;
  /** Attendee id to when the API last asked the room to call it again (or now). */
  callRequests: Map<number, string>;
}

export async function loadRoom(store: Store, conferenceId: number): Promise<RoomState> {
  const [conference, attendees] = await Promise.all([
    store.db.selectFrom("conferences").selectAll().where("id", "=", conferenceId).executeTakeFirst(),
    store.db
      .selectFrom("attendees")
      .selectAll()
      .where("conference_id", "=", conferenceId)
      .orderBy("id")
      .execute(),
  ]);
  const callRequests = new Map<number, string>();
  for (const row of attendees)
    if (row.call_requested_at !== null)
      callRequests.set(row.id, new Date(row.call_requested_at).toISOString());
  return {
    conference: conference === undefined ? undefined : toConference(conference),
    attendees: attendees.map(toAttendee),
    endRequestedAt: conference?.end_requested_at ?? null,
    callRequests,
  };
}

/** The name of a conference's owner, for the invitation its attendees hear. */
export async function ownerName(store: Store, userId: number): Promise<string | undefined> {
  const row = await store.db.selectFrom("users").select("name").where("id", "=", userId).executeTakeFirst();
  return row?.name;
}

export type AttendeeCallEvent =
  | { kind: "calling" }
  | { kind: "connected"; muted: boolean; encryption: CallEncryption }
  | { kind: "failed"; state: AttendeeState; result: string }
  | { kind: "disconnected"; result: string };

/**
 * Records how an attendee's call goes, with its event. Connected starts the live duration
 * (connected-at) with muted and hand-up set; disconnected adds the call's seconds to duration. False
 * when the attendee is gone.
 */
export function recordAttendeeCall(
  store: Store,
  scope: RoomScope,
  attendeeId: number,
  event: AttendeeCallEvent,
  now: Date,
): Promise<boolean> {
  return store.db.transaction().execute(async (trx) => {
    const updated = await updateAttendeeCall(trx, store.dialect, attendeeId, event, now);
    if (updated) {
      const reason = event.kind === "failed" || event.kind === "disconnected" ? event.result : null;
      const encryption = event.kind === "connected" ? event.encryption : null;
      await appendEvents(
        trx,
        [roomEvent(scope, `attendee-${event.kind}`, attendeeId, reason, encryption)],
        now,
      );
    }
    return updated;
  });
}

async function updateAttendeeCall(
  db: Kysely<Database>,
  dialect: StoreDialect,
  attendeeId: number,
  event: AttendeeCallEvent,
  now: Date,
): Promise<boolean> {
  const at = timestamp(now);
  const common = { updated_at: at, lock_version: nextLockVersion() };
  let update = db.updateTable("attendees").where("id", "=", attendeeId);
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
        encryption: event.encryption,
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
        duration: connectedDurationSql(dialect, at),
        connected_at: null,
      });
      break;
  }
  const result = await update.executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Sets muted and hand-up as they are in the room, with an event for each flag that changes. */
export async function recordAttendeeControls(
  store: Store,
  scope: RoomScope,
  attendeeId: number,
  controls: { muted?: boolean; handUp?: boolean },
  now: Date,
): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    const before = await trx
      .selectFrom("attendees")
      .select(["muted", "hand_up"])
      .where("id", "=", attendeeId)
      .$if(store.dialect === "postgres", (q) => q.forUpdate())
      .executeTakeFirst();
    if (before === undefined) return;
    await trx
      .updateTable("attendees")
      .set({
        updated_at: timestamp(now),
        lock_version: nextLockVersion(),
        ...(controls.muted !== undefined && { muted: flag(controls.muted) }),
        ...(controls.handUp !== undefined && { hand_up: flag(controls.handUp) }),
      })
      .where("id", "=", attendeeId)
      .execute();
    const old = { muted: readFlag(before.muted), handUp: readFlag(before.hand_up) };
    const types = attendeeControlEvents(old, {
      muted: controls.muted ?? old.muted,
      handUp: controls.handUp ?? old.handUp,
    });
    await appendEvents(
      trx,
      types.map((type) => roomEvent(scope, type, attendeeId)),
      now,
    );
  });
}

/** The conference options the moderator changes from the keypad, with an event for each that changes. */
export async function recordConferenceControls(
  store: Store,
  scope: RoomScope,
  controls: Partial<LiveControls>,
  now: Date,
  /** Why, when the room changed them itself (its recording failed). */
  reason: string | null = null,
): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    const before = await trx
      .selectFrom("conferences")
      .select(["dial_in_locked", "lecture_mode", "record_audio", "encrypted_only"])
      .where("id", "=", scope.conferenceId)
      .$if(store.dialect === "postgres", (q) => q.forUpdate())
      .executeTakeFirst();
    if (before === undefined) return;
    await trx
      .updateTable("conferences")
      .set({
        updated_at: timestamp(now),
        lock_version: nextLockVersion(),
        ...(controls.dialInLocked !== undefined && { dial_in_locked: flag(controls.dialInLocked) }),
        ...(controls.lectureMode !== undefined && { lecture_mode: flag(controls.lectureMode) }),
        ...(controls.recordAudio !== undefined && { record_audio: flag(controls.recordAudio) }),
        ...(controls.encryptedOnly !== undefined && { encrypted_only: flag(controls.encryptedOnly) }),
      })
      .where("id", "=", scope.conferenceId)
      .execute();
    const old = {
      dialInLocked: Boolean(before.dial_in_locked),
      lectureMode: Boolean(before.lecture_mode),
      recordAudio: Boolean(before.record_audio),
      encryptedOnly: Boolean(before.encrypted_only),
    };
    const types = conferenceControlEvents(old, { ...old, ...controls });
    await appendEvents(
      trx,
      types.map((type) => roomEvent(scope, type, null, reason)),
      now,
    );
  });
}

/**
 * Ends a conference: state ended, ended-at, no runner; any attendee still marked in a call is
 * disconnected with its seconds counted up to `callsEndedAt`.
 */
export async function endConference(
  store: Store,
  scope: RoomScope,
  reason: string,
  now: Date,
  callsEndedAt: Date = now,
): Promise<void> {
  const at = timestamp(now);
  const conferenceId = scope.conferenceId;
  await store.db.transaction().execute(async (trx) => {
    const disconnected = await trx
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
      .returning("id")
      .execute();
    const ended = await trx
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
      .executeTakeFirst();
    await appendEvents(
      trx,
      [
        ...disconnected.map((row) => roomEvent(scope, "attendee-disconnected", row.id, reason)),
        ...(Number(ended.numUpdatedRows) === 1 ? [roomEvent(scope, "conference-ended", null, reason)] : []),
      ],
      now,
    );
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
        .where("state", "in", IN_CALL)
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

export type CallRequest =
  | { outcome: "requested"; attendee: Attendee }
  | { outcome: "not-started" }
  | { outcome: "in-call"; attendee: Attendee }
  | { outcome: "no-number" }
  | { outcome: "no-attendee" };

/**
 * Asks the room of a started conference to call an attendee again (or now), unless its call is in
 * progress: the room dials it on its next refresh, on whichever instance runs it.
 */
export async function requestAttendeeCall(
  store: Store,
  conferenceId: number,
  attendeeId: number,
  now: Date,
): Promise<CallRequest> {
  return store.db.transaction().execute(async (trx): Promise<CallRequest> => {
    const conference = await trx
      .selectFrom("conferences")
      .select("state")
      .where("id", "=", conferenceId)
      .$if(store.dialect === "postgres", (q) => q.forUpdate())
      .executeTakeFirst();
    if (conference?.state !== "started") return { outcome: "not-started" };
    const current = await trx
      .selectFrom("attendees")
      .selectAll()
      .where("id", "=", attendeeId)
      .where("conference_id", "=", conferenceId)
      .executeTakeFirst();
    if (current === undefined) return { outcome: "no-attendee" };
    if (IN_CALL.includes(current.state as AttendeeState))
      return { outcome: "in-call", attendee: toAttendee(current) };
    if (current.phone_number_subscriber_number === null) return { outcome: "no-number" };
    const row = await trx
      .updateTable("attendees")
      .set({ call_requested_at: now.toISOString() })
      .where("id", "=", attendeeId)
      .returningAll()
      .executeTakeFirstOrThrow();
    return { outcome: "requested", attendee: toAttendee(row) };
  });
}

/** Asks the room of a started conference to end it. Undefined when the conference is not started. */
export async function requestConferenceEnd(
  store: Store,
  userId: number,
  conferenceId: number,
  now: Date,
): Promise<Conference | undefined> {
  const row = await store.db
    .updateTable("conferences")
    .set({ end_requested_at: now.toISOString() })
    .where("id", "=", conferenceId)
    .where("user_id", "=", userId)
    .where("state", "=", "started")
    .returningAll()
    .executeTakeFirst();
  return row === undefined ? undefined : toConference(row);
}
