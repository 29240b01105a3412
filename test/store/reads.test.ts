/**
 * The reads every API request makes (the credentials, the conference) run outside any transaction:
 * they see what was committed and nothing of a transaction still open, and they do not wait for one
 * (on SQLite, Kysely holds its one connection for the whole of a transaction; the store reads on a
 * read-only connection of its own), on both dialects. On SQLite the conference and its attendees are
 * remembered until the store writes anything, READ_MEMO_MS at most.
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import SQLite from "better-sqlite3";
import { sql } from "kysely";
import { createAttendee, listAttendees } from "../../src/store/attendees.js";
import { createConference, getConference } from "../../src/store/conferences.js";
import { READ_MEMO_MS, READ_MEMO_ROWS, type Store } from "../../src/store/database.js";
import { createUser, findCredentials, listBillingPackages } from "../../src/store/users.js";
import { forEachStore, storeForTests } from "../helpers/databases.js";

const NOW = new Date("2031-06-02T10:00:00.000Z");
/** Far longer than a read takes: a read still unanswered after it is waiting for the transaction. */
const NO_WAIT_MS = 2_000;

/** `read`'s result, or a failure when it is not answered within NO_WAIT_MS. */
async function withoutWaiting<T>(read: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} waited for the open transaction`)), NO_WAIT_MS);
  });
  try {
    return await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
  }
}

let users = 0;

/** A user (whose password hash is `passwordHash`) with a conference named `name`. */
async function userWithConference(store: Store, name: string, passwordHash = "a hash") {
  users += 1;
  const email = `user${users}@example.com`;
  const [billing] = await listBillingPackages(store, []);
  const user = await createUser(
    store,
    { name: "Alice", email, billingPackageId: billing?.id ?? 1 },
    passwordHash,
    NOW,
  );
  const conference = await createConference(
    store,
    user.id,
    { name, scheduledToStartAt: NOW.toISOString() },
    NOW,
  );
  return { user, email, conference };
}

forEachStore("reads outside a transaction", (kind) => {
  const holder = storeForTests("reads", kind);

  it("see the committed conference and credentials while a transaction changing them is open, and its changes once committed", async () => {
    const { store } = holder;
    const { user, email, conference } = await userWithConference(store, "Before", "the first hash");

    let commit = () => {};
    const committing = new Promise<void>((resolve) => {
      commit = resolve;
    });
    let changed = () => {};
    const changesMade = new Promise<void>((resolve) => {
      changed = resolve;
    });
    const transaction = store.db.transaction().execute(async (trx) => {
      await trx.updateTable("conferences").set({ name: "After" }).where("id", "=", conference.id).execute();
      await trx
        .updateTable("users")
        .set({ password_hash: "the second hash" })
        .where("id", "=", user.id)
        .execute();
      changed();
      await committing;
    });
    await changesMade;

    const during = await withoutWaiting(getConference(store, user.id, conference.id), "the conference read");
    assert.equal(during.name, "Before", "nothing of an open transaction is seen");
    const credentials = await withoutWaiting(findCredentials(store, email), "the credentials read");
    assert.deepEqual(credentials, { id: user.id, passwordHash: "the first hash" });

    commit();
    await transaction;
    assert.equal((await getConference(store, user.id, conference.id)).name, "After");
    assert.deepEqual(await findCredentials(store, email.toUpperCase()), {
      id: user.id,
      passwordHash: "the second hash",
    });
  });

  it("lists an attendee added through the store at once, after the list was read", async () => {
    const { store } = holder;
    const { conference } = await userWithConference(store, "Listed");
    const before = await listAttendees(store, conference.id, []);
    await createAttendee(
      store,
      conference.id,
      { name: "Bob", phoneNumberSubscriberNumber: "6045550123" },
      NOW,
    );
    const after = await listAttendees(store, conference.id, []);
    assert.deepEqual(
      after.map((attendee) => attendee.name),
      [...before.map((attendee) => attendee.name), "Bob"],
    );
  });

  it("remembers a bounded number of reads, reads of conferences that do not exist too", {
    skip: kind !== "sqlite" && "reads are remembered on SQLite only",
  }, async () => {
    const store = holder.store;
    const { user } = await userWithConference(store, "Bounded");
    // A scan of ids that have nothing: each read is remembered, none may grow the memory past the cap.
    for (let id = 1_000_000; id < 1_000_000 + READ_MEMO_ROWS + 500; id++) {
      await assert.rejects(getConference(store, user.id, id));
      assert.ok((store.reader?.rowsRemembered ?? 0) <= READ_MEMO_ROWS);
    }
    assert.ok((store.reader?.rowsRemembered ?? 0) > 0, "reads of nothing are remembered, and counted");
  });

  it("finds a conference only for its owner, before and after it was read", async () => {
    const { store } = holder;
    const owner = await userWithConference(store, "Owned");
    const other = await userWithConference(store, "Other's");
    await assert.rejects(getConference(store, other.user.id, owner.conference.id), /conference/);
    assert.equal((await getConference(store, owner.user.id, owner.conference.id)).name, "Owned");
    await assert.rejects(getConference(store, other.user.id, owner.conference.id), /conference/);
  });

  it("sees a conference changed outside the store (another process on the file) within READ_MEMO_MS", {
    skip: kind === "postgres" && "the read is remembered on SQLite only",
  }, async () => {
    const { store } = holder;
    const { user, conference } = await userWithConference(store, "Before");
    assert.equal((await getConference(store, user.id, conference.id)).name, "Before");
    const { rows } = await sql<{ file: string }>`pragma database_list`.execute(store.db);
    const outside = new SQLite(rows[0]?.file as string);
    try {
      outside.prepare("update conferences set name = 'After' where id = ?").run(conference.id);
      const changedAt = performance.now();
      for (;;) {
        const { name } = await getConference(store, user.id, conference.id);
        if (name === "After") break;
        assert.ok(performance.now() - changedAt < READ_MEMO_MS + 200, "still the name before");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      outside.close();
    }
  });
});
