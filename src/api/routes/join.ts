/**
 * Joining a conference from a browser: the join page (console/dist/join.html), and its JSON calls.
 * The page posts its SDP offer with the PIN and gets the answer and a token, its secret for its own
 * participant: the state of the room, its event stream, and leaving. Plain requests rather than a
 * WebSocket: the offer is sent once with its ICE candidates gathered (the server is ICE-lite and
 * trickles nothing), and the room's news already has a stream (Server-Sent Events).
 *
 * Errors are JSON `{ "error": "<name>", "message": "<words>" }`: a refusal's name (wrong-pin,
 * locked...) or the API registry's code in kebab case (BL_ERR_TOO_MANY_REQUESTS: too-many-requests),
 * with the registry's status and headers (Retry-After).
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type ConferenceEvent, stillTalking } from "../../domain/event.js";
import { listAttendees } from "../../store/attendees.js";
import { getConference } from "../../store/conferences.js";
import { lastEventId, talkingEvents } from "../../store/events.js";
import type { BrowserJoinRefusal, BrowserJoins, BrowserParticipant } from "../browser-joins.js";
import type { EventFeed } from "../event-feed.js";
import { HttpError } from "../http-errors.js";
import { acceptJsonBodies } from "../json-bodies.js";
import type { Media } from "../openapi.js";
import { byClientAddress, clientSource } from "../rate-limits.js";
import { type ApiContext, boundedMessage, describeError, JSON_TYPE, resource } from "../server.js";
import { CONSOLE_DIST, SECURITY_HEADERS, sendFile } from "./console.js";
import { stream } from "./events.js";

/** How the join page's routes refuse: their own JSON, which the page shows (see the error handler below). */
const JOIN_ERRORS: Media = {
  type: "application/json",
  description: "A refusal: its name (error) and, in words, why (message)",
  schema: {
    type: "object",
    required: ["error", "message"],
    properties: { error: { type: "string" }, message: { type: "string" } },
  },
};

/** A STUN or TURN server as RTCPeerConnection takes it (RTCIceServer). */
export interface IceServer {
  readonly urls: readonly string[];
  readonly username?: string;
  readonly credential?: string;
}

export interface JoinRouteOptions {
  readonly joins: BrowserJoins;
  /** The ICE servers the page is given, asked again for each page (TURN credentials expire). */
  readonly iceServers: () => readonly IceServer[];
  /** Joins (POST /join/calls) one client address may attempt per minute. */
  readonly joinsPerMinute: number;
  readonly feed: EventFeed;
  readonly distDir?: string;
}

/**
 * Each join reads the store and, with a right PIN, sets up a WebRTC peer (DTLS, ICE, a leg on a media
 * thread), so attempts are limited per address beside the wrong-PIN throttle, which is the port's.
 * Per minute rather than the sign-up window: an office behind one address joining a 10 o'clock call
 * comes in a burst, and a minute's limit lets the next burst in soon after.
 */
export const DEFAULT_JOINS_PER_MINUTE = 60;

const JSON_MEDIA = ["application/json"];
const EVENT_STREAM = ["text/event-stream"];
/** The page's own files in console/dist (the console's are under /console/assets). */
const JOIN_ASSETS = new Set(["join.js", "join.css"]);
const PIN = /^\d{1,12}$/;
/**
 * Tokens are the port's; anything else cannot name a participant and is not looked up. (Fastify
 * answers a path parameter over 100 characters 414 before this.)
 */
const TOKEN = /^[A-Za-z0-9_-]{1,100}$/;

/** A refusal of the join routes': its status, name, words and headers. */
class JoinRefused extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = "JoinRefused";
  }
}

/** The answer to each refusal of the port's. */
function refusalAnswer(refusal: BrowserJoinRefusal): JoinRefused {
  switch (refusal.refused) {
    case "wrong-pin":
      return new JoinRefused(
        403,
        refusal.refused,
        "That PIN is not the conference's member or moderator PIN",
      );
    case "too-many-wrong-pins":
      return new JoinRefused(
        429,
        refusal.refused,
        "Too many wrong PINs from this address; try again later",
        retryAfter(refusal.retryAfterSeconds),
      );
    case "service-wrong-pins":
      return new JoinRefused(
        503,
        refusal.refused,
        "The service is taking no PINs for a moment (too many wrong ones); try again shortly",
        retryAfter(refusal.retryAfterSeconds),
      );
    case "not-started":
      return new JoinRefused(409, refusal.refused, "The conference has not started yet");
    case "locked":
      return new JoinRefused(409, refusal.refused, "The conference is locked: the moderator lets no one in");
    case "full":
      return new JoinRefused(409, refusal.refused, "The conference is full");
    case "encrypted-only":
      return new JoinRefused(
        403,
        refusal.refused,
        "The conference takes encrypted calls only: open the join page over HTTPS",
      );
    case "bad-offer":
      return new JoinRefused(400, refusal.refused, `The offer cannot be answered: ${refusal.reason}`);
    case "unavailable":
      return new JoinRefused(
        503,
        refusal.refused,
        "Joining from a browser is not possible right now; try again shortly",
        retryAfter(refusal.retryAfterSeconds),
      );
  }
}

function retryAfter(seconds: number): Record<string, string> {
  return { "retry-after": String(Math.max(1, Math.ceil(seconds))) };
}

/** BL_ERR_TOO_MANY_REQUESTS: too-many-requests. */
function errorName(code: string): string {
  return code
    .replace(/^BL_ERR_/, "")
    .toLowerCase()
    .replaceAll("_", "-");
}

/** The join page's routes, as a plugin of their own: JSON bodies and errors, security headers. */
export function joinRoutes(api: ApiContext, options: JoinRouteOptions) {
  const { joins, feed } = options;
  const distDir = options.distDir ?? CONSOLE_DIST;

  /** The participant the path's token names, or 404. */
  const participantOf = (request: FastifyRequest): { token: string; participant: BrowserParticipant } => {
    const token = (request.params as { token: string }).token;
    const participant = TOKEN.test(token) ? joins.participant(token) : undefined;
    if (participant === undefined)
      throw new JoinRefused(404, "no-such-call", "No call of this page's: it has ended, or never was");
    return { token, participant };
  };

  return async (scope: FastifyInstance) => {
    // JSON only: the API's XML parser is inherited, and an XML body here is a client's mistake (415).
    scope.removeAllContentTypeParsers();
    acceptJsonBodies(scope);
    scope.addHook("onSend", async (_request, reply) => {
      reply.headers(SECURITY_HEADERS);
    });
    scope.setErrorHandler((error, request, reply) => {
      if (error instanceof JoinRefused)
        return reply
          .status(error.status)
          .headers(error.headers)
          .type(JSON_TYPE)
          .send({ error: error.error, message: error.message });
      const { code, status, messages, headers } = describeError(error);
      if (status >= 500) request.log.error({ err: error, code }, "join request failed");
      const message =
        (error as { code?: unknown }).code === "FST_ERR_CTP_INVALID_MEDIA_TYPE"
          ? "The body must be JSON (Content-Type: application/json)"
          : boundedMessage(messages.join(" "));
      return reply
        .status(status)
        .headers(headers)
        .type(JSON_TYPE)
        .send({ error: errorName(code), message });
    });

    resource(
      scope,
      "/join",
      { GET: (request, reply) => sendFile(request, reply, distDir, "join.html") },
      {
        GET: {
          summary: "The join page (HTML) for taking part from a browser",
          access: "public",
          errors: JOIN_ERRORS,
          media: { type: "text/html", description: "The page" },
        },
      },
      {
        produces: ["text/html"],
      },
    );
    scope.get(
      "/join/assets/:file",
      { config: { produces: ["text/javascript", "text/css"] } },
      (request, reply) => {
        const file = (request.params as { file: string }).file;
        if (!JOIN_ASSETS.has(file)) throw new HttpError("BL_ERR_NO_SUCH_FILE");
        return sendFile(request, reply, distDir, file);
      },
    );

    resource(
      scope,
      "/join/ice-servers",
      {
        // TURN credentials are short-lived secrets: kept by no cache.
        GET: async (_request, reply) =>
          reply
            .header("cache-control", "no-store")
            .type(JSON_TYPE)
            .send({ iceServers: options.iceServers() }),
      },
      {
        GET: {
          summary: "The STUN/TURN servers a join page uses",
          access: "public",
          errors: JOIN_ERRORS,
          media: { type: "application/json", description: "RTCIceServer entries" },
        },
      },
      { produces: JSON_MEDIA },
    );

    resource(
      scope,
      "/join/calls",
      {
        POST: async (request, reply) => {
          const { pin, offer } = readJoinBody(request.body);
          // A client gone while the call was set up never gets its token: the call is hung up.
          let clientGone = false;
          const onClose = () => {
            clientGone = !reply.raw.writableFinished;
          };
          reply.raw.on("close", onClose);
          let outcome: Awaited<ReturnType<BrowserJoins["join"]>>;
          try {
            outcome = await joins.join({
              pin,
              offer,
              source: clientSource(request),
              signallingTls: request.protocol === "https",
            });
          } finally {
            reply.raw.off("close", onClose);
          }
          if ("refused" in outcome) throw refusalAnswer(outcome);
          if (clientGone || reply.raw.destroyed) {
            joins.leave(outcome.token);
            request.log.info({ conferenceId: outcome.conferenceId }, "browser left while joining: hung up");
            // nginx's "client closed request", for the logs and metrics: nobody reads it.
            return reply.status(499).send();
          }
          request.log.info(
            { conferenceId: outcome.conferenceId, attendeeId: outcome.attendeeId },
            "browser joined",
          );
          return reply
            .status(201)
            .header("location", `/join/calls/${outcome.token}`)
            .header("cache-control", "no-store")
            .type(JSON_TYPE)
            .send({
              token: outcome.token,
              answer: outcome.answer,
              conferenceId: outcome.conferenceId,
              attendeeId: outcome.attendeeId,
              moderator: outcome.moderator,
            });
        },
      },
      {
        POST: {
          summary:
            "Join a conference from the browser: the PIN and a WebRTC offer; answers the SDP answer and the call's token",
          access: "public",
          errors: JOIN_ERRORS,
          bodyMedia: {
            type: "application/json",
            description: "The conference's member or moderator PIN, and the page's SDP offer",
            schema: {
              type: "object",
              required: ["pin", "offer"],
              properties: {
                pin: { type: "string", pattern: PIN.source },
                offer: {
                  type: "string",
                  description: 'An SDP offer ("v=0..."), its ICE candidates gathered',
                },
              },
            },
          },
          status: 201,
          media: { type: "application/json", description: "The answer and the token" },
        },
      },
      {
        produces: JSON_MEDIA,
        rateLimit: {
          max: options.joinsPerMinute,
          timeWindow: 60_000,
          keyGenerator: byClientAddress("browser-join"),
          // As sign-up's: a body too large or not UTF-8 gets its own answer, and is not counted.
          hook: "preHandler",
        },
      },
    );

    resource(
      scope,
      "/join/calls/:token",
      {
        GET: async (request, reply) => {
          const { participant } = participantOf(request);
          return reply
            .header("cache-control", "no-store")
            .type(JSON_TYPE)
            .send(await roomState(api, participant));
        },
        DELETE: async (request, reply) => {
          const { token } = participantOf(request);
          // Gone between the look-up and now: the call is over either way, as the client wanted.
          joins.leave(token);
          return reply.status(204).send();
        },
      },
      {
        GET: {
          summary: "The room of a browser call (its token): attendees and controls",
          access: "token",
          errors: JOIN_ERRORS,
          media: { type: "application/json", description: "The room" },
        },
        DELETE: { summary: "Hang up a browser call", access: "token", errors: JOIN_ERRORS },
      },
      { produces: JSON_MEDIA },
    );

    resource(
      scope,
      "/join/calls/:token/events",
      {
        GET: async (request, reply) => {
          const { participant } = participantOf(request);
          const { userId, conferenceId, attendeeId } = participant;
          await stream(api, feed, request, reply, { userId, conferenceId, participant: true }, (event) =>
            endsParticipantCall(event, attendeeId),
          );
        },
      },
      {
        GET: {
          summary: "A browser call's conference events (Server-Sent Events)",
          access: "token",
          errors: JOIN_ERRORS,
          media: { type: "text/event-stream", description: "The room's events" },
        },
      },
      { produces: EVENT_STREAM },
    );
  };
}

/** The body `{ "pin": "123456", "offer": "v=0..." }`, or 400 saying what is wrong. */
function readJoinBody(body: unknown): { pin: string; offer: string } {
  const { pin, offer } = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof pin !== "string" || !PIN.test(pin))
    throw new JoinRefused(400, "bad-pin", 'The body\'s "pin" must be a string of 1 to 12 digits');
  // Its size is bounded by the API's body limit (413 past it).
  if (typeof offer !== "string" || !offer.startsWith("v=0"))
    throw new JoinRefused(400, "bad-offer", 'The body\'s "offer" must be an SDP offer ("v=0...")');
  return { pin, offer };
}

/** The participant's own call is over: it was hung up or removed, or the conference ended. */
function endsParticipantCall(event: ConferenceEvent, attendeeId: number): boolean {
  if (event.type === "conference-ended") return true;
  return (
    event.attendeeId === attendeeId &&
    (event.type === "attendee-disconnected" || event.type === "attendee-removed")
  );
}

/**
 * The room as the page first draws it: who is in it (names only: members are not shown each
 * other's numbers), who is muted, has a hand up or talks, and the room's controls.
 */
async function roomState(api: ApiContext, participant: BrowserParticipant) {
  const { userId, conferenceId } = participant;
  const now = new Date();
  const [conference, attendees, upTo] = await Promise.all([
    getConference(api.store, userId, conferenceId),
    listAttendees(api.store, conferenceId, []),
    lastEventId(api.store),
  ]);
  const talking = new Set(
    stillTalking(await talkingEvents(api.store, upTo, { userId, conferenceId }, now)).map(
      (event) => event.attendeeId,
    ),
  );
  return {
    conferenceId,
    conferenceName: conference.name,
    state: conference.state,
    attendeeId: participant.attendeeId,
    moderator: participant.moderator,
    attendees: attendees.map((attendee) => ({
      id: attendee.id,
      name: attendee.name,
      moderator: attendee.moderator,
      state: attendee.state,
      muted: attendee.muted === true,
      handUp: attendee.handUp === true,
      talking: talking.has(attendee.id),
    })),
    controls: {
      dialInLocked: conference.dialInLocked,
      lectureMode: conference.lectureMode,
      recording: conference.recordAudio,
      encryptedOnly: conference.encryptedOnly,
    },
  };
}
