/**
 * The API's live controls of a conference while it takes place: its requests to the running room
 * (call an attendee again or now, end the conference), stored for the room to carry out on its next
 * refresh, whichever instance runs it.
 */
import { type Attendee, type AttendeeState, CALL_IN_PROGRESS } from "../domain/attendee.js";
import type { Conference } from "../domain/conference.js";
import { toAttendee } from "./attendees.js";
import { toConference } from "./conferences.js";
import type { Store } from "./database.js";

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
    if (CALL_IN_PROGRESS.includes(current.state as AttendeeState))
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
