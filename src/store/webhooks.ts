/**
 * Webhooks and their outbox. A delivery is queued for every enabled webhook that takes an event, in
 * the transaction that appends the event, so a change and its deliveries commit or roll back
 * together. Workers on any instance claim due deliveries (FOR UPDATE SKIP LOCKED on PostgreSQL), so
 * each attempt is made by one worker; every attempt is logged, and a webhook whose deliveries failed
 * for a day is disabled, with an e-mail to its owner queued in the same transaction.
 */
import type { Kysely, Selectable } from "kysely";
import { NotFound, StaleLockVersion } from "../domain/errors.js";
import type { ConferenceEvent, ConferenceEventType } from "../domain/event.js";
import type { SearchAttributes, SearchFilter } from "../domain/search.js";
import {
  checkWebhookCount,
  takesEvent,
  type Webhook,
  type WebhookAttempt,
  type WebhookChanges,
  type WebhookDelivery,
  webhookPayload,
} from "../domain/webhook.js";
import { newMessageId } from "../webhooks/signature.js";
import type { Store } from "./database.js";
import { queueWebhookDisabledNotice } from "./notifications.js";
import type { Database, WebhookDeliveryTable, WebhookTable } from "./schema.js";
import { searchCondition } from "./search.js";
import { flag, nextLockVersion, timestamp, withVersion } from "./values.js";

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

async function failPendingDeliveries(
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

/** A delivery claimed for an attempt, with where it goes and how it is signed. */
export interface ClaimedDelivery {
  id: number;
  webhookId: number;
  messageId: string;
  payload: string;
  /** Attempts so far, this one included. */
  attempts: number;
  createdAt: string;
  url: string;
  secret: string;
}

/**
 * Claims up to `limit` due deliveries of enabled webhooks in one statement, counting the attempt. On
 * PostgreSQL the rows are picked with FOR UPDATE SKIP LOCKED, so workers polling together never claim
 * the same delivery; SQLite has a single writer.
 */
export async function claimDeliveries(
  store: Store,
  worker: string,
  now: Date,
  limit: number,
): Promise<ClaimedDelivery[]> {
  const at = now.toISOString();
  let due = store.db
    .selectFrom("webhook_deliveries")
    .select("id")
    .where("state", "=", "pending")
    .where("next_attempt_at", "<=", at)
    // A webhook disabled while one of its deliveries was being sent can leave that one pending.
    .where("webhook_id", "in", (eb) =>
      eb.selectFrom("webhooks").select("webhooks.id").where("webhooks.enabled", "=", flag(true)),
    )
    .orderBy("next_attempt_at")
    .orderBy("id")
    .limit(limit);
  if (store.dialect === "postgres") due = due.forUpdate().skipLocked();
  const rows = await store.db
    .updateTable("webhook_deliveries")
    .set((eb) => ({ state: "sending", claimed_by: worker, claimed_at: at, attempts: eb("attempts", "+", 1) }))
    .where("id", "in", due)
    .where("state", "=", "pending")
    .returning(["id", "webhook_id", "message_id", "payload", "attempts", "created_at"])
    .execute();
  if (rows.length === 0) return [];
  const webhooks = await store.db
    .selectFrom("webhooks")
    .select(["id", "url", "secret"])
    .where("id", "in", [...new Set(rows.map((row) => row.webhook_id))])
    .execute();
  const byId = new Map(webhooks.map((webhook) => [webhook.id, webhook]));
  return rows
    .sort((a, b) => a.id - b.id)
    .flatMap((row) => {
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

/** What becomes of a claimed delivery after its attempt. */
export type AttemptSettlement =
  | { state: "delivered" }
  | { state: "pending"; nextAttemptAt: Date }
  /** Given up after its day: the webhook is disabled too when nothing reached it all that time. */
  | { state: "failed" }
  /** The receiver asked for no more (410): the webhook is disabled at once for this reason. */
  | { state: "gone"; reason: string };

export interface RecordedAttempt {
  at: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/** An attempt to log and what becomes of its delivery. */
export interface AttemptRecord {
  delivery: ClaimedDelivery;
  /** The claimer: only it may settle the delivery. */
  worker: string;
  attempt: RecordedAttempt;
  settlement: AttemptSettlement;
  /** Why the webhook is disabled when a delivery gave up and nothing reached the receiver all its day. */
  failingReason: (lastFailure: string) => string;
  /** When the owner's e-mail is queued: on the notification worker's clock, the wall clock. */
  noticeAt: Date;
}

/**
 * Logs an attempt and settles its delivery, only while this worker still holds the claim. Returns the
 * reason the webhook was disabled by this attempt, if it was.
 */
export async function recordAttempt(store: Store, record: AttemptRecord): Promise<string | undefined> {
  const { delivery, attempt, settlement } = record;
  const failure = attempt.error ?? `HTTP ${attempt.statusCode}`;
  return store.db.transaction().execute(async (trx) => {
    const settled = await trx
      .updateTable("webhook_deliveries")
      .set({
        state: settlement.state === "gone" ? "failed" : settlement.state,
        next_attempt_at: settlement.state === "pending" ? settlement.nextAttemptAt.toISOString() : null,
        delivered_at: settlement.state === "delivered" ? attempt.at.toISOString() : null,
        last_error: settlement.state === "delivered" ? null : failure,
        claimed_by: null,
        claimed_at: null,
        updated_at: timestamp(attempt.at),
        lock_version: nextLockVersion(),
      })
      .where("id", "=", delivery.id)
      .where("state", "=", "sending")
      .where("claimed_by", "=", record.worker)
      .executeTakeFirst();
    if (Number(settled.numUpdatedRows) !== 1) return undefined;
    await trx
      .insertInto("webhook_attempts")
      .values({
        delivery_id: delivery.id,
        attempted_at: attempt.at.toISOString(),
        status_code: attempt.statusCode,
        error: attempt.error,
        duration_ms: Math.round(attempt.durationMs),
      })
      .execute();
    let reason: string | undefined;
    if (settlement.state === "gone") reason = settlement.reason;
    else if (settlement.state === "failed") {
      const reached = await trx
        .selectFrom("webhook_deliveries")
        .select("id")
        .where("webhook_id", "=", delivery.webhookId)
        .where("state", "=", "delivered")
        .where("delivered_at", ">=", delivery.createdAt)
        .limit(1)
        .executeTakeFirst();
      if (reached === undefined) reason = record.failingReason(failure);
    }
    if (reason === undefined) return undefined;
    const disabled = await disableWebhook(trx, delivery.webhookId, reason, attempt.at, record.noticeAt);
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
    .returningAll()
    .executeTakeFirst();
  if (row === undefined) return false;
  await failPendingDeliveries(trx, webhookId, "webhook disabled", now);
  await queueWebhookDisabledNotice(trx, toWebhook(row), noticeAt);
  return true;
}

/** Puts back what this worker had claimed when it last stopped abruptly. */
export async function releaseDeliveryClaims(store: Store, worker: string): Promise<number> {
  const result = await store.db
    .updateTable("webhook_deliveries")
    .set({ state: "pending", claimed_by: null, claimed_at: null })
    .where("state", "=", "sending")
    .where("claimed_by", "=", worker)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Puts back deliveries whose claimer has been silent since `before` (an instance that died). */
export async function releaseStaleDeliveryClaims(store: Store, before: Date): Promise<number> {
  const result = await store.db
    .updateTable("webhook_deliveries")
    .set({ state: "pending", claimed_by: null, claimed_at: null })
    .where("state", "=", "sending")
    .where("claimed_at", "<", before.toISOString())
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Deletes delivered and failed deliveries (and their attempts) last changed before `before`. */
export async function pruneDeliveries(store: Store, before: Date): Promise<number> {
  const result = await store.db
    .deleteFrom("webhook_deliveries")
    .where("state", "in", ["delivered", "failed"])
    .where("updated_at", "<", timestamp(before))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
