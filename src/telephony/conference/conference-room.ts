/**
 * One started conference taking place: it calls the attendees, greets them (press 1 to join, say
 * your name) unless the conference dials direct, joins them into one mixed room, plays hold music
 * until the moderator is there, obeys keypad commands, records, and ends when the moderator (or the
 * last attendee) leaves. Every change of an attendee's call is written to the store as it happens,
 * so the API reads the truth, each with its event for live views (talking started and stopped too).
 * Changes made through the API (attendees added, deleted, muted or called again, the conference's
 * controls changed, the conference ended or deleted) reach the room through `refresh`, which the
 * runtime calls on every poll, so they work whichever instance took the request.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { Attendee } from "../../domain/attendee.js";
import { stateAfterFailedCall } from "../../domain/attendee.js";
import type { Conference } from "../../domain/conference.js";
import type { ConferenceEventType } from "../../domain/event.js";
import { type KeypadCommand, KeypadReader } from "../../domain/keypad.js";
import { recordingFileName } from "../../domain/recording.js";
import {
  endConference,
  loadRoom,
  ownerName,
  recordAttendeeCall,
  recordAttendeeControls,
  recordConferenceControls,
} from "../../store/conference-runtime.js";
import type { Store } from "../../store/database.js";
import { appendEvent } from "../../store/events.js";
import type { RoomScope } from "../../store/live-events.js";
import { recordingsDirectory, setRecordingFile } from "../../store/recordings.js";
import type { Call } from "../call.js";
import { Mixer, type MixerSlot } from "../media/mixer.js";
import { concatPrompts, numberPrompt, type PromptName, prompt } from "../media/prompts.js";
import { speak } from "../media/speech.js";
import { TalkDetector } from "../media/talk-detector.js";
import { entryTone, exitTone, holdMusic, LoopingPlayer } from "../media/tones.js";
import { WavRecorder } from "../media/wav-recorder.js";
import type { Telephony } from "../telephony.js";
import { CallMenu } from "./call-menu.js";

export interface RoomLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface RoomOptions {
  readonly telephony: Telephony;
  readonly store: Store;
  readonly logger: RoomLogger;
  /** Recordings go to `<dataDir>/recordings/`. */
  readonly dataDir: string;
  /** Told once the conference has ended and its calls are hung up. */
  readonly onEnded: (room: ConferenceRoom) => void;
}

/** One attendee's call in the room. */
interface Leg {
  readonly attendeeId: number;
  readonly moderator: boolean;
  readonly call: Call;
  slot: MixerSlot | undefined;
  handRaisedAt: number | undefined;
  /** The caller's recorded name, announced on entry and exit; null for a tone. */
  name: Int16Array | null;
  /** The leg is in the press-1 greeting, not yet in the room. */
  menu: CallMenu | undefined;
  readonly talk: TalkDetector;
}

const FRAME_SAMPLES = 160;
/** Tries of the "press 1 to join" greeting before a polite goodbye. */
const INVITATION_TRIES = 2;
const INVITATION_WAIT_MS = 6_000;
const NAME_RECORDING_MS = 4_000;
/** Long enough for everyone to hear why the call ends. */
const ENDING_ANNOUNCEMENT_MS = 2_500;

export class ConferenceRoom {
  readonly #options: RoomOptions;
  #conference: Conference;
  readonly #mixer = new Mixer({
    onMix: (mix) => {
      if (this.#recording) this.#recorder?.write(mix);
    },
  });
  readonly #legs = new Map<number, Leg>();
  /** Attendees called at least once by this room, so that each is dialled once per conference. */
  readonly #dialled = new Set<number>();
  readonly #holdMusic = new LoopingPlayer(holdMusic());
  readonly #frame = new Int16Array(FRAME_SAMPLES);
  readonly #scratch = new Int16Array(FRAME_SAMPLES);
  #hasModerator = false;
  #moderatorConnected = false;
  /** The moderator cannot come (its call failed): the room goes on without hold music. */
  #moderatorUnreachable = false;
  #anyoneConnected = false;
  #hasDialIn = false;
  #ended = false;
  /** The conference's recording file, opened once; `#recording` says whether the mix goes into it now. */
  #recorder: WavRecorder | undefined;
  #recorderOpening = false;
  #recording = false;
  #spokenInvitation: Promise<Int16Array> | undefined;
  /** Store writes in the order the calls produced them. */
  #writes: Promise<unknown> = Promise.resolve();
  /**
   * Counts the room's own changes of state as they are queued: a refresh that read the store while
   * one was on its way would read it stale, and leaves the room's controls as they are.
   */
  #stateWrites = 0;
  /** The API's call-again requests this room has taken, by attendee, so that each is acted on once. */
  readonly #callRequestsTaken = new Map<number, string>();
  /** The conference is ending (announced, about to hang up). */
  #ending = false;

  constructor(conference: Conference, options: RoomOptions) {
    this.#conference = conference;
    this.#options = options;
  }

  get conferenceId(): number {
    return this.#conference.id;
  }

  /** What the room's writes and events are about. */
  get #scope(): RoomScope {
    return { userId: this.#conference.userId, conferenceId: this.#conference.id };
  }

  get conference(): Conference {
    return this.#conference;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Whether connected attendees hear hold music rather than each other. */
  get onHold(): boolean {
    return this.#hasModerator && !this.#moderatorConnected && !this.#moderatorUnreachable;
  }

  /** Attendees in the room (not those still in the greeting). */
  get participants(): number {
    let count = 0;
    for (const leg of this.#legs.values()) if (leg.slot !== undefined) count++;
    return count;
  }

  /** Calls every attendee that is not dial-in, and starts the recording if the conference asks for one. */
  async start(): Promise<void> {
    if (this.#conference.recordAudio) this.#startRecording();
    await this.refresh();
  }

  /**
   * Brings the room in line with the store: calls attendees added since, hangs up those deleted, and
   * ends everything when the conference itself was deleted.
   */
  async refresh(): Promise<void> {
    if (this.#ended) return;
    const writesBefore = this.#stateWrites;
    await this.#writes;
    const { conference, attendees, endRequestedAt, callRequests } = await loadRoom(
      this.#options.store,
      this.#conference.id,
    );
    if (this.#ended) return;
    if (conference === undefined || conference.state !== "started") {
      this.#end(conference === undefined ? "conference deleted" : `conference ${conference.state}`);
      return;
    }
    const previous = this.#conference;
    if (this.#stateWrites === writesBefore) {
      this.#conference = conference;
      this.#applyControls(previous, attendees);
    } else {
      // The store may not show the room's own latest changes yet; the next refresh applies the rest.
      const { dialInLocked, lectureMode, recordAudio } = previous;
      this.#conference = { ...conference, dialInLocked, lectureMode, recordAudio };
    }
    if (endRequestedAt !== null) this.#endAfterAnnouncement("ended through the API");
    const present = new Set(attendees.map((attendee) => attendee.id));
    for (const [attendeeId, leg] of this.#legs) {
      if (!present.has(attendeeId)) {
        this.#options.logger.info(
          { conferenceId: conference.id, attendeeId },
          "attendee deleted: hanging up",
        );
        this.#legs.delete(attendeeId);
        leg.slot?.remove();
        leg.menu?.detach();
        leg.call.hangup();
      }
    }
    this.#hasModerator = attendees.some((attendee) => attendee.moderator);
    this.#hasDialIn = attendees.some((attendee) => attendee.dialIn);
    for (const attendee of attendees) {
      if (!attendee.dialIn && attendee.state === "new" && !this.#dialled.has(attendee.id) && !this.#ending)
        this.#dial(attendee);
    }
    for (const attendee of attendees) {
      const requestedAt = callRequests.get(attendee.id);
      if (requestedAt === undefined || this.#callRequestsTaken.get(attendee.id) === requestedAt) continue;
      this.#callRequestsTaken.set(attendee.id, requestedAt);
      if (!this.#legs.has(attendee.id) && attendee.phoneNumberSubscriberNumber !== null && !this.#ending)
        this.#dial(attendee);
    }
    this.#endIfEmpty();
  }

  /**
   * Brings the room's controls in line with what the API stored: each leg's muted flag and raised
   * hand, every member muted or not with lecture mode, and recording on or off. (Dial-in lock is
   * read from the conference.)
   */
  #applyControls(previous: Conference, attendees: readonly Attendee[]): void {
    for (const attendee of attendees) {
      const leg = this.#legs.get(attendee.id);
      const slot = leg?.slot;
      if (leg === undefined || slot === undefined) continue;
      if (attendee.muted !== null && attendee.muted !== slot.muted) {
        slot.muted = attendee.muted;
        this.#mixer.play(prompt(attendee.muted ? "muted" : "unmuted"), { to: slot });
      }
      if (attendee.handUp !== null && attendee.handUp !== (leg.handRaisedAt !== undefined))
        leg.handRaisedAt = attendee.handUp ? Date.now() : undefined;
    }
    const { lectureMode } = this.#conference;
    if (lectureMode !== previous.lectureMode) {
      // The API muted the members stored as connected; a member whose join the store does not show
      // yet joined under the old mode, so the room brings it in line itself.
      const now = new Date();
      for (const leg of this.#legs.values()) {
        if (leg.moderator || leg.slot === undefined || leg.slot.muted === lectureMode) continue;
        leg.slot.muted = lectureMode;
        this.#controls(leg, { muted: lectureMode }, now);
      }
    }
    if (this.#conference.recordAudio !== previous.recordAudio) {
      if (this.#conference.recordAudio) this.#startRecording();
      else this.#pauseRecording();
      this.#mixer.play(prompt(this.#conference.recordAudio ? "recording-started" : "recording-stopped"));
    }
  }

  /**
   * Takes a caller who dialled in and entered a PIN: into the room as the attendee the store matched,
   * as moderator when it used the moderator PIN.
   */
  admit(call: Call, attendee: Attendee, moderator: boolean): void {
    if (this.#ended) {
      call.hangup();
      return;
    }
    const leg = this.#newLeg(call, attendee.id, moderator);
    this.#legs.set(attendee.id, leg);
    this.#followCallEnd(leg);
    this.#join(leg);
  }

  /** One 20 ms step of the room's audio. */
  tick(): void {
    if (this.#ended) return;
    for (const leg of this.#legs.values()) leg.menu?.tick();
    if (!this.onHold) {
      this.#mixer.tick();
      for (const leg of this.#legs.values()) {
        const slot = leg.slot;
        if (slot !== undefined && leg.talk.update(slot.level, slot.muted))
          this.#event(leg.talk.talking ? "talking-started" : "talking-stopped", leg.attendeeId);
      }
      return;
    }
    // Hold: everyone in the room hears the music; what they say goes nowhere (but is read, to keep
    // their jitter buffers drained and their keys heard).
    this.#holdMusic.next(this.#frame);
    for (const leg of this.#legs.values()) {
      if (leg.slot === undefined) continue;
      leg.call.readAudio(this.#scratch);
      leg.call.sendAudio(this.#frame);
    }
  }

  /** Hangs everyone up and ends the conference (graceful shutdown, or the conference ending). */
  close(reason: string): Promise<void> {
    this.#end(reason);
    return this.#writes.then(() => undefined);
  }

  #newLeg(call: Call, attendeeId: number, moderator: boolean): Leg {
    return {
      attendeeId,
      moderator,
      call,
      slot: undefined,
      handRaisedAt: undefined,
      name: null,
      menu: undefined,
      talk: new TalkDetector(),
    };
  }

  #dial(attendee: Attendee): void {
    const conferenceId = this.#conference.id;
    const number = `+${attendee.phoneNumberCountryCode ?? "1"}${attendee.phoneNumberSubscriberNumber ?? ""}`;
    this.#dialled.add(attendee.id);
    const call = this.#options.telephony.placeCall(number);
    const leg = this.#newLeg(call, attendee.id, attendee.moderator);
    this.#legs.set(attendee.id, leg);
    this.#record(attendee.id, { kind: "calling" });
    this.#options.logger.info({ conferenceId, attendeeId: attendee.id, number }, "calling attendee");

    call.on("answered", () => {
      if (this.#legs.get(attendee.id) !== leg) return;
      const extension = attendee.phoneNumberExtension;
      // "w" (wait for the far end's prompt) is taken as a pause, as "," is.
      const dialled = extension ? call.sendDigits(extension.replace(/w/gi, ",")) : Promise.resolve(true);
      if (this.#conference.directDial) {
        this.#join(leg);
        return;
      }
      // The menu listens from the answer on: keys pressed while the extension goes out count.
      const menu = new CallMenu(call);
      leg.menu = menu;
      void dialled.then(() => this.#greet(leg, menu));
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
    this.#followCallEnd(leg);
  }

  /**
   * The greeting of a dialled attendee when the conference does not dial direct: press 1 to join
   * (twice at most; an answering machine never presses it), then, with announcements, say your name.
   */
  async #greet(leg: Leg, menu: CallMenu): Promise<void> {
    try {
      let accepted = false;
      const invitation = await this.#invitation();
      for (let attempt = 0; attempt < INVITATION_TRIES && !accepted; attempt++) {
        menu.play(invitation);
        const keys = await menu.collect({ maxKeys: 1, timeoutMs: INVITATION_WAIT_MS });
        menu.stopPlaying();
        accepted = keys === "1";
      }
      if (this.#legs.get(leg.attendeeId) !== leg) return;
      if (!accepted) {
        menu.play(concatPrompts(["no-response", "goodbye"]));
        await menu.drained();
        this.#legs.delete(leg.attendeeId);
        this.#record(leg.attendeeId, {
          kind: "failed",
          state: "no-answer",
          result: "answered but did not press 1",
        });
        leg.call.hangup();
        this.#endIfEmpty();
        return;
      }
      if (this.#conference.announceAttendees) {
        menu.play(prompt("record-name"));
        await menu.drained();
        menu.play(entryTone());
        await menu.drained();
        const name = await menu.record(NAME_RECORDING_MS, "#");
        leg.name = name.length > 0 ? name : null;
      }
      if (this.#legs.get(leg.attendeeId) !== leg) return;
      this.#join(leg);
    } finally {
      menu.detach();
      leg.menu = undefined;
    }
  }

  /**
   * "<owner> invites you to the conference <name>. Press 1 to join.", spoken when the machine has
   * espeak-ng (made once per room), else the recorded generic invitation.
   */
  #invitation(): Promise<Int16Array> {
    this.#spokenInvitation ??= ownerName(this.#options.store, this.#conference.userId)
      .then((owner) =>
        speak(
          `${owner ?? "Someone"} invites you to the telephone conference ${this.#conference.name}. Press 1 to join.`,
        ),
      )
      .then((spoken) => spoken ?? prompt("invitation"))
      .catch(() => prompt("invitation"));
    return this.#spokenInvitation;
  }

  /** Into the mix: muted in lecture mode, announced to the others, its keys obeyed. */
  #join(leg: Leg): void {
    const conferenceId = this.#conference.id;
    const muted = this.#conference.lectureMode && !leg.moderator;
    const keypad = new KeypadReader(() => leg.moderator);
    leg.call.on("digit", (key) => {
      const command = keypad.press(key);
      if (command !== undefined) this.#obey(leg, command);
    });
    leg.slot = this.#mixer.addParticipant(
      {
        read: (out) => leg.call.readAudio(out) !== "silence",
        write: (frame) => leg.call.sendAudio(frame),
      },
      { muted },
    );
    this.#anyoneConnected = true;
    if (leg.moderator) this.#moderatorConnected = true;
    this.#record(leg.attendeeId, { kind: "connected", muted });
    this.#options.logger.info({ conferenceId, attendeeId: leg.attendeeId }, "attendee connected");
    if (leg.moderator && leg.call.direction === "inbound")
      this.#mixer.play(prompt("you-are-moderator"), { to: leg.slot });
    this.#announce(leg, entryTone());
  }

  #followCallEnd(leg: Leg): void {
    leg.call.on("ended", (end) => {
      if (this.#legs.get(leg.attendeeId) !== leg) return;
      this.#legs.delete(leg.attendeeId);
      leg.slot?.remove();
      leg.menu?.detach();
      if (leg.talk.talking) this.#event("talking-stopped", leg.attendeeId);
      this.#record(leg.attendeeId, { kind: "disconnected", result: `${end.by}: ${end.reason}` });
      this.#options.logger.info(
        { conferenceId: this.#conference.id, attendeeId: leg.attendeeId, by: end.by },
        "attendee disconnected",
      );
      if (leg.slot !== undefined) this.#announce(leg, exitTone());
      if (leg.moderator && leg.slot !== undefined) this.#end("the moderator left");
      else this.#endIfEmpty();
    });
  }

  /** Entry and exit are announced on legs that went through the greeting, when the conference asks. */
  #announce(leg: Leg, tone: Int16Array): void {
    if (!this.#conference.announceAttendees || this.#conference.directDial) return;
    this.#mixer.play(leg.name ?? tone);
  }

  /** Carries out a keypad command and tells the caller how it went. */
  #obey(leg: Leg, command: KeypadCommand): void {
    const slot = leg.slot;
    if (slot === undefined) return;
    const reply = this.#carryOut(leg, slot, command);
    if (reply.length > 0) this.#mixer.play(concatPrompts(reply), { to: slot });
  }

  /** The prompts the caller hears in reply (none when everyone hears one). */
  #carryOut(leg: Leg, slot: MixerSlot, command: KeypadCommand): PromptName[] {
    const now = new Date();
    switch (command) {
      case "toggle-mute": {
        if (this.#conference.lectureMode && !leg.moderator) return ["muting-not-allowed"];
        slot.muted = !slot.muted;
        this.#controls(leg, { muted: slot.muted }, now);
        return [slot.muted ? "muted" : "unmuted"];
      }
      case "toggle-hand": {
        leg.handRaisedAt = leg.handRaisedAt === undefined ? Date.now() : undefined;
        this.#controls(leg, { handUp: leg.handRaisedAt !== undefined }, now);
        return [leg.handRaisedAt === undefined ? "hand-lowered" : "hand-raised"];
      }
      case "count":
        return ["participants", numberPrompt(this.participants)];
      case "help":
        return leg.moderator ? ["help-member", "help-moderator"] : ["help-member"];
      case "toggle-lock": {
        const dialInLocked = !this.#conference.dialInLocked;
        this.#conference = { ...this.#conference, dialInLocked };
        this.#queue(() => recordConferenceControls(this.#options.store, this.#scope, { dialInLocked }, now));
        return [dialInLocked ? "conference-locked-now" : "conference-unlocked"];
      }
      case "toggle-lecture": {
        const lectureMode = !this.#conference.lectureMode;
        this.#conference = { ...this.#conference, lectureMode };
        for (const other of this.#legs.values()) {
          if (other.moderator || other.slot === undefined) continue;
          other.slot.muted = lectureMode;
          this.#controls(other, { muted: lectureMode }, now);
        }
        // Written after the members' muted flags, so that the API never shows the mode without them.
        this.#queue(() => recordConferenceControls(this.#options.store, this.#scope, { lectureMode }, now));
        return [lectureMode ? "lecture-on" : "lecture-off"];
      }
      case "mute-all": {
        for (const other of this.#legs.values()) {
          if (other === leg || other.slot === undefined || other.slot.muted) continue;
          other.slot.muted = true;
          this.#controls(other, { muted: true }, now);
        }
        return ["all-muted"];
      }
      case "unmute-next-hand": {
        let next: Leg | undefined;
        for (const other of this.#legs.values()) {
          if (
            other.handRaisedAt !== undefined &&
            (next === undefined || other.handRaisedAt < (next.handRaisedAt ?? 0))
          )
            next = other;
        }
        if (next?.slot === undefined) return [];
        next.slot.muted = false;
        next.handRaisedAt = undefined;
        this.#controls(next, { muted: false, handUp: false }, now);
        this.#mixer.play(prompt("unmuted"), { to: next.slot });
        return [];
      }
      case "toggle-recording": {
        const recording = !this.#recording;
        if (recording) this.#startRecording();
        else this.#pauseRecording();
        this.#conference = { ...this.#conference, recordAudio: recording };
        this.#queue(() =>
          recordConferenceControls(this.#options.store, this.#scope, { recordAudio: recording }, now),
        );
        this.#mixer.play(prompt(recording ? "recording-started" : "recording-stopped"));
        return [];
      }
      case "end-conference": {
        this.#endAfterAnnouncement("the moderator ended it from the keypad");
        return [];
      }
    }
  }

  #controls(leg: Leg, controls: { muted?: boolean; handUp?: boolean }, now: Date): void {
    this.#queue(() =>
      recordAttendeeControls(this.#options.store, this.#scope, leg.attendeeId, controls, now),
    );
  }

  /**
   * The room's mix to a WAV file named after the conference, in the data directory's recordings/;
   * after a pause (`*8`) the same file goes on.
   */
  #startRecording(): void {
    this.#recording = true;
    if (this.#recorder !== undefined || this.#recorderOpening) return;
    this.#recorderOpening = true;
    const fileName = recordingFileName(this.#conference);
    const directory = recordingsDirectory(this.#options.dataDir);
    const file = path.join(directory, fileName);
    void mkdir(directory, { recursive: true })
      .then(() => WavRecorder.open(file))
      .then(
        (recorder) => {
          this.#recorderOpening = false;
          if (this.#ended) {
            void recorder.close();
            return;
          }
          this.#recorder = recorder;
          this.#queue(() => setRecordingFile(this.#options.store, this.conferenceId, fileName));
          this.#options.logger.info({ conferenceId: this.conferenceId, file }, "recording started");
        },
        (error: unknown) => {
          this.#recorderOpening = false;
          this.#recording = false;
          this.#options.logger.warn(
            { err: error, conferenceId: this.conferenceId, file },
            "recording could not start",
          );
        },
      );
  }

  /** Stops writing the mix, with what was written so far on disk. */
  #pauseRecording(): void {
    this.#recording = false;
    const recorder = this.#recorder;
    if (recorder !== undefined) this.#queue(() => recorder.flush());
  }

  #closeRecording(): void {
    this.#recording = false;
    const recorder = this.#recorder;
    this.#recorder = undefined;
    if (recorder !== undefined) this.#queue(() => recorder.close());
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
      leg.menu?.detach();
      leg.call.hangup();
    }
    const conferenceId = this.#conference.id;
    this.#options.logger.info({ conferenceId, reason }, "conference ended");
    // The hung-up legs' own "ended" events come after this; endConference disconnects them all.
    this.#legs.clear();
    this.#closeRecording();
    const scope = this.#scope;
    this.#queue(() => endConference(this.#options.store, scope, reason, new Date()));
    void this.#writes.then(() => this.#options.onEnded(this));
  }

  /** Tells everyone the conference is ending, and ends it a moment later. */
  #endAfterAnnouncement(reason: string): void {
    if (this.#ending) return;
    this.#ending = true;
    this.#mixer.play(prompt("conference-ending"));
    setTimeout(() => this.#end(reason), ENDING_ANNOUNCEMENT_MS).unref();
  }

  #record(attendeeId: number, event: Parameters<typeof recordAttendeeCall>[3]): void {
    const at = new Date();
    const scope = this.#scope;
    this.#queue(() => recordAttendeeCall(this.#options.store, scope, attendeeId, event, at));
  }

  /** An event that changes no state (talking), after the writes queued before it. */
  #event(type: ConferenceEventType, attendeeId: number): void {
    const event = { ...this.#scope, attendeeId, type, reason: null };
    const at = new Date();
    this.#append(() => appendEvent(this.#options.store, event, at));
  }

  #queue(write: () => Promise<unknown>): void {
    this.#stateWrites++;
    this.#append(write);
  }

  #append(write: () => Promise<unknown>): void {
    this.#writes = this.#writes.then(write).catch((error: unknown) => {
      this.#options.logger.warn(
        { err: error, conferenceId: this.#conference.id },
        "conference state not saved",
      );
    });
  }
}
