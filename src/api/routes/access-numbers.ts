import type { FastifyInstance } from "fastify";
import { accessNumberDocument, Documents } from "../representations.js";
import { AccessNumber, ListOf } from "../schemas.js";
import { type ApiContext, resource, sendDocument } from "../server.js";

/** The numbers callers dial in on (BRIDGELINE_ACCESS_NUMBERS); public, as every invitation prints them. */
export async function accessNumberRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(
    app,
    "/access-numbers",
    {
      GET: async (_request, reply) =>
        sendDocument(reply, 200, Documents.accessNumbers, api.accessNumbers.map(accessNumberDocument)),
    },
    {
      GET: {
        summary: "The numbers callers dial in on (E.164)",
        access: "public",
        answer: ListOf("access-numbers", AccessNumber),
      },
    },
  );
}
