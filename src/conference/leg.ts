/** One attendee's call as the room knows it: in the greeting, or joined into the room's audio. */
import type { CallEncryption } from "../domain/encryption.js";
import type { CallMenu } from "./call-menu.js";
import type { ConferenceCall } from "./ports.js";

export class Leg {
  readonly attendeeId: number;
  readonly moderator: boolean;
  readonly call: ConferenceCall;
  /** In the room's audio (past the greeting). */
  joined = false;
  muted = false;
  /** When the hand went up, as the room's order of raised hands; undefined while it is down. */
  handRaisedAt: number | undefined;
  /** The caller's recorded name, announced on entry and exit; null for a tone. */
  name: Int16Array | null = null;
  /** The leg is in the press-1 greeting, not yet in the room. */
  menu: CallMenu | undefined;
  /** As the call's last `talking` event said. */
  talking = false;
  /** How the caller's call is protected, as of its answer (a caller carried here: its own call's). */
  encryption: CallEncryption = "none";

  constructor(call: ConferenceCall, attendeeId: number, moderator: boolean) {
    this.call = call;
    this.attendeeId = attendeeId;
    this.moderator = moderator;
  }

  /** Mutes or unmutes the caller in the room's audio. */
  setMuted(muted: boolean): void {
    this.muted = muted;
    this.call.setMuted(muted);
  }

  /** Out of the greeting and of the room's audio, before the call is hung up or after it ended. */
  leave(): void {
    this.menu?.detach();
    if (this.joined) this.call.leave();
  }
}
