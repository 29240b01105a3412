/**
 * Events for live views that changes through the API cause, appended in the change's transaction,
 * and how a room names the conference its events are about.
 */
import type { Kysely } from "kysely";
import type { RoomScope } from "../conference/ports.js";
import { type Conference, lectureModeMuting } from "../domain/conference.js";
import type { CallEncryption } from "../domain/encryption.js";
import {
  type ConferenceEventType,
  conferenceControlEvents,
  type NewConferenceEvent,
} from "../domain/event.js";
import { appendEvents } from "./events.js";
import type { Database } from "./schema.js";
import { flag, nextLockVersion, timestamp } from "./values.js";

export function roomEvent(
  scope: RoomScope,
  type: ConferenceEventType,
  attendeeId: number | null = null,
  reason: string | null = null,
  encryption: CallEncryption | null = null,
): NewConferenceEvent {
  return { userId: scope.userId, conferenceId: scope.conferenceId, attendeeId, type, reason, encryption };
}

/**
 * The live side of a change made through the API to a started conference, in its transaction: an
 * event for each control that changed, and lecture mode's muting (or unmuting) of the connected
 * members, which the running room applies on its next refresh.
 */
export async function recordLiveConferenceChange(
  trx: Kysely<Database>,
  before: Conference,
  after: Conference,
  now: Date,
): Promise<void> {
  if (after.state !== "started") return;
  const scope = { userId: after.userId, conferenceId: after.id };
  const events = conferenceControlEvents(before, after).map((type) => roomEvent(scope, type));
  if (before.lectureMode !== after.lectureMode) {
    const connected = await trx
      .selectFrom("attendees")
      .select(["id", "muted", "moderator"])
      .where("conference_id", "=", after.id)
      .where("state", "=", "connected")
      .orderBy("id")
      .execute();
    const changed: { id: number; muted: boolean }[] = [];
    for (const attendee of connected) {
      const muted = lectureModeMuting(after.lectureMode, Boolean(attendee.moderator));
      if (muted !== undefined && Boolean(attendee.muted) !== muted) changed.push({ id: attendee.id, muted });
    }
    for (const muted of [true, false]) {
      const ids = changed.filter((attendee) => attendee.muted === muted).map((attendee) => attendee.id);
      if (ids.length === 0) continue;
      await trx
        .updateTable("attendees")
        .set({ muted: flag(muted), updated_at: timestamp(now), lock_version: nextLockVersion() })
        .where("id", "in", ids)
        .execute();
    }
    // The members' flags come before the mode, as when the moderator switches it from the keypad.
    events.unshift(
      ...changed.map(({ id, muted }) => roomEvent(scope, muted ? "attendee-muted" : "attendee-unmuted", id)),
    );
  }
  await appendEvents(trx, events, now);
}

/** An event about an attendee added, changed or removed through the API, in the change's transaction. */
export async function recordAttendeeEvents(
  trx: Kysely<Database>,
  conferenceId: number,
  attendeeId: number,
  types: readonly ConferenceEventType[],
  now: Date,
): Promise<void> {
  if (types.length === 0) return;
  const owner = await trx
    .selectFrom("conferences")
    .select("user_id")
    .where("id", "=", conferenceId)
    .executeTakeFirstOrThrow();
  const scope = { userId: owner.user_id, conferenceId };
  await appendEvents(
    trx,
    types.map((type) => roomEvent(scope, type, attendeeId)),
    now,
  );
}
