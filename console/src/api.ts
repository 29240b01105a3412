import type { CallQuality, CallRecord } from "../../src/domain/call-record.js";

/**
 * The service's HTTP interface as the console uses it: the JSON session endpoints and the XML API
 * (parsed with DOMParser), authenticated by the session cookie with the CSRF token on every change.
 * Every request the console makes is one function here, with typed arguments and results, so that
 * the views never see the transport (XML today; a client generated from the API's description later).
 */

export interface SessionUser {
  id: number;
  name: string;
  email: string;
  /** IANA zone, or null when the user chose none (the browser's zone is used then). */
  timeZone: string | null;
}

export interface Session {
  user: SessionUser;
  csrfToken: string;
}

export type ConferenceState = "new" | "pending" | "started" | "ended";

export interface Conference {
  id: number;
  state: ConferenceState;
  name: string;
  scheduledToStartAt: Date | null;
  startedAt: Date | null;
  endedAt: Date | null;
  /** Attendees join when they answer, without pressing 1. */
  directDial: boolean;
  dialInLocked: boolean;
  recordAudio: boolean;
  lectureMode: boolean;
  /** Only calls over SIP over TLS with SRTP take part. */
  encryptedOnly: boolean;
  memberPin: string | null;
  moderatorPin: string | null;
}

/** What a conference create or update sends; absent fields are left as they are. */
export interface ConferenceChanges {
  name?: string;
  /** Free-form or ISO 8601, read by the service in the owner's zone (see readStartTime). */
  startTime?: string;
  directDial?: boolean;
  dialInLocked?: boolean;
  recordAudio?: boolean;
  lectureMode?: boolean;
  encryptedOnly?: boolean;
  /** The one state a client may ask for: the attendees are called at the start time. */
  state?: "pending";
}

/** How the service reads a start time, in the owner's zone. */
export interface StartTime {
  text: string;
  scheduledToStartAt: Date;
  /** The IANA zone it was read in. */
  timeZone: string;
}

export interface Attendee {
  id: number;
  state: string;
  name: string | null;
  number: string | null;
  location: string | null;
  moderator: boolean;
  dialIn: boolean;
  muted: boolean | null;
  handUp: boolean | null;
  /** How the current or last call is protected: tls+srtp, tls, srtp or none; null before any. */
  encryption: string | null;
  /** Connected seconds as of `readAt`. */
  duration: number | null;
  /** When this copy was read, to let the duration tick on between reads. */
  readAt: number;
}

export interface NewAttendee {
  name: string | null;
  email: string | null;
  /** As typed: the service validates and normalizes it, and refuses numbers it does not call. */
  phoneNumber: string;
}

/** The live changes of a started conference's attendee. */
export interface AttendeeChanges {
  muted?: boolean;
  handUp?: boolean;
}

/** A call's record as the console shows it (times to the second, as the XML API gives them). */
export type Call = Pick<
  CallRecord,
  | "id"
  | "attendeeId"
  | "direction"
  | "number"
  | "invitedAt"
  | "answeredAt"
  | "durationSeconds"
  | "sipStatus"
  | "sipReason"
  | "cause"
  | "hungUpBy"
  | "endReason"
  | "codec"
  | "srtp"
> & {
  quality: Pick<CallQuality, "lossShare" | "remoteLossShare" | "jitterMs" | "roundTripMs" | "mos"> | null;
};

export interface Contact {
  id: number;
  name: string;
  email: string | null;
  /** Free text, as written (contacts' numbers are not normalized). */
  phoneNumber: string | null;
}

/** A contact as a form sends it; null clears a field. */
export interface ContactFields {
  name: string;
  email: string | null;
  phoneNumber: string | null;
}

export interface BillingPackage {
  id: number;
  name: string;
}

export interface SignUp {
  name: string;
  email: string;
  password: string;
  passwordConfirmation: string;
  /** One of the API's time-zone names ("Pacific Time (US & Canada)"), or null for none. */
  timeZone: string | null;
  billingPackageId: number;
  termsOfService: boolean;
}

/** The user's own settings as the console shows them. */
export interface UserSettings {
  id: number;
  name: string;
  email: string;
  /** The API's time-zone name, or null when none is set (times are then read in UTC). */
  timeZone: string | null;
  memberPin: string;
  moderatorPin: string;
}

/** A refused request; `messages` are the `<errors>` of an XML answer or the `error` of a JSON one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly messages: string[],
  ) {
    super(messages.length > 0 ? messages.join("; ") : `The service answered ${status}.`);
  }
}

let csrfToken = "";
let onSignedOut: () => void = () => {};

/** Called with every session the console gets, and with the handler for a session that has expired. */
export function configureSession(session: Session | null, signedOut: () => void): void {
  csrfToken = session?.csrfToken ?? "";
  onSignedOut = signedOut;
}

async function send(method: string, path: string, headers: Record<string, string>, body?: string) {
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = csrfToken;
  const response = await fetch(path, { method, headers, body, credentials: "same-origin" });
  if (response.status === 401 && !path.startsWith("/console/session")) onSignedOut();
  return response;
}

async function sessionAnswer(response: Response): Promise<Session> {
  const json = (await response.json().catch(() => ({}))) as Partial<Session> & { error?: string };
  if (!response.ok || json.user === undefined || json.csrfToken === undefined) {
    throw new ApiError(response.status, json.error === undefined ? [] : [json.error]);
  }
  return { user: json.user, csrfToken: json.csrfToken };
}

export async function signIn(email: string, password: string): Promise<Session> {
  const response = await send(
    "POST",
    "/console/session",
    { "Content-Type": "application/json", Accept: "application/json" },
    JSON.stringify({ email, password }),
  );
  if (response.status === 429) {
    const wait = response.headers.get("Retry-After");
    throw new ApiError(429, [
      `Too many failed sign-ins. Try again${wait === null ? " later" : ` in ${wait} seconds`}.`,
    ]);
  }
  return sessionAnswer(response);
}

/** The current session, or null when the cookie is missing or expired. */
export async function currentSession(): Promise<Session | null> {
  const response = await send("GET", "/console/session", { Accept: "application/json" });
  if (response.status === 401) return null;
  return sessionAnswer(response);
}

export async function signOut(): Promise<void> {
  await send("DELETE", "/console/session", { Accept: "application/json" });
}

/* ---- Paths the browser follows itself (event streams, the recording, the CSV export) ---- */

function conferencePath(userId: number, conferenceId: number): string {
  return `/users/${userId}/conferences/${conferenceId}`;
}

/** The user's event stream (conferences starting and ending), for an EventSource. */
export function userEventsUrl(userId: number): string {
  return `/users/${userId}/events`;
}

/** A conference's event stream, for an EventSource. */
export function conferenceEventsUrl(userId: number, conferenceId: number): string {
  return `${conferencePath(userId, conferenceId)}/events`;
}

/** The recording as WAV, for an audio element and a download link (the cookie goes with them). */
export function recordingUrl(userId: number, conferenceId: number): string {
  return `${conferencePath(userId, conferenceId)}/recording`;
}

/** The calls as CSV, for a download link. */
export function callsCsvUrl(userId: number, conferenceId: number): string {
  return `${conferencePath(userId, conferenceId)}/calls.csv`;
}

/* ---- Users ---- */

/** Creates an account (needs no session); sign in afterwards. */
export async function signUp(user: SignUp): Promise<void> {
  await xml(
    "POST",
    "/users",
    `<user>${textElement("name", user.name)}${textElement("email", user.email)}${textElement(
      "password",
      user.password,
    )}${textElement("password-confirmation", user.passwordConfirmation)}${textElement(
      "time-zone",
      user.timeZone,
    )}${booleanElement("terms-of-service", user.termsOfService)}<billing-package>${integerElement(
      "id",
      user.billingPackageId,
    )}</billing-package></user>`,
  );
}

export async function listBillingPackages(): Promise<BillingPackage[]> {
  return items(await xml("GET", "/billing-packages")).map((element) => ({
    id: numeric(element, "id") ?? 0,
    name: text(element, "name") ?? "",
  }));
}

function readUserSettings(element: Element | null): UserSettings {
  if (element === null) throw new ApiError(0, ["The service answered without a user."]);
  return {
    id: numeric(element, "id") ?? 0,
    name: text(element, "name") ?? "",
    email: text(element, "email") ?? "",
    timeZone: text(element, "time-zone"),
    memberPin: text(element, "member-pin") ?? "",
    moderatorPin: text(element, "moderator-pin") ?? "",
  };
}

export async function getUserSettings(userId: number): Promise<UserSettings> {
  return readUserSettings(await xml("GET", `/users/${userId}`));
}

/** Sets the user's time zone (an API time-zone name, or null for none). */
export async function updateTimeZone(userId: number, timeZone: string | null): Promise<UserSettings> {
  return readUserSettings(
    await xml("PUT", `/users/${userId}`, `<user>${textElement("time-zone", timeZone)}</user>`),
  );
}

/* ---- Contacts ---- */

function readContact(element: Element): Contact {
  return {
    id: numeric(element, "id") ?? 0,
    name: text(element, "name") ?? "",
    email: text(element, "email"),
    phoneNumber: text(element, "phone-number"),
  };
}

function contactBody(contact: ContactFields): string {
  return `<contact>${textElement("name", contact.name)}${textElement("email", contact.email)}${textElement(
    "phone-number",
    contact.phoneNumber,
  )}</contact>`;
}

export async function listContacts(userId: number): Promise<Contact[]> {
  return items(await xml("GET", `/users/${userId}/contacts`)).map(readContact);
}

export async function createContact(userId: number, contact: ContactFields): Promise<Contact> {
  return readContact(required(await xml("POST", `/users/${userId}/contacts`, contactBody(contact))));
}

export async function updateContact(
  userId: number,
  contactId: number,
  contact: ContactFields,
): Promise<Contact> {
  return readContact(
    required(await xml("PUT", `/users/${userId}/contacts/${contactId}`, contactBody(contact))),
  );
}

export async function deleteContact(userId: number, contactId: number): Promise<void> {
  await xml("DELETE", `/users/${userId}/contacts/${contactId}`);
}

/* ---- Conferences ---- */

function conferenceBody(changes: ConferenceChanges): string {
  const flags: Array<[string, boolean | undefined]> = [
    ["direct-dial", changes.directDial],
    ["dial-in-locked", changes.dialInLocked],
    ["record-audio", changes.recordAudio],
    ["lecture-mode", changes.lectureMode],
    ["encrypted-only", changes.encryptedOnly],
  ];
  return `<conference>${changes.name === undefined ? "" : textElement("name", changes.name)}${
    changes.startTime === undefined ? "" : textElement("scheduled-to-start-at", changes.startTime)
  }${flags.map(([name, value]) => (value === undefined ? "" : booleanElement(name, value))).join("")}${
    changes.state === undefined ? "" : textElement("state", changes.state)
  }</conference>`;
}

export async function listConferences(userId: number): Promise<Conference[]> {
  return items(await xml("GET", `/users/${userId}/conferences`)).map(readConference);
}

export async function getConference(userId: number, conferenceId: number): Promise<Conference> {
  return readConference(required(await xml("GET", conferencePath(userId, conferenceId))));
}

/** Creates a conference (state new; the owner is added as its moderator). */
export async function createConference(
  userId: number,
  conference: ConferenceChanges & { name: string; startTime: string },
): Promise<Conference> {
  return readConference(
    required(await xml("POST", `/users/${userId}/conferences`, conferenceBody(conference))),
  );
}

export async function updateConference(
  userId: number,
  conferenceId: number,
  changes: ConferenceChanges,
): Promise<Conference> {
  return readConference(
    required(await xml("PUT", conferencePath(userId, conferenceId), conferenceBody(changes))),
  );
}

/** Deletes a conference and its attendees (a started one's calls are hung up). */
export async function deleteConference(userId: number, conferenceId: number): Promise<void> {
  await xml("DELETE", conferencePath(userId, conferenceId));
}

/** Ends a started conference for everyone. */
export async function endConference(userId: number, conferenceId: number): Promise<void> {
  await xml("POST", `${conferencePath(userId, conferenceId)}/end`);
}

/** How the service would read `text` as a start time, in the owner's zone (creates nothing). */
export async function readStartTime(userId: number, startTime: string): Promise<StartTime> {
  const element = required(
    await xml("GET", `/users/${userId}/start-time?text=${encodeURIComponent(startTime)}`),
  );
  return {
    text: text(element, "text") ?? "",
    scheduledToStartAt: date(element, "scheduled-to-start-at") ?? new Date(Number.NaN),
    timeZone: text(element, "time-zone") ?? "UTC",
  };
}

/** The numbers callers dial in on, as the service is configured (E.164). */
export async function accessNumbers(): Promise<string[]> {
  return items(await xml("GET", "/access-numbers")).map((element) => text(element, "number") ?? "");
}

/** Whether a conference has a recording to play (HEAD answers 200). */
export async function hasRecording(userId: number, conferenceId: number): Promise<boolean> {
  const response = await send("HEAD", recordingUrl(userId, conferenceId), { Accept: "audio/wav" });
  return response.ok;
}

/* ---- Attendees and their calls ---- */

function attendeePath(userId: number, conferenceId: number, attendeeId: number): string {
  return `${conferencePath(userId, conferenceId)}/attendees/${attendeeId}`;
}

export async function listAttendees(userId: number, conferenceId: number): Promise<Attendee[]> {
  const all = await xml("GET", `${conferencePath(userId, conferenceId)}/attendees`);
  const readAt = Date.now();
  return items(all).map((element) => readAttendee(element, readAt));
}

/** Adds an attendee; on a started conference the service calls them at once. */
export async function addAttendee(
  userId: number,
  conferenceId: number,
  attendee: NewAttendee,
): Promise<Attendee> {
  const added = await xml(
    "POST",
    `${conferencePath(userId, conferenceId)}/attendees`,
    `<attendee>${attendee.name === null ? "" : textElement("name", attendee.name)}${
      attendee.email === null ? "" : textElement("email", attendee.email)
    }${textElement("phone-number", attendee.phoneNumber)}</attendee>`,
  );
  return readAttendee(required(added), Date.now());
}

export async function updateAttendee(
  userId: number,
  conferenceId: number,
  attendeeId: number,
  changes: AttendeeChanges,
): Promise<void> {
  await xml(
    "PUT",
    attendeePath(userId, conferenceId, attendeeId),
    `<attendee>${changes.muted === undefined ? "" : booleanElement("muted", changes.muted)}${
      changes.handUp === undefined ? "" : booleanElement("hand-up", changes.handUp)
    }</attendee>`,
  );
}

/** Removes an attendee from the conference (hanging up their call, if any). */
export async function removeAttendee(
  userId: number,
  conferenceId: number,
  attendeeId: number,
): Promise<void> {
  await xml("DELETE", attendeePath(userId, conferenceId, attendeeId));
}

/** Calls an attendee of a started conference now (again). */
export async function callAttendee(userId: number, conferenceId: number, attendeeId: number): Promise<void> {
  await xml("POST", `${attendeePath(userId, conferenceId, attendeeId)}/call`);
}

/** The calls that are over, oldest first. */
export async function listCalls(userId: number, conferenceId: number): Promise<Call[]> {
  return items(await xml("GET", `${conferencePath(userId, conferenceId)}/calls`)).map(readCall);
}

/* ---- The XML transport ---- */

/** An XML API request; resolves with the answer's root element (null for 204). */
async function xml(method: string, path: string, body?: string): Promise<Element | null> {
  const headers: Record<string, string> = { Accept: "application/xml" };
  // Every POST and PUT says it is XML, bodiless ones too (the API's CSRF defence for Basic clients).
  if (body !== undefined || method === "POST" || method === "PUT")
    headers["Content-Type"] = "application/xml";
  const response = await send(method, path, headers, body);
  const answer = await response.text();
  const root =
    answer === "" ? null : new DOMParser().parseFromString(answer, "application/xml").documentElement;
  if (!response.ok) {
    const messages =
      root?.nodeName === "errors" ? Array.from(root.children, (error) => error.textContent ?? "") : [];
    throw new ApiError(response.status, messages);
  }
  return root;
}

function required(element: Element | null): Element {
  if (element === null) throw new ApiError(0, ["The service answered without a body."]);
  return element;
}

/** Escapes text for an XML element body. */
function escapeXml(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** A text element; nil for null. */
function textElement(name: string, value: string | null): string {
  return value === null ? `<${name} nil="true"/>` : `<${name}>${escapeXml(value)}</${name}>`;
}

function booleanElement(name: string, value: boolean): string {
  return `<${name} type="boolean">${value}</${name}>`;
}

function integerElement(name: string, value: number): string {
  return `<${name} type="integer">${value}</${name}>`;
}

function child(element: Element, name: string): Element | undefined {
  for (const node of Array.from(element.children)) if (node.nodeName === name) return node;
  return undefined;
}

function text(element: Element, name: string): string | null {
  const node = child(element, name);
  if (node === undefined || node.getAttribute("nil") === "true") return null;
  return node.textContent;
}

function flag(element: Element, name: string): boolean | null {
  const value = text(element, name);
  return value === null ? null : value === "true";
}

function date(element: Element, name: string): Date | null {
  const value = text(element, name);
  return value === null ? null : new Date(value);
}

function numeric(element: Element, name: string): number | null {
  const value = text(element, name);
  return value === null ? null : Number(value);
}

function readConference(element: Element): Conference {
  return {
    id: numeric(element, "id") ?? 0,
    state: (text(element, "state") ?? "new") as ConferenceState,
    name: text(element, "name") ?? "",
    scheduledToStartAt: date(element, "scheduled-to-start-at"),
    startedAt: date(element, "started-at"),
    endedAt: date(element, "ended-at"),
    directDial: flag(element, "direct-dial") === true,
    dialInLocked: flag(element, "dial-in-locked") === true,
    recordAudio: flag(element, "record-audio") === true,
    lectureMode: flag(element, "lecture-mode") === true,
    encryptedOnly: flag(element, "encrypted-only") === true,
    memberPin: text(element, "member-pin"),
    moderatorPin: text(element, "moderator-pin"),
  };
}

/** "+1 604-555-0101" from the stored country code and 10-digit number. */
function phoneNumber(element: Element): string | null {
  const subscriber = text(element, "phone-number-subscriber-number");
  if (subscriber === null) return null;
  const country = text(element, "phone-number-country-code");
  const grouped = /^\d{10}$/.test(subscriber)
    ? `${subscriber.slice(0, 3)}-${subscriber.slice(3, 6)}-${subscriber.slice(6)}`
    : subscriber;
  const extension = text(element, "phone-number-extension");
  return `${country === null ? "" : `+${country} `}${grouped}${extension === null ? "" : ` ext. ${extension}`}`;
}

function readAttendee(element: Element, readAt: number): Attendee {
  return {
    id: numeric(element, "id") ?? 0,
    state: text(element, "state") ?? "new",
    name: text(element, "name"),
    number: phoneNumber(element),
    location: text(element, "phone-number-location"),
    moderator: flag(element, "moderator") === true,
    dialIn: flag(element, "dial-in") === true,
    muted: flag(element, "muted"),
    handUp: flag(element, "hand-up"),
    encryption: text(element, "encryption"),
    duration: numeric(element, "duration"),
    readAt,
  };
}

/** A nested element, or undefined when it is nil. */
function nestedChild(element: Element, name: string): Element | undefined {
  const node = child(element, name);
  return node?.getAttribute("nil") === "true" ? undefined : node;
}

function readCall(element: Element): Call {
  const cause = nestedChild(element, "cause");
  const quality = nestedChild(element, "quality");
  return {
    id: numeric(element, "id") ?? 0,
    attendeeId: numeric(element, "attendee-id") ?? 0,
    direction: (text(element, "direction") ?? "outbound") as Call["direction"],
    number: text(element, "number"),
    invitedAt: text(element, "invited-at") ?? "",
    answeredAt: text(element, "answered-at"),
    durationSeconds: numeric(element, "duration") ?? 0,
    sipStatus: numeric(element, "sip-status") ?? 0,
    sipReason: text(element, "sip-reason") ?? "",
    cause:
      cause === undefined
        ? null
        : {
            protocol: text(cause, "protocol") as "Q.850" | "SIP",
            cause: numeric(cause, "code") ?? 0,
            text: text(cause, "text"),
          },
    hungUpBy: text(element, "hung-up-by") as Call["hungUpBy"],
    endReason: text(element, "end-reason") ?? "",
    codec: text(element, "codec"),
    srtp: flag(element, "srtp") === true,
    quality:
      quality === undefined
        ? null
        : {
            lossShare: numeric(quality, "loss-share"),
            remoteLossShare: numeric(quality, "remote-loss-share"),
            jitterMs: numeric(quality, "jitter-ms"),
            roundTripMs: numeric(quality, "round-trip-ms"),
            mos: numeric(quality, "mos"),
          },
  };
}

/** The elements of a `type="array"` answer. */
function items(root: Element | null): Element[] {
  return root === null ? [] : Array.from(root.children);
}
