/**
 * The conferences this instance runs: one room each, all mixed on one drift-free 20 ms clock, and
 * each brought in line with the store on every poll (attendees added or deleted through the API, the
 * conference deleted).
 */
import type { Conference } from "../../domain/conference.js";
import type { Store } from "../../store/database.js";
import { MediaClock } from "../media/media-clock.js";
import type { Telephony } from "../telephony.js";
import { ConferenceRoom, type RoomLogger } from "./conference-room.js";

export interface ConferenceRuntimeOptions {
  readonly telephony: Telephony;
  readonly store: Store;
  readonly logger: RoomLogger;
  /** How often rooms re-read their conference and attendees. */
  readonly refreshIntervalMs?: number;
}

const DEFAULT_REFRESH_INTERVAL_MS = 500;

export class ConferenceRuntime {
  readonly #options: ConferenceRuntimeOptions;
  readonly #rooms = new Map<number, ConferenceRoom>();
  readonly #clock: MediaClock;
  readonly #refreshTimer: NodeJS.Timeout;
  #refreshing = false;

  constructor(options: ConferenceRuntimeOptions) {
    this.#options = options;
    this.#clock = new MediaClock({
      onTick: () => {
        for (const room of this.#rooms.values()) room.tick();
      },
    });
    this.#refreshTimer = setInterval(
      () => void this.#refreshAll(),
      options.refreshIntervalMs ?? DEFAULT_REFRESH_INTERVAL_MS,
    );
    this.#refreshTimer.unref();
  }

  /** Rooms in progress. */
  get size(): number {
    return this.#rooms.size;
  }

  /** The clock's tick lateness, for diagnostics and the media benchmark. */
  get clock(): MediaClock {
    return this.#clock;
  }

  /** Runs a conference the scheduler has just started. */
  run(conference: Conference): void {
    if (this.#rooms.has(conference.id)) return;
    const room = new ConferenceRoom(conference, {
      telephony: this.#options.telephony,
      store: this.#options.store,
      logger: this.#options.logger,
      onEnded: (ended) => {
        if (this.#rooms.get(ended.conferenceId) === ended) this.#rooms.delete(ended.conferenceId);
        if (this.#rooms.size === 0) this.#clock.stop();
      },
    });
    this.#rooms.set(conference.id, room);
    this.#clock.start();
    room.start().catch((error: unknown) => {
      this.#options.logger.warn(
        { err: error, conferenceId: conference.id },
        "conference could not start its calls",
      );
    });
  }

  /** Ends every conference this instance runs (graceful shutdown), hanging up its calls. */
  async close(): Promise<void> {
    clearInterval(this.#refreshTimer);
    await Promise.all([...this.#rooms.values()].map((room) => room.close("the service is stopping")));
    this.#clock.stop();
  }

  async #refreshAll(): Promise<void> {
    if (this.#refreshing) return;
    this.#refreshing = true;
    try {
      for (const room of this.#rooms.values()) {
        await room.refresh().catch((error: unknown) => {
          this.#options.logger.warn(
            { err: error, conferenceId: room.conferenceId },
            "conference refresh failed",
          );
        });
      }
    } finally {
      this.#refreshing = false;
    }
  }
}
