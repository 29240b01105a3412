/**
 * The notification outbox as the outbox worker's queue (outbox/ports.ts). Messages are queued by
 * store/notifications.ts in the transaction of the change that causes them; here they are claimed,
 * settled by their claimer (sent, queued again, refused or failed) and put back after a crash.
 */
import type { OutboxFacts } from "../domain/notification.js";
import type { OutboxQueue, QueuedNotification, Settlement } from "../outbox/ports.js";
import type { Store } from "./database.js";
import { claimRows, type OutboxClaims, releaseClaims, releaseStaleClaims } from "./outbox-claims.js";
import type { NotificationTable } from "./schema.js";
import { timestamp } from "./values.js";

const CLAIMS: OutboxClaims<"notifications"> = { table: "notifications", waiting: "queued", stamp: timestamp };

/** The columns a settlement writes: refused, the server said no for good; failed, given up. */
function settledColumns(
  settlement: Settlement,
  endedAt: Date,
): Pick<NotificationTable, "state" | "last_error"> &
  Partial<Pick<NotificationTable, "next_attempt_at" | "sent_at">> {
  switch (settlement.state) {
    case "delivered":
      return { state: "sent", sent_at: timestamp(endedAt), last_error: null };
    case "retry":
      return { state: "queued", next_attempt_at: timestamp(settlement.at), last_error: settlement.reason };
    case "refused":
      return { state: "refused", last_error: settlement.reason };
    case "expired":
      return { state: "failed", last_error: settlement.reason };
  }
}

export function notificationOutbox(store: Store): OutboxQueue<QueuedNotification, unknown, never> {
  return {
    async claim(worker, now, limit) {
      const due = store.db
        .selectFrom("notifications")
        .select("id")
        .where("state", "=", CLAIMS.waiting)
        .where("next_attempt_at", "<=", timestamp(now))
        .orderBy("id")
        .limit(limit);
      const rows = await claimRows(store, CLAIMS, worker, now, due);
      return rows.map((row) => ({
        id: row.id,
        createdAt: row.created_at,
        attempts: row.attempts,
        facts: JSON.parse(row.facts) as OutboxFacts,
      }));
    },
    async settle(worker, { message, endedAt, settlement }) {
      await store.db
        .updateTable("notifications")
        .set({ ...settledColumns(settlement, endedAt), claimed_by: null, claimed_at: null })
        .where("id", "=", message.id)
        .where("state", "=", "sending")
        .where("claimed_by", "=", worker)
        .execute();
      return undefined;
    },
    releaseClaims: (worker) => releaseClaims(store, CLAIMS, worker),
    releaseStaleClaims: (before) => releaseStaleClaims(store, CLAIMS, before),
  };
}
