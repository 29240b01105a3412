import type { Selectable } from "kysely";
import type { Contact, ContactChanges } from "../domain/contact.js";
import { NotFound, StaleLockVersion } from "../domain/errors.js";
import type { SearchAttributes, SearchFilter } from "../domain/search.js";
import type { Store } from "./database.js";
import type { ContactTable } from "./schema.js";
import { searchCondition } from "./search.js";
import { nextLockVersion, timestamp, withVersion } from "./values.js";

export const CONTACT_SEARCH: SearchAttributes<keyof ContactTable> = {
  id: { column: "id", type: "integer" },
  created_at: { column: "created_at", type: "datetime" },
  updated_at: { column: "updated_at", type: "datetime" },
  lock_version: { column: "lock_version", type: "integer" },
  name: { column: "name", type: "text" },
  email: { column: "email", type: "text" },
  phone_number: { column: "phone_number", type: "text" },
  im: { column: "im", type: "text" },
  im_network: { column: "im_network", type: "text" },
  time_zone: { column: "time_zone", type: "text" },
};

function toContact(row: Selectable<ContactTable>): Contact {
  return withVersion(row, {
    name: row.name,
    email: row.email,
    phoneNumber: row.phone_number,
    im: row.im,
    imNetwork: row.im_network,
    timeZone: row.time_zone,
  });
}

function contactRow(changes: ContactChanges) {
  return {
    ...(changes.name !== undefined && { name: changes.name }),
    ...(changes.email !== undefined && { email: changes.email }),
    ...(changes.phoneNumber !== undefined && { phone_number: changes.phoneNumber }),
    ...(changes.im !== undefined && { im: changes.im }),
    ...(changes.imNetwork !== undefined && { im_network: changes.imNetwork }),
    ...(changes.timeZone !== undefined && { time_zone: changes.timeZone }),
  };
}

export async function listContacts(
  store: Store,
  userId: number,
  filters: SearchFilter<keyof ContactTable>[],
): Promise<Contact[]> {
  const rows = await store.db
    .selectFrom("contacts")
    .selectAll()
    .where("user_id", "=", userId)
    .$if(filters.length > 0, (q) => q.where((eb) => searchCondition(eb, filters)))
    .orderBy("id")
    .execute();
  return rows.map(toContact);
}

export async function getContact(store: Store, userId: number, id: number): Promise<Contact> {
  const row = await store.db
    .selectFrom("contacts")
    .selectAll()
    .where("user_id", "=", userId)
    .where("id", "=", id)
    .executeTakeFirst();
  if (!row) throw new NotFound("contact");
  return toContact(row);
}

export async function createContact(
  store: Store,
  userId: number,
  changes: ContactChanges & { name: string },
  now: Date,
): Promise<Contact> {
  const at = timestamp(now);
  const row = await store.db
    .insertInto("contacts")
    .values({
      created_at: at,
      updated_at: at,
      lock_version: 0,
      user_id: userId,
      name: changes.name,
      email: changes.email ?? null,
      phone_number: changes.phoneNumber ?? null,
      im: changes.im ?? null,
      im_network: changes.imNetwork ?? null,
      time_zone: changes.timeZone ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toContact(row);
}

export async function updateContact(
  store: Store,
  userId: number,
  id: number,
  changes: ContactChanges,
  expectedLockVersion: number | undefined,
  now: Date,
): Promise<Contact> {
  const row = await store.db
    .updateTable("contacts")
    .set({ ...contactRow(changes), updated_at: timestamp(now), lock_version: nextLockVersion() })
    .where("user_id", "=", userId)
    .where("id", "=", id)
    .$if(expectedLockVersion !== undefined, (q) =>
      q.where("lock_version", "=", expectedLockVersion as number),
    )
    .returningAll()
    .executeTakeFirst();
  if (row) return toContact(row);
  await getContact(store, userId, id);
  throw new StaleLockVersion("contact");
}

export async function deleteContact(store: Store, userId: number, id: number): Promise<void> {
  const result = await store.db
    .deleteFrom("contacts")
    .where("user_id", "=", userId)
    .where("id", "=", id)
    .executeTakeFirst();
  if (Number(result.numDeletedRows) !== 1) throw new NotFound("contact");
}
