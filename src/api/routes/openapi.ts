import type { FastifyInstance } from "fastify";
import { readBuildInfo } from "../../build-info.js";
import { openApiDocument, type RouteOperation } from "../openapi.js";
import { resource } from "../server.js";

/**
 * /openapi.json: the API's OpenAPI 3.1 description, built once every route plugin has declared its
 * operations (onReady), then served as it is.
 */
export async function openApiRoutes(
  app: FastifyInstance,
  options: { operations: readonly RouteOperation[] },
): Promise<void> {
  let document = "";
  app.addHook("onReady", async () => {
    document = JSON.stringify(openApiDocument(options.operations, readBuildInfo().version));
  });
  resource(
    app,
    "/openapi.json",
    {
      GET: async (_request, reply) => reply.type("application/json; charset=utf-8").send(document),
    },
    {
      GET: {
        summary: "This description of the API (OpenAPI 3.1)",
        access: "public",
        media: { type: "application/json", description: "The OpenAPI document" },
      },
    },
    { produces: ["application/json"] },
  );
}
