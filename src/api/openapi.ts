/**
 * The OpenAPI 3.1 description of the API, served at /openapi.json: generated from the operations
 * the routes declare (resource() in server.ts takes each method's Operation beside its handler) and
 * from the schemas their documents are written and read with (schemas.ts), so that it cannot
 * describe a route or a field the service does not have.
 */
import type { TSchema } from "@sinclair/typebox";
import type { SearchAttributes } from "../domain/search.js";
import { MAX_BODY_BYTES } from "./http-errors.js";
import { Errors } from "./schemas.js";

/** A media type other than the API's documents (a recording, an event stream, a CSV file, a page). */
export interface Media {
  readonly type: string;
  readonly description: string;
  readonly schema?: object;
}

/** What a route's method does, for the description: its handler does what it says. */
export interface Operation {
  readonly summary: string;
  readonly description?: string;
  /**
   * Who may call it: the path's user (Basic or the console's session; the default), anyone, or
   * whoever holds the token in the path (a browser call's).
   */
  readonly access?: "owner" | "public" | "token";
  /** The request body's write schema (XML root: its xml.name). */
  readonly body?: TSchema;
  /** A request body of another media type instead (the join page's JSON). */
  readonly bodyMedia?: Media;
  /** The success status; default 200 (204 when there is no answer). */
  readonly status?: number;
  /** The answer's document schema(s), in XML or JSON as Accept asks; several: by ?representation. */
  readonly answer?: TSchema | { readonly extended: TSchema; readonly basic: TSchema };
  /** An answer of another media type instead. */
  readonly media?: Media;
  /** The collection's search attributes (query parameters). */
  readonly search?: SearchAttributes;
  /** Other query parameters, by name. */
  readonly query?: Readonly<Record<string, { readonly description: string; readonly required?: boolean }>>;
  /** Whether ?representation=basic|extended applies. */
  readonly representation?: boolean;
  /** 422 without a body: a query the rules refuse, or a limit (a call refused). */
  readonly refusesInput?: boolean;
  /** Errors of the route's own shape instead of the API's errors document (the join page's). */
  readonly errors?: Media;
  /** Answers of their own at these statuses, over the shared ones (the readiness check's 503). */
  readonly otherAnswers?: Readonly<Record<number, Media>>;
}

/** A route's operation, as buildApi collects them (onRoute). */
export interface RouteOperation {
  readonly path: string;
  readonly method: string;
  readonly operation: Operation;
}

const ERROR_STATUSES: Record<string, string> = {
  "400": "The request cannot be read: malformed XML or JSON, an unknown search attribute",
  "401": "No credentials, or wrong ones (Basic: e-mail and password; or the console's session cookie)",
  "403": "The path names another user",
  "404": "No such resource (or not the caller's)",
  "406": "Accept admits neither XML nor JSON (nor the route's own media type)",
  "409": "A stale lock-version, or a change the resource's state refuses now",
  "413": `The body is over ${MAX_BODY_BYTES} bytes`,
  "415":
    "The body is not XML or JSON in UTF-8, or a POST or PUT has no Content-Type (one without a body too: send application/json)",
  "422": "The fields break a rule; every problem is listed",
  "429":
    "Too many requests from this client address (sign-ups, failed logins); Retry-After says when to retry",
  "503": "The database is unavailable; try again shortly",
};

const SEARCH_TYPES: Record<string, object> = {
  integer: { type: "integer" },
  text: { type: "string" },
  phone: { type: "string" },
  datetime: { type: "string", description: "ISO 8601 or free-form, read in the user's zone" },
  boolean: { type: "boolean" },
};

/** The Errors document in XML: `<errors>` with repeated `<error>` elements. */
const ERRORS_XML = {
  type: "object",
  xml: { name: "errors" },
  properties: { error: { type: "array", items: { type: "string" }, xml: { wrapped: false } } },
};

/** The OpenAPI document of the API's operations. */
export function openApiDocument(operations: readonly RouteOperation[], version: string): object {
  const components = new Map<TSchema, string>();
  const componentSchemas: Record<string, unknown> = {};
  /** The schema with every titled schema in it moved to components and referred to. */
  const hoist = (schema: unknown): unknown => {
    if (Array.isArray(schema)) return schema.map(hoist);
    if (typeof schema !== "object" || schema === null) return schema;
    const record = schema as Record<string, unknown>;
    const title = record.title;
    if (typeof title === "string") {
      if (!components.has(schema as TSchema)) {
        const name = componentSchemas[title] === undefined ? title : `${title}${components.size}`;
        components.set(schema as TSchema, name);
        componentSchemas[name] = copy(record);
      }
      return { $ref: `#/components/schemas/${components.get(schema as TSchema)}` };
    }
    return copy(record);
  };
  const copy = (record: Record<string, unknown>) => {
    const result: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(record)) result[key] = hoist(value);
    return result;
  };
  const documentContent = (schema: unknown) => ({
    "application/xml": { schema },
    "application/json": { schema },
  });

  const errorsSchema = hoist(Errors);
  const paths: Record<string, Record<string, unknown>> = {};
  const sorted = [...operations].sort((a, b) => a.path.localeCompare(b.path));
  for (const { method, path, operation } of sorted) {
    const openApiPath = path.replace(/:(\w+)/g, "{$1}");
    const parameters: object[] = [...path.matchAll(/:(\w+)/g)].map(([, name]) => ({
      name,
      in: "path",
      required: true,
      schema: name === "token" ? { type: "string" } : { type: "integer", minimum: 0 },
    }));
    if (operation.representation)
      parameters.push({
        name: "representation",
        in: "query",
        required: false,
        description: "basic: the short document; extended (the default): every field",
        schema: { type: "string", enum: ["basic", "extended"] },
      });
    for (const [name, attribute] of Object.entries(operation.search ?? {}))
      parameters.push({
        name,
        in: "query",
        required: false,
        description: `Only those whose ${name} equals it. Also ${name}_ne; ${
          attribute.type === "text" || attribute.type === "phone"
            ? `${name}_contains, _starts_with, _ends_with`
            : attribute.type === "boolean"
              ? "no other operator"
              : `${name}_gt, _lt, _gte, _lte`
        }.`,
        schema: SEARCH_TYPES[attribute.type],
      });

    for (const [name, parameter] of Object.entries(operation.query ?? {}))
      parameters.push({
        name,
        in: "query",
        required: parameter.required ?? false,
        description: parameter.description,
        schema: { type: "string" },
      });

    const responses: Record<string, unknown> = {};
    const status = String(operation.status ?? (operation.answer || operation.media ? 200 : 204));
    if (operation.media !== undefined)
      responses[status] = {
        description: operation.media.description,
        content: { [operation.media.type]: operation.media.schema ? { schema: operation.media.schema } : {} },
      };
    else if (operation.answer !== undefined) {
      const answer = operation.answer;
      const schema =
        "extended" in answer
          ? { anyOf: [hoist(answer.extended), hoist(answer.basic)] }
          : hoist(answer as TSchema);
      responses[status] = {
        description: "OK",
        ...(status === "201" && {
          headers: { Location: { description: "The new resource's path", schema: { type: "string" } } },
        }),
        content: documentContent(schema),
      };
    } else responses[status] = { description: "Done; no body" };
    const credentialless = operation.access === "public" || operation.access === "token";
    for (const code of operation.errors === undefined ? Object.keys(ERROR_STATUSES) : []) {
      if (credentialless && (code === "401" || code === "403")) continue;
      if (!operation.body && code === "413") continue;
      if (!operation.body && !operation.refusesInput && code === "422") continue;
      // Every POST and PUT must say its Content-Type, with a body or not (a cross-site form cannot).
      if (!operation.body && code === "415" && method !== "POST" && method !== "PUT") continue;
      responses[code] = { $ref: `#/components/responses/Error${code}` };
    }
    const own = (media: Media) => ({
      description: media.description,
      content: { [media.type]: media.schema ? { schema: media.schema } : {} },
    });
    if (operation.errors !== undefined) {
      responses["4XX"] = own(operation.errors);
      responses["5XX"] = own(operation.errors);
    }
    for (const [code, media] of Object.entries(operation.otherAnswers ?? {})) responses[code] = own(media);

    paths[openApiPath] ??= {};
    (paths[openApiPath] as Record<string, unknown>)[method.toLowerCase()] = {
      operationId: operationId(method, path),
      summary: operation.summary,
      ...(operation.description && { description: operation.description }),
      tags: [tagOf(path)],
      ...(credentialless && { security: [] }),
      ...(parameters.length > 0 && { parameters }),
      ...(operation.body && {
        requestBody: { required: true, content: documentContent(hoist(operation.body)) },
      }),
      ...(operation.bodyMedia && {
        requestBody: {
          required: true,
          description: operation.bodyMedia.description,
          content: { [operation.bodyMedia.type]: { schema: operation.bodyMedia.schema ?? {} } },
        },
      }),
      responses,
    };
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "Bridgeline API",
      version,
      description: [
        "Users, contacts, conferences, attendees, call records and webhooks.",
        "",
        'Every document is XML (the original service\'s, with Rails conventions: hyphenated names, type attributes, nil="true") or JSON with the same field names and native types (numbers, booleans, ISO 8601 UTC times, null): ask with `Accept: application/json` or a `.json` suffix, send bodies with `Content-Type: application/json`. XML is the default.',
        "",
        "HEAD is answered wherever GET is, with the GET's status and headers and no body.",
        "",
        `Limits: request bodies up to ${MAX_BODY_BYTES} bytes; sign-ups and failed logins are limited per client address (429 with Retry-After).`,
      ].join("\n"),
    },
    servers: [{ url: "/" }],
    security: [{ basic: [] }, { session: [] }],
    tags: [...new Set(sorted.map(({ path }) => tagOf(path)))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        basic: { type: "http", scheme: "basic", description: "The user's e-mail address and password" },
        session: {
          type: "apiKey",
          in: "cookie",
          name: "bridgeline_session",
          description: "The console's session (POST /console/session); changes also need X-CSRF-Token",
        },
      },
      schemas: componentSchemas,
      responses: Object.fromEntries(
        Object.entries(ERROR_STATUSES).map(([code, description]) => [
          `Error${code}`,
          {
            description,
            content: {
              "application/xml": { schema: ERRORS_XML },
              "application/json": { schema: errorsSchema },
            },
          },
        ]),
      ),
    },
  };
}

/** The resource a path is about: its last name that is not a parameter (users/{id}/contacts: contacts). */
function tagOf(path: string): string {
  const names = path.split("/").filter((segment) => segment !== "" && !segment.startsWith(":"));
  if (names[0] === "users" && names.length > 1) return names[1] as string;
  return names[0] as string;
}

/** getUsersConferences, postUsersConferencesAttendeesCall...: the method and the path's names. */
function operationId(method: string, path: string): string {
  const words = path
    .split("/")
    .filter((segment) => segment !== "" && !segment.startsWith(":"))
    .flatMap((segment) => segment.split(/[^A-Za-z0-9]+/));
  const single = path.endsWith("Id") || path.endsWith(":token");
  return [
    method.toLowerCase(),
    ...words.map((word) => word.charAt(0).toUpperCase() + word.slice(1)),
    ...(single ? ["Item"] : []),
  ].join("");
}
