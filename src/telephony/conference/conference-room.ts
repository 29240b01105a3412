/**
 * One started conference taking place: it calls the attendees, joins the answered calls into one
 * mixed room, plays hold music until the moderator is there, and ends when the moderator (or the last
 * attendee) leaves. Every change of an attendee's call is written to the store as it happens, so the
 * API reads the truth. Changes made through the API (attendees added or deleted, the conference
 * deleted) reach the room through `refresh`, which the runtime calls on every poll.
 */
import type { Attendee } from "../../domain/attendee.js";
import { stateAfterFailedCall } from "../../domain/attendee.js";
import type { Conference } from "../../domain/conference.js";
import { endConference, loadRoom, recordAttendeeCall } from "../../store/conference-runtime.js";
import type { Store } from "../../store/database.js";
import type { Call } from "../call.js";
import { Mixer, type MixerSlot } from "../media/mixer.js";
import { entryTone, exitTone, holdMusic, LoopingPlayer } from "../media/tones.js";
import type { Telephony } from "../telephony.js";

export interface RoomLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface RoomOptions {
  readonly telephony: Telephony;
  readonly store: Store;
  readonly logger: RoomLogger;
  /** Told once the conference has ended and its calls are hung up. */
  readonly onEnded: (room: ConferenceRoom) => void;
}

/** One attendee's call in the room. */
interface Leg {
  readonly attendeeId: number;
  readonly moderator: boolean;
  readonly call: Call;
  slot: MixerSlot | undefined;
}

const FRAME_SAMPLES = 160;

export class ConferenceRoom {
  readonly #options: RoomOptions;
  #conference: Conference;
  readonly #mixer = new Mixer();
  readonly #legs = new Map<number, Leg>();
  /** Attendees called at least once by this room, so that each is dialled once per conference. */
  readonly #dialled = new Set<number>();
  readonly #holdMusic = new LoopingPlayer(holdMusic());
  readonly #frame = new Int16Array(FRAME_SAMPLES);
  #hasModerator = false;
  #moderatorConnected = false;
  /** The moderator cannot come (its call failed): the room goes on without hold music. */
  #moderatorUnreachable = false;
  #anyoneConnected = false;
  #hasDialIn = false;
  #ended = false;
  /** Store writes in the order the calls produced them. */
  #writes: Promise<unknown> = Promise.resolve();

  constructor(conference: Conference, options: RoomOptions) {
    this.#conference = conference;
    this.#options = options;
  }

  get conferenceId(): number {
    return this.#conference.id;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Whether connected attendees hear hold music rather than each other. */
  get onHold(): boolean {
    return this.#hasModerator && !this.#moderatorConnected && !this.#moderatorUnreachable;
  }

  /** Calls every attendee that is not dial-in. */
  async start(): Promise<void> {
    await this.refresh();
  }

  /**
   * Brings the room in line with the store: calls attendees added since, hangs up those deleted, and
   * ends everything when the conference itself was deleted.
   */
  async refresh(): Promise<void> {
    if (this.#ended) return;
    const { conference, attendees } = await loadRoom(this.#options.store, this.#conference.id);
    if (this.#ended) return;
    if (conference === undefined || conference.state !== "started") {
      this.#end(conference === undefined ? "conference deleted" : `conference ${conference.state}`);
      return;
    }
    this.#conference = conference;
    const present = new Set(attendees.map((attendee) => attendee.id));
    for (const [attendeeId, leg] of this.#legs) {
      if (!present.has(attendeeId)) {
        this.#options.logger.info(
          { conferenceId: conference.id, attendeeId },
          "attendee deleted: hanging up",
        );
        this.#legs.delete(attendeeId);
        leg.slot?.remove();
        leg.call.hangup();
      }
    }
    this.#hasModerator = attendees.some((attendee) => attendee.moderator);
    this.#hasDialIn = attendees.some((attendee) => attendee.dialIn);
    for (const attendee of attendees) {
      if (!attendee.dialIn && attendee.state === "new" && !this.#dialled.has(attendee.id))
        this.#dial(attendee);
    }
    this.#endIfEmpty();
  }

  /** One 20 ms step of the room's audio. */
  tick(): void {
    if (this.#ended) return;
    if (!this.onHold) {
      this.#mixer.tick();
      return;
    }
    // Hold: everyone connected hears the music; what they say goes nowhere (but is read, to keep
    // their jitter buffers drained).
    this.#holdMusic.next(this.#frame);
    for (const leg of this.#legs.values()) {
      if (leg.call.state !== "answered") continue;
      leg.call.readAudio(this.#scratch);
      leg.call.sendAudio(this.#frame);
    }
  }

  readonly #scratch = new Int16Array(FRAME_SAMPLES);

  /** Hangs everyone up and ends the conference (graceful shutdown, or the conference ending). */
  close(reason: string): Promise<void> {
    this.#end(reason);
    return this.#writes.then(() => undefined);
  }

  #dial(attendee: Attendee): void {
    const conferenceId = this.#conference.id;
    const number = `+${attendee.phoneNumberCountryCode ?? "1"}${attendee.phoneNumberSubscriberNumber ?? ""}`;
    this.#dialled.add(attendee.id);
    const call = this.#options.telephony.placeCall(number);
    const leg: Leg = { attendeeId: attendee.id, moderator: attendee.moderator, call, slot: undefined };
    this.#legs.set(attendee.id, leg);
    this.#record(attendee.id, { kind: "calling" });
    this.#options.logger.info({ conferenceId, attendeeId: attendee.id, number }, "calling attendee");

    call.on("answered", () => {
      if (this.#legs.get(attendee.id) !== leg) return;
      const muted = this.#conference.lectureMode && !attendee.moderator;
      leg.slot = this.#mixer.addParticipant(
        {
          read: (out) => call.readAudio(out) !== "silence",
          write: (frame) => call.sendAudio(frame),
        },
        { muted },
      );
      this.#anyoneConnected = true;
      if (attendee.moderator) this.#moderatorConnected = true;
      this.#record(attendee.id, { kind: "connected", muted });
      this.#options.logger.info({ conferenceId, attendeeId: attendee.id }, "attendee connected");
      if (this.#announces) this.#mixer.play(entryTone());
      const extension = attendee.phoneNumberExtension;
      // "w" (wait for the far end's prompt) is taken as a pause, as "," is.
      if (extension) void call.sendDigits(extension.replace(/w/gi, ","));
    });
    call.on("failed", (failure) => {
      if (this.#legs.get(attendee.id) !== leg) return;
      this.#legs.delete(attendee.id);
      const state = stateAfterFailedCall(failure.status);
      const result = `${failure.status} ${failure.reason}`;
      this.#record(attendee.id, { kind: "failed", state, result });
      this.#options.logger.warn(
        { conferenceId, attendeeId: attendee.id, status: failure.status, reason: failure.reason },
        `attendee call ${state}`,
      );
      if (attendee.moderator && !this.#moderatorConnected) this.#moderatorUnreachable = true;
      this.#endIfEmpty();
    });
    call.on("ended", (end) => {
      if (this.#legs.get(attendee.id) !== leg) return;
      this.#legs.delete(attendee.id);
      leg.slot?.remove();
      this.#record(attendee.id, { kind: "disconnected", result: `${end.by}: ${end.reason}` });
      this.#options.logger.info(
        { conferenceId, attendeeId: attendee.id, by: end.by },
        "attendee disconnected",
      );
      if (this.#announces) this.#mixer.play(exitTone());
      if (attendee.moderator) this.#end("the moderator left");
      else this.#endIfEmpty();
    });
  }

  get #announces(): boolean {
    return this.#conference.announceAttendees && !this.#conference.directDial;
  }

  /**
   * The last attendee leaving ends the conference: nobody on a call and nobody left to call, once
   * someone has been connected, or at once when no one can dial in either.
   */
  #endIfEmpty(): void {
    if (this.#ended || this.#legs.size > 0) return;
    if (this.#anyoneConnected || !this.#hasDialIn) this.#end("no attendee left");
  }

  #end(reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const leg of this.#legs.values()) {
      leg.slot?.remove();
      leg.call.hangup();
    }
    const conferenceId = this.#conference.id;
    this.#options.logger.info({ conferenceId, reason }, "conference ended");
    // The hung-up legs' own "ended" events come after this; endConference disconnects them all.
    this.#legs.clear();
    this.#queue(() => endConference(this.#options.store, conferenceId, new Date()));
    void this.#writes.then(() => this.#options.onEnded(this));
  }

  #record(attendeeId: number, event: Parameters<typeof recordAttendeeCall>[2]): void {
    const at = new Date();
    this.#queue(() => recordAttendeeCall(this.#options.store, attendeeId, event, at));
  }

  #queue(write: () => Promise<unknown>): void {
    this.#writes = this.#writes.then(write).catch((error: unknown) => {
      this.#options.logger.warn(
        { err: error, conferenceId: this.#conference.id },
        "conference state not saved",
      );
    });
  }
}
