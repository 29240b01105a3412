/**
 * The reads every API request makes (the credentials, the conference) run outside any transaction:
 * they see what was committed and nothing of a transaction still open, and they do not wait for one
 * (on SQLite, Kysely holds its one connection for the whole of a transaction; the store reads on a
 * read-only connection of its own), on both dialects.
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import { createConference, getConference } from "../../src/store/conferences.js";
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

forEachStore("reads outside a transaction", (kind) => {
  const holder = storeForTests("reads", kind);

  it("see the committed conference and credentials while a transaction changing them is open, and its changes once committed", async () => {
    const { store } = holder;
    const [billing] = await listBillingPackages(store, []);
    const user = await createUser(
      store,
      { name: "Alice", email: "alice@example.com", billingPackageId: billing?.id ?? 1 },
      "the first hash",
      NOW,
    );
    const conference = await createConference(
      store,
      user.id,
      { name: "Before", scheduledToStartAt: NOW.toISOString() },
      NOW,
    );

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
    const credentials = await withoutWaiting(
      findCredentials(store, "alice@example.com"),
      "the credentials read",
    );
    assert.deepEqual(credentials, { id: user.id, passwordHash: "the first hash" });

    commit();
    await transaction;
    assert.equal((await getConference(store, user.id, conference.id)).name, "After");
    assert.deepEqual(await findCredentials(store, "ALICE@example.com"), {
      id: user.id,
      passwordHash: "the second hash",
    });
  });
});
