import { type ApiContext, sendList } from "../server.js";
import { text } from "../xml.js";

/** The numbers callers dial in on (BRIDGELINE_ACCESS_NUMBERS); public, as every invitation prints them. */
export function accessNumberRoutes(api: ApiContext): void {
  api.resource("/access-numbers", {
    GET: async (_request, reply) =>
      sendList(
        reply,
        "access-numbers",
        "access-number",
        api.accessNumbers.map((number) => ({ number: text(number) })),
      ),
  });
}
