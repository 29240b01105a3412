/**
 * Webhooks as the API reads and writes them: a user's webhooks, and each one's delivery log. The
 * deliveries are queued, sent and settled by the webhook outbox (store/webhook-outbox.ts).
 */
import type { Kysely, Selectable } from "kysely";
import { NotFound, StaleLockVersion } from "../domain/errors.js";
import type { ConferenceEventType } from "../domain/event.js";
import type { SearchAttributes, SearchFilter } from "../domain/search.js";
import {
  checkWebhookCount,
  type Webhook,
  type WebhookAttempt,
  type WebhookChanges,
  type WebhookDelivery,
} from "../domain/webhook.js";
import type { Store } from "./database.js";
import type { Database, WebhookDeliveryTable, WebhookTable } from "./schema.js";
import { searchCondition } from "./search.js";
import { flag, nextLockVersion, timestamp, withVersion } from "./values.js";
import { failPendingDeliveries } from "./webhook-outbox.js";

export const WEBHOOK_SEARCH: SearchAttributes<keyof WebhookTable> = {
  id: { column: "id", type: "integer" },
  created_at: { column: "created_at", type: "datetime" },
  updated_at: { column: "updated_at", type: "datetime" },
  lock_version: { column: "lock_version", type: "integer" },
  url: { column: "url", type: "text" },
  enabled: { column: "enabled", type: "boolean" },
  disabled_at: { column: "disabled_at", type: "datetime" },
  disabled_reason: { column: "disabled_reason", type: "text" },
};

export const DELIVERY_SEARCH: SearchAttributes<keyof WebhookDeliveryTable> = {
  id: { column: "id", type: "integer" },
  created_at: { column: "created_at", type: "datetime" },
  updated_at: { column: "updated_at", type: "datetime" },
  lock_version: { column: "lock_version", type: "integer" },
  message_id: { column: "message_id", type: "text" },
  event_id: { column: "event_id", type: "integer" },
  event_type: { column: "event_type", type: "text" },
  state: { column: "state", type: "text" },
  attempt_count: { column: "attempts", type: "integer" },
  next_attempt_at: { column: "next_attempt_at", type: "datetime" },
  delivered_at: { column: "delivered_at", type: "datetime" },
  last_error: { column: "last_error", type: "text" },
  payload: { column: "payload", type: "text" },
};

function toWebhook(row: Selectable<WebhookTable>): Webhook {
  return withVersion(row, {
    userId: row.user_id,
    url: row.url,
    eventTypes: row.event_types === null ? null : (JSON.parse(row.event_types) as ConferenceEventType[]),
    enabled: Boolean(row.enabled),
    disabledAt: row.disabled_at,
    disabledReason: row.disabled_reason,
  });
}

export async function listWebhooks(
  store: Store,
  userId: number,
  filters: SearchFilter<keyof WebhookTable>[],
): Promise<Webhook[]> {
  const rows = await store.db
    .selectFrom("webhooks")
    .selectAll()
    .where("user_id", "=", userId)
    .$if(filters.length > 0, (q) => q.where((eb) => searchCondition(eb, filters)))
    .orderBy("id")
    .execute();
  return rows.map(toWebhook);
}

async function webhookRow(db: Kysely<Database>, userId: number, id: number) {
  const row = await db
    .selectFrom("webhooks")
    .selectAll()
    .where("user_id", "=", userId)
    .where("id", "=", id)
    .executeTakeFirst();
  if (!row) throw new NotFound("webhook");
  return row;
}

export async function getWebhook(store: Store, userId: number, id: number): Promise<Webhook> {
  return toWebhook(await webhookRow(store.db, userId, id));
}

/** Creates a webhook with its secret (the caller shows it once), within the per-user limit. */
export async function createWebhook(
  store: Store,
  userId: number,
  changes: WebhookChanges & { url: string },
  secret: string,
  now: Date,
): Promise<Webhook> {
  const at = timestamp(now);
  return store.db.transaction().execute(async (trx) => {
    // The owner's row is locked (PostgreSQL) so that two creates together cannot pass the limit.
    let owner = trx.selectFrom("users").select("id").where("id", "=", userId);
    if (store.dialect === "postgres") owner = owner.forUpdate();
    await owner.executeTakeFirstOrThrow();
    const { count } = await trx
      .selectFrom("webhooks")
      .select((eb) => eb.fn.countAll<number>().as("count"))
      .where("user_id", "=", userId)
      .executeTakeFirstOrThrow();
    checkWebhookCount(Number(count));
    const enabled = changes.enabled ?? true;
    const row = await trx
      .insertInto("webhooks")
      .values({
        created_at: at,
        updated_at: at,
        lock_version: 0,
        user_id: userId,
        url: changes.url,
        event_types: eventTypesColumn(changes.eventTypes ?? null),
        secret,
        enabled: flag(enabled),
        disabled_at: enabled ? null : at,
        disabled_reason: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toWebhook(row);
  });
}

function eventTypesColumn(types: readonly string[] | null): string | null {
  return types === null ? null : JSON.stringify(types);
}

/**
 * Updates a webhook. Disabling it ends its pending deliveries (failed: "webhook disabled"); enabling
 * it clears why it was disabled. Deliveries still pending go to a changed URL.
 */
export async function updateWebhook(
  store: Store,
  userId: number,
  id: number,
  changes: WebhookChanges,
  expectedLockVersion: number | undefined,
  now: Date,
): Promise<Webhook> {
  const at = timestamp(now);
  return store.db.transaction().execute(async (trx) => {
    const before = await webhookRow(trx, userId, id);
    if (expectedLockVersion !== undefined && expectedLockVersion !== before.lock_version)
      throw new StaleLockVersion("webhook");
    const wasEnabled = Boolean(before.enabled);
    const enabled = changes.enabled ?? wasEnabled;
    const row = await trx
      .updateTable("webhooks")
      .set({
        ...(changes.url !== undefined && { url: changes.url }),
        ...(changes.eventTypes !== undefined && { event_types: eventTypesColumn(changes.eventTypes) }),
        ...(enabled !== wasEnabled && {
          enabled: flag(enabled),
          disabled_at: enabled ? null : at,
          disabled_reason: null,
        }),
        updated_at: at,
        lock_version: nextLockVersion(),
      })
      .where("id", "=", id)
      .where("lock_version", "=", before.lock_version)
      .returningAll()
      .executeTakeFirst();
    if (row === undefined) throw new StaleLockVersion("webhook");
    if (wasEnabled && !enabled) await failPendingDeliveries(trx, id, "webhook disabled by its owner", now);
    return toWebhook(row);
  });
}

export async function deleteWebhook(store: Store, userId: number, id: number): Promise<void> {
  const result = await store.db
    .deleteFrom("webhooks")
    .where("user_id", "=", userId)
    .where("id", "=", id)
    .executeTakeFirst();
  if (Number(result.numDeletedRows) !== 1) throw new NotFound("webhook");
}

function toAttempt(row: {
  attempted_at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}): WebhookAttempt {
  return {
    attemptedAt: new Date(row.attempted_at).toISOString(),
    statusCode: row.status_code,
    error: row.error,
    durationMs: row.duration_ms,
  };
}

function toDelivery(row: Selectable<WebhookDeliveryTable>, attempts: WebhookAttempt[]): WebhookDelivery {
  return withVersion(row, {
    webhookId: row.webhook_id,
    messageId: row.message_id,
    eventId: row.event_id,
    eventType: row.event_type,
    payload: row.payload,
    state: row.state as WebhookDelivery["state"],
    attemptCount: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    deliveredAt: row.delivered_at,
    lastError: row.last_error,
    attempts,
  });
}

/** The delivery log of a user's webhook: its deliveries (filtered), each with its attempts, oldest first. */
export async function listDeliveries(
  store: Store,
  userId: number,
  webhookId: number,
  filters: SearchFilter<keyof WebhookDeliveryTable>[],
): Promise<WebhookDelivery[]> {
  await webhookRow(store.db, userId, webhookId);
  const deliveries = store.db
    .selectFrom("webhook_deliveries")
    .where("webhook_id", "=", webhookId)
    .$if(filters.length > 0, (q) => q.where((eb) => searchCondition(eb, filters)));
  const [rows, attempts] = await Promise.all([
    deliveries.selectAll().orderBy("id").execute(),
    store.db
      .selectFrom("webhook_attempts")
      .selectAll()
      .where("delivery_id", "in", deliveries.select("id"))
      .orderBy("id")
      .execute(),
  ]);
  const byDelivery = new Map<number, WebhookAttempt[]>();
  for (const attempt of attempts) {
    const list = byDelivery.get(attempt.delivery_id) ?? [];
    list.push(toAttempt(attempt));
    byDelivery.set(attempt.delivery_id, list);
  }
  return rows.map((row) => toDelivery(row, byDelivery.get(row.id) ?? []));
}

export async function getDelivery(
  store: Store,
  userId: number,
  webhookId: number,
  id: number,
): Promise<WebhookDelivery> {
  await webhookRow(store.db, userId, webhookId);
  const [row, attempts] = await Promise.all([
    store.db
      .selectFrom("webhook_deliveries")
      .selectAll()
      .where("webhook_id", "=", webhookId)
      .where("id", "=", id)
      .executeTakeFirst(),
    store.db.selectFrom("webhook_attempts").selectAll().where("delivery_id", "=", id).orderBy("id").execute(),
  ]);
  if (!row) throw new NotFound("delivery");
  return toDelivery(row, attempts.map(toAttempt));
}
