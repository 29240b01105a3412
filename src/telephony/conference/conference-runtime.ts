/**
 * The conferences this instance runs: one room each, all mixed on one drift-free 20 ms clock, and
 * each brought in line with the store on every poll (attendees added or deleted through the API, the
 * conference deleted).
 */
import type { Conference } from "../../domain/conference.js";
import { normalizeNanpNumber } from "../../domain/phone.js";
import type { Store } from "../../store/database.js";
import { MediaClock } from "../media/media-clock.js";
import type { Telephony } from "../telephony.js";
import type { CallMenu } from "./call-menu.js";
import { ConferenceRoom, type RoomLogger } from "./conference-room.js";
import { answerDialIn } from "./dial-in.js";

export interface ConferenceRuntimeOptions {
  readonly telephony: Telephony;
  readonly store: Store;
  readonly logger: RoomLogger;
  /** Recordings go to `<dataDir>/recordings/`. */
  readonly dataDir: string;
  /** The numbers callers dial in on (E.164); calls to other numbers are refused 404. */
  readonly accessNumbers: readonly string[];
  /** How often rooms re-read their conference and attendees. */
  readonly refreshIntervalMs?: number;
}

const DEFAULT_REFRESH_INTERVAL_MS = 500;

export class ConferenceRuntime {
  readonly #options: ConferenceRuntimeOptions;
  readonly #rooms = new Map<number, ConferenceRoom>();
  readonly #clock: MediaClock;
  readonly #refreshTimer: NodeJS.Timeout;
  /** Dial-in callers in the PIN menu, ticked with the rooms. */
  readonly #menus = new Set<CallMenu>();
  /** The access numbers' 10-digit national numbers. */
  readonly #accessNumbers: Set<string>;
  #refreshing = false;

  constructor(options: ConferenceRuntimeOptions) {
    this.#options = options;
    this.#clock = new MediaClock({
      onTick: () => {
        for (const room of this.#rooms.values()) room.tick();
        for (const menu of this.#menus) menu.tick();
      },
    });
    this.#accessNumbers = new Set(
      options.accessNumbers.map((number) => normalizeNanpNumber(number)?.subscriberNumber ?? number),
    );
    options.telephony.onIncomingCall((call) => {
      // The Request-URI user names the number dialled, with or without +1.
      if (!this.#accessNumbers.has(normalizeNanpNumber(call.to)?.subscriberNumber ?? call.to)) {
        call.reject(404, "Not Found");
        return;
      }
      call.ring();
      this.#clock.start();
      answerDialIn(call, {
        store: options.store,
        logger: options.logger,
        roomOf: (conferenceId) => this.#rooms.get(conferenceId),
        register: (menu) => {
          this.#menus.add(menu);
          return () => this.#menus.delete(menu);
        },
      }).catch((error: unknown) => {
        options.logger.warn({ err: error, from: call.from }, "dial-in failed");
        call.hangup();
      });
    });
    this.#refreshTimer = setInterval(
      () => void this.#refreshAll(),
      options.refreshIntervalMs ?? DEFAULT_REFRESH_INTERVAL_MS,
    );
    this.#refreshTimer.unref();
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
      dataDir: this.#options.dataDir,
      onEnded: (ended) => {
        if (this.#rooms.get(ended.conferenceId) === ended) this.#rooms.delete(ended.conferenceId);
        if (this.#rooms.size === 0 && this.#menus.size === 0) this.#clock.stop();
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
