import { FieldReader, type InputMap } from "./input.js";
import { parseStartTime, type TimeContext } from "./time-expression.js";
import type { Versioned } from "./user.js";

export const CONFERENCE_STATES = ["new", "pending", "started", "ended"] as const;
export type ConferenceState = (typeof CONFERENCE_STATES)[number];

export interface Conference extends Versioned {
  userId: number;
  name: string;
  state: ConferenceState;
  scheduledToStartAt: string;
  startedAt: string | null;
  endedAt: string | null;
  directDial: boolean;
  dialInLocked: boolean;
  recordAudio: boolean;
  lectureMode: boolean;
  /** Only calls over SIP over TLS with SRTP media take part (domain/encryption.ts). */
  encryptedOnly: boolean;
  accountingCode: number | null;
  memberPin: string;
  moderatorPin: string;
  sendNotificationEmails: boolean;
  announceAttendees: boolean;
}

export interface ConferenceChanges {
  name?: string;
  scheduledToStartAt?: string;
  directDial?: boolean;
  dialInLocked?: boolean;
  recordAudio?: boolean;
  lectureMode?: boolean;
  encryptedOnly?: boolean;
  accountingCode?: number | null;
  /** The only state a client may ask for. */
  state?: "pending";
  sendNotificationEmails?: boolean;
  announceAttendees?: boolean;
  noModerator?: boolean;
}

const FLAGS = [
  ["direct-dial", "directDial"],
  ["dial-in-locked", "dialInLocked"],
  ["record-audio", "recordAudio"],
  ["lecture-mode", "lectureMode"],
  ["encrypted-only", "encryptedOnly"],
] as const;

const CREATE_ONLY_FLAGS = [
  ["send-notification-emails", "sendNotificationEmails"],
  ["announce-attendees", "announceAttendees"],
  ["no-moderator", "noModerator"],
] as const;

/**
 * Reads a conference document. The basic representation's bodies carry only name and
 * scheduled-to-start-at; create-only fields are ignored on update.
 */
export function readConferenceChanges(
  input: InputMap,
  mode: "create" | "update",
  representation: "extended" | "basic",
  time: TimeContext,
): ConferenceChanges {
  const reader = new FieldReader(input);
  const changes: ConferenceChanges = {};
  const creating = mode === "create";

  const name = creating ? reader.requiredText("name") : reader.text("name");
  if (name === null) reader.fail("name can't be blank");
  else if (name !== undefined) changes.name = name;

  const start = creating
    ? reader.requiredText("scheduled-to-start-at")
    : reader.text("scheduled-to-start-at");
  if (start === null) reader.fail("scheduled-to-start-at can't be blank");
  else if (start !== undefined) {
    const instant = parseStartTime(start, time);
    // Start times are kept to the whole second, as they are shown.
    if (instant)
      changes.scheduledToStartAt = new Date(Math.floor(instant.getTime() / 1000) * 1000).toISOString();
    else reader.fail(`scheduled-to-start-at is not a time that can be read: "${start}"`);
  }

  if (representation === "extended") {
    const flags = creating ? [...FLAGS, ...CREATE_ONLY_FLAGS] : FLAGS;
    for (const [element, field] of flags) {
      const value = reader.boolean(element);
      if (value === null) reader.fail(`${element} must be true or false`);
      else if (value !== undefined) changes[field] = value;
    }
    const accountingCode = reader.integer("accounting-code");
    if (accountingCode !== undefined) changes.accountingCode = accountingCode;
    const state = reader.text("state");
    if (state === "pending") changes.state = "pending";
    else if (state != null) reader.fail(`state can only be changed to pending, not "${state}"`);
  }
  reader.check();
  return changes;
}

/** The rules for changing a conference that already exists; returns the problems. */
export function conferenceUpdateProblems(current: Conference, changes: ConferenceChanges): string[] {
  const problems: string[] = [];
  if (current.state === "ended") return ["conference has ended and can no longer be changed"];
  if (changes.state === "pending" && current.state !== "new" && current.state !== "pending") {
    problems.push(`state can change only from new to pending; the conference is ${current.state}`);
  }
  if (
    changes.scheduledToStartAt !== undefined &&
    current.state === "started" &&
    changes.scheduledToStartAt !== current.scheduledToStartAt
  ) {
    problems.push("scheduled-to-start-at cannot change once the conference has started");
  }
  return problems;
}

/**
 * Lecture mode: only the moderator speaks. The muted flag the mode gives an attendee: members are
 * muted while it is on and unmuted when it goes off (so a member joins muted in lecture mode); the
 * moderator is left as they are (undefined), and so joins unmuted. The room (on join, on `*2` and on
 * the API's change) and the store (the API's change) both follow it.
 */
export function lectureModeMuting(lectureMode: boolean, moderator: boolean): boolean | undefined {
  return moderator ? undefined : lectureMode;
}

/** Whether an attendee may mute or unmute themselves (`*6`): not a member in lecture mode. */
export function mayMuteThemselves(lectureMode: boolean, moderator: boolean): boolean {
  return lectureModeMuting(lectureMode, moderator) !== true;
}

/** How long a started conference with nobody on a call stays open for callers. */
export interface EmptyConferencePeriods {
  /** After the last person left, so that a caller whose line dropped can call back. */
  readonly emptyGraceMs: number;
  /** After the start, while nobody has joined yet. */
  readonly noShowMs: number;
}

export interface EmptyConference {
  /** Callers can still come: there are access numbers (a locked conference still takes moderators). */
  readonly dialInOpen: boolean;
  /** When the conference started (its room opened). */
  readonly startedAt: Date;
  /** When the last person left; undefined while nobody has joined yet. */
  readonly emptiedAt: Date | undefined;
}

/**
 * When a started conference with nobody on a call ends, and why. When nobody can dial in, at once.
 * Otherwise it waits for callers: the grace period after the last person left, or until the no-show
 * period after the start while nobody has joined (a PIN-only conference opens empty).
 */
export function emptyConferenceEnd(
  conference: EmptyConference,
  periods: EmptyConferencePeriods,
): { readonly at: Date; readonly reason: string } {
  const { dialInOpen, startedAt, emptiedAt } = conference;
  if (emptiedAt !== undefined)
    return {
      at: dialInOpen ? new Date(emptiedAt.getTime() + periods.emptyGraceMs) : emptiedAt,
      reason: "no attendee left",
    };
  return {
    at: dialInOpen ? new Date(startedAt.getTime() + periods.noShowMs) : startedAt,
    reason: dialInOpen ? "nobody joined" : "no attendee left",
  };
}
