/**
 * What a service's outbox would still hand a worker: for tests that must know nothing more will be
 * sent, so that what the receiver has is all it will get, without waiting to see nothing come.
 */
import { openStore } from "../../src/store/database.js";
import { notificationOutbox } from "../../src/store/notification-outbox.js";
import { webhookOutbox } from "../../src/store/webhook-outbox.js";

/** Further ahead than any retry: what is not claimable then never will be. */
const A_YEAR_MS = 365 * 86_400_000;

/**
 * The ids the outbox's own claim (store/notification-outbox.ts, store/webhook-outbox.ts) gives a
 * worker of the test's a year from now: none once every message is settled for good. A message
 * claimed by a service's worker is not in it: wait for every message to be settled first. What it
 * does claim stays claimed by that worker, which no service's is: the test fails anyway.
 */
export async function claimableFromNowOn(
  outbox: "notifications" | "webhook_deliveries",
  location: { dataDir: string; databaseUrl?: string | null },
): Promise<number[]> {
  const store = await openStore({ dataDir: location.dataDir, databaseUrl: location.databaseUrl ?? null });
  try {
    const queue = outbox === "notifications" ? notificationOutbox(store) : webhookOutbox(store);
    const claimed = await queue.claim("test: what is left", new Date(Date.now() + A_YEAR_MS), 1000);
    return claimed.map((message) => message.id);
  } finally {
    await store.close();
  }
}
