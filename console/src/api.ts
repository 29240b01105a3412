import createClient from "openapi-fetch";
import type { CallQuality, CallRecord } from "../../src/domain/call-record.js";
import type { components, paths } from "./api-schema.js";

/**
 * The service's HTTP interface as the console uses it: the API in JSON, through a client that
 * openapi-fetch makes from the API's description (api-schema.ts, generated from /openapi.json by
 * `npm run openapi:types`), so that its paths, parameters and bodies are checked against the
 * document; and the console's own session endpoints, which the document leaves out. Requests go with
 * the session cookie, changes with its CSRF token. Every request the console makes is one function
 * here, with typed arguments and results, so that the views never see the transport.
 */

export interface SessionUser {
  id: number;
  name: string;
  email: string;
  /** IANA zone; null when the user chose none, and times are read (by the service) and shown in UTC. */
  timeZone: string | null;
}

export interface Session {
  user: SessionUser;
  csrfToken: string;
}

export type ConferenceState = "new" | "pending" | "started" | "ended";

export interface Conference {
  id: number;
  /** As last read: sent back with a change, so that one made elsewhere since is not overwritten. */
  lockVersion: number;
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
  /** The text read, as sent: which of the texts typed this reading is of. */
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

/** A call's record as the console shows it (times ISO 8601 UTC, as the API gives them). */
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
  /** As last read: sent back with a change, so that one made elsewhere since is not overwritten. */
  lockVersion: number;
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
  name: string;
  email: string;
  /** The API's time-zone name, or null when none is set (times are then read in UTC). */
  timeZone: string | null;
  memberPin: string;
  moderatorPin: string;
}

/** A refused request; `messages` are the API's `errors`, or the `error` of a session endpoint. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly messages: string[],
  ) {
    super(messages.length > 0 ? messages.join("; ") : `The service answered ${status}.`);
  }
}

/** A change refused because the resource was changed by someone else since it was read (409). */
export class ChangedElsewhere extends ApiError {}

let csrfToken = "";
let onSignedOut: () => void = () => {};

/** Called with every session the console gets, and with the handler for a session that has expired. */
export function configureSession(session: Session | null, signedOut: () => void): void {
  csrfToken = session?.csrfToken ?? "";
  onSignedOut = signedOut;
}

/** A request outside the API's document: the session endpoints, and the recording's HEAD. */
async function send(method: string, path: string, headers: Record<string, string>, body?: string) {
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = csrfToken;
  const response = await fetch(path, { method, headers, body, credentials: "same-origin" });
  if (response.status === 401 && !path.startsWith("/console/session")) onSignedOut();
  return response;
}

const JSON_MEDIA = "application/json";
type Schemas = components["schemas"];

/** The API in JSON: paths, parameters and bodies as the document has them, answers its JSON. */
const api = createClient<paths, typeof JSON_MEDIA>({ headers: { Accept: JSON_MEDIA } });
api.use({
  onRequest({ request }) {
    if (request.method === "GET") return;
    request.headers.set("X-CSRF-Token", csrfToken);
    // Every POST and PUT says its Content-Type, a bodiless one too (the API's CSRF defence for
    // Basic clients answers 415 without one); openapi-fetch sets it only with a body.
    if ((request.method === "POST" || request.method === "PUT") && !request.headers.has("Content-Type"))
      request.headers.set("Content-Type", JSON_MEDIA);
  },
  onResponse({ response }) {
    if (response.status === 401) onSignedOut();
  },
});

/** What openapi-fetch resolves with: the answer's document, or its error body, and the response. */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The answer of a request the service did; a refused one throws its `errors`. */
async function succeeded<T>(pending: Promise<Answer<T>>): Promise<Answer<T>> {
  const answer = await pending;
  if (!answer.response.ok) {
    // A refusal's body is `{"errors": [...]}`; one from elsewhere (a proxy's 502) may be any text.
    const errors = (answer.error as Partial<Schemas["Errors"]> | null | undefined)?.errors;
    throw new ApiError(answer.response.status, Array.isArray(errors) ? errors : []);
  }
  return answer;
}

/** The document the service answered; a refused request throws its `errors`. */
async function documentOf<T>(pending: Promise<Answer<T>>): Promise<T> {
  const { data } = await succeeded(pending);
  if (data === undefined) throw new ApiError(0, ["The service answered without a document."]);
  return data;
}

/** The default, extended representations, beside which the document has ?representation=basic. */
type Extended = Schemas["Conference"] | Schemas["Conference"][] | Schemas["Attendee"] | Schemas["Attendee"][];

/**
 * The document of a request that could ask for the basic representation: the console never does,
 * so the service answers the extended one (the document's type allows both).
 */
async function extendedOf<T>(pending: Promise<Answer<T>>): Promise<Extract<T, Extended>> {
  return (await documentOf(pending)) as Extract<T, Extended>;
}

/**
 * What a PUT sent with the lock-version last read gets: 409 when the resource has changed since
 * (the only conflict the API answers a contact's or a conference's PUT with).
 */
async function unlessChangedElsewhere<T>(answer: Promise<T>): Promise<T> {
  try {
    return await answer;
  } catch (caught) {
    if (caught instanceof ApiError && caught.status === 409) throw new ChangedElsewhere(409, caught.messages);
    throw caught;
  }
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
  await succeeded(
    api.POST("/users", {
      body: {
        name: user.name,
        email: user.email,
        password: user.password,
        "password-confirmation": user.passwordConfirmation,
        "time-zone": user.timeZone,
        "terms-of-service": user.termsOfService,
        "billing-package": { id: user.billingPackageId },
      },
    }),
  );
}

export async function listBillingPackages(): Promise<BillingPackage[]> {
  return (await documentOf(api.GET("/billing-packages"))).map((billingPackage) => ({
    id: billingPackage.id,
    name: billingPackage.name ?? "",
  }));
}

function readUserSettings(user: Schemas["User"]): UserSettings {
  return {
    name: user.name ?? "",
    email: user.email ?? "",
    timeZone: user["time-zone"],
    memberPin: user["member-pin"] ?? "",
    moderatorPin: user["moderator-pin"] ?? "",
  };
}

export async function getUserSettings(userId: number): Promise<UserSettings> {
  return readUserSettings(await documentOf(api.GET("/users/{userId}", { params: { path: { userId } } })));
}

/** Sets the user's time zone (an API time-zone name, or null for none). */
export async function updateTimeZone(userId: number, timeZone: string | null): Promise<UserSettings> {
  return readUserSettings(
    await documentOf(
      api.PUT("/users/{userId}", { params: { path: { userId } }, body: { "time-zone": timeZone } }),
    ),
  );
}

/* ---- Contacts ---- */

function readContact(contact: Schemas["Contact"]): Contact {
  return {
    id: contact.id,
    lockVersion: contact["lock-version"],
    name: contact.name ?? "",
    email: contact.email,
    phoneNumber: contact["phone-number"],
  };
}

/** The fields given; one left out (undefined) is left out of the JSON, so left as it is. */
function contactBody(contact: Partial<ContactFields>): Schemas["ContactUpdate"] {
  return { name: contact.name, email: contact.email, "phone-number": contact.phoneNumber };
}

/** What a change names: the resource, and the lock-version it was last read at. */
type LastRead = Pick<Contact | Conference, "id" | "lockVersion">;

export async function listContacts(userId: number): Promise<Contact[]> {
  return (await documentOf(api.GET("/users/{userId}/contacts", { params: { path: { userId } } }))).map(
    readContact,
  );
}

export async function createContact(userId: number, contact: ContactFields): Promise<Contact> {
  return readContact(
    await documentOf(
      api.POST("/users/{userId}/contacts", {
        params: { path: { userId } },
        body: { ...contactBody(contact), name: contact.name },
      }),
    ),
  );
}

/**
 * Changes the fields given of a contact as last read (the others are left as they are); one
 * changed elsewhere since throws ChangedElsewhere.
 */
export async function updateContact(
  userId: number,
  contact: LastRead,
  fields: Partial<ContactFields>,
): Promise<Contact> {
  return readContact(
    await unlessChangedElsewhere(
      documentOf(
        api.PUT("/users/{userId}/contacts/{contactId}", {
          params: { path: { userId, contactId: contact.id } },
          body: { ...contactBody(fields), "lock-version": contact.lockVersion },
        }),
      ),
    ),
  );
}

export async function deleteContact(userId: number, contactId: number): Promise<void> {
  await succeeded(
    api.DELETE("/users/{userId}/contacts/{contactId}", { params: { path: { userId, contactId } } }),
  );
}

/* ---- Conferences ---- */

/** The fields that change; an undefined one is left out of the JSON, so left as it is. */
function conferenceBody(changes: ConferenceChanges): Schemas["ConferenceUpdate"] {
  return {
    name: changes.name,
    "scheduled-to-start-at": changes.startTime,
    "direct-dial": changes.directDial,
    "dial-in-locked": changes.dialInLocked,
    "record-audio": changes.recordAudio,
    "lecture-mode": changes.lectureMode,
    "encrypted-only": changes.encryptedOnly,
    state: changes.state,
  };
}

function readConference(conference: Schemas["Conference"]): Conference {
  return {
    id: conference.id,
    lockVersion: conference["lock-version"],
    state: conference.state,
    name: conference.name ?? "",
    scheduledToStartAt: dateOf(conference["scheduled-to-start-at"]),
    startedAt: dateOf(conference["started-at"]),
    endedAt: dateOf(conference["ended-at"]),
    directDial: conference["direct-dial"] === true,
    dialInLocked: conference["dial-in-locked"] === true,
    recordAudio: conference["record-audio"] === true,
    lectureMode: conference["lecture-mode"] === true,
    encryptedOnly: conference["encrypted-only"] === true,
    memberPin: conference["member-pin"],
    moderatorPin: conference["moderator-pin"],
  };
}

function dateOf(value: string | null): Date | null {
  return value === null ? null : new Date(value);
}

export async function listConferences(userId: number): Promise<Conference[]> {
  return (await extendedOf(api.GET("/users/{userId}/conferences", { params: { path: { userId } } }))).map(
    readConference,
  );
}

export async function getConference(userId: number, conferenceId: number): Promise<Conference> {
  return readConference(
    await extendedOf(
      api.GET("/users/{userId}/conferences/{conferenceId}", { params: { path: { userId, conferenceId } } }),
    ),
  );
}

/** Creates a conference (state new; the owner is added as its moderator). */
export async function createConference(
  userId: number,
  conference: ConferenceChanges & { name: string; startTime: string },
): Promise<Conference> {
  return readConference(
    await extendedOf(
      api.POST("/users/{userId}/conferences", {
        params: { path: { userId } },
        body: {
          ...conferenceBody(conference),
          name: conference.name,
          "scheduled-to-start-at": conference.startTime,
        },
      }),
    ),
  );
}

/** Changes a conference as last read; one changed elsewhere since throws ChangedElsewhere. */
export async function updateConference(
  userId: number,
  conference: LastRead,
  changes: ConferenceChanges,
): Promise<Conference> {
  return readConference(
    await unlessChangedElsewhere(
      extendedOf(
        api.PUT("/users/{userId}/conferences/{conferenceId}", {
          params: { path: { userId, conferenceId: conference.id } },
          body: { ...conferenceBody(changes), "lock-version": conference.lockVersion },
        }),
      ),
    ),
  );
}

/** Deletes a conference and its attendees (a started one's calls are hung up). */
export async function deleteConference(userId: number, conferenceId: number): Promise<void> {
  await succeeded(
    api.DELETE("/users/{userId}/conferences/{conferenceId}", { params: { path: { userId, conferenceId } } }),
  );
}

/** Ends a started conference for everyone. */
export async function endConference(userId: number, conferenceId: number): Promise<void> {
  await succeeded(
    api.POST("/users/{userId}/conferences/{conferenceId}/end", {
      params: { path: { userId, conferenceId } },
    }),
  );
}

/** How the service would read `text` as a start time, in the owner's zone (creates nothing). */
export async function readStartTime(userId: number, startTime: string): Promise<StartTime> {
  const read = await documentOf(
    api.GET("/users/{userId}/start-time", { params: { path: { userId }, query: { text: startTime } } }),
  );
  return {
    text: read.text,
    scheduledToStartAt: new Date(read["scheduled-to-start-at"]),
    timeZone: read["time-zone"],
  };
}

/** The numbers callers dial in on, as the service is configured (E.164). */
export async function accessNumbers(): Promise<string[]> {
  return (await documentOf(api.GET("/access-numbers"))).map((access) => access.number ?? "");
}

/** Whether a conference has a recording to play (HEAD answers 200). */
export async function hasRecording(userId: number, conferenceId: number): Promise<boolean> {
  // HEAD is not in the document (Fastify answers it for the GET), so not in the typed client.
  const response = await send("HEAD", recordingUrl(userId, conferenceId), { Accept: "audio/wav" });
  return response.ok;
}

/* ---- Attendees and their calls ---- */

/** "+1 604-555-0101" from the stored country code and 10-digit number. */
function phoneNumber(attendee: Schemas["Attendee"]): string | null {
  const subscriber = attendee["phone-number-subscriber-number"];
  if (subscriber === null) return null;
  const country = attendee["phone-number-country-code"];
  const grouped = /^\d{10}$/.test(subscriber)
    ? `${subscriber.slice(0, 3)}-${subscriber.slice(3, 6)}-${subscriber.slice(6)}`
    : subscriber;
  const extension = attendee["phone-number-extension"];
  return `${country === null ? "" : `+${country} `}${grouped}${extension === null ? "" : ` ext. ${extension}`}`;
}

function readAttendee(attendee: Schemas["Attendee"], readAt: number): Attendee {
  return {
    id: attendee.id,
    state: attendee.state,
    name: attendee.name,
    number: phoneNumber(attendee),
    location: attendee["phone-number-location"],
    moderator: attendee.moderator === true,
    dialIn: attendee["dial-in"] === true,
    muted: attendee.muted,
    handUp: attendee["hand-up"],
    encryption: attendee.encryption,
    duration: attendee.duration,
    readAt,
  };
}

export async function listAttendees(userId: number, conferenceId: number): Promise<Attendee[]> {
  const all = await extendedOf(
    api.GET("/users/{userId}/conferences/{conferenceId}/attendees", {
      params: { path: { userId, conferenceId } },
    }),
  );
  const readAt = Date.now();
  return all.map((attendee) => readAttendee(attendee, readAt));
}

/** Adds an attendee; on a started conference the service calls them at once. */
export async function addAttendee(
  userId: number,
  conferenceId: number,
  attendee: NewAttendee,
): Promise<Attendee> {
  const added = await extendedOf(
    api.POST("/users/{userId}/conferences/{conferenceId}/attendees", {
      params: { path: { userId, conferenceId } },
      body: { name: attendee.name, email: attendee.email, "phone-number": attendee.phoneNumber },
    }),
  );
  return readAttendee(added, Date.now());
}

export async function updateAttendee(
  userId: number,
  conferenceId: number,
  attendeeId: number,
  changes: AttendeeChanges,
): Promise<void> {
  await succeeded(
    api.PUT("/users/{userId}/conferences/{conferenceId}/attendees/{attendeeId}", {
      params: { path: { userId, conferenceId, attendeeId } },
      // An undefined field is left out of the JSON, so left as it is.
      body: { muted: changes.muted, "hand-up": changes.handUp },
    }),
  );
}

/** Removes an attendee from the conference (hanging up their call, if any). */
export async function removeAttendee(
  userId: number,
  conferenceId: number,
  attendeeId: number,
): Promise<void> {
  await succeeded(
    api.DELETE("/users/{userId}/conferences/{conferenceId}/attendees/{attendeeId}", {
      params: { path: { userId, conferenceId, attendeeId } },
    }),
  );
}

/** Calls an attendee of a started conference now (again). */
export async function callAttendee(userId: number, conferenceId: number, attendeeId: number): Promise<void> {
  await succeeded(
    api.POST("/users/{userId}/conferences/{conferenceId}/attendees/{attendeeId}/call", {
      params: { path: { userId, conferenceId, attendeeId } },
    }),
  );
}

function readCall(call: Schemas["Call"]): Call {
  const { cause, quality } = call;
  return {
    id: call.id,
    attendeeId: call["attendee-id"],
    direction: call.direction as Call["direction"],
    number: call.number,
    invitedAt: call["invited-at"],
    answeredAt: call["answered-at"],
    durationSeconds: call.duration,
    sipStatus: call["sip-status"],
    sipReason: call["sip-reason"] ?? "",
    cause:
      cause === null
        ? null
        : { protocol: cause.protocol as "Q.850" | "SIP", cause: cause.code ?? 0, text: cause.text },
    hungUpBy: call["hung-up-by"] as Call["hungUpBy"],
    endReason: call["end-reason"] ?? "",
    codec: call.codec,
    srtp: call.srtp === true,
    quality:
      quality === null
        ? null
        : {
            lossShare: quality["loss-share"],
            remoteLossShare: quality["remote-loss-share"],
            jitterMs: quality["jitter-ms"],
            roundTripMs: quality["round-trip-ms"],
            mos: quality.mos,
          },
  };
}

/** The calls that are over, oldest first. */
export async function listCalls(userId: number, conferenceId: number): Promise<Call[]> {
  return (
    await documentOf(
      api.GET("/users/{userId}/conferences/{conferenceId}/calls", {
        params: { path: { userId, conferenceId } },
      }),
    )
  ).map(readCall);
}
