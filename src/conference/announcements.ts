/**
 * What the room says about its attendees: entry and exit (the recorded name, else a chime) to
 * everyone when the conference announces attendees and does not dial direct; "you are the moderator"
 * to a moderator who dialled in; and the spoken invitation dialled attendees hear.
 */
import type { Conference } from "../domain/conference.js";
import type { Leg } from "./leg.js";
import type { ConferenceStore, RoomMedia, Sound, Speak } from "./ports.js";

export interface AnnouncementsOptions {
  readonly media: RoomMedia;
  readonly store: ConferenceStore;
  readonly speak: Speak;
  /** The conference as the room has it now. */
  readonly conference: () => Conference;
}

const GENERIC_INVITATION: Sound = { prompts: ["invitation"] };

export class Announcements {
  readonly #options: AnnouncementsOptions;
  #invitation: Promise<Sound> | undefined;

  constructor(options: AnnouncementsOptions) {
    this.#options = options;
  }

  /** A moderator who dialled in is told so, alone. */
  welcome(leg: Leg): void {
    if (leg.moderator && leg.call.direction === "inbound")
      void leg.call.play({ prompts: ["you-are-moderator"] });
  }

  entered(leg: Leg): void {
    this.#announce(leg, "entry");
  }

  left(leg: Leg): void {
    this.#announce(leg, "exit");
  }

  /**
   * "<owner> invites you to the telephone conference <name>. Press 1 to join.", spoken when the
   * machine can speak (made once per room), else the recorded generic invitation.
   */
  invitation(): Promise<Sound> {
    const conference = this.#options.conference();
    this.#invitation ??= this.#options.store
      .ownerName(conference.userId)
      .then((owner) =>
        this.#options.speak(
          `${owner ?? "Someone"} invites you to the telephone conference ${conference.name}. Press 1 to join.`,
        ),
      )
      .then((samples): Sound => (samples === null ? GENERIC_INVITATION : { samples }))
      .catch(() => GENERIC_INVITATION);
    return this.#invitation;
  }

  /** Entry and exit are announced on legs that went through the greeting, when the conference asks. */
  #announce(leg: Leg, tone: "entry" | "exit"): void {
    const { announceAttendees, directDial } = this.#options.conference();
    if (!announceAttendees || directDial) return;
    this.#options.media.play(leg.name === null ? { tone } : { samples: leg.name });
  }
}
