/**
 * The keypad (DTMF) commands of a conference call: `*` followed by one key, `**` for help. Members
 * control themselves; the moderator also controls the room. The map is documented in
 * docs/keypad.md and sent in the notification e-mails.
 */

export type MemberCommand = "toggle-mute" | "toggle-hand" | "count" | "help";
export type ModeratorCommand =
  | "toggle-lock"
  | "toggle-lecture"
  | "mute-all"
  | "unmute-next-hand"
  | "toggle-recording"
  | "end-conference";
export type KeypadCommand = MemberCommand | ModeratorCommand;

export interface KeypadEntry {
  readonly keys: string;
  readonly command: KeypadCommand;
  readonly moderatorOnly: boolean;
  readonly description: string;
}

export const KEYPAD: readonly KeypadEntry[] = [
  { keys: "*6", command: "toggle-mute", moderatorOnly: false, description: "mute or unmute yourself" },
  { keys: "*7", command: "toggle-hand", moderatorOnly: false, description: "raise or lower your hand" },
  { keys: "*5", command: "count", moderatorOnly: false, description: "hear how many are in the conference" },
  { keys: "**", command: "help", moderatorOnly: false, description: "hear these commands" },
  { keys: "*1", command: "toggle-lock", moderatorOnly: true, description: "lock or unlock dial-in" },
  { keys: "*2", command: "toggle-lecture", moderatorOnly: true, description: "turn lecture mode on or off" },
  { keys: "*3", command: "mute-all", moderatorOnly: true, description: "mute everyone else" },
  {
    keys: "*4",
    command: "unmute-next-hand",
    moderatorOnly: true,
    description: "unmute the next raised hand",
  },
  {
    keys: "*8",
    command: "toggle-recording",
    moderatorOnly: true,
    description: "start or stop the recording",
  },
  {
    keys: "*9",
    command: "end-conference",
    moderatorOnly: true,
    description: "end the conference for everyone",
  },
];

const BY_KEYS = new Map(KEYPAD.map((entry) => [entry.keys, entry]));

/**
 * Reads the keys one caller presses: `*` starts a command and the next key completes it. Keys
 * outside a command, and commands the caller's role may not use, are ignored.
 */
export class KeypadReader {
  #pending = false;

  constructor(private readonly moderator: () => boolean) {}

  /** The command the key completes, if any. */
  press(key: string): KeypadCommand | undefined {
    if (!this.#pending) {
      this.#pending = key === "*";
      return undefined;
    }
    this.#pending = false;
    const entry = BY_KEYS.get(`*${key}`);
    if (entry === undefined || (entry.moderatorOnly && !this.moderator())) return undefined;
    return entry.command;
  }
}
