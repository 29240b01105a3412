/**
 * JSON request bodies: the API's, beside XML, and the console's and join page's own. Text in UTF-8
 * whose strings hold only the characters XML 1.0 allows, like every other text the service takes in.
 */
import type { FastifyInstance } from "fastify";
import { HttpError } from "./http-errors.js";
import { decodeRequestBody, refuseNonXmlCharacters } from "./request-text.js";

/** Lets a plugin's routes take JSON bodies (read by readJsonBody), beside the API's XML. */
export function acceptJsonBodies(scope: Pick<FastifyInstance, "addContentTypeParser">): void {
  scope.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    try {
      done(null, readJsonBody(body as Buffer, request.headers["content-type"]));
    } catch (error) {
      done(error as Error);
    }
  });
}

/**
 * A JSON body: UTF-8 (else 415 or 400) whose strings, once their escapes are read (\u0000, a lone
 * \ud800), hold only characters XML 1.0 allows, like every other text the service takes in.
 */
function readJsonBody(body: Buffer, contentType: string | undefined): unknown {
  const text = decodeRequestBody(body, contentType);
  // A bodiless POST still declares its type (the API's CSRF defence): no body, not bad JSON.
  if (text.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError("BL_ERR_MALFORMED_INPUT", "The body is not valid JSON");
  }
  refuseNonXmlStrings(value);
  return value;
}

/** Walks without recursion: a 64 KiB body can nest arrays 30,000 deep. */
function refuseNonXmlStrings(value: unknown): void {
  const pending = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === "string") refuseNonXmlCharacters(next, "A JSON string");
    else if (Array.isArray(next)) for (const item of next) pending.push(item);
    else if (typeof next === "object" && next !== null)
      for (const [name, member] of Object.entries(next)) {
        refuseNonXmlCharacters(name, "A JSON member name");
        pending.push(member);
      }
  }
}
