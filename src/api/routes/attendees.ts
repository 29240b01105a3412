import type { FastifyInstance, FastifyRequest } from "fastify";
import { changedLiveControls, readAttendeeChanges } from "../../domain/attendee.js";
import { parseSearch } from "../../domain/search.js";
import {
  ATTENDEE_SEARCH,
  createAttendee,
  deleteAttendee,
  getAttendee,
  listAttendees,
  updateAttendee,
} from "../../store/attendees.js";
import { getConference } from "../../store/conferences.js";
import { HttpError } from "../http-errors.js";
import { attendeeBasicDocument, attendeeDocument, Documents } from "../representations.js";
import { Attendee, AttendeeBasic, AttendeeUpdate, AttendeeWrite, ListOf } from "../schemas.js";
import {
  type ApiContext,
  idParam,
  readBody,
  readLockVersion,
  representationOf,
  resource,
  searchQuery,
  sendCreated,
  sendDocument,
} from "../server.js";
import { notStarted } from "./live-control.js";
import { sendAttendee } from "./representation-answers.js";

/** The conference named by the path, which must belong to the authenticated owner. */
async function ownedConference(api: ApiContext, request: FastifyRequest) {
  const userId = await api.owner(request);
  const conference = await getConference(api.store, userId, idParam(request, "conferenceId"));
  return { userId, conferenceId: conference.id, conferenceState: conference.state };
}

export async function attendeeRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(
    app,
    "/users/:userId/conferences/:conferenceId/attendees",
    {
      GET: async (request, reply) => {
        const { conferenceId } = await ownedConference(api, request);
        const representation = representationOf(request);
        const filters = parseSearch(searchQuery(request), ATTENDEE_SEARCH);
        const attendees = await listAttendees(api.store, conferenceId, filters);
        return representation === "basic"
          ? sendDocument(reply, 200, Documents.attendeesBasic, attendees.map(attendeeBasicDocument))
          : sendDocument(reply, 200, Documents.attendees, attendees.map(attendeeDocument));
      },
      POST: async (request, reply) => {
        const { userId, conferenceId } = await ownedConference(api, request);
        const representation = representationOf(request);
        const changes = readAttendeeChanges(readBody(request, AttendeeWrite), "create", api.callingPolicy);
        const maxDialled = api.callingPolicy.maxCallsInProgressPerUser;
        const attendee = await createAttendee(api.store, conferenceId, changes, new Date(), maxDialled);
        const location = `/users/${userId}/conferences/${conferenceId}/attendees/${attendee.id}`;
        return representation === "basic"
          ? sendCreated(reply, location, Documents.attendeeBasic, attendeeBasicDocument(attendee))
          : sendCreated(reply, location, Documents.attendee, attendeeDocument(attendee));
      },
    },
    {
      GET: {
        summary: "List a conference's attendees",
        answer: { extended: ListOf("attendees", Attendee), basic: ListOf("attendees", AttendeeBasic) },
        representation: true,
        search: ATTENDEE_SEARCH,
      },
      POST: {
        summary: "Add an attendee (called at once when the conference has started)",
        body: AttendeeWrite,
        status: 201,
        answer: { extended: Attendee, basic: AttendeeBasic },
        representation: true,
      },
    },
  );

  resource(
    app,
    "/users/:userId/conferences/:conferenceId/attendees/:attendeeId",
    {
      GET: async (request, reply) => {
        const { conferenceId } = await ownedConference(api, request);
        const attendee = await getAttendee(api.store, conferenceId, idParam(request, "attendeeId"));
        return sendAttendee(reply, attendee, representationOf(request));
      },
      PUT: async (request, reply) => {
        const { conferenceId, conferenceState } = await ownedConference(api, request);
        const id = idParam(request, "attendeeId");
        const representation = representationOf(request);
        const input = readBody(request, AttendeeUpdate);
        const lockVersion = readLockVersion(input);
        const changes = readAttendeeChanges(input, "update", api.callingPolicy);
        if (changes.muted !== undefined || changes.handUp !== undefined) {
          const current = await getAttendee(api.store, conferenceId, id);
          const changed = changedLiveControls(current, changes).join(" and ");
          if (changed === "") {
            delete changes.muted;
            delete changes.handUp;
          } else if (conferenceState !== "started") {
            throw notStarted(conferenceState, changed);
          } else if (current.state !== "connected") {
            // Only a call in the room has a microphone and a hand; the next call starts afresh.
            throw new HttpError(
              "BL_ERR_CONFLICT",
              `the attendee is ${current.state}, not connected: ${changed} can be changed only during its call`,
            );
          }
        }
        const maxDialled = api.callingPolicy.maxCallsInProgressPerUser;
        const attendee = await updateAttendee(
          api.store,
          conferenceId,
          id,
          changes,
          lockVersion,
          new Date(),
          maxDialled,
        );
        return sendAttendee(reply, attendee, representation);
      },
      DELETE: async (request, reply) => {
        const { conferenceId } = await ownedConference(api, request);
        await deleteAttendee(api.store, conferenceId, idParam(request, "attendeeId"), new Date());
        return reply.status(204).send();
      },
    },
    {
      GET: {
        summary: "Get an attendee",
        answer: { extended: Attendee, basic: AttendeeBasic },
        representation: true,
      },
      PUT: {
        summary: "Change an attendee (muted and hand-up while connected)",
        body: AttendeeUpdate,
        answer: { extended: Attendee, basic: AttendeeBasic },
        representation: true,
      },
      DELETE: { summary: "Remove an attendee (hung up when in the call)" },
    },
  );
}
