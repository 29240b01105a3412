/**
 * Server-Sent Events: a user's conference events as they happen, for one conference or all of them.
 * A client that reconnects with Last-Event-ID is first sent every stored event after that id. A
 * client that does not keep up (its socket buffer over a limit) is dropped; it reconnects and
 * catches up, and nothing upstream ever waits for it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type ConferenceEvent, eventData, stillTalking } from "../../domain/event.js";
import { getConference } from "../../store/conferences.js";
import { eventsAfter, lastEventId, talkingEvents } from "../../store/events.js";
import { type EventFeed, type EventScope, StreamLimitReached, type Subscription } from "../event-feed.js";
import { HttpError } from "../http-errors.js";
import { type ApiContext, idParam, resource } from "../server.js";

const EVENT_STREAM = "text/event-stream";
const KEEP_ALIVE_MS = 15_000;
/** Bytes waiting in a client's socket buffer before it counts as not keeping up. */
const MAX_BUFFERED_BYTES = 256 * 1024;
const REPLAY_BATCH = 500;
/**
 * Live events held while a reconnecting stream's replay is read; past it the stream is dropped, and
 * the client reconnects with Last-Event-ID and is replayed what it missed.
 */
export const MAX_HELD_EVENTS = 1_000;
/** What a refusal for the service's stream limit suggests as the wait. */
const STREAMS_RETRY_AFTER_SECONDS = 30;
/** How soon a browser reconnects after the stream drops. */
const RETRY_MS = 1_000;

export async function eventRoutes(
  app: FastifyInstance,
  { feed, ...api }: ApiContext & { feed: EventFeed },
): Promise<void> {
  resource(
    app,
    "/users/:userId/events",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        await stream(api, feed, request, reply, { userId });
      },
    },
    {
      GET: {
        summary: "The user's events as they happen (Server-Sent Events; Last-Event-ID resumes)",
        media: {
          type: "text/event-stream",
          description: "An event stream: each event's id, type and JSON data",
        },
      },
    },
    { produces: [EVENT_STREAM] },
  );
  resource(
    app,
    "/users/:userId/conferences/:conferenceId/events",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        const conference = await getConference(api.store, userId, idParam(request, "conferenceId"));
        await stream(api, feed, request, reply, { userId, conferenceId: conference.id });
      },
    },
    {
      GET: {
        summary: "A conference's events as they happen (Server-Sent Events)",
        media: {
          type: "text/event-stream",
          description: "An event stream: each event's id, type and JSON data",
        },
      },
    },
    { produces: [EVENT_STREAM] },
  );
}

/** The feed's subscription, its limits answered 429 (the user's) or 503 (the service's). */
async function subscribe(feed: EventFeed, subscription: Subscription): Promise<() => void> {
  try {
    return await feed.subscribe(subscription);
  } catch (error) {
    if (!(error instanceof StreamLimitReached)) throw error;
    if (error.limit === "user") throw new HttpError("BL_ERR_TOO_MANY_REQUESTS", error.message);
    throw new HttpError("BL_ERR_SERVICE_BUSY", error.message, {
      "retry-after": String(STREAMS_RETRY_AFTER_SECONDS),
    });
  }
}

/** Last-Event-ID as the browser's EventSource sends it on reconnection; undefined when absent or bad. */
function lastEventIdOf(request: FastifyRequest): number | undefined {
  const value = request.headers["last-event-id"];
  return typeof value === "string" && /^\d{1,15}$/.test(value.trim()) ? Number(value) : undefined;
}

/**
 * Streams the events of `scope` on `reply` until the client leaves, the feed closes or `endsAfter`
 * says so: for the events routes here, and for the join page's participant (routes/join.ts).
 */
export async function stream(
  api: ApiContext,
  feed: EventFeed,
  request: FastifyRequest,
  reply: FastifyReply,
  scope: EventScope,
  /** The event after which the stream ends (a participant's own call ending); none by default. */
  endsAfter: (event: ConferenceEvent) => boolean = () => false,
): Promise<void> {
  const response = reply.raw;
  /** Events up to this id are the client's already (or, on a first connection, from before it). */
  let after = lastEventIdOf(request) ?? Number.POSITIVE_INFINITY;
  let replaying = true;
  /** Live events that came while the replay was read, and the replayed ids the feed may bring again. */
  const held: ConferenceEvent[] = [];
  const replayed = new Set<number>();
  let closed = false;
  let unsubscribe = () => {};
  let keepAlive: NodeJS.Timeout | undefined;
  const end = (how: "end" | "destroy" = "end") => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    unsubscribe();
    response[how]();
  };
  const write = (chunk: string) => {
    if (closed) return;
    if (response.writableLength > MAX_BUFFERED_BYTES) {
      request.log.info({ scope }, "events client too slow: dropped");
      // Not a graceful end, which would wait for the client to read what is buffered.
      end("destroy");
      return;
    }
    response.write(chunk);
  };
  const send = (event: ConferenceEvent) => {
    write(`id: ${event.id}\nevent: ${event.type}\ndata: ${eventData(event)}\n\n`);
    if (endsAfter(event)) end();
  };

  unsubscribe = await subscribe(feed, {
    scope,
    deliver: (event) => {
      if (!replaying) {
        if (event.id > after && !replayed.has(event.id)) send(event);
      } else if (held.length < MAX_HELD_EVENTS) held.push(event);
      else {
        request.log.info({ scope }, "events client fell behind during its replay: dropped");
        end("destroy");
      }
    },
    close: () => end(),
  });
  reply.hijack();
  response.writeHead(200, {
    "content-type": `${EVENT_STREAM}; charset=utf-8`,
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
  });
  response.on("close", () => end());
  // A client that left while we authenticated and subscribed fired "close" before we listened.
  if (request.raw.destroyed || response.destroyed) {
    end();
    return;
  }
  write(`retry: ${RETRY_MS}\n: connected\n\n`);
  keepAlive = setInterval(() => write(": keep-alive\n\n"), KEEP_ALIVE_MS);
  keepAlive.unref();
  try {
    // The feed may not have read the latest events yet: a first connection starts after them, knowing
    // who is talking. Those are sent without ids, then the id the client stands at, so that a
    // reconnection resumes from now rather than replaying the past.
    if (after === Number.POSITIVE_INFINITY) {
      after = await lastEventId(api.store);
      const talking = stillTalking(await talkingEvents(api.store, after, scope, new Date()));
      for (const event of talking) write(`event: ${event.type}\ndata: ${eventData(event)}\n\n`);
      write(`id: ${after}\n\n`);
    }
    let cursor = after;
    for (;;) {
      const batch = await eventsAfter(api.store, cursor, scope, REPLAY_BATCH);
      for (const event of batch) {
        send(event);
        replayed.add(event.id);
        cursor = event.id;
      }
      if (batch.length < REPLAY_BATCH || closed) break;
    }
    replaying = false;
    for (const event of held) if (event.id > after && !replayed.has(event.id)) send(event);
    held.length = 0;
  } catch (error) {
    request.log.warn({ err: error }, "events could not be replayed");
    end();
  }
}
