/**
 * Call records (domain/call-record.ts): written by the room running the conference once a call is
 * over, with its call-ended event, in one transaction under the room's lease; read by the API.
 */
import type { Selectable } from "kysely";
import type { RoomScope } from "../conference/ports.js";
import {
  type CallCause,
  type CallerVerification,
  type CallQuality,
  type CallRecord,
  callDurationSeconds,
  type NewCallRecord,
} from "../domain/call-record.js";
import type { SearchAttributes, SearchFilter } from "../domain/search.js";
import type { Store } from "./database.js";
import { appendEvents } from "./events.js";
import { checkLease } from "./leases.js";
import type { CallRecordTable } from "./schema.js";
import { searchCondition } from "./search.js";
import { flag } from "./values.js";

function toCallRecord(row: Selectable<CallRecordTable>): CallRecord {
  const record: NewCallRecord = {
    attendeeId: row.attendee_id,
    direction: row.direction as CallRecord["direction"],
    number: row.number,
    route: row.route,
    instance: row.instance,
    invitedAt: new Date(row.invited_at).toISOString(),
    answeredAt: row.answered_at === null ? null : new Date(row.answered_at).toISOString(),
    endedAt: new Date(row.ended_at).toISOString(),
    sipStatus: row.sip_status,
    sipReason: row.sip_reason,
    cause:
      row.cause_protocol === null || row.cause === null
        ? null
        : { protocol: row.cause_protocol as CallCause["protocol"], cause: row.cause, text: row.cause_text },
    hungUpBy: row.hung_up_by as CallRecord["hungUpBy"],
    endReason: row.end_reason,
    codec: row.codec,
    srtp: Boolean(row.srtp),
    tls: Boolean(row.tls),
    quality: row.quality === null ? null : (JSON.parse(row.quality) as CallQuality),
    callerVerification:
      row.verification_status === null
        ? null
        : {
            status: row.verification_status as CallerVerification["status"],
            attestation: row.attestation as CallerVerification["attestation"],
            reason: row.verification_reason,
          },
  };
  return {
    id: row.id,
    conferenceId: row.conference_id,
    durationSeconds: callDurationSeconds(record),
    ...record,
  };
}

/**
 * Writes a call's record and its call-ended event (carrying the record to live views and webhooks),
 * refused with LeaseLost when the room no longer holds the conference.
 */
export async function recordCall(
  store: Store,
  scope: RoomScope,
  record: NewCallRecord,
  at: Date,
): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    await checkLease(trx, store.dialect, scope);
    const row = await trx
      .insertInto("call_records")
      .values({
        conference_id: scope.conferenceId,
        attendee_id: record.attendeeId,
        direction: record.direction,
        number: record.number,
        route: record.route,
        instance: record.instance,
        invited_at: record.invitedAt,
        answered_at: record.answeredAt,
        ended_at: record.endedAt,
        sip_status: record.sipStatus,
        sip_reason: record.sipReason,
        cause_protocol: record.cause?.protocol ?? null,
        cause: record.cause?.cause ?? null,
        cause_text: record.cause?.text ?? null,
        hung_up_by: record.hungUpBy,
        end_reason: record.endReason,
        codec: record.codec,
        srtp: flag(record.srtp),
        tls: flag(record.tls),
        quality: record.quality === null ? null : JSON.stringify(record.quality),
        verification_status: record.callerVerification?.status ?? null,
        attestation: record.callerVerification?.attestation ?? null,
        verification_reason: record.callerVerification?.reason ?? null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await appendEvents(
      trx,
      [
        {
          userId: scope.userId,
          conferenceId: scope.conferenceId,
          attendeeId: record.attendeeId,
          type: "call-ended",
          reason: record.endReason,
          encryption: null,
          call: toCallRecord(row),
        },
      ],
      at,
    );
  });
}

/** What a list of calls can be searched by (`?sip_status=486`, `?invited_at_gte=...`), as the API's other lists. */
export const CALL_SEARCH: SearchAttributes<keyof CallRecordTable> = {
  id: { column: "id", type: "integer" },
  attendee_id: { column: "attendee_id", type: "integer" },
  direction: { column: "direction", type: "text" },
  number: { column: "number", type: "text" },
  route: { column: "route", type: "text" },
  instance: { column: "instance", type: "text" },
  invited_at: { column: "invited_at", type: "datetime" },
  answered_at: { column: "answered_at", type: "datetime" },
  ended_at: { column: "ended_at", type: "datetime" },
  sip_status: { column: "sip_status", type: "integer" },
  cause_protocol: { column: "cause_protocol", type: "text" },
  cause: { column: "cause", type: "integer" },
  hung_up_by: { column: "hung_up_by", type: "text" },
  codec: { column: "codec", type: "text" },
  srtp: { column: "srtp", type: "boolean" },
  tls: { column: "tls", type: "boolean" },
  verification_status: { column: "verification_status", type: "text" },
  attestation: { column: "attestation", type: "text" },
};

/** A conference's call records (one attendee's, when given) that pass the filters, oldest first. */
export async function listCallRecords(
  store: Store,
  conferenceId: number,
  filters: readonly SearchFilter<keyof CallRecordTable>[] = [],
  attendeeId?: number,
): Promise<CallRecord[]> {
  const rows = await store.db
    .selectFrom("call_records")
    .selectAll()
    .where("conference_id", "=", conferenceId)
    .$if(attendeeId !== undefined, (query) => query.where("attendee_id", "=", attendeeId as number))
    .$if(filters.length > 0, (query) => query.where((eb) => searchCondition(eb, filters)))
    .orderBy("id")
    .execute();
  return rows.map(toCallRecord);
}
