/**
 * The event log that live views follow: each event is appended in the transaction of the change that
 * causes it, so a view never hears of a change that did not happen, and kept an hour so that a
 * client that reconnects can catch up.
 */
import type { Kysely, Selectable } from "kysely";
import type { CallRecord } from "../domain/call-record.js";
import { readCallEncryption } from "../domain/encryption.js";
import type {
  ConferenceEvent,
  ConferenceEventType,
  NewConferenceEvent,
  RecoveryDetails,
} from "../domain/event.js";
import type { Store } from "./database.js";
import type { Database, EventTable } from "./schema.js";
import { queueWebhookDeliveries } from "./webhook-outbox.js";

/** How long events are kept. */
export const EVENT_RETENTION_MS = 60 * 60 * 1000;

function toEvent(row: Selectable<EventTable>): ConferenceEvent {
  return {
    id: row.id,
    userId: row.user_id,
    conferenceId: row.conference_id,
    attendeeId: row.attendee_id,
    type: row.type as ConferenceEventType,
    reason: row.reason,
    encryption: readCallEncryption(row.encryption),
    recovery:
      row.details === null || row.type !== "conference-recovered"
        ? null
        : (JSON.parse(row.details) as RecoveryDetails),
    call: row.details === null || row.type !== "call-ended" ? null : (JSON.parse(row.details) as CallRecord),
    at: new Date(row.created_at).toISOString(),
  };
}

/**
 * Appends events, in the given order, with `db` being the transaction of the change they report, and
 * queues their webhook deliveries in it (outside a transaction, one is opened for the two).
 */
export async function appendEvents(
  db: Kysely<Database>,
  events: readonly NewConferenceEvent[],
  now: Date,
): Promise<void> {
  if (events.length === 0) return;
  if (!db.isTransaction) return db.transaction().execute((trx) => appendEvents(trx, events, now));
  const at = now.toISOString();
  const rows = await db
    .insertInto("events")
    .values(
      events.map((event) => ({
        user_id: event.userId,
        conference_id: event.conferenceId,
        attendee_id: event.attendeeId,
        type: event.type,
        reason: event.reason,
        encryption: event.encryption,
        // The details of the event's type: a take-over's, a call's record.
        details: JSON.stringify(event.recovery ?? event.call) ?? null,
        created_at: at,
      })),
    )
    .returningAll()
    .execute();
  await queueWebhookDeliveries(db, rows.sort((a, b) => a.id - b.id).map(toEvent), now);
}

/** The highest event id committed so far (0 when there is none). */
export async function lastEventId(store: Store): Promise<number> {
  const row = await store.db
    .selectFrom("events")
    .select((eb) => eb.fn.max("id").as("id"))
    .executeTakeFirst();
  return Number(row?.id ?? 0);
}

/**
 * Events with an id above `afterId` (and those of `alsoIds`), oldest first, optionally only a user's
 * or a conference's.
 */
export async function eventsAfter(
  store: Store,
  afterId: number,
  scope: { userId?: number; conferenceId?: number },
  limit: number,
  alsoIds: readonly number[] = [],
): Promise<ConferenceEvent[]> {
  const rows = await store.db
    .selectFrom("events")
    .selectAll()
    .where((eb) =>
      alsoIds.length === 0
        ? eb("id", ">", afterId)
        : eb.or([eb("id", ">", afterId), eb("id", "in", alsoIds)]),
    )
    .$if(scope.userId !== undefined, (q) => q.where("user_id", "=", scope.userId as number))
    .$if(scope.conferenceId !== undefined, (q) => q.where("conference_id", "=", scope.conferenceId as number))
    .orderBy("id")
    .limit(limit)
    .execute();
  return rows.map(toEvent);
}

/** The events up to `upToId` that tell who is talking now (see domain stillTalking), oldest first. */
export async function talkingEvents(
  store: Store,
  upToId: number,
  scope: { userId?: number; conferenceId?: number },
  now: Date,
): Promise<ConferenceEvent[]> {
  const rows = await store.db
    .selectFrom("events")
    .selectAll()
    .where("id", "<=", upToId)
    .where("created_at", ">=", new Date(now.getTime() - EVENT_RETENTION_MS).toISOString())
    .where("type", "in", [
      "talking-started",
      "talking-stopped",
      "attendee-muted",
      "attendee-disconnected",
      "attendee-removed",
      "conference-ended",
    ])
    .$if(scope.userId !== undefined, (q) => q.where("user_id", "=", scope.userId as number))
    .$if(scope.conferenceId !== undefined, (q) => q.where("conference_id", "=", scope.conferenceId as number))
    .orderBy("id")
    .execute();
  return rows.map(toEvent);
}

/** Deletes the events older than the retention period. */
export async function pruneEvents(store: Store, now: Date): Promise<void> {
  await store.db
    .deleteFrom("events")
    .where("created_at", "<", new Date(now.getTime() - EVENT_RETENTION_MS).toISOString())
    .execute();
}
