/**
 * The conferences this instance runs: one room each, brought in line with the store on every poll
 * (attendees added or deleted through the API, the conference deleted), and the callers who dial an
 * access number. The rooms' audio is the telephone's: nothing here is ticked.
 */

import type {
  BrowserJoined,
  BrowserJoinRefusal,
  BrowserJoinRequest,
  BrowserParticipant,
} from "../domain/browser-join.js";
import type { Clock, TimerHandle } from "../domain/clock.js";
import type { Conference, EmptyConferencePeriods } from "../domain/conference.js";
import type { RecoveryDetails } from "../domain/event.js";
import {
  type CallingPolicy,
  type CallNotPlaced,
  callerNumberKey,
  normalizeNanpNumber,
  OPEN_CALLING_POLICY,
} from "../domain/phone.js";
import { BrowserParticipants, joinFromBrowser, type PinTry } from "./browser-join.js";
import { ConferenceRoom, type RoomLogger } from "./conference-room.js";
import { answerDialIn, HANDOFF_HEADER } from "./dial-in.js";
import { PinPromptPlaces, type PlaceRefusal } from "./pin-prompt-places.js";
import type { AttemptCounts, ConferenceStore, IncomingConferenceCall, Speak, Telephone } from "./ports.js";

export interface ConferenceRuntimeOptions {
  readonly telephone: Telephone;
  readonly store: ConferenceStore;
  /** This instance (BRIDGELINE_INSTANCE_ID), as call records name it. */
  readonly instance: string;
  readonly speak: Speak;
  readonly logger: RoomLogger;
  /** What the rooms' and the PIN prompts' timers and the refreshes run on. */
  readonly clock: Clock;
  /** Recordings go to `<dataDir>/recordings/`. */
  readonly dataDir: string;
  /** Whether callers join from browsers (the join page is served): rooms then wait for callers as for dial-in. */
  readonly acceptsBrowsers?: boolean;
  /** The numbers callers dial in on (E.164); calls to other numbers are refused 404. */
  readonly accessNumbers: readonly string[];
  /** Which numbers attendees' calls may go to (toll fraud); default the fixed rules alone. */
  readonly callingPolicy?: CallingPolicy;
  /** How long a conference stays open with nobody in it, while callers can dial in. */
  readonly emptyPeriods: EmptyConferencePeriods;
  /**
   * Wrong PINs a caller (by caller ID) may type within the window, over any calls to any instance,
   * before its calls are refused 403 until the window ends; default 10 in 15 minutes.
   */
  readonly pinFailures?: { readonly limit: number; readonly windowMs: number };
  /**
   * Wrong PINs all callers together may type within the window, over every instance, before dial-in
   * is refused 503 until the window ends (a guesser rotating caller IDs); default 60 a minute.
   */
  readonly serviceWrongPins?: { readonly limit: number; readonly windowMs: number };
  /** Where wrong PINs are counted: the store's attempt counts, which the instances share. */
  readonly attempts: AttemptCounts;
  /**
   * Callers at the PIN prompt at once, in all and from one stranger's source (not a configured
   * trunk or edge), past which a caller is refused 503; default 100 and 10.
   */
  readonly pinPrompt?: { readonly total: number; readonly perSource: number };
  /** How often rooms re-read their conference and attendees (and check whether empty ones end). */
  readonly refreshIntervalMs?: number;
  /**
   * A room's audio stops when its lease (of `leaseMs`) is not renewed in time, as another instance
   * may take the conference over then: given where several instances share the store.
   */
  readonly fenceAudio?: { readonly leaseMs: number };
  /**
   * Told, once per conference taken over, when someone is first heard in its new room: the seconds
   * since its old runner was last heard of (the time nobody could talk in it).
   */
  readonly onTakeOverHeard?: (silentSeconds: number) => void;
  /** Told of each attendee call a room did not place: past its owner's limits, or a number never called. */
  readonly onCallNotPlaced?: (reason: CallNotPlaced) => void;
}

const DEFAULT_REFRESH_INTERVAL_MS = 500;
/**
 * Callers at the PIN prompt at once: each holds a call, a media stream and prompts playing for up to
 * three tries of 10 s, while a PIN typed lets them into a room; more at once is a flood, not callers.
 * One stranger's address gets a tenth of the places, so that a scanner leaves the rest to callers.
 */
export const PIN_PROMPT_PLACES = { total: 100, perSource: 10 };
/** A place at the prompt frees within one caller's three tries; try again after about that. */
export const PIN_PROMPT_RETRY_AFTER_SECONDS = 10;
/** The wrong PINs could not be read (the store unreachable): as the API's 503 for it, 5 s. */
const WRONG_PINS_UNREAD_RETRY_AFTER_SECONDS = 5;
const DEFAULT_PIN_FAILURES = { limit: 10, windowMs: 15 * 60_000 };
const DEFAULT_SERVICE_WRONG_PINS = { limit: 60, windowMs: 60_000 };
/** The attempt-count key of every wrong PIN typed to the service. */
const SERVICE_WRONG_PINS_KEY = "wrong-pins-service";

/** Why a call to an access number was refused before its PIN prompt. */
export type DialInRefusal = PlaceRefusal | "service-wrong-pins" | "caller-wrong-pins";

export class ConferenceRuntime {
  readonly #options: ConferenceRuntimeOptions;
  readonly #rooms = new Map<number, ConferenceRoom>();
  #refreshTimer: TimerHandle | undefined;
  #closed = false;
  /** The access numbers' 10-digit national numbers. */
  readonly #accessNumbers: Set<string>;
  readonly #pinFailures: { readonly limit: number; readonly windowMs: number };
  readonly #serviceWrongPins: { readonly limit: number; readonly windowMs: number };
  /** Callers from the call's arrival until they are in a room or gone. */
  readonly #pinPrompt: PinPromptPlaces;
  /** Callers joined from browsers here, by their pages' tokens. */
  readonly #browsers = new BrowserParticipants();
  #refreshing = false;
  #dialIns = 0;
  #wrongPinCount = 0;
  readonly #takeOvers: Record<RecoveryDetails["cause"], number> = { "runner-silent": 0, "handed-over": 0 };
  readonly #refused: Record<DialInRefusal, number> = {
    "prompt-full": 0,
    "source-full": 0,
    "service-wrong-pins": 0,
    "caller-wrong-pins": 0,
  };

  constructor(options: ConferenceRuntimeOptions) {
    this.#options = options;
    this.#accessNumbers = new Set(
      options.accessNumbers.map((number) => normalizeNanpNumber(number)?.subscriberNumber ?? number),
    );
    this.#pinFailures = options.pinFailures ?? DEFAULT_PIN_FAILURES;
    this.#serviceWrongPins = options.serviceWrongPins ?? DEFAULT_SERVICE_WRONG_PINS;
    this.#pinPrompt = new PinPromptPlaces(options.pinPrompt ?? PIN_PROMPT_PLACES);
    options.telephone.onIncomingCall((call) => {
      const token = call.header(HANDOFF_HEADER);
      if (token !== undefined) {
        this.#takeHandedOff(call, token).catch((error: unknown) => {
          options.logger.warn({ err: error }, "a caller handed over by another instance could not join");
          call.reject(500, "Server Internal Error");
        });
        return;
      }
      // The Request-URI user names the number dialled, with or without +1.
      if (!this.#accessNumbers.has(normalizeNanpNumber(call.to)?.subscriberNumber ?? call.to)) {
        call.reject(404, "Not Found");
        return;
      }
      const place = this.#pinPrompt.take(call.origin);
      if (typeof place === "string") {
        this.#refuseAtPrompt(call, place);
        return;
      }
      // It counts towards the total once answered (ACKed), and is given back when the call is in
      // a room or gone, whichever way it goes: the dial-in settling, or the call failing or ending
      // first (unanswered, unACKed, hung up).
      call.on("answered", place.answered);
      call.on("failed", place.giveBack);
      call.on("ended", place.giveBack);
      void this.#dialIn(call).finally(() => {
        call.off("answered", place.answered);
        call.off("failed", place.giveBack);
        call.off("ended", place.giveBack);
        place.giveBack();
      });
    });
    this.#scheduleRefresh();
  }

  /** How many conferences this instance runs now. */
  get runningRooms(): number {
    return this.#rooms.size;
  }

  /** Calls taken on an access number since start (those refused for wrong PINs not counted). */
  get dialIns(): number {
    return this.#dialIns;
  }

  /** Wrong PINs typed by callers since start. */
  get wrongPins(): number {
    return this.#wrongPinCount;
  }

  /** Calls to an access number refused before the PIN prompt since start, by reason. */
  get dialInsRefused(): Readonly<Record<DialInRefusal, number>> {
    return this.#refused;
  }

  /** Callers at the PIN prompt now: arrived (answered or not yet ACKed), and answered. */
  get atPinPrompt(): { held: number; answered: number } {
    return { held: this.#pinPrompt.held, answered: this.#pinPrompt.answered };
  }

  /** The calls in this instance's rooms: in the greeting, or joined into the audio. */
  get legs(): { greeting: number; joined: number } {
    let greeting = 0;
    let joined = 0;
    for (const room of this.#rooms.values()) {
      joined += room.participants;
      greeting += room.legCount - room.participants;
    }
    return { greeting, joined };
  }

  /** The participants this instance's rooms take up (see ConferenceRoom.load). */
  get participants(): number {
    let total = 0;
    for (const room of this.#rooms.values()) total += room.load;
    return total;
  }

  /** Runs a conference the scheduler has just started, with its attendee count when claimed and its lease. */
  run(conference: Conference, attendees: number, lease: number, validForMs?: number): void {
    this.#open(conference, attendees, lease, validForMs);
  }

  /**
   * Runs a conference taken over from an instance that went: its room calls back the attendees the
   * other had called. A room of an earlier lease still here (this instance paused past its lease and
   * then took the conference back) is given up first.
   */
  takeOver(
    conference: Conference,
    attendees: number,
    lease: number,
    taken: {
      readonly callBack: readonly number[];
      readonly redial?: readonly number[];
      readonly recovery: RecoveryDetails;
      /** For how long from now the lease is surely this instance's. */
      readonly validForMs?: number;
    },
  ): void {
    if (this.#closed) return;
    const older = this.#rooms.get(conference.id);
    older?.abandon("the conference was taken over again under a new lease");
    // Its writes may still be settling: the new room is this conference's from now.
    if (older !== undefined) this.#rooms.delete(conference.id);
    this.#takeOvers[taken.recovery.cause]++;
    const silentSince = this.#options.clock.now() - taken.recovery.gapSeconds * 1000;
    this.#open(conference, attendees, lease, taken.validForMs, {
      callBack: taken.callBack,
      redial: taken.redial ?? [],
      onFirstJoined: () => this.#options.onTakeOverHeard?.((this.#options.clock.now() - silentSince) / 1000),
    });
  }

  /** Conferences taken over by this instance since start, by cause. */
  get takeOvers(): Readonly<Record<RecoveryDetails["cause"], number>> {
    return this.#takeOvers;
  }

  /**
   * After a renewal of the leases, asked for at `askedAt`: the rooms whose lease is no longer held are
   * given up at once (another instance runs their conference), the others' audio goes on for
   * `validForMs` (when fenced). A room opened since `askedAt` (claimed while the renewal was on its
   * way) is not judged by it.
   */
  leasesRenewed(
    held: readonly { conferenceId: number; lease: number }[],
    validForMs: number,
    askedAt: number,
  ): void {
    const leases = new Map(held.map(({ conferenceId, lease }) => [conferenceId, lease]));
    for (const room of [...this.#rooms.values()]) {
      if (room.ended || room.openedAt >= askedAt) continue;
      if (leases.get(room.conferenceId) !== room.lease)
        room.abandon("its lease is lost: another instance took the conference over");
      else if (this.#options.fenceAudio !== undefined) room.media.sendFor(validForMs);
    }
  }

  /** The leases of the rooms running here (to hand them over). */
  get leases(): { conferenceId: number; lease: number }[] {
    return [...this.#rooms.values()]
      .filter((room) => !room.ended)
      .map((room) => ({ conferenceId: room.conferenceId, lease: room.lease }));
  }

  /**
   * Gives up every room, writing nothing (their leases handed over: another instance calls the
   * attendees back), then stops as close() does.
   */
  async handOver(): Promise<void> {
    for (const room of [...this.#rooms.values()]) room.abandon("handed over: the service is stopping");
    await this.close();
  }

  #open(
    conference: Conference,
    attendees: number,
    lease: number,
    validForMs: number | undefined,
    takenOver?: {
      readonly callBack: readonly number[];
      readonly redial: readonly number[];
      readonly onFirstJoined: () => void;
    },
  ): void {
    // Stopping: the conference stays the store's, and another instance takes it once its lease is out.
    if (this.#closed || this.#rooms.has(conference.id)) return;
    const room = new ConferenceRoom(conference, {
      telephone: this.#options.telephone,
      store: this.#options.store,
      speak: this.#options.speak,
      logger: this.#options.logger,
      clock: this.#options.clock,
      dataDir: this.#options.dataDir,
      acceptsDialIn: this.#accessNumbers.size > 0 || this.#options.acceptsBrowsers === true,
      callingPolicy: this.#options.callingPolicy ?? OPEN_CALLING_POLICY,
      onCallNotPlaced: this.#options.onCallNotPlaced,
      reserved: Math.max(1, attendees),
      lease,
      instance: this.#options.instance,
      ...(takenOver !== undefined && { takenOver }),
      emptyPeriods: this.#options.emptyPeriods,
      onEnded: (ended) => {
        if (this.#rooms.get(ended.conferenceId) === ended) this.#rooms.delete(ended.conferenceId);
      },
    });
    this.#rooms.set(conference.id, room);
    // Heard for what is left of the lease from its claim's heartbeat, as after each renewal.
    if (this.#options.fenceAudio !== undefined)
      room.media.sendFor(validForMs ?? this.#options.fenceAudio.leaseMs);
    room.start().catch((error: unknown) => {
      this.#options.logger.warn(
        { err: error, conferenceId: conference.id },
        "conference could not start its calls",
      );
    });
  }

  /** A caller refused a place at the PIN prompt: 503, try again once places free. */
  #refuseAtPrompt(call: IncomingConferenceCall, why: PlaceRefusal): void {
    this.#refused[why]++;
    this.#options.logger.warn(
      { from: call.from, source: call.origin.source, callId: call.origin.callId },
      why === "prompt-full"
        ? "dial-in: call refused, as many callers at the PIN prompt as allowed"
        : "dial-in: call refused, as many callers at the PIN prompt from this source as allowed",
    );
    call.reject(503, "Service Unavailable", PIN_PROMPT_RETRY_AFTER_SECONDS);
  }

  /**
   * A call to an access number: refused 403 while its caller has no wrong PINs left in the window,
   * 503 while the service as a whole has none (both counted by every instance), else answered and
   * asked for a PIN.
   */
  async #dialIn(call: IncomingConferenceCall): Promise<void> {
    const { logger } = this.#options;
    const { source, callId } = call.origin;
    // The caller's number however written; a caller ID that is no number is counted by its source.
    const key = `wrong-pin:${callerNumberKey(call.from) ?? `source:${source}`}`;
    const throttle = await this.#wrongPinThrottle(key);
    if (throttle === "unreadable") {
      logger.warn({ from: call.from }, "dial-in: wrong PINs could not be read; call refused");
      call.reject(503, "Service Unavailable", WRONG_PINS_UNREAD_RETRY_AFTER_SECONDS);
      return;
    }
    if (throttle?.refused === "too-many-wrong-pins") {
      logger.warn(
        { from: call.from, source, callId, retryAfterSeconds: throttle.retryAfterSeconds },
        "dial-in: call refused, too many wrong PINs from this caller",
      );
      call.reject(403, "Forbidden");
      return;
    }
    if (throttle?.refused === "service-wrong-pins") {
      logger.warn(
        { from: call.from, source, callId, retryAfterSeconds: throttle.retryAfterSeconds },
        "dial-in: call refused, too many wrong PINs to the service",
      );
      call.reject(503, "Service Unavailable", throttle.retryAfterSeconds);
      return;
    }
    // The caller may have given up while the counts were read.
    if (call.state !== "calling") return;
    call.ring();
    this.#dialIns++;
    await answerDialIn(call, {
      onWrongPin: () => this.#countWrongPin(key),
      store: this.#options.store,
      logger,
      clock: this.#options.clock,
      telephone: this.#options.telephone,
      roomOf: (conferenceId) => this.#rooms.get(conferenceId),
    }).catch((error: unknown) => {
      logger.warn({ err: error, from: call.from }, "dial-in failed");
      call.hangup();
    });
  }

  /**
   * Whether a caller (by `key`) may try a PIN: refused while it, or the service as a whole, has no
   * wrong PINs left in the window (counted by every instance); "unreadable" when the store cannot say.
   */
  async #wrongPinThrottle(
    key: string,
  ): Promise<
    | { refused: "too-many-wrong-pins" | "service-wrong-pins"; retryAfterSeconds: number }
    | "unreadable"
    | undefined
  > {
    const { attempts } = this.#options;
    const readAt = this.#now();
    let wrongPins: Awaited<ReturnType<AttemptCounts["read"]>>;
    let serviceWrongPins: Awaited<ReturnType<AttemptCounts["read"]>>;
    try {
      [wrongPins, serviceWrongPins] = await Promise.all([
        attempts.read(key, readAt),
        attempts.read(SERVICE_WRONG_PINS_KEY, readAt),
      ]);
    } catch {
      return "unreadable";
    }
    const secondsUntil = (endsAt: number) =>
      Math.max(1, Math.ceil((endsAt - this.#options.clock.now()) / 1000));
    if (wrongPins !== undefined && wrongPins.count >= this.#pinFailures.limit) {
      this.#refused["caller-wrong-pins"]++;
      return { refused: "too-many-wrong-pins", retryAfterSeconds: secondsUntil(wrongPins.endsAt) };
    }
    if (serviceWrongPins !== undefined && serviceWrongPins.count >= this.#serviceWrongPins.limit) {
      this.#refused["service-wrong-pins"]++;
      return { refused: "service-wrong-pins", retryAfterSeconds: secondsUntil(serviceWrongPins.endsAt) };
    }
    return undefined;
  }

  /** A wrong PIN typed: counted under the caller's key and the service's, by every instance. */
  #countWrongPin(key: string): void {
    this.#wrongPinCount++;
    const now = this.#now();
    Promise.all([
      this.#options.attempts.count(key, this.#pinFailures.windowMs, now),
      this.#options.attempts.count(SERVICE_WRONG_PINS_KEY, this.#serviceWrongPins.windowMs, now),
    ]).catch((error: unknown) => {
      this.#options.logger.warn({ err: error, key }, "a wrong PIN could not be counted");
    });
  }

  /**
   * One PIN try of a join page's, counted under its key and the service's before the PIN is looked
   * up (see BrowserJoinOptions.takePinTry); a refused try is given back at once.
   */
  async #takePinTry(key: string): Promise<BrowserJoinRefusal | PinTry> {
    const { attempts, logger } = this.#options;
    const now = this.#now();
    let mine: { readonly count: number; readonly endsAt: number };
    let service: { readonly count: number; readonly endsAt: number };
    try {
      [mine, service] = await Promise.all([
        attempts.count(key, this.#pinFailures.windowMs, now),
        attempts.count(SERVICE_WRONG_PINS_KEY, this.#serviceWrongPins.windowMs, now),
      ]);
    } catch (error) {
      logger.warn({ err: error, key }, "browser join: wrong PINs could not be counted");
      return { refused: "unavailable", retryAfterSeconds: WRONG_PINS_UNREAD_RETRY_AFTER_SECONDS };
    }
    const giveBack = () => {
      const at = this.#now();
      Promise.all([attempts.uncount(key, at), attempts.uncount(SERVICE_WRONG_PINS_KEY, at)]).catch(
        (error: unknown) => logger.warn({ err: error, key }, "a PIN try could not be given back"),
      );
    };
    const secondsUntil = (endsAt: number) =>
      Math.max(1, Math.ceil((endsAt - this.#options.clock.now()) / 1000));
    if (mine.count > this.#pinFailures.limit) {
      giveBack();
      return { refused: "too-many-wrong-pins", retryAfterSeconds: secondsUntil(mine.endsAt) };
    }
    if (service.count > this.#serviceWrongPins.limit) {
      giveBack();
      return { refused: "service-wrong-pins", retryAfterSeconds: secondsUntil(service.endsAt) };
    }
    return {
      giveBack,
      wrong: () => {
        this.#wrongPinCount++;
      },
    };
  }

  /**
   * A browser joining by PIN (the join page): the same PINs, lock and wrong-PIN throttle as dial-in
   * (counted by the page's address), its call answered next to the room and admitted.
   */
  async joinFromBrowser(request: BrowserJoinRequest): Promise<BrowserJoined | BrowserJoinRefusal> {
    if (this.#closed)
      return { refused: "unavailable", retryAfterSeconds: WRONG_PINS_UNREAD_RETRY_AFTER_SECONDS };
    try {
      return await joinFromBrowser(request, this.#browsers, {
        store: this.#options.store,
        logger: this.#options.logger,
        clock: this.#options.clock,
        telephone: this.#options.telephone,
        roomOf: (conferenceId) => this.#rooms.get(conferenceId),
        takePinTry: (key) => this.#takePinTry(key),
      });
    } catch (error) {
      // The store unreachable, or no media port free: the page may try again shortly.
      this.#options.logger.warn({ err: error, source: request.source }, "browser join failed");
      return { refused: "unavailable", retryAfterSeconds: WRONG_PINS_UNREAD_RETRY_AFTER_SECONDS };
    }
  }

  /** The participant a join page's token names while its call lasts. */
  browserParticipant(token: string): BrowserParticipant | undefined {
    return this.#browsers.get(token);
  }

  /** Hangs up the call a join page's token names; false when unknown or over. */
  leaveBrowser(token: string): boolean {
    return this.#browsers.leave(token);
  }

  /**
   * A caller another instance admitted to a room that runs here: the internal call shows a handoff
   * token, taken once; the caller joins as the attendee it names. Refused 403 for an unknown or
   * spent token, 404 when the room is no longer here.
   */
  async #takeHandedOff(call: IncomingConferenceCall, token: string): Promise<void> {
    const handoff = await this.#options.store.takeHandoff(token, this.#now());
    if (handoff === undefined) {
      this.#options.logger.warn({ from: call.from }, "internal call with an unknown handoff token refused");
      call.reject(403, "Forbidden");
      return;
    }
    const room = this.#rooms.get(handoff.conferenceId);
    if (room === undefined || room.ended) {
      call.reject(404, "Not Found");
      return;
    }
    if (!(await call.accept())) return;
    this.#options.logger.info(
      { conferenceId: handoff.conferenceId, attendeeId: handoff.attendeeId },
      "dial-in: caller handed over by another instance",
    );
    room.admit(call, handoff.attendeeId, handoff.moderator, handoff.encryption);
  }

  /** Ends every conference this instance runs (graceful shutdown), hanging up its calls. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#options.clock.clearTimeout(this.#refreshTimer);
    await Promise.all([...this.#rooms.values()].map((room) => room.close("the service is stopping")));
  }

  #now(): Date {
    return new Date(this.#options.clock.now());
  }

  /** The next refresh of every room, one interval on. */
  #scheduleRefresh(): void {
    if (this.#closed) return;
    this.#refreshTimer = this.#options.clock.setTimeout(() => {
      this.#scheduleRefresh();
      void this.#refreshAll();
    }, this.#options.refreshIntervalMs ?? DEFAULT_REFRESH_INTERVAL_MS);
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
