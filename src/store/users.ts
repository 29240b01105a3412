import type { Kysely, Selectable } from "kysely";
import { NotFound, StaleLockVersion, ValidationFailed } from "../domain/errors.js";
import type { SearchAttributes, SearchFilter } from "../domain/search.js";
import {
  type Address,
  type AddressFields,
  type CreditCard,
  mergeCreditCard,
  type PhoneNumber,
  type PhoneNumberFields,
  type User,
  type UserChanges,
} from "../domain/user.js";
import { compiledOnce } from "./compiled-query.js";
import type { Store } from "./database.js";
import { assignPins, claimPins } from "./pins.js";
import type {
  AddressTable,
  BillingPackageTable,
  CreditCardTable,
  Database,
  PhoneNumberTable,
  UserTable,
} from "./schema.js";
import { searchCondition } from "./search.js";
import { flag, isUniqueViolation, nextLockVersion, timestamp, withVersion } from "./values.js";

export interface BillingPackage {
  id: number;
  name: string;
}

export const BILLING_PACKAGE_SEARCH: SearchAttributes<keyof BillingPackageTable> = {
  id: { column: "id", type: "integer" },
  name: { column: "name", type: "text" },
};

export async function listBillingPackages(
  store: Store,
  filters: SearchFilter<keyof BillingPackageTable>[],
): Promise<BillingPackage[]> {
  return store.db
    .selectFrom("billing_packages")
    .select(["id", "name"])
    .$if(filters.length > 0, (q) => q.where((eb) => searchCondition(eb, filters)))
    .orderBy("id")
    .execute();
}

/** What authentication needs, found by e-mail (the username). */
export async function findCredentials(
  store: Store,
  email: string,
): Promise<{ id: number; passwordHash: string } | undefined> {
  const [row] = await selectCredentials.read(store, email.toLowerCase());
  return row && { id: row.id, passwordHash: row.password_hash };
}

const selectCredentials = compiledOnce((db, email: string) =>
  db.selectFrom("users").select(["id", "password_hash"]).where("email", "=", email),
);

/** The user's time-zone name as given (a Rails-style name), or null when it has none. */
export async function findUserTimeZone(store: Store, id: number): Promise<string | null> {
  const row = await store.db.selectFrom("users").select("time_zone").where("id", "=", id).executeTakeFirst();
  return row?.time_zone ?? null;
}

export async function userExists(store: Store, id: number): Promise<boolean> {
  return (
    (await store.db.selectFrom("users").select("id").where("id", "=", id).executeTakeFirst()) !== undefined
  );
}

export async function getUser(store: Store, id: number): Promise<User | undefined> {
  return loadUser(store.db, id);
}

async function loadUser(db: Kysely<Database>, id: number): Promise<User | undefined> {
  const row = await db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst();
  if (!row) return undefined;
  const [card, address, phones] = await Promise.all([
    db.selectFrom("credit_cards").selectAll().where("user_id", "=", id).executeTakeFirst(),
    db.selectFrom("addresses").selectAll().where("user_id", "=", id).executeTakeFirst(),
    db.selectFrom("phone_numbers").selectAll().where("user_id", "=", id).orderBy("id").execute(),
  ]);
  return toUser(row, card, address, phones);
}

function toUser(
  row: Selectable<UserTable>,
  card: Selectable<CreditCardTable> | undefined,
  address: Selectable<AddressTable> | undefined,
  phones: Selectable<PhoneNumberTable>[],
): User {
  return withVersion(row, {
    name: row.name,
    email: row.email,
    im: row.im,
    imNetwork: row.im_network,
    timeZone: row.time_zone,
    memberPin: row.member_pin,
    moderatorPin: row.moderator_pin,
    termsOfService: Boolean(row.terms_of_service),
    billingPackageId: row.billing_package_id,
    creditCard: card ? toCreditCard(card) : null,
    address: address ? toAddress(address) : null,
    phoneNumbers: phones.map(toPhoneNumber),
  });
}

function toCreditCard(row: Selectable<CreditCardTable>): CreditCard {
  return withVersion(row, {
    name: row.name,
    expiryMonth: row.expiry_month,
    expiryYear: row.expiry_year,
    lastFour: row.last_four,
    brand: row.brand,
  });
}

function toAddress(row: Selectable<AddressTable>): Address {
  return withVersion(row, {
    streetAddress: row.street_address,
    postalCode: row.postal_code,
    location: row.location,
    subdivision: row.subdivision,
    country: row.country,
  });
}

function toPhoneNumber(row: Selectable<PhoneNumberTable>): PhoneNumber {
  return withVersion(row, {
    countryCode: row.country_code,
    subscriberNumber: row.subscriber_number,
    location: row.location,
    extension: row.extension,
  });
}

async function checkReferences(
  db: Kysely<Database>,
  changes: UserChanges,
  userId: number | null,
): Promise<void> {
  const problems: string[] = [];
  if (changes.billingPackageId !== undefined) {
    const found = await db
      .selectFrom("billing_packages")
      .select("id")
      .where("id", "=", changes.billingPackageId)
      .executeTakeFirst();
    if (!found) problems.push(`billing-package ${changes.billingPackageId} does not exist`);
  }
  if (changes.email !== undefined) {
    const taken = await db
      .selectFrom("users")
      .select("id")
      .where("email", "=", changes.email)
      .$if(userId !== null, (q) => q.where("id", "<>", userId as number))
      .executeTakeFirst();
    if (taken) problems.push("email has already been taken");
  }
  if (problems.length > 0) throw new ValidationFailed(problems);
}

/** Creates the user and its card, address and phone numbers in one transaction. */
export async function createUser(
  store: Store,
  changes: UserChanges & { name: string; email: string; billingPackageId: number },
  passwordHash: string,
  now: Date,
): Promise<User> {
  const at = timestamp(now);
  const id = await store.db
    .transaction()
    .execute(async (trx) => {
      await checkReferences(trx, changes, null);
      const card = changes.creditCard ? mergeCreditCard(null, changes.creditCard, now) : null;
      if (Array.isArray(card)) throw new ValidationFailed(card);
      const pins = await claimPins(trx);
      const { id } = await trx
        .insertInto("users")
        .values({
          created_at: at,
          updated_at: at,
          lock_version: 0,
          name: changes.name,
          email: changes.email,
          password_hash: passwordHash,
          im: changes.im ?? null,
          im_network: changes.imNetwork ?? null,
          time_zone: changes.timeZone ?? null,
          member_pin: pins.memberPin,
          moderator_pin: pins.moderatorPin,
          terms_of_service: flag(true),
          billing_package_id: changes.billingPackageId,
        })
        .returning("id")
        .executeTakeFirstOrThrow();
      await assignPins(trx, pins, { user_id: id });
      const created = { created_at: at, updated_at: at, lock_version: 0, user_id: id };
      if (card) {
        await trx
          .insertInto("credit_cards")
          .values({
            ...created,
            name: card.name,
            expiry_month: card.expiryMonth,
            expiry_year: card.expiryYear,
            last_four: card.lastFour,
            brand: card.brand,
          })
          .execute();
      }
      if (changes.address)
        await trx
          .insertInto("addresses")
          .values({ ...created, ...addressRow(changes.address) })
          .execute();
      for (const phone of changes.phoneNumbers ?? []) {
        await trx
          .insertInto("phone_numbers")
          .values({ ...created, ...phoneRow(phone) })
          .execute();
      }
      return id;
    })
    .catch(rethrowEmailTaken);
  return (await getUser(store, id)) as User;
}

function rethrowEmailTaken(error: unknown): never {
  if (isUniqueViolation(error)) throw new ValidationFailed(["email has already been taken"]);
  throw error;
}

function addressRow(address: AddressFields) {
  return {
    street_address: address.streetAddress,
    postal_code: address.postalCode,
    location: address.location,
    subdivision: address.subdivision,
    country: address.country,
  };
}

function phoneRow(phone: PhoneNumberFields) {
  return {
    country_code: phone.countryCode,
    subscriber_number: phone.subscriberNumber,
    location: phone.location,
    extension: phone.extension,
  };
}

/**
 * Applies an update in one transaction: the user row (guarded by lock-version when the client
 * sent one), then the card, address and phone numbers. Any problem rolls all of it back.
 */
export async function updateUser(
  store: Store,
  id: number,
  changes: UserChanges,
  passwordHash: string | undefined,
  expectedLockVersion: number | undefined,
  now: Date,
): Promise<User> {
  const at = timestamp(now);
  // Credentials verified before this change are read again at their next use: counted before it
  // begins and again once it is over.
  const changesCredentials = changes.email !== undefined || passwordHash !== undefined;
  if (changesCredentials) store.credentialChanges = (store.credentialChanges ?? 0) + 1;
  await store.db
    .transaction()
    .execute(async (trx) => {
      const current = await loadUser(trx, id);
      if (!current) throw new NotFound("user");
      if (expectedLockVersion !== undefined && expectedLockVersion !== current.lockVersion) {
        throw new StaleLockVersion("user");
      }
      await checkReferences(trx, changes, id);
      const result = await trx
        .updateTable("users")
        .set({
          updated_at: at,
          lock_version: nextLockVersion(),
          ...(changes.name !== undefined && { name: changes.name }),
          ...(changes.email !== undefined && { email: changes.email }),
          ...(passwordHash !== undefined && { password_hash: passwordHash }),
          ...(changes.im !== undefined && { im: changes.im }),
          ...(changes.imNetwork !== undefined && { im_network: changes.imNetwork }),
          ...(changes.timeZone !== undefined && { time_zone: changes.timeZone }),
          ...(changes.billingPackageId !== undefined && { billing_package_id: changes.billingPackageId }),
        })
        .where("id", "=", id)
        .where("lock_version", "=", current.lockVersion)
        .executeTakeFirst();
      // Another instance committed between our read and this write.
      if (Number(result.numUpdatedRows) !== 1) throw new StaleLockVersion("user");
      // A new password signs every console session out: one that leaked ends with the old password.
      if (passwordHash !== undefined)
        await trx.deleteFrom("console_sessions").where("user_id", "=", id).execute();

      const touched = { updated_at: at, lock_version: nextLockVersion() };
      const created = { created_at: at, updated_at: at, lock_version: 0, user_id: id };

      if (changes.creditCard === null)
        await trx.deleteFrom("credit_cards").where("user_id", "=", id).execute();
      else if (changes.creditCard) {
        const card = mergeCreditCard(current.creditCard, changes.creditCard, now);
        if (Array.isArray(card)) throw new ValidationFailed(card);
        const values = {
          name: card.name,
          expiry_month: card.expiryMonth,
          expiry_year: card.expiryYear,
          last_four: card.lastFour,
          brand: card.brand,
        };
        if (current.creditCard) {
          await trx
            .updateTable("credit_cards")
            .set({ ...values, ...touched })
            .where("user_id", "=", id)
            .execute();
        } else
          await trx
            .insertInto("credit_cards")
            .values({ ...created, ...values })
            .execute();
      }

      if (changes.address === null) await trx.deleteFrom("addresses").where("user_id", "=", id).execute();
      else if (changes.address) {
        if (current.address) {
          await trx
            .updateTable("addresses")
            .set({ ...addressRow(changes.address), ...touched })
            .where("user_id", "=", id)
            .execute();
        } else
          await trx
            .insertInto("addresses")
            .values({ ...created, ...addressRow(changes.address) })
            .execute();
      }

      if (changes.phoneNumbers) {
        const existing = new Set(current.phoneNumbers.map((p) => p.id));
        const unknown = changes.phoneNumbers.filter((p) => p.id !== undefined && !existing.has(p.id));
        if (unknown.length > 0) {
          throw new ValidationFailed(
            unknown.map((p) => `phone-numbers: no phone number with id ${p.id} on this user`),
          );
        }
        const kept = changes.phoneNumbers.flatMap((p) => (p.id === undefined ? [] : [p.id]));
        await trx
          .deleteFrom("phone_numbers")
          .where("user_id", "=", id)
          .$if(kept.length > 0, (q) => q.where("id", "not in", kept))
          .execute();
        for (const phone of changes.phoneNumbers) {
          if (phone.id === undefined) {
            await trx
              .insertInto("phone_numbers")
              .values({ ...created, ...phoneRow(phone) })
              .execute();
          } else {
            await trx
              .updateTable("phone_numbers")
              .set({ ...phoneRow(phone), ...touched })
              .where("id", "=", phone.id)
              .execute();
          }
        }
      }
    })
    .catch(rethrowEmailTaken)
    .finally(() => {
      // Counted again once it is over, committed or not known to be: a login trusted between
      // the first count and the commit is read again at its next use.
      if (changesCredentials) store.credentialChanges = (store.credentialChanges ?? 0) + 1;
    });
  return (await getUser(store, id)) as User;
}
