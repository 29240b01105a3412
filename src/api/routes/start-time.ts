import type { FastifyInstance } from "fastify";
import { readConferenceChanges } from "../../domain/conference.js";
import { Documents, utc } from "../representations.js";
import { StartTime } from "../schemas.js";
import { type ApiContext, resource, sendDocument } from "../server.js";
import { ownerTime } from "./conferences.js";

/**
 * How a start time would be read, without creating anything: for clients that show it as it is
 * typed (the console's preview). The text goes through the conference's own reading of
 * scheduled-to-start-at, in the owner's zone, so the answer and its 422 are what a create would give.
 */
export async function startTimeRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(
    app,
    "/users/:userId/start-time",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        // Absent reads as blank ("can't be blank"); a repeated parameter, an array, as not text.
        const written = (request.query as Record<string, string | string[] | undefined>).text ?? "";
        const time = await ownerTime(api, userId, new Date());
        // Throws the 422 a create would give when the text cannot be read; read, it was one string.
        const { scheduledToStartAt } = readConferenceChanges(
          { "scheduled-to-start-at": written },
          "update",
          "basic",
          time,
        );
        return sendDocument(reply, 200, Documents.startTime, {
          text: written as string,
          "scheduled-to-start-at": utc(scheduledToStartAt as string),
          "time-zone": time.timeZone,
        });
      },
    },
    {
      GET: {
        summary: "How a start time would be read (in the user's zone), without scheduling anything",
        answer: StartTime,
        refusesInput: true,
        query: {
          text: {
            description:
              "A start time as scheduled-to-start-at takes it: ISO 8601, or free-form (next Tuesday at 3pm)",
            required: true,
          },
        },
      },
    },
  );
}
