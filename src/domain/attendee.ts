import { isValidEmail } from "./email.js";
import type { CallEncryption } from "./encryption.js";
import { FieldReader, type InputMap } from "./input.js";
import { type CallingPolicy, normalizeNanpNumber, OPEN_CALLING_POLICY, whyNotCallable } from "./phone.js";
import type { Versioned } from "./user.js";

export const MAX_ATTENDEES_PER_CONFERENCE = 250;

export const ATTENDEE_STATES = [
  "new",
  "calling",
  "connected",
  "disconnected",
  "busy",
  "no-answer",
  "failed",
] as const;
export type AttendeeState = (typeof ATTENDEE_STATES)[number];

/** Attendee states that stand for a call in progress. */
export const CALL_IN_PROGRESS: readonly AttendeeState[] = ["calling", "connected"];

export interface Attendee extends Versioned {
  conferenceId: number;
  state: AttendeeState;
  phoneNumberCountryCode: string | null;
  phoneNumberSubscriberNumber: string | null;
  phoneNumberExtension: string | null;
  phoneNumberLocation: string | null;
  moderator: boolean;
  muted: boolean | null;
  handUp: boolean | null;
  dialIn: boolean;
  name: string | null;
  email: string | null;
  duration: number | null;
  /** How the attendee's current (or last) call is protected; null until connected once. */
  encryption: CallEncryption | null;
}

/**
 * Connected seconds so far: those of earlier calls plus the current call's, counted from its answer,
 * so that the API reads the truth while a call runs. Null until the attendee has been connected.
 */
export function connectedSeconds(
  stored: number | null,
  connectedAt: string | null,
  now: number,
): number | null {
  if (connectedAt === null) return stored;
  const current = Math.max(0, Math.floor((now - Date.parse(connectedAt)) / 1000));
  return (stored ?? 0) + current;
}

/** The attendee state a failed call leaves (RFC 3261 status classes): busy, no answer, or failed. */
export function stateAfterFailedCall(status: number): AttendeeState {
  if (status === 486 || status === 600 || status === 603) return "busy";
  if (status === 408 || status === 480 || status === 487) return "no-answer";
  return "failed";
}

export interface AttendeeChanges {
  phoneNumberCountryCode?: string | null;
  phoneNumberSubscriberNumber?: string | null;
  phoneNumberExtension?: string | null;
  phoneNumberLocation?: string | null;
  moderator?: boolean;
  dialIn?: boolean;
  name?: string | null;
  email?: string | null;
  /** Live controls: only while the conference is started (the running room applies them). */
  muted?: boolean;
  handUp?: boolean;
}

/** Digits, *, #, "," (a one-second pause) and w (wait for the far end's prompt). */
const EXTENSION_PATTERN = /^[0-9*#,w]{1,40}$/i;

/**
 * Reads an attendee document; name and email are create-only, muted and hand-up update-only. A phone
 * number the calling policy refuses is a mistake in the document.
 */
export function readAttendeeChanges(
  input: InputMap,
  mode: "create" | "update",
  policy: CallingPolicy = OPEN_CALLING_POLICY,
): AttendeeChanges {
  const reader = new FieldReader(input);
  const changes: AttendeeChanges = {};

  const phone = reader.text("phone-number", 40);
  if (phone === null) {
    changes.phoneNumberCountryCode = null;
    changes.phoneNumberSubscriberNumber = null;
  } else if (phone !== undefined) {
    const normalized = normalizeNanpNumber(phone);
    const refused = normalized ? whyNotCallable(normalized.subscriberNumber, policy) : undefined;
    if (normalized && refused === undefined) {
      changes.phoneNumberCountryCode = normalized.countryCode;
      changes.phoneNumberSubscriberNumber = normalized.subscriberNumber;
    } else if (normalized) reader.fail(`phone-number "${phone}" cannot be called: ${refused}`);
    else reader.fail(`phone-number "${phone}" is not a valid North American number`);
  }
  const extension = reader.text("extension", 40);
  if (extension != null && !EXTENSION_PATTERN.test(extension)) {
    reader.fail('extension may hold only digits, *, #, "," (pause) and w (wait)');
  } else if (extension !== undefined) changes.phoneNumberExtension = extension;
  const location = reader.text("phone-number-location");
  if (location !== undefined) changes.phoneNumberLocation = location;
  for (const [element, field] of [
    ["dial-in", "dialIn"],
    ["moderator", "moderator"],
  ] as const) {
    const value = reader.boolean(element);
    if (value === null) reader.fail(`${element} must be true or false`);
    else if (value !== undefined) changes[field] = value;
  }
  if (mode === "update") {
    for (const [element, field] of [
      ["muted", "muted"],
      ["hand-up", "handUp"],
    ] as const) {
      const value = reader.boolean(element);
      if (value === null) reader.fail(`${element} must be true or false`);
      else if (value !== undefined) changes[field] = value;
    }
  }
  if (mode === "create") {
    const name = reader.text("name");
    if (name !== undefined) changes.name = name;
    const email = reader.text("email");
    if (email != null && !isValidEmail(email)) reader.fail(`email is not a valid e-mail address: "${email}"`);
    else if (email !== undefined) changes.email = email;
    if (phone == null && changes.dialIn !== true)
      reader.fail("phone-number can't be blank unless dial-in is true");
  }
  reader.check();
  return changes;
}

/**
 * The live controls of a change that would alter the attendee: those a client may send only while
 * the conference is started (sending them back unchanged, as a whole document, is fine).
 */
export function changedLiveControls(current: Attendee, changes: AttendeeChanges): string[] {
  const changed: string[] = [];
  if (changes.muted !== undefined && changes.muted !== Boolean(current.muted)) changed.push("muted");
  if (changes.handUp !== undefined && changes.handUp !== Boolean(current.handUp)) changed.push("hand-up");
  return changed;
}

/** Rules that hold for the attendee as it will be after the change; returns the problems. */
export function attendeeProblems(attendee: {
  dialIn: boolean;
  phoneNumberSubscriberNumber: string | null;
}): string[] {
  return !attendee.dialIn && !attendee.phoneNumberSubscriberNumber
    ? ["phone-number can't be blank unless dial-in is true"]
    : [];
}

/** True when the conference calls the attendee (it has a number and does not dial in itself). */
export function isDialled(attendee: {
  dialIn?: boolean;
  phoneNumberSubscriberNumber?: string | null;
}): boolean {
  return attendee.dialIn !== true && Boolean(attendee.phoneNumberSubscriberNumber);
}

/**
 * Why a conference that already calls `dialled` attendees may not call one more, or undefined when it
 * may: it can call at most `maxDialled`, the calls its owner may have in progress at once (more would
 * be refused when it starts). Checked wherever an attendee becomes one to call, added or changed.
 */
export function whyOverDialledLimit(dialled: number, maxDialled: number): string | undefined {
  return dialled >= maxDialled
    ? `phone-number: a conference can call at most ${maxDialled} attendees, the calls its owner may have in progress at once`
    : undefined;
}
