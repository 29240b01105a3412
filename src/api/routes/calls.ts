import { stringify } from "csv-stringify/sync";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { CALL_RECORD_COLUMNS, type CallRecord } from "../../domain/call-record.js";
import { parseSearch } from "../../domain/search.js";
import { getAttendee } from "../../store/attendees.js";
import { CALL_SEARCH, listCallRecords } from "../../store/call-records.js";
import { getConference } from "../../store/conferences.js";
import { callDocument, Documents } from "../representations.js";
import { Call, ListOf } from "../schemas.js";
import { type ApiContext, idParam, resource, searchQuery, sendDocument } from "../server.js";

/** The conference named by the path, which must belong to the authenticated owner. */
async function ownedConferenceId(api: ApiContext, request: FastifyRequest): Promise<number> {
  const userId = await api.owner(request);
  return (await getConference(api.store, userId, idParam(request, "conferenceId"))).id;
}

/**
 * A field as a spreadsheet must not run it: text the far end chose (a caller's number, a carrier's
 * reason) that starts like a formula (=, @, +, - or a tab or return) gets a leading apostrophe (OWASP
 * "CSV injection"); a telephone number such as +16045550100 and a negative figure stay as they are.
 */
function inertField(value: string | number | null): string | number {
  if (value === null) return "";
  if (typeof value === "number") return value;
  return /^[=@\t\r]|^[+-](?!\d+$)/.test(value) ? `'${value}` : value;
}

/** RFC 4180 CSV with a header row; an unknown value is an empty field, times keep their milliseconds. */
function callRecordsCsv(records: readonly CallRecord[]): string {
  return stringify(
    records.map((record) => CALL_RECORD_COLUMNS.map(([, value]) => inertField(value(record)))),
    { header: true, columns: CALL_RECORD_COLUMNS.map(([name]) => name), record_delimiter: "windows" },
  );
}

/** A conference's call records, as XML or as a CSV export, and one attendee's. */
export async function callRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(
    app,
    "/users/:userId/conferences/:conferenceId/calls",
    {
      GET: async (request, reply) => {
        const conferenceId = await ownedConferenceId(api, request);
        const filters = parseSearch(searchQuery(request), CALL_SEARCH);
        const records = await listCallRecords(api.store, conferenceId, filters);
        return sendDocument(reply, 200, Documents.calls, records.map(callDocument));
      },
    },
    {
      GET: {
        summary: "The records of a conference's calls, oldest first, once each is over",
        answer: ListOf("calls", Call),
        search: CALL_SEARCH,
      },
    },
  );

  resource(
    app,
    "/users/:userId/conferences/:conferenceId/calls.csv",
    {
      GET: async (request, reply) => {
        const conferenceId = await ownedConferenceId(api, request);
        const filters = parseSearch(searchQuery(request), CALL_SEARCH);
        const records = await listCallRecords(api.store, conferenceId, filters);
        return reply
          .type("text/csv; charset=utf-8")
          .header("content-disposition", `attachment; filename="conference-${conferenceId}-calls.csv"`)
          .send(callRecordsCsv(records));
      },
    },
    {
      GET: {
        summary: "The conference's call records as CSV (times to the millisecond)",
        search: CALL_SEARCH,
        media: { type: "text/csv", description: "One row per call, with a header row" },
      },
    },
    { produces: ["text/csv"] },
  );

  resource(
    app,
    "/users/:userId/conferences/:conferenceId/attendees/:attendeeId/calls",
    {
      GET: async (request, reply) => {
        const conferenceId = await ownedConferenceId(api, request);
        const attendee = await getAttendee(api.store, conferenceId, idParam(request, "attendeeId"));
        const filters = parseSearch(searchQuery(request), CALL_SEARCH);
        const records = await listCallRecords(api.store, conferenceId, filters, attendee.id);
        return sendDocument(reply, 200, Documents.calls, records.map(callDocument));
      },
    },
    {
      GET: {
        summary: "The records of one attendee's calls",
        answer: ListOf("calls", Call),
        search: CALL_SEARCH,
      },
    },
  );
}
