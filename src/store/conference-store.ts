/**
 * The store side of the conferences this instance runs (the ConferenceStore of conference/ports.ts):
 * a room's state as it loads it, its attendees' calls and controls, its end, each change with its
 * events for live views in its transaction; and the adapter that binds these, the dial-in, placed
 * calls, events and recordings to one store for the room.
 */
import type { Kysely } from "kysely";
import type { AttendeeCallEvent, ConferenceStore, RoomScope, RoomState } from "../conference/ports.js";
import { CALL_IN_PROGRESS } from "../domain/attendee.js";
import { attendeeControlEvents, conferenceControlEvents, type LiveControls } from "../domain/event.js";
import { toAttendee } from "./attendees.js";
import { recordCall } from "./call-records.js";
import { toConference } from "./conferences.js";
import { type Store, type StoreDialect, unreachableReason } from "./database.js";
import {
  admitCaller,
  createHandoff,
  findPinTarget,
  roomLocation,
  takeHandoff,
  withdrawAdmission,
} from "./dial-in.js";
import { appendEvents } from "./events.js";
import { checkLease, LeaseLost } from "./leases.js";
import { roomEvent } from "./live-events.js";
import { endPlacedCall, reservePlacedCalls } from "./placed-calls.js";
import { setRecordingFile } from "./recordings.js";
import type { Database } from "./schema.js";
import { connectedDurationSql, flag, nextLockVersion, readFlag, timestamp } from "./values.js";

export function conferenceStore(store: Store): ConferenceStore {
  return {
    unreachable: (error) => unreachableReason(error) !== undefined,
    leaseLost: (error) => error instanceof LeaseLost,
    loadRoom: (conferenceId) => loadRoom(store, conferenceId),
    ownerName: (userId) => ownerName(store, userId),
    recordAttendeeCall: (scope, attendeeId, event, at) =>
      recordAttendeeCall(store, scope, attendeeId, event, at),
    recordAttendeeControls: (scope, attendeeId, controls, at) =>
      recordAttendeeControls(store, scope, attendeeId, controls, at),
    recordConferenceControls: (scope, controls, at, reason) =>
      recordConferenceControls(store, scope, controls, at, reason),
    endConference: (scope, reason, at) => endConference(store, scope, reason, at),
    recordCall: (scope, record, at) => recordCall(store, scope, record, at),
    reservePlacedCalls: (scope, attendeeIds, policy, at) =>
      reservePlacedCalls(store, scope, attendeeIds, policy, at),
    endPlacedCall: (placedCallId, at) => endPlacedCall(store, placedCallId, at),
    appendEvent: (scope, attendeeId, type, at, reason) =>
      store.db.transaction().execute(async (trx) => {
        await checkLease(trx, store.dialect, scope);
        await appendEvents(trx, [roomEvent(scope, type, attendeeId, reason ?? null)], at);
      }),
    setRecordingFile: (scope, fileName) => setRecordingFile(store, scope, fileName),
    findPinTarget: (pin) => findPinTarget(store, pin),
    admitCaller: (conferenceId, caller, moderator, at) =>
      admitCaller(store, conferenceId, caller, moderator, at),
    roomLocation: (conferenceId) => roomLocation(store, conferenceId),
    createHandoff: (handoff, at) => createHandoff(store, handoff, at),
    takeHandoff: (token, at) => takeHandoff(store, token, at),
    withdrawAdmission: (token, addedAttendeeId, at) => withdrawAdmission(store, token, addedAttendeeId, at),
  };
}

async function loadRoom(store: Store, conferenceId: number): Promise<RoomState> {
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
    lease: conference === undefined ? undefined : Number(conference.runner_generation),
  };
}

/** The name of a conference's owner, for the invitation its attendees hear. */
async function ownerName(store: Store, userId: number): Promise<string | undefined> {
  const row = await store.db.selectFrom("users").select("name").where("id", "=", userId).executeTakeFirst();
  return row?.name;
}

/**
 * Records how an attendee's call goes, with its event. Connected starts the live duration
 * (connected-at) with muted and hand-up set; disconnected adds the call's seconds to duration. False
 * when the attendee is gone.
 */
function recordAttendeeCall(
  store: Store,
  scope: RoomScope,
  attendeeId: number,
  event: AttendeeCallEvent,
  now: Date,
): Promise<boolean> {
  return store.db.transaction().execute(async (trx) => {
    await checkLease(trx, store.dialect, scope);
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
        hand_up: flag(event.handUp ?? false),
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
async function recordAttendeeControls(
  store: Store,
  scope: RoomScope,
  attendeeId: number,
  controls: { muted?: boolean; handUp?: boolean },
  now: Date,
): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    await checkLease(trx, store.dialect, scope);
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
async function recordConferenceControls(
  store: Store,
  scope: RoomScope,
  controls: Partial<LiveControls>,
  now: Date,
  /** Why, when the room changed them itself (its recording failed). */
  reason: string | null = null,
): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    await checkLease(trx, store.dialect, scope);
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
async function endConference(
  store: Store,
  scope: RoomScope,
  reason: string,
  now: Date,
  callsEndedAt: Date = now,
): Promise<void> {
  const at = timestamp(now);
  const conferenceId = scope.conferenceId;
  await store.db.transaction().execute(async (trx) => {
    await checkLease(trx, store.dialect, scope);
    const disconnected = await disconnectCallsInProgress(trx, store.dialect, conferenceId, {
      until: timestamp(callsEndedAt),
      at,
    });
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
        ...disconnected.map((id) => roomEvent(scope, "attendee-disconnected", id, reason)),
        ...(Number(ended.numUpdatedRows) === 1 ? [roomEvent(scope, "conference-ended", null, reason)] : []),
      ],
      now,
    );
  });
}

/**
 * Marks a conference's calls still in progress disconnected, their seconds counted up to `until`
 * (with `result` as their call result when given); returns the attendees' ids.
 */
export async function disconnectCallsInProgress(
  trx: Kysely<Database>,
  dialect: StoreDialect,
  conferenceId: number,
  ended: { readonly until: string; readonly at: string; readonly result?: string },
): Promise<number[]> {
  const rows = await trx
    .updateTable("attendees")
    .set({
      state: "disconnected",
      duration: connectedDurationSql(dialect, ended.until),
      connected_at: null,
      ...(ended.result !== undefined && { call_result: ended.result }),
      updated_at: ended.at,
      lock_version: nextLockVersion(),
    })
    .where("conference_id", "=", conferenceId)
    .where("state", "in", CALL_IN_PROGRESS)
    .returning("id")
    .execute();
  return rows.map((row) => row.id);
}
