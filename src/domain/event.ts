/** What happens in a conference, as live views (the console, the events stream) are told it. */

import type { CallRecord } from "./call-record.js";
import type { CallEncryption } from "./encryption.js";

export const CONFERENCE_EVENT_TYPES = [
  "conference-started",
  "conference-ended",
  /** Due but not started: no instance has room for it (each at BRIDGELINE_MAX_PARTICIPANTS). */
  "conference-delayed",
  /** Taken over by another instance after its runner fell silent (or handed over on stopping). */
  "conference-recovered",
  "attendee-calling",
  /** The attendee's call waits for its turn at a trunk that limits its calls (reason: which limit). */
  "attendee-queued",
  "attendee-connected",
  "attendee-disconnected",
  "attendee-failed",
  /** A call is over and its record written (after its attendee-disconnected or attendee-failed). */
  "call-ended",
  "attendee-muted",
  "attendee-unmuted",
  "hand-raised",
  "hand-lowered",
  "talking-started",
  "talking-stopped",
  "recording-started",
  "recording-stopped",
  "dial-in-locked",
  "dial-in-unlocked",
  "attendee-added",
  "attendee-removed",
  "lecture-mode-on",
  "lecture-mode-off",
  "encrypted-only-on",
  "encrypted-only-off",
] as const;
export type ConferenceEventType = (typeof CONFERENCE_EVENT_TYPES)[number];

/** One event as it is stored and sent. */
export interface ConferenceEvent {
  readonly id: number;
  readonly userId: number;
  readonly conferenceId: number;
  readonly attendeeId: number | null;
  readonly type: ConferenceEventType;
  /** Why a call failed or ended (e.g. "486 Busy Here"), when known. */
  readonly reason: string | null;
  /** How the call is protected, on attendee-connected events; null on the others. */
  readonly encryption: CallEncryption | null;
  /** What the take-over was, on conference-recovered events; null on the others. */
  readonly recovery: RecoveryDetails | null;
  /** The call's record, on call-ended events; null on the others. */
  readonly call: CallRecord | null;
  /** ISO 8601 UTC, to the millisecond. */
  readonly at: string;
}

/**
 * Why a call ended when the instance running its room went (killed, paused past its lease): on the
 * attendee and its disconnected event, and on the conference when it is ended rather than taken over.
 */
export const RUNNER_GONE_REASON = "call lost: the service stopped";

/** A conference taken over from the instance that ran it. */
export interface RecoveryDetails {
  /** The instance that ran it (its BRIDGELINE_INSTANCE_ID), and the one that runs it now. */
  readonly previousInstance: string | null;
  readonly instance: string;
  /** From the previous runner's last heartbeat to the take-over: the time nobody ran the room. */
  readonly gapSeconds: number;
  /** The attendees the new room calls back. */
  readonly calledBack: number;
  /** Why: the runner fell silent, or handed its rooms over as it stopped. */
  readonly cause: "runner-silent" | "handed-over";
}

/** An event to append: the id and time are the store's. */
export type NewConferenceEvent = Omit<ConferenceEvent, "id" | "at" | "recovery" | "call"> & {
  readonly recovery?: RecoveryDetails;
  readonly call?: CallRecord;
};

/** The conference options whose changes live views are told. */
export interface LiveControls {
  readonly dialInLocked: boolean;
  readonly lectureMode: boolean;
  readonly recordAudio: boolean;
  readonly encryptedOnly: boolean;
}

/** The events a change of a conference's live controls causes, old value to new. */
export function conferenceControlEvents(before: LiveControls, after: LiveControls): ConferenceEventType[] {
  const types: ConferenceEventType[] = [];
  if (before.dialInLocked !== after.dialInLocked)
    types.push(after.dialInLocked ? "dial-in-locked" : "dial-in-unlocked");
  if (before.lectureMode !== after.lectureMode)
    types.push(after.lectureMode ? "lecture-mode-on" : "lecture-mode-off");
  if (before.recordAudio !== after.recordAudio)
    types.push(after.recordAudio ? "recording-started" : "recording-stopped");
  if (before.encryptedOnly !== after.encryptedOnly)
    types.push(after.encryptedOnly ? "encrypted-only-on" : "encrypted-only-off");
  return types;
}

/** The events a change of an attendee's muted and hand-up flags causes. */
export function attendeeControlEvents(
  before: { muted: boolean | null; handUp: boolean | null },
  after: { muted: boolean | null; handUp: boolean | null },
): ConferenceEventType[] {
  const types: ConferenceEventType[] = [];
  if (Boolean(before.muted) !== Boolean(after.muted))
    types.push(after.muted ? "attendee-muted" : "attendee-unmuted");
  if (Boolean(before.handUp) !== Boolean(after.handUp))
    types.push(after.handUp ? "hand-raised" : "hand-lowered");
  return types;
}

/** The JSON an events stream sends as an event's data. */
export function eventData(event: ConferenceEvent): string {
  return JSON.stringify({
    conferenceId: event.conferenceId,
    attendeeId: event.attendeeId,
    at: event.at,
    ...(event.reason !== null && { reason: event.reason }),
    ...(event.encryption !== null && { encryption: event.encryption }),
    ...(event.recovery !== null && { recovery: event.recovery }),
    ...(event.call !== null && { call: event.call }),
  });
}

/**
 * Who is talking as of the last of `events` (oldest first): the talking-started of each attendee not
 * since stopped, muted, gone, or ended with its conference. A new live view starts from these.
 */
export function stillTalking(events: readonly ConferenceEvent[]): ConferenceEvent[] {
  const talking = new Map<string, ConferenceEvent>();
  for (const event of events) {
    if (event.type === "conference-ended") {
      for (const [key, started] of talking)
        if (started.conferenceId === event.conferenceId) talking.delete(key);
    } else if (event.attendeeId !== null) {
      const key = `${event.conferenceId}:${event.attendeeId}`;
      if (event.type === "talking-started") talking.set(key, event);
      else talking.delete(key);
    }
  }
  return [...talking.values()];
}
