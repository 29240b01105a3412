// Long because it is one concern: a running room's state and its transitions; greeting, keypad, dial-in and writes are beside it.
/**
 * One started conference taking place: it calls the attendees, greets them (press 1 to join, say
 * your name) unless the conference dials direct, joins them into its room's audio, holds the room
 * until the moderator is there, obeys keypad commands, records, and ends when the moderator it
 * called hangs up, or when nobody is left and nobody can come (emptyConferenceEnd). Every change of an attendee's call is written to the store as it happens,
 * so the API reads the truth, each with its event for live views (talking started and stopped too).
 * Changes made through the API (attendees added, deleted, muted or called again, the conference's
 * controls changed, the conference ended or deleted) reach the room through `refresh`, which the
 * runtime calls on every poll, so they work whichever instance took the request.
 *
 * The room is in one state at a time:
 *
 *   opening ──► waiting-for-moderator ◄──► in-session          (settled from the facts below)
 *      │                 │                     │
 *      └─────────────────┴──► ending ◄─────────┘               (API end request, *9: 2.5 s announcement)
 *   any of them ──► ended                                       (moderator left, empty for good, deleted,
 *                                                               stopping, the room's audio failed,
 *                                                               its lease lost: abandoned, nothing written)
 *
 * It waits for its moderator (on hold) while the conference has a moderator attendee and no
 * moderator has joined nor had their call fail.
 */

import type { Attendee } from "../domain/attendee.js";
import { stateAfterFailedCall } from "../domain/attendee.js";
import type { Clock, TimerHandle } from "../domain/clock.js";
import {
  type Conference,
  type EmptyConferencePeriods,
  emptyConferenceEnd,
  lectureModeMuting,
} from "../domain/conference.js";
import { admittedByEncryption, type CallEncryption, callEncryption } from "../domain/encryption.js";
import type { ConferenceEventType } from "../domain/event.js";
import { type CallingPolicy, type CallNotPlaced, whyNotCallable } from "../domain/phone.js";
import { Announcements } from "./announcements.js";
import { CallMenu } from "./call-menu.js";
import { CallRecords } from "./call-records.js";
import { askToJoin, recordName, sayNoResponse } from "./greeting.js";
import { Keypad, type KeypadRoom } from "./keypad.js";
import { Leg } from "./leg.js";
import type {
  AttendeeCallEvent,
  ConferenceCall,
  ConferenceStore,
  PlacedCallAllowance,
  RoomMedia,
  RoomScope,
  Sound,
  Speak,
  Telephone,
} from "./ports.js";
import { RoomRecording } from "./recording.js";
import { OrderedWrites } from "./writes.js";

export interface RoomLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface RoomOptions {
  readonly telephone: Telephone;
  readonly store: ConferenceStore;
  readonly speak: Speak;
  readonly logger: RoomLogger;
  /** What the greeting's waits, the ending announcement and the empty room's periods run on. */
  readonly clock: Clock;
  /** Recordings go to `<dataDir>/recordings/`. */
  readonly dataDir: string;
  /** Callers can join by PIN: access numbers are configured, or the join page is served. */
  readonly acceptsDialIn: boolean;
  /** Which numbers may be dialled (toll fraud). */
  readonly callingPolicy: CallingPolicy;
  /** Told of each attendee call not placed for the calling policy (metrics). */
  readonly onCallNotPlaced?: (reason: CallNotPlaced) => void;
  /** How long the conference stays open with nobody in it, while callers can dial in. */
  readonly emptyPeriods: EmptyConferencePeriods;
  /** Participants reserved for the room on its instance (its attendees when claimed, at least one). */
  readonly reserved: number;
  /** The lease the room runs its conference under: every write it makes carries it (store/leases.ts). */
  readonly lease: number;
  /** This instance (BRIDGELINE_INSTANCE_ID), as its call records name it. */
  readonly instance: string;
  /**
   * A room that took its conference over from an instance that went: these attendees (the service had
   * called them) are called back, told they are being reconnected, and joined without the greeting.
   */
  readonly takenOver?: {
    readonly callBack: readonly number[];
    /** Attendees the old room was still calling: called again as at first, greeting and all. */
    readonly redial?: readonly number[];
    /** Told when the first attendee joins the new room. */
    readonly onFirstJoined: () => void;
  };
  /** Told once the conference has ended, its calls are hung up and its writes done. */
  readonly onEnded: (room: ConferenceRoom) => void;
}

export type ConferenceRoomState = "opening" | "waiting-for-moderator" | "in-session" | "ending" | "ended";

/** The transitions allowed, from each state. */
const NEXT: Record<ConferenceRoomState, readonly ConferenceRoomState[]> = {
  opening: ["waiting-for-moderator", "in-session", "ending", "ended"],
  "waiting-for-moderator": ["in-session", "ending", "ended"],
  "in-session": ["waiting-for-moderator", "ending", "ended"],
  ending: ["ended"],
  ended: [],
};

/** Long enough for everyone to hear why the call ends. */
export const ENDING_ANNOUNCEMENT_MS = 2_500;

export class ConferenceRoom {
  readonly #options: RoomOptions;
  #conference: Conference;
  #state: ConferenceRoomState = "opening";
  readonly #media: RoomMedia;
  readonly #legs = new Map<number, Leg>();
  readonly #keypads = new Map<Leg, Keypad>();
  /** Attendees called at least once by this room, so that each is dialled once per conference. */
  readonly #dialled = new Set<number>();
  /** The API's call-again requests this room has taken, by attendee, so that each is acted on once. */
  readonly #callRequestsTaken = new Map<number, string>();
  /** Attendees to call back after a take-over, and to call again, until a refresh dials them. */
  readonly #toCallBack: Set<number>;
  readonly #toRedial: Set<number>;
  readonly #writes: OrderedWrites;
  readonly #callRecords: CallRecords;
  readonly #recording: RoomRecording;
  readonly #announcements: Announcements;
  readonly #keypadRoom: KeypadRoom;
  // The facts the state is settled from.
  /** The attendees as the store last listed them. */
  #roster: readonly Attendee[] = [];
  /** How the moderator's call went: once joined, a later failure changes nothing. */
  #moderatorCall: "awaited" | "joined" | "unreachable" = "awaited";
  /** Someone has been in the conference (in this room, or before it was taken over). */
  #anyoneJoined = false;
  /** Told at the first join in this room after a take-over, then dropped. */
  #onFirstJoined: (() => void) | undefined;
  readonly #openedAt: Date;
  /** When the last person left, while nobody is on a call since. */
  #emptiedAt: Date | undefined;
  #handMarks = 0;
  /** Calls being reserved against the owner's limits, not yet placed: the room is not empty. */
  #callsBeingPlaced = 0;
  #endingTimer: TimerHandle | undefined;

  constructor(conference: Conference, options: RoomOptions) {
    this.#conference = conference;
    this.#options = options;
    this.#openedAt = this.#now();
    this.#toCallBack = new Set(options.takenOver?.callBack);
    this.#toRedial = new Set(options.takenOver?.redial);
    // People were in it before the take-over: empty now, it ends after the grace period, not the no-show one.
    this.#anyoneJoined = options.takenOver !== undefined;
    this.#onFirstJoined = options.takenOver?.onFirstJoined;
    this.#media = options.telephone.openRoom();
    this.#writes = new OrderedWrites({
      clock: options.clock,
      onError: (error) => {
        if (options.store.leaseLost(error)) this.abandon("a write was refused: its lease is lost");
        else
          options.logger.warn(
            { err: error, conferenceId: this.#conference.id },
            "conference state not saved",
          );
      },
      retryable: (error) => options.store.unreachable(error),
      onRetrying: (error) =>
        options.logger.warn(
          { err: error, conferenceId: this.#conference.id },
          "database unreachable: the conference's state changes wait and are retried in order",
        ),
      onRecovered: (attempts) =>
        options.logger.info(
          { conferenceId: this.#conference.id, attempts },
          "database back: the conference's waiting state changes are being saved",
        ),
    });
    this.#callRecords = new CallRecords({
      instance: options.instance,
      clock: options.clock,
      write: (record, at) => {
        const scope = this.#scope;
        this.#writes.append(() => options.store.recordCall(scope, record, at));
      },
    });
    this.#recording = new RoomRecording({
      media: this.#media,
      dataDir: options.dataDir,
      conference: () => this.#conference,
      ...(options.takenOver !== undefined && { part: options.lease }),
      onStarted: (fileName, file) => {
        const scope = this.#scope;
        this.#writes.queue(() => options.store.setRecordingFile(scope, fileName));
        options.logger.info({ conferenceId: this.conferenceId, file }, "recording started");
      },
      onFailed: (error, file) =>
        options.logger.warn(
          { err: error, conferenceId: this.conferenceId, file },
          "recording could not start",
        ),
    });
    this.#announcements = new Announcements({
      media: this.#media,
      store: options.store,
      speak: options.speak,
      conference: () => this.#conference,
    });
    this.#keypadRoom = this.#makeKeypadRoom();
    this.#media.on("recording-failed", (reason) => {
      if (this.#state === "ended") return;
      options.logger.warn(
        { conferenceId: this.conferenceId, reason },
        "recording stopped: its file could not be written; the conference goes on",
      );
      this.#recording.stopped();
      this.#conference = { ...this.#conference, recordAudio: false };
      const scope = this.#scope;
      const why = `the recording could not be written: ${reason}`;
      const at = this.#now();
      this.#writes.queue(() =>
        options.store.recordConferenceControls(scope, { recordAudio: false }, at, why),
      );
    });
    this.#media.on("failed", (reason) => {
      if (this.#state === "ended") return;
      options.logger.warn({ conferenceId: this.conferenceId, reason }, "conference audio failed");
      this.#end(`the room's audio failed: ${reason}`);
    });
  }

  get conferenceId(): number {
    return this.#conference.id;
  }

  get conference(): Conference {
    return this.#conference;
  }

  /** The room's audio: a caller's media opens next to it. */
  get media(): RoomMedia {
    return this.#media;
  }

  get state(): ConferenceRoomState {
    return this.#state;
  }

  get ended(): boolean {
    return this.#state === "ended";
  }

  /**
   * The participants this room takes up on its instance: room for its attendees (one caller at least)
   * was reserved when it was claimed; more calls than that count as they come.
   */
  get load(): number {
    return Math.max(this.#legs.size, this.#options.reserved);
  }

  /** The room's calls, in the greeting or in the room. */
  get legCount(): number {
    return this.#legs.size;
  }

  /** Attendees in the room (not those still in the greeting). */
  get participants(): number {
    let count = 0;
    for (const leg of this.#legs.values()) if (leg.joined) count++;
    return count;
  }

  /** The lease the room runs its conference under. */
  get lease(): number {
    return this.#options.lease;
  }

  /** When the room was opened (its lease got), in ms since the epoch. */
  get openedAt(): number {
    return this.#openedAt.getTime();
  }

  /** What the room's writes and events are about, and the lease they are made under. */
  get #scope(): RoomScope {
    return { userId: this.#conference.userId, conferenceId: this.#conference.id, lease: this.#options.lease };
  }

  /** Calls every attendee that is not dial-in, and starts the recording if the conference asks for one. */
  async start(): Promise<void> {
    if (this.#conference.recordAudio) this.#recording.start();
    await this.refresh();
  }

  /**
   * Brings the room in line with the store: calls attendees added since, hangs up those deleted, and
   * ends everything when the conference itself was deleted.
   */
  async refresh(): Promise<void> {
    if (this.#state === "ended") return;
    const writesBefore = this.#writes.stateWrites;
    await this.#writes.settled();
    const { conference, attendees, endRequestedAt, callRequests, lease } = await this.#options.store.loadRoom(
      this.#conference.id,
    );
    if (this.ended) return;
    if (conference !== undefined && lease !== this.#options.lease) {
      this.abandon("another instance runs the conference now: its lease is lost");
      return;
    }
    if (conference === undefined || conference.state !== "started") {
      this.#end(conference === undefined ? "conference deleted" : `conference ${conference.state}`);
      return;
    }
    const previous = this.#conference;
    if (this.#writes.stateWrites === writesBefore) {
      this.#conference = conference;
      this.#applyControls(previous, attendees);
    } else {
      // The store may not show the room's own latest changes yet; the next refresh applies the rest.
      const { dialInLocked, lectureMode, recordAudio, encryptedOnly } = previous;
      this.#conference = { ...conference, dialInLocked, lectureMode, recordAudio, encryptedOnly };
    }
    if (endRequestedAt !== null) this.#endAfterAnnouncement("ended through the API");
    const present = new Set(attendees.map((attendee) => attendee.id));
    for (const [attendeeId, leg] of this.#legs) {
      if (!present.has(attendeeId)) {
        this.#options.logger.info(
          { conferenceId: conference.id, attendeeId },
          "attendee deleted: hanging up",
        );
        this.#remove(leg);
        this.#callRecords.hangUp(leg.call, "the attendee was deleted");
      }
    }
    this.#roster = attendees;
    const toDial = new Map<number, Attendee>();
    for (const attendee of attendees) {
      if (
        !attendee.dialIn &&
        attendee.state === "new" &&
        !this.#dialled.has(attendee.id) &&
        this.#state !== "ending"
      )
        toDial.set(attendee.id, attendee);
    }
    const callBack = new Set<number>();
    const redial = new Set<number>();
    for (const attendee of attendees) {
      const calledBack = this.#toCallBack.delete(attendee.id);
      const redialled = this.#toRedial.delete(attendee.id);
      if ((!calledBack && !redialled) || this.#legs.has(attendee.id) || this.#state === "ending") continue;
      (calledBack ? callBack : redial).add(attendee.id);
      toDial.set(attendee.id, attendee);
    }
    for (const attendee of attendees) {
      const requestedAt = callRequests.get(attendee.id);
      if (requestedAt === undefined || this.#callRequestsTaken.get(attendee.id) === requestedAt) continue;
      this.#callRequestsTaken.set(attendee.id, requestedAt);
      if (
        !this.#legs.has(attendee.id) &&
        attendee.phoneNumberSubscriberNumber !== null &&
        this.#state !== "ending"
      )
        toDial.set(attendee.id, attendee);
    }
    try {
      await this.#dialAll([...toDial.values()], callBack);
    } catch (error) {
      // Nothing was placed: the next refresh calls these back, or again.
      for (const id of callBack) this.#toCallBack.add(id);
      for (const id of redial) this.#toRedial.add(id);
      throw error;
    }
    if (
      this.#options.takenOver !== undefined &&
      this.#moderatorCall === "awaited" &&
      !this.#moderatorMayCome()
    )
      this.#moderatorCall = "unreachable";
    this.#settle();
    this.#endIfEmpty();
  }

  /**
   * Takes a caller who dialled in and entered a PIN (here, or on another instance that carried them
   * here): into the room as the attendee the store matched, as moderator when it used the moderator
   * PIN, its call protected as `encryption` says (a carried caller's is that of its own call).
   */
  admit(
    call: ConferenceCall,
    attendeeId: number,
    moderator: boolean,
    encryption: CallEncryption = callEncryption(call),
  ): void {
    // A call over before it got here has had its end: admitted, it would stay connected for ever.
    if (call.state !== "answered") return;
    this.#callRecords.follow(call, attendeeId);
    if (this.#state === "ended") {
      this.#callRecords.hangUp(call, "the conference had ended");
      return;
    }
    const leg = new Leg(call, attendeeId, moderator);
    leg.encryption = encryption;
    this.#add(leg);
    this.#followCallEnd(leg);
    // Made encrypted only while the caller typed the PIN.
    if (!admittedByEncryption(this.#conference.encryptedOnly, encryption)) {
      this.#refuseUnencrypted(leg);
      return;
    }
    this.#join(leg);
  }

  /** Hangs everyone up and ends the conference (graceful shutdown, or the conference ending). */
  async close(reason: string): Promise<void> {
    this.#end(reason);
    await this.#settled();
  }

  /** The one way the state changes; the room is on hold exactly while it waits for its moderator. */
  #transition(to: ConferenceRoomState): void {
    const from = this.#state;
    if (from === to) return;
    if (!NEXT[from].includes(to)) throw new Error(`conference room: no way from ${from} to ${to}`);
    this.#state = to;
    if (to === "ended") return;
    if (from === "waiting-for-moderator" || to === "waiting-for-moderator")
      this.#media.setHold(to === "waiting-for-moderator");
  }

  /**
   * Whether a moderator attendee may still join: being called, to be called, or able to dial in. In
   * a room that took its conference over, the old room's failed call to the moderator is only in
   * the store: the room does not wait on hold for it.
   */
  #moderatorMayCome(): boolean {
    return this.#roster.some(
      (attendee) =>
        attendee.moderator &&
        (attendee.dialIn ||
          attendee.state === "new" ||
          this.#legs.has(attendee.id) ||
          this.#toCallBack.has(attendee.id) ||
          this.#toRedial.has(attendee.id)),
    );
  }

  /** Waiting for the moderator or in session, as the facts now say (until the room ends). */
  #settle(): void {
    if (this.#state === "ending" || this.#state === "ended") return;
    const waiting = this.#moderatorCall === "awaited" && this.#roster.some((attendee) => attendee.moderator);
    this.#transition(waiting ? "waiting-for-moderator" : "in-session");
  }

  /**
   * Brings the room's controls in line with what the API stored: each leg's muted flag and raised
   * hand, every member muted or not with lecture mode, and recording on or off. (Dial-in lock is
   * read from the conference.)
   */
  #applyControls(previous: Conference, attendees: readonly Attendee[]): void {
    for (const attendee of attendees) {
      const leg = this.#legs.get(attendee.id);
      if (leg === undefined || !leg.joined) continue;
      if (attendee.muted !== null && attendee.muted !== leg.muted) {
        leg.setMuted(attendee.muted);
        void leg.call.play({ prompts: [attendee.muted ? "muted" : "unmuted"] });
      }
      if (attendee.handUp !== null && attendee.handUp !== (leg.handRaisedAt !== undefined))
        leg.handRaisedAt = attendee.handUp ? this.#nextHandMark() : undefined;
    }
    const { lectureMode } = this.#conference;
    if (lectureMode !== previous.lectureMode) {
      // The API muted the members stored as connected; a member whose join the store does not show
      // yet joined under the old mode, so the room brings it in line itself.
      const now = this.#now();
      for (const leg of this.#legs.values()) {
        const muted = lectureModeMuting(lectureMode, leg.moderator);
        if (!leg.joined || muted === undefined || leg.muted === muted) continue;
        leg.setMuted(muted);
        this.#storeControls(leg, { muted }, now);
      }
    }
    const { recordAudio } = this.#conference;
    if (recordAudio !== previous.recordAudio) {
      if (recordAudio) this.#recording.start();
      else this.#recording.pause();
      this.#media.play({ prompts: [recordAudio ? "recording-started" : "recording-stopped"] });
    }
    // Made encrypted only mid-conference: the answered calls that are not go (those still ringing
    // are looked at when they answer).
    if (this.#conference.encryptedOnly && !previous.encryptedOnly) {
      for (const leg of [...this.#legs.values()])
        if (leg.call.state === "answered" && !admittedByEncryption(true, leg.encryption))
          this.#refuseUnencrypted(leg);
    }
  }

  /**
   * A call that is not encrypted enough for the conference (encrypted only): out of the room, told
   * why, then hung up. Recorded as failed when it never joined, as disconnected when it had.
   */
  #refuseUnencrypted(leg: Leg): void {
    const why = `not encrypted (${leg.encryption}): the conference takes encrypted calls only`;
    this.#options.logger.info(
      { conferenceId: this.#conference.id, attendeeId: leg.attendeeId, encryption: leg.encryption },
      "attendee refused: the conference takes encrypted calls only",
    );
    this.#remove(leg);
    if (leg.joined) {
      if (leg.talking) this.#event("talking-stopped", leg.attendeeId);
      this.#record(leg.attendeeId, { kind: "disconnected", result: why });
      this.#announcements.left(leg);
    } else {
      this.#record(leg.attendeeId, { kind: "failed", state: "failed", result: why });
      if (leg.moderator && this.#moderatorCall !== "joined") this.#moderatorCall = "unreachable";
    }
    void leg.call
      .play({ prompts: ["encrypted-only", "goodbye"] })
      .then(() => this.#callRecords.hangUp(leg.call, "the conference takes encrypted calls only"));
    this.#settle();
    this.#endIfEmpty();
  }

  /** The attendee's call failed (or was never placed): recorded with the status, the room told. */
  #notReached(attendee: Attendee, status: number, reason: string): void {
    const state = stateAfterFailedCall(status);
    this.#record(attendee.id, { kind: "failed", state, result: `${status} ${reason}` });
    this.#options.logger.warn(
      { conferenceId: this.#conference.id, attendeeId: attendee.id, status, reason },
      `attendee call ${state}`,
    );
    if (attendee.moderator && this.#moderatorCall !== "joined") this.#moderatorCall = "unreachable";
    this.#settle();
    this.#endIfEmpty();
  }

  /**
   * Calls these attendees, as far as the calling policy allows: numbers it refuses and calls past the
   * owner's limits are never placed, and the attendee fails with the reason (toll fraud).
   */
  async #dialAll(attendees: readonly Attendee[], callBack: ReadonlySet<number>): Promise<void> {
    const { callingPolicy } = this.#options;
    const refusals = new Map<Attendee, string>();
    const callable: Attendee[] = [];
    for (const attendee of attendees) {
      this.#dialled.add(attendee.id);
      const refused = whyNotCallable(attendee.phoneNumberSubscriberNumber ?? "", callingPolicy);
      // A number stored before the rule (or the deny list) said otherwise: never dialled.
      if (refused !== undefined) {
        refusals.set(attendee, refused);
        this.#options.onCallNotPlaced?.("denied-number");
      } else callable.push(attendee);
    }
    if (callable.length > 0) {
      let allowances: Map<number, PlacedCallAllowance>;
      this.#callsBeingPlaced += callable.length;
      try {
        const ids = callable.map((attendee) => attendee.id);
        allowances = await this.#options.store.reservePlacedCalls(
          this.#scope,
          ids,
          callingPolicy,
          this.#now(),
        );
      } catch (error) {
        // Nothing was placed: the next refresh tries these attendees again.
        for (const attendee of callable) {
          this.#dialled.delete(attendee.id);
          this.#callRequestsTaken.delete(attendee.id);
        }
        throw error;
      } finally {
        this.#callsBeingPlaced -= callable.length;
      }
      if (this.#state === "ending" || this.#state === "ended") return;
      for (const attendee of callable) {
        const allowance = allowances.get(attendee.id);
        if (allowance === undefined) continue;
        if ("refused" in allowance) {
          refusals.set(attendee, allowance.refused);
          this.#options.onCallNotPlaced?.("user-limit");
        } else this.#dial(attendee, allowance.placedCallId, callBack.has(attendee.id));
      }
    }
    // After the calls placed, so that the room is not found empty in between.
    for (const [attendee, reason] of refusals) this.#notReached(attendee, 403, `Not Called: ${reason}`);
  }

  /** Calls an attendee; one `calledBack` after a take-over is joined on answering, told why. */
  #dial(attendee: Attendee, placedCallId: number, calledBack: boolean): void {
    const conferenceId = this.#conference.id;
    const number = `+${attendee.phoneNumberCountryCode ?? "1"}${attendee.phoneNumberSubscriberNumber ?? ""}`;
    const encrypted = this.#conference.encryptedOnly;
    const call = this.#options.telephone.placeCall(number, {
      room: this.#media,
      encrypted,
      // A trunk's redirect is followed only to a number this conference could have called itself.
      allowRedirect: (e164) =>
        e164.startsWith("+1") && whyNotCallable(e164.slice(2), this.#options.callingPolicy) === undefined,
    });
    this.#callRecords.follow(call, attendee.id);
    const callOver = () => {
      // Dated now: the write may land later, once an unreachable database is back.
      const at = this.#now();
      this.#writes.append(() => this.#options.store.endPlacedCall(placedCallId, at));
    };
    call.on("failed", callOver);
    call.on("ended", callOver);
    const leg = new Leg(call, attendee.id, attendee.moderator);
    this.#add(leg);
    this.#record(attendee.id, { kind: "calling" });
    this.#options.logger.info({ conferenceId, attendeeId: attendee.id, number }, "calling attendee");

    call.on("queued", (why) => {
      if (this.#legs.get(attendee.id) === leg) this.#event("attendee-queued", attendee.id, why);
    });
    call.on("answered", () => {
      if (this.#legs.get(attendee.id) !== leg) return;
      leg.encryption = callEncryption(call);
      // Placed before the conference was made encrypted only.
      if (!admittedByEncryption(this.#conference.encryptedOnly, leg.encryption)) {
        this.#refuseUnencrypted(leg);
        return;
      }
      const extension = attendee.phoneNumberExtension;
      // "w" (wait for the far end's prompt) is taken as a pause, as "," is.
      const dialled = extension ? call.sendDigits(extension.replace(/w/gi, ",")) : Promise.resolve(true);
      // Called back after a take-over: they had accepted the call already, so no greeting again.
      if (calledBack) {
        void call.play({ prompts: ["reconnecting"] });
        this.#join(leg, attendee);
        return;
      }
      if (this.#conference.directDial) {
        this.#join(leg);
        return;
      }
      // The menu listens from the answer on: keys pressed while the extension goes out count.
      const menu = new CallMenu(call, this.#options.clock);
      leg.menu = menu;
      void dialled
        .then(() => this.#greet(leg, menu))
        .catch((error: unknown) => {
          this.#options.logger.warn(
            { err: error, conferenceId, attendeeId: attendee.id },
            "attendee greeting failed",
          );
          this.#callRecords.hangUp(call, "the greeting failed");
        });
    });
    call.on("failed", (failure) => {
      if (this.#legs.get(attendee.id) !== leg) return;
      this.#legs.delete(attendee.id);
      // 488: the trunk or the phone could not encrypt the call; say why it was asked to.
      const reason =
        encrypted && failure.status === 488
          ? `${failure.reason} (the conference takes encrypted calls only)`
          : failure.reason;
      this.#notReached(attendee, failure.status, reason);
    });
    this.#followCallEnd(leg);
  }

  /**
   * The greeting of a dialled attendee when the conference does not dial direct: press 1 to join
   * (twice at most), then, with announcements, say your name.
   */
  async #greet(leg: Leg, menu: CallMenu): Promise<void> {
    try {
      const accepted = await askToJoin(menu, await this.#announcements.invitation());
      if (this.#legs.get(leg.attendeeId) !== leg) return;
      if (!accepted) {
        await sayNoResponse(menu);
        this.#legs.delete(leg.attendeeId);
        this.#record(leg.attendeeId, {
          kind: "failed",
          state: "no-answer",
          result: "answered but did not press 1",
        });
        this.#callRecords.hangUp(leg.call, "answered but did not press 1");
        this.#endIfEmpty();
        return;
      }
      if (this.#conference.announceAttendees) leg.name = await recordName(menu);
      if (this.#legs.get(leg.attendeeId) !== leg) return;
      this.#join(leg);
    } finally {
      menu.detach();
      leg.menu = undefined;
    }
  }

  /**
   * Into the room's audio: muted in lecture mode, announced to the others, its keys obeyed. One called
   * back after a take-over gets back the mute and raised hand it had in the room before.
   */
  #join(leg: Leg, before?: { readonly muted: boolean | null; readonly handUp: boolean | null }): void {
    const conferenceId = this.#conference.id;
    const muted = before?.muted ?? lectureModeMuting(this.#conference.lectureMode, leg.moderator) ?? false;
    const handUp = before?.handUp ?? false;
    if (handUp) leg.handRaisedAt = this.#nextHandMark();
    this.#keypads.set(leg, new Keypad(leg, this.#keypadRoom));
    leg.call.on("talking", (talking) => {
      if (this.#legs.get(leg.attendeeId) !== leg || talking === leg.talking) return;
      leg.talking = talking;
      this.#event(talking ? "talking-started" : "talking-stopped", leg.attendeeId);
    });
    leg.call.join(this.#media, { muted });
    leg.joined = true;
    leg.muted = muted;
    this.#onFirstJoined?.();
    this.#onFirstJoined = undefined;
    this.#anyoneJoined = true;
    if (leg.moderator) this.#moderatorCall = "joined";
    this.#record(leg.attendeeId, {
      kind: "connected",
      muted,
      ...(handUp && { handUp }),
      encryption: leg.encryption,
    });
    this.#options.logger.info(
      { conferenceId, attendeeId: leg.attendeeId, encryption: leg.encryption },
      "attendee connected",
    );
    this.#announcements.welcome(leg);
    this.#announcements.entered(leg);
    this.#settle();
  }

  #followCallEnd(leg: Leg): void {
    leg.call.on("ended", (end) => {
      if (this.#legs.get(leg.attendeeId) !== leg) return;
      this.#remove(leg);
      if (leg.talking) this.#event("talking-stopped", leg.attendeeId);
      this.#record(leg.attendeeId, { kind: "disconnected", result: `${end.by}: ${end.reason}` });
      this.#options.logger.info(
        {
          conferenceId: this.#conference.id,
          attendeeId: leg.attendeeId,
          by: end.by,
          reason: end.reason,
          cause: end.cause ?? null,
        },
        "attendee disconnected",
      );
      if (leg.joined) this.#announcements.left(leg);
      // The seed's rule: a moderator's disconnection ends the conference, however they joined.
      if (leg.moderator && leg.joined) this.#end("the moderator left");
      else this.#endIfEmpty();
    });
  }

  #add(leg: Leg): void {
    this.#legs.set(leg.attendeeId, leg);
    this.#emptiedAt = undefined;
  }

  /** The leg is no longer the room's: out of its audio, its greeting and its keys. */
  #remove(leg: Leg): void {
    this.#legs.delete(leg.attendeeId);
    leg.leave();
    this.#keypads.get(leg)?.detach();
    this.#keypads.delete(leg);
  }

  #nextHandMark(): number {
    return ++this.#handMarks;
  }

  #storeControls(leg: Leg, controls: { muted?: boolean; handUp?: boolean }, now: Date): void {
    const scope = this.#scope;
    this.#writes.queue(() =>
      this.#options.store.recordAttendeeControls(scope, leg.attendeeId, controls, now),
    );
  }

  /** What the keypad commands may change in this room. */
  #makeKeypadRoom(): KeypadRoom {
    const room = this;
    return {
      get conference() {
        return room.#conference;
      },
      get participants() {
        return room.participants;
      },
      joinedLegs: () => [...this.#legs.values()].filter((leg) => leg.joined),
      nextHandMark: () => this.#nextHandMark(),
      now: () => this.#now(),
      storeAttendeeControls: (leg, controls, now) => this.#storeControls(leg, controls, now),
      changeConferenceControls: (controls, now) => {
        this.#conference = { ...this.#conference, ...controls };
        const scope = this.#scope;
        this.#writes.queue(() => this.#options.store.recordConferenceControls(scope, controls, now));
      },
      recording: this.#recording,
      playToRoom: (sound: Sound) => this.#media.play(sound),
      endAfterAnnouncement: (reason) => this.#endAfterAnnouncement(reason),
    };
  }

  /**
   * With nobody on a call, the conference ends once nobody can come any more: at once when nobody
   * can dial in, otherwise after the grace or no-show period (checked again on every refresh).
   */
  #endIfEmpty(): void {
    if (this.#state === "ended" || this.#legs.size > 0 || this.#callsBeingPlaced > 0) return;
    const now = this.#now();
    if (this.#anyoneJoined) this.#emptiedAt ??= now;
    const end = emptyConferenceEnd(
      {
        // Locked dial-in still takes a moderator's PIN: the room waits for callers all the same.
        dialInOpen: this.#options.acceptsDialIn,
        startedAt: this.#openedAt,
        emptiedAt: this.#emptiedAt,
      },
      this.#options.emptyPeriods,
    );
    if (end.at <= now) this.#end(end.reason);
  }

  /**
   * The conference is not this room's any more (its lease lost: another instance took it over, or it
   * is handed over as this one stops): every call hung up at once, the audio closed, and nothing
   * written (the conference goes on in the other room; its writes would be refused anyway).
   */
  abandon(reason: string): void {
    if (this.#state === "ended") return;
    this.#callRecords.forgetAll();
    this.#hangUpAll("the conference room was given up");
    const conferenceId = this.#conference.id;
    this.#options.logger.warn(
      { conferenceId, lease: this.#options.lease, reason },
      "conference room given up",
    );
    this.#media.close().catch((error: unknown) => {
      this.#options.logger.warn({ err: error, conferenceId }, "conference audio did not close");
    });
    // After the writes queued before (refused or not, and the hung-up calls' placed-call ends).
    void this.#writes.settled().then(() => this.#options.onEnded(this));
  }

  /** Ended: every call out of the room and hung up, the recording finished. */
  #hangUpAll(because: string): void {
    this.#transition("ended");
    this.#options.clock.clearTimeout(this.#endingTimer);
    const legs = [...this.#legs.values()];
    for (const leg of legs) {
      leg.leave();
      this.#keypads.get(leg)?.detach();
    }
    // Gone before they are hung up: a call's "ended" (told at once, or later) finds it no longer the
    // room's and writes nothing (an abandoned room must not; an ended one's end disconnects them all).
    this.#legs.clear();
    this.#keypads.clear();
    for (const leg of legs) this.#callRecords.hangUp(leg.call, because);
    this.#recording.close();
  }

  #end(reason: string): void {
    if (this.#state === "ended") return;
    // The recording is complete (its media closed below) before the conference is stored as ended;
    // endConference disconnects the calls hung up here.
    this.#hangUpAll(`the conference ended: ${reason}`);
    const conferenceId = this.#conference.id;
    this.#options.logger.info({ conferenceId, reason }, "conference ended");
    const media = this.#media;
    this.#writes.append(() =>
      media.close().catch((error: unknown) => {
        this.#options.logger.warn({ err: error, conferenceId }, "conference audio did not close");
      }),
    );
    const scope = this.#scope;
    // Dated now, not when the write lands (later, if the database is away meanwhile).
    const endedAt = this.#now();
    this.#writes.queue(() => this.#options.store.endConference(scope, reason, endedAt));
    // After the records of the calls it hung up, written once their media told their quality.
    void this.#settled().then(() => this.#options.onEnded(this));
  }

  /** Every write queued so far done, the records of the calls over so far among them. */
  async #settled(): Promise<void> {
    await this.#callRecords.settled();
    await this.#writes.settled();
  }

  /** Tells everyone the conference is ending, and ends it a moment later. */
  #endAfterAnnouncement(reason: string): void {
    if (this.#state === "ending" || this.#state === "ended") return;
    this.#transition("ending");
    this.#media.play({ prompts: ["conference-ending"] });
    this.#endingTimer = this.#options.clock.setTimeout(() => this.#end(reason), ENDING_ANNOUNCEMENT_MS);
  }

  #now(): Date {
    return new Date(this.#options.clock.now());
  }

  #record(attendeeId: number, event: AttendeeCallEvent): void {
    const at = this.#now();
    const scope = this.#scope;
    this.#writes.queue(() => this.#options.store.recordAttendeeCall(scope, attendeeId, event, at));
  }

  /** An event that changes no state (talking), after the writes queued before it. */
  #event(type: ConferenceEventType, attendeeId: number, reason?: string): void {
    const at = this.#now();
    const scope = this.#scope;
    this.#writes.append(() => this.#options.store.appendEvent(scope, attendeeId, type, at, reason));
  }
}
