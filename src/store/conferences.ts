import type { Kysely, Selectable } from "kysely";
import {
  type Conference,
  type ConferenceChanges,
  type ConferenceState,
  conferenceUpdateProblems,
} from "../domain/conference.js";
import { NotFound, StaleLockVersion, ValidationFailed } from "../domain/errors.js";
import { attendeesHaveBeenInvited, notificationForConferenceChange } from "../domain/notification.js";
import type { SearchAttributes, SearchFilter } from "../domain/search.js";
import { compiledOnce } from "./compiled-query.js";
import type { Store } from "./database.js";
import { recordLiveConferenceChange } from "./live-events.js";
import { queueConferenceNotifications } from "./notifications.js";
import { assignPins, claimPins } from "./pins.js";
import type { ConferenceTable, Database } from "./schema.js";
import { searchCondition } from "./search.js";
import { flag, nextLockVersion, timestamp } from "./values.js";

export const CONFERENCE_SEARCH: SearchAttributes<keyof ConferenceTable> = {
  id: { column: "id", type: "integer" },
  created_at: { column: "created_at", type: "datetime" },
  updated_at: { column: "updated_at", type: "datetime" },
  lock_version: { column: "lock_version", type: "integer" },
  state: { column: "state", type: "text" },
  name: { column: "name", type: "text" },
  scheduled_to_start_at: { column: "scheduled_to_start_at", type: "datetime" },
  started_at: { column: "started_at", type: "datetime" },
  ended_at: { column: "ended_at", type: "datetime" },
  direct_dial: { column: "direct_dial", type: "boolean" },
  dial_in_locked: { column: "dial_in_locked", type: "boolean" },
  record_audio: { column: "record_audio", type: "boolean" },
  lecture_mode: { column: "lecture_mode", type: "boolean" },
  encrypted_only: { column: "encrypted_only", type: "boolean" },
  accounting_code: { column: "accounting_code", type: "integer" },
  member_pin: { column: "member_pin", type: "text" },
  moderator_pin: { column: "moderator_pin", type: "text" },
};

/** One literal, not withVersion: every request about a conference maps its row. */
export function toConference(row: Selectable<ConferenceTable>): Conference {
  return {
    id: row.id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lockVersion: row.lock_version,
    userId: row.user_id,
    name: row.name,
    state: row.state as ConferenceState,
    scheduledToStartAt: row.scheduled_to_start_at,
    startedAt: row.started_at,
    endedAt: row.ended_at,
    directDial: Boolean(row.direct_dial),
    dialInLocked: Boolean(row.dial_in_locked),
    recordAudio: Boolean(row.record_audio),
    lectureMode: Boolean(row.lecture_mode),
    encryptedOnly: Boolean(row.encrypted_only),
    accountingCode: row.accounting_code,
    memberPin: row.member_pin,
    moderatorPin: row.moderator_pin,
    sendNotificationEmails: Boolean(row.send_notification_emails),
    announceAttendees: Boolean(row.announce_attendees),
  };
}

export async function listConferences(
  store: Store,
  userId: number,
  filters: SearchFilter<keyof ConferenceTable>[],
): Promise<Conference[]> {
  const rows = await store.db
    .selectFrom("conferences")
    .selectAll()
    .where("user_id", "=", userId)
    .$if(filters.length > 0, (q) => q.where((eb) => searchCondition(eb, filters)))
    .orderBy("id")
    .execute();
  return rows.map(toConference);
}

/** The user's conference; in a transaction when `db` is one. */
async function findConference(db: Kysely<Database>, userId: number, id: number): Promise<Conference> {
  return usersConference(await selectConference.run(db, id), userId);
}

/** Remembered by id (SQLite): every API request about a conference reads it. */
const selectConference = compiledOnce(
  (db, id: number) => db.selectFrom("conferences").selectAll().where("id", "=", id),
  (id) => id,
);

/** The conference of the rows read by id, when it is the user's. */
function usersConference([row]: readonly Selectable<ConferenceTable>[], userId: number): Conference {
  if (row?.user_id !== userId) throw new NotFound("conference");
  return toConference(row);
}

export async function getConference(store: Store, userId: number, id: number): Promise<Conference> {
  return usersConference(await selectConference.read(store, id), userId);
}

/**
 * Creates the conference with its PINs and, unless no-moderator, the owner as moderator: called
 * at the owner's first phone number, or a dial-in moderator when the owner has none.
 */
export async function createConference(
  store: Store,
  userId: number,
  changes: ConferenceChanges & { name: string; scheduledToStartAt: string },
  now: Date,
): Promise<Conference> {
  const at = timestamp(now);
  return store.db.transaction().execute(async (trx) => {
    const pins = await claimPins(trx);
    const row = await trx
      .insertInto("conferences")
      .values({
        created_at: at,
        updated_at: at,
        lock_version: 0,
        user_id: userId,
        name: changes.name,
        state: "new",
        scheduled_to_start_at: timestamp(changes.scheduledToStartAt),
        started_at: null,
        ended_at: null,
        direct_dial: flag(changes.directDial ?? false),
        dial_in_locked: flag(changes.dialInLocked ?? false),
        record_audio: flag(changes.recordAudio ?? false),
        lecture_mode: flag(changes.lectureMode ?? false),
        encrypted_only: flag(changes.encryptedOnly ?? false),
        accounting_code: changes.accountingCode ?? null,
        member_pin: pins.memberPin,
        moderator_pin: pins.moderatorPin,
        send_notification_emails: flag(changes.sendNotificationEmails ?? false),
        announce_attendees: flag(changes.announceAttendees ?? true),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await assignPins(trx, pins, { conference_id: row.id });
    if (!changes.noModerator) {
      const owner = await trx
        .selectFrom("users")
        .select(["name", "email"])
        .where("id", "=", userId)
        .executeTakeFirstOrThrow();
      const phone = await trx
        .selectFrom("phone_numbers")
        .select(["subscriber_number", "extension", "location"])
        .where("user_id", "=", userId)
        .orderBy("id")
        .executeTakeFirst();
      await trx
        .insertInto("attendees")
        .values({
          created_at: at,
          updated_at: at,
          lock_version: 0,
          conference_id: row.id,
          state: "new",
          phone_number_country_code: phone ? "1" : null,
          phone_number_subscriber_number: phone?.subscriber_number ?? null,
          phone_number_extension: phone?.extension ?? null,
          phone_number_location: phone?.location ?? null,
          moderator: flag(true),
          muted: null,
          hand_up: null,
          dial_in: flag(!phone),
          name: owner.name,
          email: owner.email,
          duration: null,
        })
        .execute();
    }
    return toConference(row);
  });
}

export async function updateConference(
  store: Store,
  userId: number,
  id: number,
  changes: ConferenceChanges,
  expectedLockVersion: number | undefined,
  now: Date,
): Promise<Conference> {
  return store.db.transaction().execute(async (trx) => {
    const current = await findConference(trx, userId, id);
    if (expectedLockVersion !== undefined && expectedLockVersion !== current.lockVersion) {
      throw new StaleLockVersion("conference");
    }
    const problems = conferenceUpdateProblems(current, changes);
    if (problems.length > 0) throw new ValidationFailed(problems);
    const row = await trx
      .updateTable("conferences")
      .set({
        updated_at: timestamp(now),
        lock_version: nextLockVersion(),
        ...(changes.name !== undefined && { name: changes.name }),
        ...(changes.scheduledToStartAt !== undefined && {
          scheduled_to_start_at: timestamp(changes.scheduledToStartAt),
        }),
        ...(changes.directDial !== undefined && { direct_dial: flag(changes.directDial) }),
        ...(changes.dialInLocked !== undefined && { dial_in_locked: flag(changes.dialInLocked) }),
        ...(changes.recordAudio !== undefined && { record_audio: flag(changes.recordAudio) }),
        ...(changes.lectureMode !== undefined && { lecture_mode: flag(changes.lectureMode) }),
        ...(changes.encryptedOnly !== undefined && { encrypted_only: flag(changes.encryptedOnly) }),
        ...(changes.accountingCode !== undefined && { accounting_code: changes.accountingCode }),
        ...(changes.state === "pending" && current.state === "new" && { state: "pending" }),
      })
      .where("id", "=", id)
      .where("lock_version", "=", current.lockVersion)
      .returningAll()
      .executeTakeFirst();
    // Another instance committed between our read and this write.
    if (!row) throw new StaleLockVersion("conference");
    const updated = toConference(row);
    await recordLiveConferenceChange(trx, current, updated, now);
    const notification = notificationForConferenceChange(current, updated);
    if (notification) await queueConferenceNotifications(trx, id, notification, now);
    return updated;
  });
}

/**
 * Deletes the conference; its attendees and PINs go with it (foreign-key cascade). People invited to
 * a conference that has not ended are sent a cancellation, queued before the rows go.
 */
export async function deleteConference(store: Store, userId: number, id: number, now: Date): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    const current = await trx
      .selectFrom("conferences")
      .select("state")
      .where("user_id", "=", userId)
      .where("id", "=", id)
      .$if(store.dialect === "postgres", (q) => q.forUpdate())
      .executeTakeFirst();
    if (!current) throw new NotFound("conference");
    if (attendeesHaveBeenInvited(current.state)) {
      await queueConferenceNotifications(trx, id, "cancellation", now);
    }
    await trx.deleteFrom("conferences").where("id", "=", id).execute();
  });
}
