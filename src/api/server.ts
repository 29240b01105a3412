import fastifyCookie from "@fastify/cookie";
import fastifyRateLimit, { type RateLimitOptions } from "@fastify/rate-limit";
import type { TSchema } from "@sinclair/typebox";
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerFactory,
  type HTTPMethods,
} from "fastify";
import type { Logger } from "pino";
import { BadRequest, DomainError, Forbidden, NotFound } from "../domain/errors.js";
import { FieldReader, type InputMap } from "../domain/input.js";
import { type CallingPolicy, OPEN_CALLING_POLICY } from "../domain/phone.js";
import { attemptCounts } from "../store/attempt-counts.js";
import { type Store, unreachableReason } from "../store/database.js";
import { userExists } from "../store/users.js";
import type { DestinationPolicy } from "../webhooks/destination.js";
import { Authenticator } from "./authentication.js";
import type { BrowserJoins } from "./browser-joins.js";
import type { DocumentType } from "./documents.js";
import { readJsonInput } from "./documents.js";
import { EventFeed } from "./event-feed.js";
import { answerFor, type ErrorAnswer, fastifyClientError, HttpError, MAX_BODY_BYTES } from "./http-errors.js";
import { acceptJsonBodies } from "./json-bodies.js";
import type { Operation, RouteOperation } from "./openapi.js";
import { PASSWORD_COST } from "./passwords.js";
import { byClientAddress, sharedRateLimits } from "./rate-limits.js";
import type { Representation } from "./representations.js";
import { refuseNonXmlCharacters } from "./request-text.js";
import { accessNumberRoutes } from "./routes/access-numbers.js";
import { attendeeRoutes } from "./routes/attendees.js";
import { billingPackageRoutes } from "./routes/billing-packages.js";
import { callRoutes } from "./routes/calls.js";
import { conferenceRoutes } from "./routes/conferences.js";
import { consoleRoutes } from "./routes/console.js";
import { contactRoutes } from "./routes/contacts.js";
import { docsRoutes } from "./routes/docs.js";
import { eventRoutes } from "./routes/events.js";
import { healthRoutes, type ReadinessChecks } from "./routes/health.js";
import { DEFAULT_JOINS_PER_MINUTE, type IceServer, joinRoutes } from "./routes/join.js";
import { liveControlRoutes } from "./routes/live-control.js";
import { openApiRoutes } from "./routes/openapi.js";
import { recordingRoutes } from "./routes/recordings.js";
import { startTimeRoutes } from "./routes/start-time.js";
import { userRoutes } from "./routes/users.js";
import { webhookRoutes } from "./routes/webhooks.js";
import { errorsDocument, parseDocument, readXmlBody } from "./xml.js";

const XML_TYPE = "application/xml; charset=utf-8";
export const JSON_TYPE = "application/json; charset=utf-8";
const METHODS: HTTPMethods[] = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

export interface ApiOptions {
  store: Store;
  logger: Logger;
  failedLoginLimit: number;
  signupLimit: number;
  throttleWindowSeconds: number;
  trustedProxies: string | null;
  /** The data directory: recordings are served from its recordings/ folder. */
  dataDir: string;
  /** The numbers callers dial in on, E.164. */
  accessNumbers: readonly string[];
  /** Which numbers attendees may have (toll fraud); default: the fixed rules alone. */
  callingPolicy?: CallingPolicy;
  /** Creates the listening server(s) around Fastify's handler: HTTPS, and plain HTTP when enabled. */
  serverFactory?: FastifyServerFactory;
  /** What /health/ready checks (the database, the SIP sockets, the media threads...). */
  readiness?: ReadinessChecks;
  /** Where webhooks may lead (server-side request forgery); default: no private, loopback or link-local address. */
  webhookDestinations?: DestinationPolicy;
  /** The event streams' feed, when the caller keeps one (to count its streams); else one of its own. */
  eventFeed?: EventFeed;
  /** Told of every answered request: its route pattern (e.g. `/users/:userId`), method, status, seconds. */
  onRequestDone?: (route: string, method: string, status: number, seconds: number) => void;
  /** scrypt's cost for new password hashes; default PASSWORD_COST (only tests lower it). */
  passwordCost?: number;
  /**
   * Joining conferences from a browser (the join page at /join and its calls). Absent (the API
   * alone, without conferences to join), the service has no /join: a page that could only fail
   * would tell the person who opened it less than a 404.
   */
  browserJoins?: BrowserJoins;
  /** The STUN/TURN servers the join page is given, asked for each page; default none. */
  iceServers?: () => readonly IceServer[];
  /** Joins from the browser one client address may attempt per minute; default DEFAULT_JOINS_PER_MINUTE. */
  browserJoinsPerMinute?: number;
}

/** What every route plugin is registered with (its options). */
export interface ApiContext {
  store: Store;
  dataDir: string;
  accessNumbers: readonly string[];
  callingPolicy: CallingPolicy;
  /** scrypt's cost for new password hashes. */
  passwordCost: number;
  /** The sign-up limit per client address, for the sign-up route (ResourceOptions.rateLimit). */
  signupLimit: RateLimitOptions;
  /** The authenticated user, who must own the /users/{user_id} tree named by the path. */
  owner(request: FastifyRequest): Promise<number>;
  authenticated(request: FastifyRequest): Promise<number>;
}

export interface ResourceOptions {
  /** The media types the resource's methods answer with, when not XML; Accept must admit one. */
  produces?: readonly string[];
  /** A limit on the resource's methods' requests (@fastify/rate-limit, counted across instances). */
  rateLimit?: RateLimitOptions;
}

/** The representation a request is answered in: XML (the original API's) or JSON. */
export type Format = "xml" | "json";

declare module "fastify" {
  interface FastifyContextConfig {
    produces?: readonly string[];
    /** What the route does, for /openapi.json (resource()). */
    operation?: Operation;
  }
  interface FastifyRequest {
    format: Format;
  }
}

/** The format a request's path asked for with a .xml or .json suffix (taken off), over Accept. */
const suffixFormats = new WeakMap<object, Format>();
/** A .xml or .json suffix at the end of a path (not in its query). */
const FORMAT_SUFFIX = /^([^?]*?)\.(xml|json)(?=\?|$)/;

export type RouteHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export async function buildApi(options: ApiOptions) {
  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: MAX_BODY_BYTES,
    routerOptions: { ignoreTrailingSlash: true },
    // Rails clients of the original service add .xml to every path; .json asks for JSON the same way.
    // (/openapi.json is a file's name, not a suffix.)
    rewriteUrl: (request) => {
      const url = request.url ?? "/";
      const suffixed = FORMAT_SUFFIX.exec(url);
      if (suffixed === null || suffixed[1] === "/openapi") return url;
      suffixFormats.set(request, suffixed[2] as Format);
      return `${suffixed[1]}${url.slice(suffixed[0].length)}`;
    },
    // Behind a load balancer the client address (for throttling) comes from X-Forwarded-For.
    trustProxy: options.trustedProxies ?? false,
    ...(options.serverFactory && { serverFactory: options.serverFactory }),
  });
  const windowMs = options.throttleWindowSeconds * 1000;
  const passwordCost = options.passwordCost ?? PASSWORD_COST;
  // Before the routes: the plugin adds its hooks to the routes as they are declared.
  const counts = attemptCounts(options.store);
  await app.register(fastifyRateLimit, sharedRateLimits(counts));
  const failedLoginKey = byClientAddress("failed-login");
  const authenticator = new Authenticator(
    options.store,
    {
      limiter: app.createRateLimit({
        max: options.failedLoginLimit,
        timeWindow: windowMs,
        keyGenerator: failedLoginKey,
      }),
      giveBack: (request) => counts.uncount(failedLoginKey(request)),
    },
    passwordCost,
  );
  const feed = options.eventFeed ?? new EventFeed(options.store, options.logger);
  // Open event streams would hold the server open.
  app.addHook("preClose", async () => feed.close());
  void app.register(fastifyCookie);

  // Every route's operation, as the route plugins declare them, for /openapi.json. Not the HEAD
  // routes Fastify adds beside each GET: HEAD is GET without the body (RFC 9110 section 9.3.2), not
  // an operation of its own (the document said the GET's body came back).
  const operations: RouteOperation[] = [];
  app.addHook("onRoute", (route) => {
    const operation = route.config?.operation;
    if (operation !== undefined && typeof route.method === "string" && route.method !== "HEAD")
      operations.push({ method: route.method, path: route.url, operation });
  });
  app.decorateRequest("format", "xml");
  app.removeAllContentTypeParsers();
  acceptJsonBodies(app);
  app.addContentTypeParser(["application/xml", "text/xml"], { parseAs: "buffer" }, (request, body, done) => {
    try {
      done(null, readXmlBody(body as Buffer, request.headers["content-type"]));
    } catch (error) {
      done(error as Error);
    }
  });

  app.addHook("onRequest", async (request) => {
    const produces = request.routeOptions.config.produces;
    const format = suffixFormats.get(request.raw) ?? preferredFormat(request.headers.accept);
    if (produces) {
      // Its errors are documents still: in JSON when the client prefers it to XML.
      request.format = format ?? "xml";
      if (!accepts(request.headers.accept, produces))
        throw new HttpError("BL_ERR_NOT_ACCEPTABLE", `This resource answers only ${produces.join(", ")}`);
    } else {
      if (format === undefined) throw new HttpError("BL_ERR_NOT_ACCEPTABLE");
      request.format = format;
    }
    // Also for POSTs without a body: a cross-site form or no-cors fetch cannot send this type
    // without a CORS preflight, which this API never grants.
    if ((request.method === "POST" || request.method === "PUT") && !request.headers["content-type"]) {
      throw new HttpError(
        "BL_ERR_UNSUPPORTED_MEDIA_TYPE",
        "POST and PUT bodies must be sent as Content-Type: application/xml or application/json",
      );
    }
    // Search values reach the database (PostgreSQL refuses U+0000 with a 500) and errors quote them.
    for (const [name, value] of Object.entries(request.query as Record<string, string | string[]>)) {
      refuseNonXmlCharacters(name, "A query parameter's name");
      for (const text of typeof value === "string" ? [value] : value)
        refuseNonXmlCharacters(text, `The query parameter ${name.slice(0, 40)}`);
    }
  });

  const onRequestDone = options.onRequestDone;
  if (onRequestDone !== undefined)
    app.addHook("onResponse", async (request, reply) => {
      // Unmatched paths share one label, so that scanners cannot grow the label set.
      const route = request.routeOptions.url ?? "unmatched";
      onRequestDone(route, request.method, reply.statusCode, reply.elapsedTime / 1000);
    });

  app.setErrorHandler((error, request, reply) => {
    const { code, status, messages, headers } = describeError(error);
    if (status >= 500) request.log.error({ err: error, code }, "request failed");
    reply.status(status).headers(headers);
    return sendErrors(reply, messages);
  });
  app.setNotFoundHandler(async (request) => {
    throw new HttpError("BL_ERR_NO_ROUTE", `no resource at ${request.method} ${request.url.split("?")[0]}`);
  });

  const authenticated = (request: FastifyRequest) => authenticator.authenticateRequest(request);
  const context: ApiContext = {
    store: options.store,
    dataDir: options.dataDir,
    accessNumbers: options.accessNumbers,
    callingPolicy: options.callingPolicy ?? OPEN_CALLING_POLICY,
    passwordCost,
    signupLimit: {
      max: options.signupLimit,
      timeWindow: windowMs,
      keyGenerator: byClientAddress("sign-up"),
      // Counted once the body is read: a body too large or not UTF-8 gets its own answer (413, 415,
      // 400), not 429, and is not counted.
      hook: "preHandler",
    },
    authenticated,
    async owner(request) {
      const userId = await authenticated(request);
      const pathUserId = idParam(request, "userId");
      if (pathUserId !== userId) {
        if (await userExists(options.store, pathUserId)) throw new Forbidden();
        throw new NotFound("user");
      }
      return userId;
    },
  };

  // One plugin per resource (routes/), each given the context as its options.
  void app.register(billingPackageRoutes, context);
  void app.register(accessNumberRoutes, context);
  void app.register(userRoutes, context);
  void app.register(contactRoutes, context);
  void app.register(conferenceRoutes, context);
  void app.register(startTimeRoutes, context);
  void app.register(attendeeRoutes, context);
  void app.register(recordingRoutes, context);
  void app.register(callRoutes, context);
  void app.register(liveControlRoutes, context);
  void app.register(eventRoutes, { ...context, feed });
  void app.register(webhookRoutes, {
    ...context,
    destinations: options.webhookDestinations ?? { allowPrivate: false },
  });
  void app.register(healthRoutes, { checks: options.readiness ?? {} });
  void app.register(openApiRoutes, { operations });
  void app.register(docsRoutes);
  void app.register(consoleRoutes(context, authenticator));
  if (options.browserJoins !== undefined)
    void app.register(
      joinRoutes(context, {
        joins: options.browserJoins,
        iceServers: options.iceServers ?? (() => []),
        joinsPerMinute: options.browserJoinsPerMinute ?? DEFAULT_JOINS_PER_MINUTE,
        feed,
      }),
    );
  return app;
}

/**
 * Declares a resource in a route plugin: its methods' handlers and what each does (for
 * /openapi.json), and 405 with Allow for the methods it does not have.
 */
export function resource<Method extends HTTPMethods>(
  app: FastifyInstance,
  path: string,
  handlers: Record<Method, RouteHandler>,
  operations: Record<Method, Operation>,
  options: ResourceOptions = {},
): void {
  const allowed = Object.keys(handlers) as HTTPMethods[];
  const config = { produces: options.produces, rateLimit: options.rateLimit };
  for (const method of allowed) {
    app.route({
      method,
      url: path,
      handler: handlers[method as Method],
      config: { ...config, operation: operations[method as Method] },
    });
  }
  const allow = [...allowed, ...(allowed.includes("GET") ? ["HEAD"] : [])].join(", ");
  const others = METHODS.filter((method) => !allowed.includes(method));
  app.route({
    method: others,
    url: path,
    handler: async () => {
      throw new HttpError("BL_ERR_METHOD_NOT_ALLOWED", `${path.replace(/:(\w+)/g, "{$1}")} allows ${allow}`, {
        allow,
      });
    },
  });
}

/** True when the Accept header admits one of `mediaTypes` (absent, a wildcard, or the type itself). */
function accepts(accept: string | undefined, mediaTypes: readonly string[]): boolean {
  if (!accept) return true;
  return accept.split(",").some((range) => {
    const [type = "", ...params] = range.trim().toLowerCase().split(";");
    const refused = params.some((param) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(param));
    const wanted = type.trim();
    return (
      !refused &&
      mediaTypes.some(
        (mediaType) => wanted === "*/*" || wanted === mediaType || wanted === `${mediaType.split("/")[0]}/*`,
      )
    );
  });
}

/**
 * XML or JSON, by the Accept header's quality values (RFC 9110 section 12.5.1: the most specific
 * range naming a type gives its q); XML, the original API's, when they tie or Accept is absent.
 * Undefined when neither is acceptable.
 */
function preferredFormat(accept: string | undefined): Format | undefined {
  if (!accept) return "xml";
  const xml = Math.max(qualityOf(accept, "application/xml"), qualityOf(accept, "text/xml"));
  const json = qualityOf(accept, "application/json");
  if (xml === 0 && json === 0) return undefined;
  return json > xml ? "json" : "xml";
}

function qualityOf(accept: string, mediaType: string): number {
  const group = `${mediaType.split("/")[0]}/*`;
  let quality = 0;
  let specificity = 0;
  for (const range of accept.split(",")) {
    const [type = "", ...params] = range.trim().toLowerCase().split(";");
    const wanted = type.trim();
    const rank = wanted === mediaType ? 3 : wanted === group ? 2 : wanted === "*/*" ? 1 : 0;
    if (rank <= specificity) continue;
    const q = params.find((param) => /^\s*q\s*=/.test(param));
    // qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ): a range with another is ignored.
    const value = q === undefined ? "1" : /^\s*q\s*=\s*(0(?:\.\d{0,3})?|1(?:\.0{0,3})?)\s*$/.exec(q)?.[1];
    if (value === undefined) continue;
    specificity = rank;
    quality = Number(value);
  }
  return quality;
}

/** The answer to anything thrown: by its code's entry in the registry, else 500 without detail. */
export function describeError(error: unknown): ErrorAnswer {
  if (error instanceof DomainError) return answerFor(error.code, error.messages);
  if (error instanceof HttpError) return answerFor(error.code, [error.message], error.headers);
  const fastify = fastifyClientError(error);
  if (fastify !== undefined) return fastify;
  const unreachable = unreachableReason(error);
  if (unreachable !== undefined)
    return answerFor("BL_ERR_DATABASE_UNAVAILABLE", [
      `The database is unavailable (${unreachable}); try again shortly`,
    ]);
  return answerFor("BL_ERR_INTERNAL");
}

/**
 * An error message's most characters: messages quote the input (a value, a URL, the tags a parser
 * found unclosed), and an error must not be an amplifier of what was sent (30 KB in, 80 KB out).
 * The longest message written here, the list of webhook event types, is some 400.
 */
export const MAX_ERROR_MESSAGE_LENGTH = 1_000;

export function boundedMessage(message: string): string {
  if (message.length <= MAX_ERROR_MESSAGE_LENGTH) return message;
  // Not cut between the two halves of a surrogate pair.
  const end = /[\uD800-\uDBFF]/.test(message[MAX_ERROR_MESSAGE_LENGTH - 1] as string)
    ? MAX_ERROR_MESSAGE_LENGTH - 1
    : MAX_ERROR_MESSAGE_LENGTH;
  return `${message.slice(0, end)}… (${message.length - end} more characters)`;
}

function sendErrors(reply: FastifyReply, messages: readonly string[]): FastifyReply {
  const bounded = messages.map(boundedMessage);
  reply.header("vary", "accept");
  if (reply.request.format === "json") return reply.type(JSON_TYPE).send(JSON.stringify({ errors: bounded }));
  return reply.type(XML_TYPE).send(errorsDocument(bounded));
}

/** Answers with a document, in the representation the request asked for. */
export function sendDocument<T>(
  reply: FastifyReply,
  status: number,
  type: DocumentType<T>,
  value: T,
): FastifyReply {
  // The same path answers XML or JSON by Accept: caches must keep them apart.
  reply.status(status).header("vary", "accept");
  if (reply.request.format === "json") return reply.type(JSON_TYPE).send(type.json(value));
  return reply.type(XML_TYPE).send(type.xml(value));
}

export function sendCreated<T>(
  reply: FastifyReply,
  location: string,
  type: DocumentType<T>,
  value: T,
): FastifyReply {
  reply.header("location", location);
  return sendDocument(reply, 201, type, value);
}

/**
 * The request body, XML or JSON by its Content-Type, as the domain reads it; `schema` is the
 * resource's write schema (its root element's name and, for JSON, the fields' types).
 */
export function readBody(request: FastifyRequest, schema: TSchema): InputMap {
  const root = (schema.xml as { name: string }).name;
  const body = request.body;
  if (/^application\/json\s*(;|$)/i.test(request.headers["content-type"] ?? ""))
    return readJsonInput(body, schema, root);
  if (typeof body !== "string" || body.trim() === "")
    throw new BadRequest([`a <${root}> document is required`]);
  return parseDocument(body, root);
}

/** lock-version, when the client sent it, for optimistic locking. */
export function readLockVersion(input: InputMap): number | undefined {
  const reader = new FieldReader(input);
  const version = reader.integer("lock-version");
  reader.check();
  return version ?? undefined;
}

export function idParam(request: FastifyRequest, name: string): number {
  const raw = (request.params as Record<string, string>)[name] ?? "";
  if (!/^\d{1,9}$/.test(raw)) throw new NotFound(name.replace(/Id$/, ""));
  return Number(raw);
}

export function representationOf(request: FastifyRequest): Representation {
  const value = (request.query as Record<string, unknown>).representation;
  if (value === undefined || value === "extended") return "extended";
  if (value === "basic") return "basic";
  throw new BadRequest([`representation must be basic or extended, not "${String(value)}"`]);
}

export function searchQuery(request: FastifyRequest): Record<string, string | string[] | undefined> {
  return request.query as Record<string, string | string[] | undefined>;
}
