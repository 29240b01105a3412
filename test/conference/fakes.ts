/**
 * Fakes of what a conference needs of the world (ports.ts): calls, room audio, the telephone and the
 * store, in memory, recording what the rules did to them. Nothing here touches a socket or a file.
 */
import { EventEmitter } from "node:events";
import type {
  AdmittedCaller,
  AttendeeCallEvent,
  CallEnd,
  CallFailure,
  ConferenceStore,
  DialInHandoff,
  IncomingConferenceCall,
  PinTarget,
  PlacedCallAllowance,
  RoomLocation,
  RoomMedia,
  RoomScope,
  RoomState,
  Sound,
  Telephone,
} from "../../src/conference/ports.js";
import type { Attendee } from "../../src/domain/attendee.js";
import type { CallerVerification, CallQuality, NewCallRecord } from "../../src/domain/call-record.js";
import type { Conference } from "../../src/domain/conference.js";
import type { ConferenceEventType, LiveControls } from "../../src/domain/event.js";
import { type CallingPolicy, callsWithinLimits } from "../../src/domain/phone.js";
import { FakeClock } from "../helpers/fake-clock.js";

/** Lets every pending promise and timer-free callback run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Lets real I/O (making the recordings folder) finish: flushes until `done` holds, at most a second. */
export async function flushUntil(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 1_000;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
  await flush();
}

/** The prompt names in a list of sounds, tones as "tone:entry", samples as "samples". */
export function soundNames(sounds: readonly Sound[]): string[] {
  return sounds.flatMap((sound) =>
    "prompts" in sound ? [...sound.prompts] : "tone" in sound ? [`tone:${sound.tone}`] : ["samples"],
  );
}

export class FakeCall extends EventEmitter implements IncomingConferenceCall {
  readonly direction: "outbound" | "inbound";
  state: "calling" | "ringing" | "answered" | "failed" | "ended" = "calling";
  /** How the call is protected: plain SIP and RTP unless a test says otherwise. */
  signallingTls = false;
  encrypted = false;
  /** Placed with SIP over TLS and SRTP required. */
  encryptionRequired = false;
  /** The number called (outbound) or dialled (inbound). */
  readonly to: string;
  readonly from: string;
  readonly played: Sound[] = [];
  readonly digitsSent: string[] = [];
  room: RoomMedia | undefined;
  joinedMuted: boolean | undefined;
  muted: boolean | undefined;
  readonly mutes: boolean[] = [];
  hungUp = false;
  rang = false;
  rejected:
    | { status: number | undefined; reason: string | undefined; retryAfterSeconds?: number }
    | undefined;
  stops = 0;
  /** What the caller says when asked to record. */
  voice = new Int16Array(0);
  recordings = 0;
  /** How long a placed call may ring, when given. */
  ringTimeoutMs: number | undefined;
  /** The call this one's audio is relayed with. */
  relayedWith: FakeCall | undefined;
  /** The INVITE's headers (placed calls: those it was placed with). */
  readonly headers = new Map<string, string>();
  /** Where the call came from (dial-in): a source of its own unless a test says otherwise. */
  origin = { source: "192.0.2.1", peer: false, callId: "fake-call" };
  /** What a recording's longest duration runs on (the telephone's clock). */
  readonly clock: FakeClock;
  #stopRecording: (() => void) | undefined;

  /** A placed call's trunk, a dial-in's number dialled. */
  route: string | null;
  fromBrowser = false;
  readonly invitedAt: number;
  answeredAt: number | null = null;
  codec: string | undefined;

  constructor(direction: "outbound" | "inbound", to: string, from = "bridgeline", clock = new FakeClock()) {
    super();
    this.direction = direction;
    this.to = to;
    this.from = from;
    this.clock = clock;
    this.route = direction === "outbound" ? "sip:trunk.example" : to;
    this.invitedAt = clock.now();
  }

  get remoteNumber(): string {
    return this.direction === "outbound" ? this.to : this.from;
  }

  #answered(): void {
    this.state = "answered";
    this.answeredAt = this.clock.now();
    this.codec = "PCMU";
    this.emit("answered");
  }

  header(name: string): string | undefined {
    return this.headers.get(name);
  }

  relay(other: FakeCall): void {
    this.relayedWith = other;
    other.relayedWith = this;
  }

  get prompts(): string[] {
    return soundNames(this.played);
  }

  hangup(): void {
    if (this.state === "ended" || this.state === "failed") return;
    this.hungUp = true;
    this.state = "ended";
    queueMicrotask(() => this.emit("ended", { by: "local", reason: "hung up" } satisfies CallEnd));
  }

  sendDigits(keys: string): Promise<boolean> {
    this.digitsSent.push(keys);
    return Promise.resolve(true);
  }

  play(sound: Sound): Promise<void> {
    this.played.push(sound);
    return Promise.resolve();
  }

  stopPlaying(): void {
    this.stops++;
  }

  recordVoice(maxMs: number): Promise<Int16Array> {
    this.recordings++;
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => resolve(this.voice), maxMs);
      this.#stopRecording = () => {
        this.clock.clearTimeout(timer);
        resolve(this.voice);
      };
    });
  }

  stopRecordingVoice(): void {
    this.#stopRecording?.();
    this.#stopRecording = undefined;
  }

  join(room: RoomMedia, options: { readonly muted: boolean }): void {
    this.room = room;
    this.joinedMuted = options.muted;
    this.muted = options.muted;
  }

  setMuted(muted: boolean): void {
    this.muted = muted;
    this.mutes.push(muted);
  }

  leave(): void {
    this.room = undefined;
  }

  /** What callerVerification() resolves with: none (a placed call's null) unless a test says otherwise. */
  verification: CallerVerification | null = null;

  callerVerification(): Promise<CallerVerification | null> {
    return Promise.resolve(this.verification);
  }

  /** What quality() resolves with once the call is over: no media unless a test says otherwise. */
  finalQuality: CallQuality | null = null;

  quality(): Promise<CallQuality | null> {
    if (this.state === "failed" || this.state === "ended") return Promise.resolve(this.finalQuality);
    return new Promise((resolve) => {
      const over = () => {
        this.off("failed", over);
        this.off("ended", over);
        resolve(this.finalQuality);
      };
      this.on("failed", over);
      this.on("ended", over);
    });
  }

  ring(): void {
    this.rang = true;
    this.state = "ringing";
  }

  /** Whether the caller ACKs our 2xx (a scanner does not: accept waits until the call fails). */
  acks = true;

  accept(): Promise<boolean> {
    if (!this.acks) {
      return new Promise((resolve) => {
        this.once("failed", () => resolve(false));
        this.once("ended", () => resolve(false));
      });
    }
    this.#answered();
    return Promise.resolve(true);
  }

  reject(status?: number, reason?: string, retryAfterSeconds?: number): void {
    this.rejected =
      retryAfterSeconds === undefined ? { status, reason } : { status, reason, retryAfterSeconds };
    this.state = "failed";
  }

  // What the far end does.

  answer(): void {
    this.#answered();
  }

  fail(status: number, reason: string): void {
    this.state = "failed";
    this.emit("failed", { status, reason } satisfies CallFailure);
  }

  hangUpFarEnd(): void {
    this.state = "ended";
    this.emit("ended", { by: "remote", reason: "BYE" } satisfies CallEnd);
  }

  /** Waits its turn at its trunk (a placed call), for "max-channels" or "calls-per-second". */
  /** What the room said of redirects when it placed the call. */
  allowRedirect: ((e164: string) => boolean) | undefined;

  queue(why: string): void {
    this.emit("queued", why);
  }

  press(keys: string): void {
    for (const key of keys) this.emit("digit", key);
  }

  talk(talking: boolean): void {
    this.emit("talking", talking);
  }
}

export class FakeRoomMedia extends EventEmitter implements RoomMedia {
  readonly played: Sound[] = [];
  /** Every setHold, in order. */
  readonly holds: boolean[] = [];
  /** "start <file>" and "pause", in order. */
  readonly recording: string[] = [];
  closed = 0;
  failRecording = false;

  get onHold(): boolean {
    return this.holds.at(-1) ?? false;
  }

  get prompts(): string[] {
    return soundNames(this.played);
  }

  play(sound: Sound): void {
    this.played.push(sound);
  }

  setHold(onHold: boolean): void {
    this.holds.push(onHold);
  }

  /** Every sendFor, in order. */
  readonly sendingFor: number[] = [];

  sendFor(ms: number): void {
    this.sendingFor.push(ms);
  }

  startRecording(file: string): Promise<void> {
    if (this.failRecording) return Promise.reject(new Error("disk full"));
    this.recording.push(`start ${file}`);
    return Promise.resolve();
  }

  pauseRecording(): Promise<void> {
    this.recording.push("pause");
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.closed++;
    return Promise.resolve();
  }

  /** The room's audio breaks. */
  fail(reason: string): void {
    this.emit("failed", reason);
  }
}

export class FakeTelephone implements Telephone {
  /** The clock its calls run on. */
  readonly clock: FakeClock;
  readonly rooms: FakeRoomMedia[] = [];
  readonly calls: FakeCall[] = [];
  readonly placedInto = new Map<FakeCall, RoomMedia>();
  #incoming: ((call: IncomingConferenceCall) => void) | undefined;

  constructor(clock = new FakeClock()) {
    this.clock = clock;
  }

  openRoom(): FakeRoomMedia {
    const room = new FakeRoomMedia();
    this.rooms.push(room);
    return room;
  }

  placeCall(
    number: string,
    options: {
      readonly room: RoomMedia;
      readonly encrypted?: boolean;
      readonly allowRedirect?: (e164: string) => boolean;
    },
  ): FakeCall {
    const call = new FakeCall("outbound", number, undefined, this.clock);
    call.encryptionRequired = options.encrypted === true;
    call.allowRedirect = options.allowRedirect;
    this.calls.push(call);
    this.placedInto.set(call, options.room);
    return call;
  }

  callUri(
    uri: string,
    options: {
      readonly headers?: readonly (readonly [string, string])[];
      readonly nextTo?: unknown;
      readonly ringTimeoutMs?: number;
    },
  ): FakeCall {
    const call = new FakeCall("outbound", uri, undefined, this.clock);
    for (const [name, value] of options.headers ?? []) call.headers.set(name, value);
    call.ringTimeoutMs = options.ringTimeoutMs;
    this.calls.push(call);
    return call;
  }

  /** Browsers' calls answered, each with the room its media opened next to. */
  readonly browserCalls: { call: FakeCall; offer: string; room: RoomMedia | undefined }[] = [];
  /** What the next browser offer is refused with, when set. */
  refuseOffer: string | undefined;

  async answerBrowser(
    offer: string,
    options: { readonly signallingTls: boolean; readonly room?: RoomMedia },
  ): Promise<{ call: FakeCall; answer: string } | { refused: string }> {
    if (this.refuseOffer !== undefined) return { refused: this.refuseOffer };
    const call = new FakeCall("inbound", "browser", "browser", this.clock);
    call.signallingTls = options.signallingTls;
    call.encrypted = true;
    call.answer();
    this.browserCalls.push({ call, offer, room: options.room });
    return { call, answer: `answer to ${offer}` };
  }

  onIncomingCall(handler: (call: IncomingConferenceCall) => void): void {
    this.#incoming = handler;
  }

  /** The last call placed to `number`. */
  callTo(number: string): FakeCall {
    const call = this.calls.filter((placed) => placed.to === number).at(-1);
    if (call === undefined) throw new Error(`no call to ${number}`);
    return call;
  }

  /** A caller dials `to`, with the INVITE headers given. */
  dialIn(
    from: string,
    to: string,
    headers: Record<string, string> = {},
    origin?: FakeCall["origin"],
  ): FakeCall {
    const call = new FakeCall("inbound", to, from, this.clock);
    if (origin !== undefined) call.origin = origin;
    for (const [name, value] of Object.entries(headers)) call.headers.set(name, value);
    if (this.#incoming === undefined) throw new Error("no one takes incoming calls");
    this.#incoming(call);
    return call;
  }
}

export type Write =
  | { op: "call"; attendeeId: number; event: AttendeeCallEvent }
  | { op: "attendee-controls"; attendeeId: number; controls: { muted?: boolean; handUp?: boolean } }
  | {
      op: "conference-controls";
      controls: Partial<LiveControls>;
    }
  | { op: "end"; reason: string }
  | { op: "event"; attendeeId: number; type: ConferenceEventType; reason?: string }
  | { op: "recording-file"; fileName: string };

/** A write the fake store refuses because the room's lease is not the conference's any more. */
export class FakeLeaseLost extends Error {}

export class FakeStore implements ConferenceStore {
  conference: Conference | undefined;
  attendees: Attendee[];
  endRequestedAt: string | null = null;
  readonly callRequests = new Map<number, string>();
  readonly writes: Write[] = [];
  readonly pins = new Map<string, PinTarget>();
  readonly ownerNames: string[] = [];
  /** Conferences besides `conference`, by id (no control is written to them). */
  readonly otherConferences = new Map<number, Conference>();
  /** While set, loadRoom reads the store at once but answers only once it resolves. */
  loadGate: Promise<void> | undefined;
  /** The conference's lease, as its runner's generation: a test moves it on to take the room's away. */
  lease = 1;

  constructor(conference: Conference, attendees: Attendee[]) {
    this.conference = conference;
    this.attendees = attendees;
  }

  attendee(id: number): Attendee {
    const found = this.attendees.find((attendee) => attendee.id === id);
    if (found === undefined) throw new Error(`no attendee ${id}`);
    return found;
  }

  /** Its writes fail only as a test makes them, never for want of a connection. */
  unreachable(): boolean {
    return false;
  }

  leaseLost(error: unknown): boolean {
    return error instanceof FakeLeaseLost;
  }

  async loadRoom(conferenceId: number): Promise<RoomState> {
    const conference =
      this.conference?.id === conferenceId ? this.conference : this.otherConferences.get(conferenceId);
    const state: RoomState = {
      conference: conference === undefined ? undefined : { ...conference },
      attendees: this.attendees
        .filter((attendee) => attendee.conferenceId === conferenceId)
        .map((attendee) => ({ ...attendee })),
      endRequestedAt: this.endRequestedAt,
      callRequests: new Map(this.callRequests),
      lease: conference === undefined ? undefined : this.lease,
    };
    await this.loadGate;
    return state;
  }

  async ownerName(userId: number): Promise<string | undefined> {
    this.ownerNames.push(String(userId));
    return "Alice";
  }

  async recordAttendeeCall(
    _scope: RoomScope,
    attendeeId: number,
    event: AttendeeCallEvent,
  ): Promise<boolean> {
    this.writes.push({ op: "call", attendeeId, event });
    this.callLog.push(`${event.kind} ${attendeeId}`);
    const attendee = this.attendees.find((candidate) => candidate.id === attendeeId);
    if (attendee === undefined) return false;
    if (event.kind === "calling") attendee.state = "calling";
    else if (event.kind === "connected")
      Object.assign(attendee, { state: "connected", muted: event.muted, handUp: false });
    else if (event.kind === "failed") attendee.state = event.state;
    else attendee.state = "disconnected";
    return true;
  }

  async recordAttendeeControls(
    _scope: RoomScope,
    attendeeId: number,
    controls: { muted?: boolean; handUp?: boolean },
  ): Promise<void> {
    this.writes.push({ op: "attendee-controls", attendeeId, controls });
    const attendee = this.attendees.find((candidate) => candidate.id === attendeeId);
    if (attendee !== undefined) Object.assign(attendee, controls);
  }

  async recordConferenceControls(_scope: RoomScope, controls: Partial<LiveControls>): Promise<void> {
    this.writes.push({ op: "conference-controls", controls });
    if (this.conference !== undefined) this.conference = { ...this.conference, ...controls };
  }

  async endConference(_scope: RoomScope, reason: string): Promise<void> {
    this.writes.push({ op: "end", reason });
    if (this.conference !== undefined) this.conference = { ...this.conference, state: "ended" };
  }

  /** The calls reserved, by id: in progress until ended. */
  readonly placedCalls = new Map<number, { attendeeId: number; ended: boolean }>();

  /** While set, reservePlacedCalls answers only once it resolves (a slow database). */
  reserveGate: Promise<void> | undefined;

  async reservePlacedCalls(
    _scope: RoomScope,
    attendeeIds: readonly number[],
    policy: CallingPolicy,
  ): Promise<Map<number, PlacedCallAllowance>> {
    await this.reserveGate;
    const placed = [...this.placedCalls.values()];
    const counts = { inProgress: placed.filter((call) => !call.ended).length, lastHour: placed.length };
    const { allowed, refusal } = callsWithinLimits(counts, attendeeIds.length, policy);
    const allowances = new Map<number, PlacedCallAllowance>();
    for (const [index, attendeeId] of attendeeIds.entries()) {
      if (index >= allowed) {
        allowances.set(attendeeId, { refused: refusal ?? "" });
        continue;
      }
      const placedCallId = this.placedCalls.size + 1;
      this.placedCalls.set(placedCallId, { attendeeId, ended: false });
      allowances.set(attendeeId, { placedCallId });
    }
    return allowances;
  }

  async endPlacedCall(placedCallId: number): Promise<void> {
    const call = this.placedCalls.get(placedCallId);
    if (call !== undefined) call.ended = true;
  }

  /** The call records written, in order (apart from `writes`, whose order tests check). */
  readonly callRecords: NewCallRecord[] = [];
  /** Call records asked for, refused ones included. */
  callRecordAttempts = 0;
  /** Attendees' call writes and call records as they land, one log: "disconnected 2", "record 2". */
  readonly callLog: string[] = [];

  /** When each call record's event was dated, in order. */
  readonly callRecordTimes: number[] = [];

  async recordCall(scope: RoomScope, record: NewCallRecord, at: Date): Promise<void> {
    this.callRecordAttempts++;
    if (scope.lease !== this.lease) throw new FakeLeaseLost(`lease ${scope.lease} is not ${this.lease}`);
    this.callRecords.push(record);
    this.callRecordTimes.push(at.getTime());
    this.callLog.push(`record ${record.attendeeId}`);
  }

  async appendEvent(
    _scope: RoomScope,
    attendeeId: number,
    type: ConferenceEventType,
    _at: Date,
    reason?: string,
  ): Promise<void> {
    this.writes.push(
      reason === undefined ? { op: "event", attendeeId, type } : { op: "event", attendeeId, type, reason },
    );
  }

  /** Refused unless made under the conference's lease (a room always writes with its own). */
  async setRecordingFile(scope: RoomScope, fileName: string): Promise<void> {
    if (scope.lease !== this.lease) throw new FakeLeaseLost(`lease ${scope.lease} is not ${this.lease}`);
    this.writes.push({ op: "recording-file", fileName });
  }

  async findPinTarget(pin: string): Promise<PinTarget | undefined> {
    return this.pins.get(pin);
  }

  async admitCaller(
    conferenceId: number,
    caller: { countryCode: string; subscriberNumber: string } | null,
    moderator: boolean,
  ): Promise<AdmittedCaller | undefined> {
    const free = this.attendees.filter(
      (attendee) =>
        attendee.conferenceId === conferenceId && attendee.dialIn && attendee.state !== "connected",
    );
    const match =
      free.find(
        (attendee) => caller !== null && attendee.phoneNumberSubscriberNumber === caller.subscriberNumber,
      ) ??
      (moderator
        ? free.find((attendee) => attendee.moderator && attendee.phoneNumberSubscriberNumber === null)
        : undefined);
    if (match !== undefined) return { attendee: match, added: false };
    const added = attendee(100 + this.attendees.length, {
      conferenceId,
      dialIn: true,
      moderator: moderator && !this.attendees.some((candidate) => candidate.moderator),
      phoneNumberSubscriberNumber: caller?.subscriberNumber ?? null,
    });
    this.attendees.push(added);
    return { attendee: added, added: true };
  }

  /** Where conferences other than this store's run (another instance's SIP URI), by id. */
  readonly elsewhere = new Map<number, RoomLocation>();
  readonly handoffs = new Map<string, DialInHandoff>();

  async roomLocation(conferenceId: number): Promise<RoomLocation | undefined> {
    return this.elsewhere.get(conferenceId);
  }

  async createHandoff(handoff: DialInHandoff): Promise<string> {
    const token = `token-${this.handoffs.size + 1}`;
    this.handoffs.set(token, handoff);
    return token;
  }

  async takeHandoff(token: string): Promise<DialInHandoff | undefined> {
    const handoff = this.handoffs.get(token);
    this.handoffs.delete(token);
    return handoff;
  }

  async withdrawAdmission(token: string | undefined, addedAttendeeId: number | null): Promise<void> {
    if (token !== undefined) this.handoffs.delete(token);
    this.attendees = this.attendees.filter(
      (attendee) => attendee.id !== addedAttendeeId || attendee.state !== "new",
    );
  }

  /** The writes of one kind, without the op. */
  of<K extends Write["op"]>(op: K): Extract<Write, { op: K }>[] {
    return this.writes.filter((write): write is Extract<Write, { op: K }> => write.op === op);
  }
}

export interface LogLine {
  level: "info" | "warn";
  fields: Record<string, unknown>;
  message: string;
}

export class FakeLogger {
  readonly lines: LogLine[] = [];

  info(fields: object, message: string): void {
    this.lines.push({ level: "info", fields: fields as Record<string, unknown>, message });
  }

  warn(fields: object, message: string): void {
    this.lines.push({ level: "warn", fields: fields as Record<string, unknown>, message });
  }

  messages(): string[] {
    return this.lines.map((line) => line.message);
  }
}

const AT = "2027-03-01T10:00:00.000Z";

export function conference(changes: Partial<Conference> = {}): Conference {
  return {
    id: 7,
    createdAt: AT,
    updatedAt: AT,
    lockVersion: 0,
    userId: 3,
    name: "Weekly",
    state: "started",
    scheduledToStartAt: AT,
    startedAt: AT,
    endedAt: null,
    directDial: true,
    dialInLocked: false,
    recordAudio: false,
    lectureMode: false,
    encryptedOnly: false,
    accountingCode: null,
    memberPin: "1111",
    moderatorPin: "2222",
    sendNotificationEmails: false,
    announceAttendees: false,
    ...changes,
  };
}

export function attendee(id: number, changes: Partial<Attendee> = {}): Attendee {
  return {
    id,
    createdAt: AT,
    updatedAt: AT,
    lockVersion: 0,
    conferenceId: 7,
    state: "new",
    phoneNumberCountryCode: "1",
    phoneNumberSubscriberNumber: `60455501${String(id).padStart(2, "0")}`,
    phoneNumberExtension: null,
    phoneNumberLocation: null,
    moderator: false,
    muted: null,
    handUp: null,
    dialIn: false,
    name: null,
    email: null,
    duration: null,
    encryption: null,
    ...changes,
  };
}

/** The number the room dials for an attendee made by `attendee(id)`. */
export function numberOf(id: number): string {
  return `+160455501${String(id).padStart(2, "0")}`;
}
