/**
 * The keypad commands of a caller in the room: its keys read by a KeypadReader, each command carried
 * out on the room, and the reply played to the caller alone (none when everyone hears one).
 */
import type { Conference } from "../domain/conference.js";
import { lectureModeMuting, mayMuteThemselves } from "../domain/conference.js";
import type { LiveControls } from "../domain/event.js";
import { type KeypadCommand, KeypadReader } from "../domain/keypad.js";
import { numberPrompt, type PromptName } from "../domain/prompt.js";
import type { Leg } from "./leg.js";
import type { Sound } from "./ports.js";

/** What the keypad commands change in the room. */
export interface KeypadRoom {
  readonly conference: Conference;
  /** Attendees in the room (not those still in the greeting). */
  readonly participants: number;
  /** The legs in the room, in the order they came. */
  joinedLegs(): Iterable<Leg>;
  /** The next mark in the order of raised hands. */
  nextHandMark(): number;
  /** Now, as the room's clock says: when its controls change. */
  now(): Date;
  /** Stores an attendee's muted and hand-up flags as they now are in the room. */
  storeAttendeeControls(leg: Leg, controls: { muted?: boolean; handUp?: boolean }, now: Date): void;
  /** Changes the room's own copy of the conference's controls and stores them. */
  changeConferenceControls(controls: Partial<LiveControls>, now: Date): void;
  readonly recording: { readonly on: boolean; start(): void; pause(): void };
  /** Plays to everyone in the room. */
  playToRoom(sound: Sound): void;
  endAfterAnnouncement(reason: string): void;
}

/** Listens to one leg's keys while it is in the room. */
export class Keypad {
  readonly #leg: Leg;
  readonly #room: KeypadRoom;
  readonly #reader: KeypadReader;
  readonly #onDigit = (key: string) => {
    const command = this.#reader.press(key);
    if (command !== undefined) this.#obey(command);
  };

  constructor(leg: Leg, room: KeypadRoom) {
    this.#leg = leg;
    this.#room = room;
    this.#reader = new KeypadReader(() => leg.moderator);
    leg.call.on("digit", this.#onDigit);
  }

  detach(): void {
    this.#leg.call.off("digit", this.#onDigit);
  }

  /** Carries out a keypad command and tells the caller how it went. */
  #obey(command: KeypadCommand): void {
    if (!this.#leg.joined) return;
    const reply = this.#carryOut(command);
    if (reply.length > 0) void this.#leg.call.play({ prompts: reply });
  }

  /** The prompts the caller hears in reply (none when everyone hears one). */
  #carryOut(command: KeypadCommand): PromptName[] {
    const leg = this.#leg;
    const room = this.#room;
    const now = room.now();
    switch (command) {
      case "toggle-mute": {
        if (!mayMuteThemselves(room.conference.lectureMode, leg.moderator)) return ["muting-not-allowed"];
        leg.setMuted(!leg.muted);
        room.storeAttendeeControls(leg, { muted: leg.muted }, now);
        return [leg.muted ? "muted" : "unmuted"];
      }
      case "toggle-hand": {
        leg.handRaisedAt = leg.handRaisedAt === undefined ? room.nextHandMark() : undefined;
        room.storeAttendeeControls(leg, { handUp: leg.handRaisedAt !== undefined }, now);
        return [leg.handRaisedAt === undefined ? "hand-lowered" : "hand-raised"];
      }
      case "count":
        return ["participants", numberPrompt(room.participants)];
      case "help":
        return leg.moderator ? ["help-member", "help-moderator"] : ["help-member"];
      case "toggle-lock": {
        const dialInLocked = !room.conference.dialInLocked;
        room.changeConferenceControls({ dialInLocked }, now);
        return [dialInLocked ? "conference-locked-now" : "conference-unlocked"];
      }
      case "toggle-lecture": {
        const lectureMode = !room.conference.lectureMode;
        for (const other of room.joinedLegs()) {
          const muted = lectureModeMuting(lectureMode, other.moderator);
          if (muted === undefined) continue;
          other.setMuted(muted);
          room.storeAttendeeControls(other, { muted }, now);
        }
        // Stored after the members' muted flags, so that the API never shows the mode without them.
        room.changeConferenceControls({ lectureMode }, now);
        return [lectureMode ? "lecture-on" : "lecture-off"];
      }
      case "mute-all": {
        for (const other of room.joinedLegs()) {
          if (other === leg || other.muted) continue;
          other.setMuted(true);
          room.storeAttendeeControls(other, { muted: true }, now);
        }
        return ["all-muted"];
      }
      case "unmute-next-hand": {
        let next: Leg | undefined;
        for (const other of room.joinedLegs()) {
          if (
            other.handRaisedAt !== undefined &&
            (next?.handRaisedAt === undefined || other.handRaisedAt < next.handRaisedAt)
          )
            next = other;
        }
        if (next === undefined) return [];
        next.setMuted(false);
        next.handRaisedAt = undefined;
        room.storeAttendeeControls(next, { muted: false, handUp: false }, now);
        void next.call.play({ prompts: ["unmuted"] });
        return [];
      }
      case "toggle-recording": {
        const recording = !room.recording.on;
        if (recording) room.recording.start();
        else room.recording.pause();
        room.changeConferenceControls({ recordAudio: recording }, now);
        room.playToRoom({ prompts: [recording ? "recording-started" : "recording-stopped"] });
        return [];
      }
      case "end-conference": {
        room.endAfterAnnouncement("the moderator ended it from the keypad");
        return [];
      }
    }
  }
}
