/**
 * Acting on a conference while it takes place: call an attendee again (or now), end the conference.
 * Both are stored as requests that the running room carries out on its next refresh (within half a
 * second), whichever instance runs it. Muting, hands and the conference's controls are PUTs of the
 * resources themselves (attendees.ts, conferences.ts).
 */
import type { FastifyInstance } from "fastify";
import { NotFound, ValidationFailed } from "../../domain/errors.js";
import { whyOverCallLimits } from "../../domain/phone.js";
import { getConference } from "../../store/conferences.js";
import { requestAttendeeCall, requestConferenceEnd } from "../../store/live-control.js";
import { placedCallCounts } from "../../store/placed-calls.js";
import { HttpError } from "../http-errors.js";
import { Attendee, AttendeeBasic, Conference, ConferenceBasic } from "../schemas.js";
import { type ApiContext, idParam, representationOf, resource } from "../server.js";
import { sendAttendee, sendConference } from "./representation-answers.js";

/** The answer to acting live on a conference that is not taking place. */
export function notStarted(state: string, what = "it"): HttpError {
  return new HttpError(
    "BL_ERR_CONFLICT",
    `the conference is ${state}, not started: ${what} can be changed only while it takes place`,
  );
}

export async function liveControlRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(
    app,
    "/users/:userId/conferences/:conferenceId/attendees/:attendeeId/call",
    {
      POST: async (request, reply) => {
        const userId = await api.owner(request);
        const conference = await getConference(api.store, userId, idParam(request, "conferenceId"));
        const attendeeId = idParam(request, "attendeeId");
        const overLimit = whyOverCallLimits(
          await placedCallCounts(api.store, userId, new Date()),
          api.callingPolicy,
        );
        if (overLimit !== undefined) {
          request.log.warn(
            { userId, conferenceId: conference.id, attendeeId, overLimit },
            "call refused (toll fraud)",
          );
          throw new ValidationFailed([`call: ${overLimit}`]);
        }
        const result = await requestAttendeeCall(api.store, conference.id, attendeeId, new Date());
        switch (result.outcome) {
          case "not-started":
            throw notStarted(conference.state === "started" ? "ended" : conference.state);
          case "no-attendee":
            throw new NotFound("attendee");
          case "no-number":
            throw new ValidationFailed(["phone-number: the attendee has no number to call"]);
          case "in-call":
            throw new HttpError("BL_ERR_CONFLICT", `the attendee is already ${result.attendee.state}`);
          case "requested":
            return sendAttendee(reply, result.attendee, representationOf(request));
        }
      },
    },
    {
      POST: {
        summary: "Call an attendee now (or again) in a started conference",
        refusesInput: true,
        answer: { extended: Attendee, basic: AttendeeBasic },
        representation: true,
      },
    },
  );

  resource(
    app,
    "/users/:userId/conferences/:conferenceId/end",
    {
      POST: async (request, reply) => {
        const userId = await api.owner(request);
        const conference = await getConference(api.store, userId, idParam(request, "conferenceId"));
        const ending = await requestConferenceEnd(api.store, userId, conference.id, new Date());
        if (ending === undefined)
          throw notStarted(conference.state === "started" ? "ended" : conference.state);
        return sendConference(reply, ending, representationOf(request));
      },
    },
    {
      POST: {
        summary: "End a started conference for everyone",
        answer: { extended: Conference, basic: ConferenceBasic },
        representation: true,
      },
    },
  );
}
