/**
 * One feed of conference events per instance: while anyone is subscribed it reads the events table
 * every 200 ms and hands each new event to the subscribers it concerns (a user's, or one
 * conference's). Nothing here ever makes a room wait: rooms only append rows.
 *
 * PostgreSQL hands out serial ids when a transaction inserts, not when it commits, so an event can
 * become visible after one with a higher id. The feed remembers the ids it skipped over (gaps) for a
 * few seconds and reads them again until they appear or expire (a rolled-back transaction leaves a
 * gap for good).
 */
import type { Logger } from "pino";
import type { ConferenceEvent } from "../domain/event.js";
import type { Store } from "../store/database.js";
import { eventsAfter, lastEventId, pruneEvents } from "../store/events.js";

export interface EventScope {
  readonly userId: number;
  /** Only this conference's events; all of the user's when undefined. */
  readonly conferenceId?: number;
  /**
   * Opened by a browser participant's join page, not by the user: one per call in the user's room,
   * counted against the service's limit only (the user's would shut the owner's console out).
   */
  readonly participant?: boolean;
}

export interface Subscription {
  readonly scope: EventScope;
  /** Takes one event; must not block (write to a socket, or buffer). */
  deliver(event: ConferenceEvent): void;
  /** The feed is closing (service shutdown): end the stream. */
  close(): void;
}

export interface EventFeedOptions {
  /** Open streams in all, on this instance (BRIDGELINE_MAX_EVENT_STREAMS). */
  readonly maxStreams?: number;
  readonly pollIntervalMs?: number;
  /** How long a skipped id is looked for again. */
  readonly gapWindowMs?: number;
  readonly pruneIntervalMs?: number;
}

/** Open streams of one user on one instance: a console tab or two per conference, with room to spare. */
export const MAX_STREAMS_PER_USER = 20;
export const DEFAULT_MAX_STREAMS = 5_000;
const POLL_INTERVAL_MS = 200;
const GAP_WINDOW_MS = 5_000;
const PRUNE_INTERVAL_MS = 60_000;
const BATCH = 500;
/** More skipped ids than this at once is no longer a commit race; they are not tracked. */
const MAX_GAP = 1_000;

/** A subscription refused: its user has MAX_STREAMS_PER_USER open, or the feed has maxStreams. */
export class StreamLimitReached extends Error {
  constructor(
    readonly limit: "user" | "all",
    readonly streams: number,
  ) {
    super(
      limit === "user"
        ? `This user has ${streams} event streams open, the most allowed; close one first`
        : `This service has ${streams} event streams open, the most it takes; try again later`,
    );
    this.name = "StreamLimitReached";
  }
}

export class EventFeed {
  readonly #store: Store;
  readonly #logger: Logger;
  readonly #pollIntervalMs: number;
  readonly #gapWindowMs: number;
  readonly #maxStreams: number;
  readonly #subscriptions = new Set<Subscription>();
  readonly #streamsByUser = new Map<number, number>();
  /** Skipped ids below the high-water mark, with when they were first missed. */
  readonly #gaps = new Map<number, number>();
  readonly #pruneTimer: NodeJS.Timeout;
  #highWater = 0;
  #timer: NodeJS.Timeout | undefined;
  #starting: Promise<void> | undefined;
  #polling = false;
  #closed = false;

  constructor(store: Store, logger: Logger, options: EventFeedOptions = {}) {
    this.#store = store;
    this.#logger = logger;
    this.#maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
    this.#pollIntervalMs = options.pollIntervalMs ?? POLL_INTERVAL_MS;
    this.#gapWindowMs = options.gapWindowMs ?? GAP_WINDOW_MS;
    this.#pruneTimer = setInterval(() => {
      pruneEvents(store, new Date()).catch((error: unknown) => {
        logger.warn({ err: error }, "old events could not be pruned");
      });
    }, options.pruneIntervalMs ?? PRUNE_INTERVAL_MS);
    this.#pruneTimer.unref();
  }

  /**
   * Starts delivering the events committed from now on; resolves once the feed knows where "now" is,
   * so that a replay read after it overlaps what is delivered rather than leaving a hole. Throws
   * StreamLimitReached when the user, or the feed, has as many streams open as allowed.
   */
  async subscribe(subscription: Subscription): Promise<() => void> {
    if (this.#closed) throw new Error("the event feed is closed");
    const { userId, participant = false } = subscription.scope;
    const userStreams = this.#streamsByUser.get(userId) ?? 0;
    if (!participant && userStreams >= MAX_STREAMS_PER_USER)
      throw new StreamLimitReached("user", userStreams);
    if (this.#subscriptions.size >= this.#maxStreams)
      throw new StreamLimitReached("all", this.#subscriptions.size);
    this.#subscriptions.add(subscription);
    if (!participant) this.#streamsByUser.set(userId, userStreams + 1);
    const unsubscribe = () => {
      if (!this.#subscriptions.delete(subscription)) return;
      if (!participant) {
        const left = (this.#streamsByUser.get(userId) ?? 1) - 1;
        if (left === 0) this.#streamsByUser.delete(userId);
        else this.#streamsByUser.set(userId, left);
      }
      if (this.#subscriptions.size === 0) this.#stop();
    };
    try {
      this.#starting ??= this.#start();
      await this.#starting;
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  /** Open event streams. */
  get subscribers(): number {
    return this.#subscriptions.size;
  }

  /** Ends every stream (service shutdown). */
  close(): void {
    this.#closed = true;
    clearInterval(this.#pruneTimer);
    for (const subscription of [...this.#subscriptions]) subscription.close();
    this.#subscriptions.clear();
    this.#streamsByUser.clear();
    this.#stop();
  }

  async #start(): Promise<void> {
    try {
      this.#highWater = await lastEventId(this.#store);
    } catch (error) {
      this.#starting = undefined;
      throw error;
    }
    this.#gaps.clear();
    if (this.#subscriptions.size === 0 || this.#closed) {
      this.#starting = undefined;
      return;
    }
    this.#timer = setInterval(() => void this.#poll(), this.#pollIntervalMs);
    this.#timer.unref();
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#starting = undefined;
  }

  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const now = Date.now();
      for (const [id, missedAt] of this.#gaps) if (now - missedAt > this.#gapWindowMs) this.#gaps.delete(id);
      const events = await eventsAfter(this.#store, this.#highWater, {}, BATCH, [...this.#gaps.keys()]);
      for (const event of events) {
        if (this.#gaps.delete(event.id)) {
          this.#fanOut(event);
          continue;
        }
        if (event.id <= this.#highWater) continue;
        if (event.id - this.#highWater <= MAX_GAP)
          for (let id = this.#highWater + 1; id < event.id; id++) this.#gaps.set(id, now);
        this.#highWater = event.id;
        this.#fanOut(event);
      }
    } catch (error) {
      this.#logger.warn({ err: error }, "events could not be read");
    } finally {
      this.#polling = false;
    }
  }

  #fanOut(event: ConferenceEvent): void {
    for (const subscription of this.#subscriptions) {
      const { userId, conferenceId } = subscription.scope;
      if (userId === event.userId && (conferenceId === undefined || conferenceId === event.conferenceId))
        subscription.deliver(event);
    }
  }
}
