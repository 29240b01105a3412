/**
 * The webhook outbox. A delivery is queued for every enabled webhook that takes an event, in the
 * transaction that appends the event, so a change and its deliveries commit or roll back together.
 * As the outbox worker's queue (outbox/ports.ts), deliveries are claimed and settled by their
 * claimer; every attempt is logged, and a webhook whose deliveries failed for a day (or whose
 * receiver answered 410) is disabled, with an e-mail to its owner queued in the same transaction.
 */
import type { Kysely } from "kysely";
import type { ConferenceEvent } from "../domain/event.js";
import { failingReason, GONE_REASON, newMessageId, takesEvent, webhookPayload } from "../domain/webhook.js";
import type { ClaimedDelivery, DeliveryOutcome, OutboxQueue, SettledAttempt } from "../outbox/ports.js";
import type { Store } from "./database.js";
import { queueWebhookDisabledNotice } from "./notifications.js";
import { claimRows, type OutboxClaims, releaseClaims, releaseStaleClaims } from "./outbox-claims.js";
import type { Database } from "./schema.js";
import { flag, nextLockVersion, timestamp } from "./values.js";

const CLAIMS: OutboxClaims<"webhook_deliveries"> = {
  table: "webhook_deliveries",
  waiting: "pending",
  stamp: (at) => at.toISOString(),
};

/**
 * Queues a delivery of each event to every enabled webhook of its user that takes its type; called
 * with the transaction that appends the events.
 */
export async function queueWebhookDeliveries(
  trx: Kysely<Database>,
  events: readonly ConferenceEvent[],
  now: Date,
): Promise<void> {
  if (events.length === 0) return;
  const userIds = [...new Set(events.map((event) => event.userId))];
  const webhooks = await trx
    .selectFrom("webhooks")
    .select(["id", "user_id", "event_types"])
    .where("user_id", "in", userIds)
    .where("enabled", "=", flag(true))
    .orderBy("id")
    .execute();
  if (webhooks.length === 0) return;
  const at = timestamp(now);
  const due = now.toISOString();
  const rows = events.flatMap((event) =>
    webhooks
      .filter(
        (webhook) =>
          webhook.user_id === event.userId &&
          takesEvent(webhook.event_types === null ? null : JSON.parse(webhook.event_types), event.type),
      )
      .map((webhook) => ({
        created_at: at,
        updated_at: at,
        lock_version: 0,
        webhook_id: webhook.id,
        message_id: newMessageId(),
        event_id: event.id,
        event_type: event.type,
        payload: webhookPayload(event),
        state: "pending",
        attempts: 0,
        next_attempt_at: due,
      })),
  );
  if (rows.length > 0) await trx.insertInto("webhook_deliveries").values(rows).execute();
}

/** Ends a webhook's pending deliveries (it was disabled), with the reason as their last error. */
export async function failPendingDeliveries(
  trx: Kysely<Database>,
  webhookId: number,
  reason: string,
  now: Date,
): Promise<void> {
  await trx
    .updateTable("webhook_deliveries")
    .set({
      state: "failed",
      next_attempt_at: null,
      last_error: reason,
      updated_at: timestamp(now),
      lock_version: nextLockVersion(),
    })
    .where("webhook_id", "=", webhookId)
    .where("state", "=", "pending")
    .execute();
}

/**
 * The webhook outbox as the worker's queue. Settling returns why the webhook was disabled, when the
 * attempt disabled it.
 */
export function webhookOutbox(store: Store): OutboxQueue<ClaimedDelivery, DeliveryOutcome, string> {
  return {
    claim: (worker, now, limit) => claimDeliveries(store, worker, now, limit),
    settle: (worker, attempt) => recordAttempt(store, worker, attempt),
    releaseClaims: (worker) => releaseClaims(store, CLAIMS, worker),
    releaseStaleClaims: (before) => releaseStaleClaims(store, CLAIMS, before),
    prune: (before) => pruneDeliveries(store, before),
  };
}

/** Claims due deliveries of enabled webhooks, with where each goes and how it is signed. */
async function claimDeliveries(
  store: Store,
  worker: string,
  now: Date,
  limit: number,
): Promise<ClaimedDelivery[]> {
  const due = store.db
    .selectFrom("webhook_deliveries")
    .select("id")
    .where("state", "=", CLAIMS.waiting)
    .where("next_attempt_at", "<=", now.toISOString())
    // A webhook disabled while one of its deliveries was being sent can leave that one pending.
    .where("webhook_id", "in", (eb) =>
      eb.selectFrom("webhooks").select("webhooks.id").where("webhooks.enabled", "=", flag(true)),
    )
    .orderBy("next_attempt_at")
    .orderBy("id")
    .limit(limit);
  const rows = await claimRows(store, CLAIMS, worker, now, due);
  if (rows.length === 0) return [];
  const webhooks = await store.db
    .selectFrom("webhooks")
    .select(["id", "url", "secret"])
    .where("id", "in", [...new Set(rows.map((row) => row.webhook_id))])
    .execute();
  const byId = new Map(webhooks.map((webhook) => [webhook.id, webhook]));
  return rows.flatMap((row) => {
    const webhook = byId.get(row.webhook_id);
    // Deleted since: its deliveries went with it.
    if (webhook === undefined) return [];
    return [
      {
        id: row.id,
        webhookId: row.webhook_id,
        messageId: row.message_id,
        payload: row.payload,
        attempts: row.attempts,
        createdAt: new Date(row.created_at).toISOString(),
        url: webhook.url,
        secret: webhook.secret,
      },
    ];
  });
}

/**
 * Logs an attempt and settles its delivery, only while this worker still holds the claim. Returns the
 * reason the webhook was disabled by this attempt, if it was.
 */
async function recordAttempt(
  store: Store,
  worker: string,
  {
    message: delivery,
    outcome: { outcome },
    at,
    durationMs,
    settlement,
  }: SettledAttempt<ClaimedDelivery, DeliveryOutcome>,
): Promise<string | undefined> {
  return store.db.transaction().execute(async (trx) => {
    const settled = await trx
      .updateTable("webhook_deliveries")
      .set({
        state:
          settlement.state === "delivered"
            ? "delivered"
            : settlement.state === "retry"
              ? "pending"
              : "failed",
        next_attempt_at: settlement.state === "retry" ? settlement.at.toISOString() : null,
        delivered_at: settlement.state === "delivered" ? at.toISOString() : null,
        last_error: settlement.state === "delivered" ? null : settlement.reason,
        claimed_by: null,
        claimed_at: null,
        updated_at: timestamp(at),
        lock_version: nextLockVersion(),
      })
      .where("id", "=", delivery.id)
      .where("state", "=", "sending")
      .where("claimed_by", "=", worker)
      .executeTakeFirst();
    if (Number(settled.numUpdatedRows) !== 1) return undefined;
    await trx
      .insertInto("webhook_attempts")
      .values({
        delivery_id: delivery.id,
        attempted_at: at.toISOString(),
        status_code: "status" in outcome ? outcome.status : null,
        error: "error" in outcome ? outcome.error : null,
        duration_ms: Math.round(durationMs),
      })
      .execute();
    let reason: string | undefined;
    // The receiver asked for no more (410): the webhook is disabled at once.
    if (settlement.state === "refused") reason = GONE_REASON;
    else if (settlement.state === "expired") {
      // Given up after its day: the webhook is disabled too when nothing reached it all that time.
      const reached = await trx
        .selectFrom("webhook_deliveries")
        .select("id")
        .where("webhook_id", "=", delivery.webhookId)
        .where("state", "=", "delivered")
        .where("delivered_at", ">=", delivery.createdAt)
        .limit(1)
        .executeTakeFirst();
      if (reached === undefined) reason = failingReason(settlement.reason);
    }
    if (reason === undefined) return undefined;
    // The owner's e-mail is queued on the wall clock, the notification outbox's, whatever the
    // webhook outbox's clock says.
    const disabled = await disableWebhook(trx, delivery.webhookId, reason, at, new Date());
    return disabled ? reason : undefined;
  });
}

/** Disables a webhook that is enabled, ends its pending deliveries and queues the e-mail to its owner. */
async function disableWebhook(
  trx: Kysely<Database>,
  webhookId: number,
  reason: string,
  now: Date,
  noticeAt: Date,
): Promise<boolean> {
  const row = await trx
    .updateTable("webhooks")
    .set({
      enabled: flag(false),
      disabled_at: timestamp(now),
      disabled_reason: reason,
      updated_at: timestamp(now),
      lock_version: nextLockVersion(),
    })
    .where("id", "=", webhookId)
    .where("enabled", "=", flag(true))
    .returning(["id", "user_id", "url", "disabled_at", "disabled_reason"])
    .executeTakeFirst();
  if (row === undefined) return false;
  await failPendingDeliveries(trx, webhookId, "webhook disabled", now);
  await queueWebhookDisabledNotice(
    trx,
    {
      id: row.id,
      userId: row.user_id,
      url: row.url,
      disabledAt: row.disabled_at,
      disabledReason: row.disabled_reason,
    },
    noticeAt,
  );
  return true;
}

/** Deletes delivered and failed deliveries (and their attempts) last changed before `before`. */
async function pruneDeliveries(store: Store, before: Date): Promise<number> {
  const result = await store.db
    .deleteFrom("webhook_deliveries")
    .where("state", "in", ["delivered", "failed"])
    .where("updated_at", "<", timestamp(before))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
