import type { FastifyInstance } from "fastify";
import { readConferenceChanges } from "../../domain/conference.js";
import { USER_TIME_ZONES } from "../../domain/reference-data.js";
import { parseSearch } from "../../domain/search.js";
import type { TimeContext } from "../../domain/time-expression.js";
import {
  CONFERENCE_SEARCH,
  createConference,
  deleteConference,
  getConference,
  listConferences,
  updateConference,
} from "../../store/conferences.js";
import { findUserTimeZone } from "../../store/users.js";
import { conferenceBasicDocument, conferenceDocument, Documents } from "../representations.js";
import { Conference, ConferenceBasic, ConferenceUpdate, ConferenceWrite, ListOf } from "../schemas.js";
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
import { sendConference } from "./representation-answers.js";

/** Start times are read in the owner's zone (UTC when the owner has none). */
export async function ownerTime(api: ApiContext, userId: number, now: Date): Promise<TimeContext> {
  const zoneName = await findUserTimeZone(api.store, userId);
  const zone = zoneName ? USER_TIME_ZONES.get(zoneName) : undefined;
  return { now, timeZone: zone ?? "UTC" };
}

export async function conferenceRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(
    app,
    "/users/:userId/conferences",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        const representation = representationOf(request);
        const conferences = await listConferences(
          api.store,
          userId,
          parseSearch(searchQuery(request), CONFERENCE_SEARCH),
        );
        return representation === "basic"
          ? sendDocument(reply, 200, Documents.conferencesBasic, conferences.map(conferenceBasicDocument))
          : sendDocument(
              reply,
              200,
              Documents.conferences,
              conferences.map((conference) => conferenceDocument(conference)),
            );
      },
      POST: async (request, reply) => {
        const userId = await api.owner(request);
        const representation = representationOf(request);
        const now = new Date();
        const input = readBody(request, ConferenceWrite);
        const changes = readConferenceChanges(
          input,
          "create",
          representation,
          await ownerTime(api, userId, now),
        );
        const conference = await createConference(
          api.store,
          userId,
          changes as typeof changes & { name: string; scheduledToStartAt: string },
          now,
        );
        const location = `/users/${userId}/conferences/${conference.id}`;
        return representation === "basic"
          ? sendCreated(reply, location, Documents.conferenceBasic, conferenceBasicDocument(conference))
          : sendCreated(reply, location, Documents.conference, conferenceDocument(conference, true));
      },
    },
    {
      GET: {
        summary: "List the user's conferences",
        answer: {
          extended: ListOf("conferences", Conference),
          basic: ListOf("conferences", ConferenceBasic),
        },
        representation: true,
        search: CONFERENCE_SEARCH,
      },
      POST: {
        summary: "Schedule a conference",
        body: ConferenceWrite,
        status: 201,
        answer: { extended: Conference, basic: ConferenceBasic },
        representation: true,
      },
    },
  );

  resource(
    app,
    "/users/:userId/conferences/:conferenceId",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        const conference = await getConference(api.store, userId, idParam(request, "conferenceId"));
        return sendConference(reply, conference, representationOf(request));
      },
      PUT: async (request, reply) => {
        const userId = await api.owner(request);
        const id = idParam(request, "conferenceId");
        const representation = representationOf(request);
        const now = new Date();
        const input = readBody(request, ConferenceUpdate);
        const lockVersion = readLockVersion(input);
        const changes = readConferenceChanges(
          input,
          "update",
          representation,
          await ownerTime(api, userId, now),
        );
        const conference = await updateConference(api.store, userId, id, changes, lockVersion, now);
        return sendConference(reply, conference, representation);
      },
      DELETE: async (request, reply) => {
        const userId = await api.owner(request);
        await deleteConference(api.store, userId, idParam(request, "conferenceId"), new Date());
        return reply.status(204).send();
      },
    },
    {
      GET: {
        summary: "Get a conference",
        answer: { extended: Conference, basic: ConferenceBasic },
        representation: true,
      },
      PUT: {
        summary: "Change a conference (its time until it starts; pending from new)",
        body: ConferenceUpdate,
        answer: { extended: Conference, basic: ConferenceBasic },
        representation: true,
      },
      DELETE: { summary: "Delete a conference (ends it first when started)" },
    },
  );
}
