/**
 * What a service's outbox would still hand a worker: for tests that must know nothing more will be
 * sent, so that what the receiver has is all it will get, without waiting to see nothing come.
 */
import { openStore } from "../../src/store/database.js";
import { notificationOutbox } from "../../src/store/notification-outbox.js";
import { webhookOutbox } from "../../src/store/webhook-outbox.js";

/** Further ahead than any retry: what is not claimable then never will be. */
const A_YEAR_MS = 365 * 86_400_000;

class RolledBack extends Error {}

/**
 * The ids the outbox's own claim (store/notification-outbox.ts, store/webhook-outbox.ts) would give
 * a worker a year from now, in a transaction rolled back (nothing is claimed): none once every
 * message is settled for good. A message a service's worker holds now is not among them: wait for
 * every message to be settled first.
 */
export async function claimableFromNowOn(
  outbox: "notifications" | "webhook_deliveries",
  location: { dataDir: string; databaseUrl?: string | null },
): Promise<number[]> {
  const store = await openStore({ dataDir: location.dataDir, databaseUrl: location.databaseUrl ?? null });
  let ids: number[] = [];
  try {
    await store.db.transaction().execute(async (trx) => {
      const inTransaction = { ...store, db: trx };
      const queue =
        outbox === "notifications" ? notificationOutbox(inTransaction) : webhookOutbox(inTransaction);
      const claimed = await queue.claim("test: what is left", new Date(Date.now() + A_YEAR_MS), 1000);
      ids = claimed.map((message) => message.id);
      throw new RolledBack();
    });
  } catch (error) {
    if (!(error instanceof RolledBack)) throw error;
  } finally {
    await store.close();
  }
  return ids;
}
