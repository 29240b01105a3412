/**
 * What a conference needs of the world, as small interfaces in its own types: telephone calls and the
 * audio of a room (main.ts hands it the telephony service, whose calls and mixes fit these shapes),
 * the store (store/conference-store.ts implements ConferenceStore) and the attempt counts the
 * instances share. Unit tests give the rules fakes of each.
 */
import type { Attendee, AttendeeState } from "../domain/attendee.js";
import type { CallCause, CallerVerification, CallQuality, NewCallRecord } from "../domain/call-record.js";
import type { Conference } from "../domain/conference.js";
import type { CallEncryption } from "../domain/encryption.js";
import type { ConferenceEventType, LiveControls } from "../domain/event.js";
import type { CallingPolicy } from "../domain/phone.js";
import type { PromptName } from "../domain/prompt.js";

/** What is played to a call or to a whole room. */
export type Sound =
  /** Voice prompts one after another, with a short gap between each two. */
  | { readonly prompts: readonly PromptName[] }
  /** The entry and exit chimes. */
  | { readonly tone: "entry" | "exit" }
  /** Audio made at run time (a recorded name, a spoken invitation): 16 kHz 16-bit mono. */
  | { readonly samples: Int16Array };

export interface CallFailure {
  readonly status: number;
  readonly reason: string;
  /** Why, as a Reason header said it (RFC 3326): the far end's, or the one our CANCEL carried; null without one. */
  readonly cause?: CallCause | null;
}

export interface CallEnd {
  /** "remote": the far end hung up; anything else: this side ended it. */
  readonly by: string;
  readonly reason: string;
  /** Why, as the BYE's Reason header said it (RFC 3326): the far end's, or the one we sent; null without one. */
  readonly cause?: CallCause | null;
}

/** A telephone call as a conference uses it. */
export interface ConferenceCall {
  readonly direction: "outbound" | "inbound";
  readonly state: "calling" | "ringing" | "answered" | "failed" | "ended";
  /** Who is called, or who calls (the number when the caller sends one). */
  readonly remoteNumber: string;
  /** Where it went or came: a placed call's trunk URI, the number a caller dialled; null otherwise. */
  readonly route: string | null;
  /** A browser's call (the join page) rather than a telephone's. */
  readonly fromBrowser: boolean;
  /** When the call began and was answered (null until then), ms since the epoch on the telephone's clock. */
  readonly invitedAt: number;
  readonly answeredAt: number | null;
  /** The codec it sends in, once answered. */
  readonly codec: string | undefined;
  /** Whether its signalling travels over SIP over TLS. */
  readonly signallingTls: boolean;
  /** Whether its media is SRTP (once answered). */
  readonly encrypted: boolean;
  // One signature per event: the telephony's typed EventEmitter calls fit these.
  /** While the call is in a room, `talking` tells it started (true) or stopped (false) talking. */
  on(event: "answered", listener: () => void): unknown;
  on(event: "failed", listener: (failure: CallFailure) => void): unknown;
  on(event: "ended", listener: (end: CallEnd) => void): unknown;
  on(event: "digit", listener: (key: string) => void): unknown;
  on(event: "talking", listener: (talking: boolean) => void): unknown;
  /**
   * A placed call waits its turn at its trunk before its INVITE goes: `why` is "max-channels" (as
   * many calls through the trunk as it takes) or "calls-per-second". Told once; when it goes, nothing
   * (it rings, answers or fails as any call); hung up meanwhile, it fails as any unanswered call.
   */
  on(event: "queued", listener: (why: string) => void): unknown;
  off(event: "answered", listener: () => void): unknown;
  off(event: "failed", listener: (failure: CallFailure) => void): unknown;
  off(event: "ended", listener: (end: CallEnd) => void): unknown;
  off(event: "digit", listener: (key: string) => void): unknown;
  /**
   * CANCEL before the answer, BYE after, its Reason header saying `cause` (default: normal call
   * clearing); a no-op once over.
   */
  hangup(cause?: CallCause): void;
  /** RFC 4733 digits (`,` pauses a second); true once sent, false when the call ended first. */
  sendDigits(keys: string): Promise<boolean>;
  /**
   * Plays to this caller alone, after what is already queued for it (in a room: over the room's
   * audio). Resolves once heard to the end, or stopped, or the call is over.
   */
  play(sound: Sound): Promise<void>;
  /** Drops what is playing and queued for this caller alone; their plays resolve. */
  stopPlaying(): void;
  /**
   * Carries this call's audio and keys to `other` and back, packet for packet, until either ends
   * (a caller taken on to a room that runs on another instance). Both answered.
   */
  relay(other: ConferenceCall): void;
  /** Records what the caller says for at most `maxMs` (or until stopped); resolves with the samples (16 kHz). */
  recordVoice(maxMs: number): Promise<Int16Array>;
  /** Ends a recording early; its promise resolves with what was heard. No-op without one. */
  stopRecordingVoice(): void;
  /** Into the room's mix: hears everyone else and is heard unless muted. */
  join(room: RoomMedia, options: { readonly muted: boolean }): void;
  /** A muted caller is still heard for talk detection, but not by the room. No-op outside a room. */
  setMuted(muted: boolean): void;
  /** Out of the room's mix (the call goes on). No-op outside a room. */
  leave(): void;
  /**
   * How the call sounded, both ways, over the whole call: resolves once it has failed or ended and
   * its media has closed (at once when it already has). Null when it never carried media (it failed
   * before an answer, with no early media) or its media's counts were lost (its media thread died).
   */
  quality(): Promise<CallQuality | null>;
  /**
   * What STIR/SHAKEN verification said of a dial-in caller's number (docs/telephony.md#stirshaken):
   * started as the INVITE arrived, resolves within the certificate fetch's timeout and never
   * rejects. Null for calls we place and browser calls.
   */
  callerVerification(): Promise<CallerVerification | null>;
}

export interface RoomMediaEvents {
  /**
   * The room's audio broke (its mixing failed, or the thread it ran on died): its calls hear
   * nothing more, and the conference must end with this reason.
   */
  failed: [reason: string];
  /** The recording could not be written (the disk full, say) and stopped; the audio goes on. */
  "recording-failed": [reason: string];
}

/** The mixed audio of one room. */
export interface RoomMedia {
  on<E extends keyof RoomMediaEvents>(event: E, listener: (...args: RoomMediaEvents[E]) => void): unknown;
  /** Plays to everyone in the room. */
  play(sound: Sound): void;
  /** On hold everyone in the room hears music instead of each other (what they say goes nowhere). */
  setHold(onHold: boolean): void;
  /**
   * The room's calls send audio for at most `ms` from now, then nothing until told again (its lease
   * may be another instance's by then); never told, no limit.
   */
  sendFor(ms: number): void;
  /**
   * Writes the room's mix to `file` (a WAV file made, with its folder, on the first start; after a
   * pause the same file goes on). Resolves once recording, rejects when the file cannot be made.
   */
  startRecording(file: string): Promise<void>;
  /** Stops writing the mix; resolves once what was written is on disk. */
  pauseRecording(): Promise<void>;
  /** Stops the mix and closes any recording; resolves once the file is complete. Idempotent. */
  close(): Promise<void>;
}

/** Where a conference's calls come from. */
export interface Telephone {
  /** A new room's mix, placed where there is room for it. */
  openRoom(): RoomMedia;
  /** Calls a number, its media next to the room's (when given) so the call can join it. */
  placeCall(
    number: string,
    options?: {
      readonly room?: RoomMedia;
      /** Over SIP over TLS with SRTP only: a trunk that cannot fails the call with the reason. */
      readonly encrypted?: boolean;
      /**
       * Whether a number a trunk redirects the call to (3xx, where the trunk's profile follows them)
       * may be called; without it no redirect is followed.
       */
      readonly allowRedirect?: (e164: string) => boolean;
    },
  ): ConferenceCall;
  /**
   * Calls a SIP URI directly (another instance), with extra INVITE headers; its media opens next to
   * `nextTo`'s so the two can be relayed.
   */
  callUri(
    uri: string,
    options: {
      readonly headers?: readonly (readonly [string, string])[];
      readonly nextTo?: ConferenceCall;
      /** Given up (408) when not answered within this long. */
      readonly ringTimeoutMs?: number;
    },
  ): ConferenceCall;
  /**
   * Answers a browser's WebRTC offer (the join page) with a call answered at once, its media next to
   * `room`'s; `refused` says why an offer cannot be answered.
   */
  answerBrowser(
    offer: string,
    options: { readonly signallingTls: boolean; readonly room?: RoomMedia },
  ): Promise<{ readonly call: ConferenceCall; readonly answer: string } | { readonly refused: string }>;
  /** Who takes the calls that reach us; without a handler they are refused. */
  onIncomingCall(handler: (call: IncomingConferenceCall) => void): void;
}

/** A call that reaches an access number, before it is answered. */
export interface IncomingConferenceCall extends ConferenceCall {
  /** The caller's user part (its number when it sends one). */
  readonly from: string;
  /** The number dialled. */
  readonly to: string;
  /** Who sent it: its source as limits count it, whether a configured peer, and its Call-ID. */
  readonly origin: { readonly source: string; readonly peer: boolean; readonly callId: string };
  /** A header of the INVITE. */
  header(name: string): string | undefined;
  ring(): void;
  /** Answers; true once the call is set up, false when it could not be. */
  accept(): Promise<boolean>;
  /** Refuses it; `retryAfterSeconds` says when to try again. */
  reject(status?: number, reason?: string, retryAfterSeconds?: number): void;
}

/** Spoken text (espeak-ng), or null when the machine cannot speak. */
export type Speak = (text: string) => Promise<Int16Array | null>;

/** The conference a room's writes are about, as events name it. */
export interface RoomScope {
  readonly userId: number;
  readonly conferenceId: number;
  /**
   * The lease the room runs the conference under (its fencing token): a write made with a lease the
   * conference no longer has is refused (ConferenceStore.leaseLost tells such a failure).
   */
  readonly lease?: number;
}

/** A running conference as its runner sees it, with what the API asked of the room. */
export interface RoomState {
  /** The row; undefined once deleted. */
  conference: Conference | undefined;
  attendees: Attendee[];
  /** Set when the API asked the room to end the conference. */
  endRequestedAt: string | null;
  /** Attendee id to when the API last asked the room to call it again (or now). */
  callRequests: Map<number, string>;
  /** The conference's lease now (its runner's generation): another than the room's, it is lost. */
  lease: number | undefined;
}

/** How an attendee's call goes, as the room records it. */
export type AttendeeCallEvent =
  | { kind: "calling" }
  | { kind: "connected"; muted: boolean; handUp?: boolean; encryption: CallEncryption }
  | { kind: "failed"; state: AttendeeState; result: string }
  | { kind: "disconnected"; result: string };

/** A call the owner's limits allowed (its reservation, to end it) or refused (why). */
export type PlacedCallAllowance = { placedCallId: number } | { refused: string };

export interface PinTarget {
  readonly role: "member" | "moderator";
  /** The conference a conference PIN opens; for a user's own PIN, that user's conference in progress. */
  readonly conferenceId: number | undefined;
}

/** The attendee a caller was admitted as, and whether the admission added it. */
export interface AdmittedCaller {
  readonly attendee: Attendee;
  readonly added: boolean;
}

/** Where a started conference's room takes calls. */
export interface RoomLocation {
  /** Whose conference it is. */
  readonly userId: number;
  /** The runner's SIP URI; null when it did not record one. */
  readonly sipUri: string | null;
  readonly dialInLocked: boolean;
  readonly encryptedOnly: boolean;
}

/** A caller handed to the instance that runs their room. */
export interface DialInHandoff {
  readonly conferenceId: number;
  readonly attendeeId: number;
  readonly moderator: boolean;
  /** How the caller's call to the instance that answered it is protected. */
  readonly encryption: CallEncryption;
}

/** What a conference reads and writes, each write with its event for live views. */
export interface ConferenceStore {
  /**
   * Whether a failure means the store cannot be reached now (PostgreSQL restarting, a failover): it
   * may pass with time, so the room tries the write again.
   */
  unreachable(error: unknown): boolean;
  /** Whether a write failed because the room's lease is lost: another instance runs its conference. */
  leaseLost(error: unknown): boolean;
  loadRoom(conferenceId: number): Promise<RoomState>;
  ownerName(userId: number): Promise<string | undefined>;
  recordAttendeeCall(
    scope: RoomScope,
    attendeeId: number,
    event: AttendeeCallEvent,
    at: Date,
  ): Promise<unknown>;
  recordAttendeeControls(
    scope: RoomScope,
    attendeeId: number,
    controls: { muted?: boolean; handUp?: boolean },
    at: Date,
  ): Promise<unknown>;
  recordConferenceControls(
    scope: RoomScope,
    controls: Partial<LiveControls>,
    at: Date,
    reason?: string,
  ): Promise<unknown>;
  endConference(scope: RoomScope, reason: string, at: Date): Promise<unknown>;
  /** A call is over: its record, with a call-ended event carrying it. */
  recordCall(scope: RoomScope, record: NewCallRecord, at: Date): Promise<unknown>;
  /**
   * Takes a call each for these attendees, in order, as far as the owner's limits allow (counted over
   * every instance); those refused get the reason.
   */
  reservePlacedCalls(
    scope: RoomScope,
    attendeeIds: readonly number[],
    policy: CallingPolicy,
    at: Date,
  ): Promise<Map<number, PlacedCallAllowance>>;
  /** A call reserved above is over: it no longer counts as in progress. */
  endPlacedCall(placedCallId: number, at: Date): Promise<unknown>;
  /** An event that changes no state (talking started or stopped). */
  appendEvent(
    scope: RoomScope,
    attendeeId: number,
    type: ConferenceEventType,
    at: Date,
    reason?: string,
  ): Promise<unknown>;
  /**
   * A recording file the room made: the conference's recording when it has none yet, else a later
   * part (a room that took the conference over records into a file of its own), kept once, in order.
   */
  setRecordingFile(scope: RoomScope, fileName: string): Promise<unknown>;
  findPinTarget(pin: string): Promise<PinTarget | undefined>;
  /** The dial-in attendee a caller becomes (matched by number or added); undefined when the room is full. */
  admitCaller(
    conferenceId: number,
    caller: { countryCode: string; subscriberNumber: string } | null,
    moderator: boolean,
    at: Date,
  ): Promise<AdmittedCaller | undefined>;
  /** Where a started conference's room runs; undefined when it is not started. */
  roomLocation(conferenceId: number): Promise<RoomLocation | undefined>;
  /** Records a caller handed to the instance that runs their room; returns the token the call shows. */
  createHandoff(handoff: DialInHandoff, at: Date): Promise<string>;
  /** Takes a handoff by its token, once; undefined when unknown or expired. */
  takeHandoff(token: string, at: Date): Promise<DialInHandoff | undefined>;
  /**
   * An admitted caller who did not reach the room: its handoff's token (if it had one) spent, the
   * attendee its admission added removed.
   */
  withdrawAdmission(token: string | undefined, addedAttendeeId: number | null, at: Date): Promise<void>;
}

/** Attempts counted per key in fixed windows, shared by the instances (wrong PINs at dial-in). */
export interface AttemptCounts {
  /** Counts one attempt under `key` at `now`: in its open window, or in a new one of `windowMs`. */
  count(
    key: string,
    windowMs: number,
    now: Date,
  ): Promise<{ readonly count: number; readonly endsAt: number }>;
  /** Takes back one attempt of `key`'s open window (counted first, found harmless after). */
  uncount(key: string, now: Date): Promise<void>;
  /** The window of `key` open at `now` (its count, and its end in ms since the epoch); undefined when none. */
  read(key: string, now: Date): Promise<{ readonly count: number; readonly endsAt: number } | undefined>;
}
