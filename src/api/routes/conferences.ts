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
import { conferenceElement } from "../representations.js";
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
  sendList,
} from "../server.js";

/** Start times are read in the owner's zone (UTC when the owner has none). */
export async function ownerTime(api: ApiContext, userId: number, now: Date): Promise<TimeContext> {
  const zoneName = await findUserTimeZone(api.store, userId);
  const zone = zoneName ? USER_TIME_ZONES.get(zoneName) : undefined;
  return { now, timeZone: zone ?? "UTC" };
}

export async function conferenceRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(app, "/users/:userId/conferences", {
    GET: async (request, reply) => {
      const userId = await api.owner(request);
      const representation = representationOf(request);
      const conferences = await listConferences(
        api.store,
        userId,
        parseSearch(searchQuery(request), CONFERENCE_SEARCH),
      );
      return sendList(
        reply,
        "conferences",
        "conference",
        conferences.map((conference) => conferenceElement(conference, representation)),
      );
    },
    POST: async (request, reply) => {
      const userId = await api.owner(request);
      const representation = representationOf(request);
      const now = new Date();
      const input = readBody(request, "conference");
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
      return sendCreated(
        reply,
        `/users/${userId}/conferences/${conference.id}`,
        "conference",
        conferenceElement(conference, representation, true),
      );
    },
  });

  resource(app, "/users/:userId/conferences/:conferenceId", {
    GET: async (request, reply) => {
      const userId = await api.owner(request);
      const conference = await getConference(api.store, userId, idParam(request, "conferenceId"));
      return sendDocument(reply, 200, "conference", conferenceElement(conference, representationOf(request)));
    },
    PUT: async (request, reply) => {
      const userId = await api.owner(request);
      const id = idParam(request, "conferenceId");
      const representation = representationOf(request);
      const now = new Date();
      const input = readBody(request, "conference");
      const lockVersion = readLockVersion(input);
      const changes = readConferenceChanges(
        input,
        "update",
        representation,
        await ownerTime(api, userId, now),
      );
      const conference = await updateConference(api.store, userId, id, changes, lockVersion, now);
      return sendDocument(reply, 200, "conference", conferenceElement(conference, representation));
    },
    DELETE: async (request, reply) => {
      const userId = await api.owner(request);
      await deleteConference(api.store, userId, idParam(request, "conferenceId"), new Date());
      return reply.status(204).send();
    },
  });
}
