import type { Kysely, Selectable } from "kysely";
import {
  type Attendee,
  type AttendeeChanges,
  type AttendeeState,
  attendeeProblems,
  connectedSeconds,
  isDialled,
  MAX_ATTENDEES_PER_CONFERENCE,
  whyOverDialledLimit,
} from "../domain/attendee.js";
import { readCallEncryption } from "../domain/encryption.js";
import { NotFound, StaleLockVersion, ValidationFailed } from "../domain/errors.js";
import { attendeeControlEvents } from "../domain/event.js";
import { attendeesHaveBeenInvited, invitationChanged } from "../domain/notification.js";
import type { SearchAttributes, SearchFilter } from "../domain/search.js";
import { compiledOnce } from "./compiled-query.js";
import type { Store } from "./database.js";
import { recordAttendeeEvents } from "./live-events.js";
import { queueAttendeeNotification } from "./notifications.js";
import type { AttendeeTable, Database } from "./schema.js";
import { searchCondition } from "./search.js";
import { flag, nextLockVersion, readFlag, timestamp } from "./values.js";

export const ATTENDEE_SEARCH: SearchAttributes<keyof AttendeeTable> = {
  id: { column: "id", type: "integer" },
  created_at: { column: "created_at", type: "datetime" },
  updated_at: { column: "updated_at", type: "datetime" },
  lock_version: { column: "lock_version", type: "integer" },
  state: { column: "state", type: "text" },
  // The basic representation's phone-number and the extended subscriber number are one value.
  phone_number: { column: "phone_number_subscriber_number", type: "phone" },
  phone_number_subscriber_number: { column: "phone_number_subscriber_number", type: "phone" },
  phone_number_country_code: { column: "phone_number_country_code", type: "text" },
  phone_number_extension: { column: "phone_number_extension", type: "text" },
  phone_number_location: { column: "phone_number_location", type: "text" },
  moderator: { column: "moderator", type: "boolean" },
  muted: { column: "muted", type: "boolean" },
  hand_up: { column: "hand_up", type: "boolean" },
  dial_in: { column: "dial_in", type: "boolean" },
  name: { column: "name", type: "text" },
  email: { column: "email", type: "text" },
  duration: { column: "duration", type: "integer" },
  encryption: { column: "encryption", type: "text" },
};

/** One literal, not withVersion: lists map every attendee's row. */
export function toAttendee(row: Selectable<AttendeeTable>): Attendee {
  return {
    id: row.id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lockVersion: row.lock_version,
    conferenceId: row.conference_id,
    state: row.state as AttendeeState,
    phoneNumberCountryCode: row.phone_number_country_code,
    phoneNumberSubscriberNumber: row.phone_number_subscriber_number,
    phoneNumberExtension: row.phone_number_extension,
    phoneNumberLocation: row.phone_number_location,
    moderator: Boolean(row.moderator),
    muted: readFlag(row.muted),
    handUp: readFlag(row.hand_up),
    dialIn: Boolean(row.dial_in),
    name: row.name,
    email: row.email,
    duration: connectedSeconds(row.duration, row.connected_at, Date.now()),
    encryption: readCallEncryption(row.encryption),
  };
}

function attendeeRow(changes: AttendeeChanges) {
  return {
    ...(changes.phoneNumberCountryCode !== undefined && {
      phone_number_country_code: changes.phoneNumberCountryCode,
    }),
    ...(changes.phoneNumberSubscriberNumber !== undefined && {
      phone_number_subscriber_number: changes.phoneNumberSubscriberNumber,
    }),
    ...(changes.phoneNumberExtension !== undefined && {
      phone_number_extension: changes.phoneNumberExtension,
    }),
    ...(changes.phoneNumberLocation !== undefined && { phone_number_location: changes.phoneNumberLocation }),
    ...(changes.moderator !== undefined && { moderator: flag(changes.moderator) }),
    ...(changes.dialIn !== undefined && { dial_in: flag(changes.dialIn) }),
    ...(changes.name !== undefined && { name: changes.name }),
    ...(changes.email !== undefined && { email: changes.email }),
    ...(changes.muted !== undefined && { muted: flag(changes.muted) }),
    ...(changes.handUp !== undefined && { hand_up: flag(changes.handUp) }),
  };
}

export async function listAttendees(
  store: Store,
  conferenceId: number,
  filters: SearchFilter<keyof AttendeeTable>[],
): Promise<Attendee[]> {
  if (filters.length === 0) return (await selectAttendees.read(store, conferenceId)).map(toAttendee);
  const rows = await store.db
    .selectFrom("attendees")
    .selectAll()
    .where("conference_id", "=", conferenceId)
    .where((eb) => searchCondition(eb, filters))
    .orderBy("id")
    .execute();
  return rows.map(toAttendee);
}

/** A conference's attendees unfiltered, remembered by conference (SQLite): what GET attendees reads. */
const selectAttendees = compiledOnce(
  (db, conferenceId: number) =>
    db.selectFrom("attendees").selectAll().where("conference_id", "=", conferenceId).orderBy("id"),
  (conferenceId) => conferenceId,
);

async function findAttendee(db: Kysely<Database>, conferenceId: number, id: number): Promise<Attendee> {
  const row = await db
    .selectFrom("attendees")
    .selectAll()
    .where("conference_id", "=", conferenceId)
    .where("id", "=", id)
    .executeTakeFirst();
  if (!row) throw new NotFound("attendee");
  return toAttendee(row);
}

export function getAttendee(store: Store, conferenceId: number, id: number): Promise<Attendee> {
  return findAttendee(store.db, conferenceId, id);
}

/**
 * The attendee rules (one moderator, at most 250) are checked and written in one transaction:
 * SQLite serialises writers, and on PostgreSQL the conference row is locked so that two
 * instances cannot both pass the check.
 */
async function lockConference(trx: Kysely<Database>, store: Store, conferenceId: number): Promise<string> {
  const read = store.dialect === "postgres" ? selectStateForUpdate : selectState;
  const [row] = await read.run(trx, conferenceId);
  if (!row) throw new NotFound("conference");
  return row.state;
}

// Compiled once: adding an attendee runs these on every POST.
const selectState = compiledOnce((db, conferenceId: number) =>
  db.selectFrom("conferences").select("state").where("id", "=", conferenceId),
);
const selectStateForUpdate = compiledOnce((db, conferenceId: number) =>
  db.selectFrom("conferences").select("state").where("id", "=", conferenceId).forUpdate(),
);

async function otherModeratorExists(trx: Kysely<Database>, conferenceId: number, exceptId: number | null) {
  const row = await trx
    .selectFrom("attendees")
    .select("id")
    .where("conference_id", "=", conferenceId)
    .where("moderator", "=", flag(true))
    .$if(exceptId !== null, (q) => q.where("id", "<>", exceptId as number))
    .executeTakeFirst();
  return row !== undefined;
}

/** The conference's attendees, and those of them it calls, but for `exceptId`. */
async function countAttendees(
  trx: Kysely<Database>,
  conferenceId: number,
  exceptId: number | null,
): Promise<{ count: number; dialled: number }> {
  const [counted] =
    exceptId === null
      ? await countAll.run(trx, conferenceId)
      : await countAllBut.run(trx, conferenceId, exceptId);
  return { count: Number(counted?.count), dialled: Number(counted?.dialled) };
}

/** A count of attendees, and of those of them the conference calls (not dialling in). */
function attendeeCounts(db: Kysely<Database>) {
  return db
    .selectFrom("attendees")
    .select((eb) => [
      eb.fn.countAll<number>().as("count"),
      eb.fn
        .count<number>("phone_number_subscriber_number")
        .filterWhere("dial_in", "=", eb.lit(false))
        .as("dialled"),
    ]);
}

const countAll = compiledOnce((db, conferenceId: number) =>
  attendeeCounts(db).where("conference_id", "=", conferenceId),
);
const countAllBut = compiledOnce((db, conferenceId: number, exceptId: number) =>
  attendeeCounts(db).where("conference_id", "=", conferenceId).where("id", "<>", exceptId),
);

/**
 * Adds an attendee. `maxDialled` is how many attendees the conference may dial: the calls its owner
 * may have in progress at once (more would be refused when it starts).
 */
export async function createAttendee(
  store: Store,
  conferenceId: number,
  changes: AttendeeChanges,
  now: Date,
  maxDialled = Number.POSITIVE_INFINITY,
): Promise<Attendee> {
  const at = timestamp(now);
  return store.db.transaction().execute(async (trx) => {
    const state = await lockConference(trx, store, conferenceId);
    const problems: string[] = [];
    if (state === "ended") problems.push("conference has ended; attendees can no longer be added");
    const { count, dialled } = await countAttendees(trx, conferenceId, null);
    if (count >= MAX_ATTENDEES_PER_CONFERENCE) {
      problems.push(`a conference can have at most ${MAX_ATTENDEES_PER_CONFERENCE} attendees`);
    }
    const overDialled = isDialled(changes) ? whyOverDialledLimit(dialled, maxDialled) : undefined;
    if (overDialled !== undefined) problems.push(overDialled);
    if (changes.moderator && (await otherModeratorExists(trx, conferenceId, null))) {
      problems.push("moderator: this conference already has a moderator");
    }
    if (problems.length > 0) throw new ValidationFailed(problems);
    const row = await trx
      .insertInto("attendees")
      .values({
        created_at: at,
        updated_at: at,
        lock_version: 0,
        conference_id: conferenceId,
        state: "new",
        phone_number_country_code: changes.phoneNumberCountryCode ?? null,
        phone_number_subscriber_number: changes.phoneNumberSubscriberNumber ?? null,
        phone_number_extension: changes.phoneNumberExtension ?? null,
        phone_number_location: changes.phoneNumberLocation ?? null,
        moderator: flag(changes.moderator ?? false),
        muted: null,
        hand_up: null,
        dial_in: flag(changes.dialIn ?? false),
        name: changes.name ?? null,
        email: changes.email ?? null,
        duration: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const attendee = toAttendee(row);
    await recordAttendeeEvents(trx, conferenceId, attendee.id, ["attendee-added"], now);
    if (attendeesHaveBeenInvited(state)) {
      await queueAttendeeNotification(trx, conferenceId, attendee, "invitation", now);
    }
    return attendee;
  });
}

/** Changes an attendee; `maxDialled` as for createAttendee, checked when the change makes it one to call. */
export async function updateAttendee(
  store: Store,
  conferenceId: number,
  id: number,
  changes: AttendeeChanges,
  expectedLockVersion: number | undefined,
  now: Date,
  maxDialled = Number.POSITIVE_INFINITY,
): Promise<Attendee> {
  return store.db.transaction().execute(async (trx) => {
    const state = await lockConference(trx, store, conferenceId);
    const current = await findAttendee(trx, conferenceId, id);
    if (expectedLockVersion !== undefined && expectedLockVersion !== current.lockVersion) {
      throw new StaleLockVersion("attendee");
    }
    const after = {
      dialIn: changes.dialIn ?? current.dialIn,
      phoneNumberSubscriberNumber:
        changes.phoneNumberSubscriberNumber !== undefined
          ? changes.phoneNumberSubscriberNumber
          : current.phoneNumberSubscriberNumber,
    };
    const problems = attendeeProblems(after);
    if (isDialled(after) && !isDialled(current)) {
      const { dialled } = await countAttendees(trx, conferenceId, id);
      const overDialled = whyOverDialledLimit(dialled, maxDialled);
      if (overDialled !== undefined) problems.push(overDialled);
    }
    if (state === "ended") problems.push("conference has ended; its attendees can no longer be changed");
    if (changes.moderator && (await otherModeratorExists(trx, conferenceId, id))) {
      problems.push("moderator: this conference already has a moderator");
    }
    if (problems.length > 0) throw new ValidationFailed(problems);
    const row = await trx
      .updateTable("attendees")
      .set({ ...attendeeRow(changes), updated_at: timestamp(now), lock_version: nextLockVersion() })
      .where("id", "=", id)
      .where("lock_version", "=", current.lockVersion)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw new StaleLockVersion("attendee");
    const updated = toAttendee(row);
    await recordAttendeeEvents(trx, conferenceId, id, attendeeControlEvents(current, updated), now);
    if (attendeesHaveBeenInvited(state) && invitationChanged(current, updated)) {
      await queueAttendeeNotification(trx, conferenceId, updated, "update", now);
    }
    return updated;
  });
}

/** Deletes the attendee; one who was invited to a conference that has not ended is sent a cancellation. */
export async function deleteAttendee(
  store: Store,
  conferenceId: number,
  id: number,
  now: Date,
): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    const state = await lockConference(trx, store, conferenceId);
    const attendee = await findAttendee(trx, conferenceId, id);
    if (attendeesHaveBeenInvited(state)) {
      await queueAttendeeNotification(trx, conferenceId, attendee, "cancellation", now);
    }
    await trx.deleteFrom("attendees").where("id", "=", id).execute();
    await recordAttendeeEvents(trx, conferenceId, id, ["attendee-removed"], now);
  });
}
