/**
 * The store side of callers dialling in: which room and role a PIN opens, which attendee a caller
 * is, where the room runs, and the tokens that hand a caller from the instance that answered to the
 * one that runs the room.
 */
import { randomBytes } from "node:crypto";
import type { AdmittedCaller, DialInHandoff, PinTarget, RoomLocation } from "../conference/ports.js";
import { MAX_ATTENDEES_PER_CONFERENCE } from "../domain/attendee.js";
import { readCallEncryption } from "../domain/encryption.js";
import { toAttendee } from "./attendees.js";
import type { Store } from "./database.js";
import { appendEvents } from "./events.js";
import { recordAttendeeEvents } from "./live-events.js";
import { flag, timestamp } from "./values.js";

/**
 * What a typed PIN opens: a conference's member or moderator PIN, or a user's own PIN, which opens
 * whichever conference of that user is in progress (the latest started). Undefined for no such PIN.
 */
export async function findPinTarget(store: Store, pin: string): Promise<PinTarget | undefined> {
  const row = await store.db
    .selectFrom("pins")
    .select(["role", "user_id", "conference_id"])
    .where("pin", "=", pin)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  const role = row.role === "moderator" ? "moderator" : "member";
  if (row.conference_id !== null) return { role, conferenceId: row.conference_id };
  if (row.user_id === null) return undefined;
  const inProgress = await store.db
    .selectFrom("conferences")
    .select("id")
    .where("user_id", "=", row.user_id)
    .where("state", "=", "started")
    .orderBy("started_at", "desc")
    .limit(1)
    .executeTakeFirst();
  return { role, conferenceId: inProgress?.id };
}

/**
 * The attendee a caller is: a dial-in attendee of the conference with the caller's number, or (for
 * the moderator PIN) the conference's dial-in moderator without a number; otherwise a new dial-in
 * attendee, the moderator when the conference has none and the caller used the moderator PIN.
 * Undefined when the conference is full.
 */
export async function admitCaller(
  store: Store,
  conferenceId: number,
  caller: { countryCode: string; subscriberNumber: string } | null,
  moderatorPin: boolean,
  now: Date,
): Promise<AdmittedCaller | undefined> {
  const at = timestamp(now);
  return store.db.transaction().execute(async (trx) => {
    let locked = trx.selectFrom("conferences").select(["id", "user_id"]).where("id", "=", conferenceId);
    if (store.dialect === "postgres") locked = locked.forUpdate();
    const conference = await locked.executeTakeFirst();
    if (conference === undefined) return undefined;
    const candidates = await trx
      .selectFrom("attendees")
      .selectAll()
      .where("conference_id", "=", conferenceId)
      .orderBy("id")
      .execute();
    const free = candidates.filter((row) => Boolean(row.dial_in) && row.state !== "connected");
    const match =
      (caller === null
        ? undefined
        : free.find(
            (row) =>
              row.phone_number_country_code === caller.countryCode &&
              row.phone_number_subscriber_number === caller.subscriberNumber,
          )) ??
      (moderatorPin
        ? free.find((row) => Boolean(row.moderator) && row.phone_number_subscriber_number === null)
        : undefined);
    if (match !== undefined) return { attendee: toAttendee(match), added: false };
    if (candidates.length >= MAX_ATTENDEES_PER_CONFERENCE) return undefined;
    const hasModerator = candidates.some((row) => Boolean(row.moderator));
    const row = await trx
      .insertInto("attendees")
      .values({
        created_at: at,
        updated_at: at,
        lock_version: 0,
        conference_id: conferenceId,
        state: "new",
        phone_number_country_code: caller?.countryCode ?? null,
        phone_number_subscriber_number: caller?.subscriberNumber ?? null,
        moderator: flag(moderatorPin && !hasModerator),
        dial_in: flag(true),
        name: null,
        email: null,
        duration: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await appendEvents(
      trx,
      [
        {
          userId: conference.user_id,
          conferenceId,
          attendeeId: row.id,
          type: "attendee-added",
          reason: null,
          encryption: null,
        },
      ],
      now,
    );
    return { attendee: toAttendee(row), added: true };
  });
}

/** Where the room of a started conference runs; undefined when the conference is not started. */
export async function roomLocation(store: Store, conferenceId: number): Promise<RoomLocation | undefined> {
  const row = await store.db
    .selectFrom("conferences")
    .select(["user_id", "runner_sip_uri", "dial_in_locked", "encrypted_only"])
    .where("id", "=", conferenceId)
    .where("state", "=", "started")
    .executeTakeFirst();
  return row === undefined
    ? undefined
    : {
        userId: row.user_id,
        sipUri: row.runner_sip_uri,
        dialInLocked: Boolean(row.dial_in_locked),
        encryptedOnly: Boolean(row.encrypted_only),
      };
}

/** A handoff's token is good for this long: the internal call is placed at once. */
export const HANDOFF_LIFETIME_MS = 60_000;

/** Records a handoff and returns its token (128 random bits); expired tokens are swept meanwhile. */
export async function createHandoff(store: Store, handoff: DialInHandoff, now: Date): Promise<string> {
  const token = randomBytes(16).toString("base64url");
  await store.db.transaction().execute(async (trx) => {
    await trx
      .deleteFrom("dial_in_handoffs")
      .where("created_at", "<", timestamp(new Date(now.getTime() - HANDOFF_LIFETIME_MS)))
      .execute();
    await trx
      .insertInto("dial_in_handoffs")
      .values({
        token,
        conference_id: handoff.conferenceId,
        attendee_id: handoff.attendeeId,
        moderator: flag(handoff.moderator),
        encryption: handoff.encryption,
        created_at: timestamp(now),
      })
      .execute();
  });
  return token;
}

/** Takes a handoff by its token, once: undefined when there is none or it expired. */
export async function takeHandoff(
  store: Store,
  token: string,
  now: Date,
): Promise<DialInHandoff | undefined> {
  const row = await store.db
    .deleteFrom("dial_in_handoffs")
    .where("token", "=", token)
    .returningAll()
    .executeTakeFirst();
  if (row === undefined || new Date(row.created_at).getTime() < now.getTime() - HANDOFF_LIFETIME_MS)
    return undefined;
  return {
    conferenceId: row.conference_id,
    attendeeId: row.attendee_id,
    moderator: Boolean(row.moderator),
    // A handoff recorded before encryption was (an instance of an older version): the least.
    encryption: readCallEncryption(row.encryption) ?? "none",
  };
}

/**
 * Takes back the admission of a caller who did not reach the room (it hung up first, or the running
 * instance refused the internal call or did not answer it): its handoff token, if it had one, is
 * spent, and the attendee the admission added is removed, with its event, unless a call of theirs
 * began meanwhile, so that no attendee is left recorded for a caller who never joined.
 */
export async function withdrawAdmission(
  store: Store,
  token: string | undefined,
  addedAttendeeId: number | null,
  now: Date,
): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    if (token !== undefined) await trx.deleteFrom("dial_in_handoffs").where("token", "=", token).execute();
    if (addedAttendeeId === null) return;
    const removed = await trx
      .deleteFrom("attendees")
      .where("id", "=", addedAttendeeId)
      .where("state", "=", "new")
      .returning("conference_id")
      .executeTakeFirst();
    if (removed !== undefined)
      await recordAttendeeEvents(trx, removed.conference_id, addedAttendeeId, ["attendee-removed"], now);
  });
}
