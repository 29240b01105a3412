import type { FastifyInstance } from "fastify";
import { type ApiContext, resource, sendList } from "../server.js";
import { text } from "../xml.js";

/** The numbers callers dial in on (BRIDGELINE_ACCESS_NUMBERS); public, as every invitation prints them. */
export async function accessNumberRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(app, "/access-numbers", {
    GET: async (_request, reply) =>
      sendList(
        reply,
        "access-numbers",
        "access-number",
        api.accessNumbers.map((number) => ({ number: text(number) })),
      ),
  });
}
