import type { CallQuality, CallRecord } from "../../src/domain/call-record.js";

/**
 * The service's HTTP interface as the console uses it: the JSON session endpoints and the XML API
 * (parsed with DOMParser), authenticated by the session cookie with the CSRF token on every change.
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
  dialInLocked: boolean;
  recordAudio: boolean;
  lectureMode: boolean;
  /** Only calls over SIP over TLS with SRTP take part. */
  encryptedOnly: boolean;
  memberPin: string | null;
  moderatorPin: string | null;
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

/** An XML API request; resolves with the answer's root element (null for 204). */
export async function xml(method: string, path: string, body?: string): Promise<Element | null> {
  const headers: Record<string, string> = { Accept: "application/xml" };
  // Every POST and PUT says it is XML, bodiless ones too (the API's CSRF defence for Basic clients).
  if (body !== undefined || method === "POST" || method === "PUT")
    headers["Content-Type"] = "application/xml";
  const response = await send(method, path, headers, body);
  const text = await response.text();
  const root = text === "" ? null : new DOMParser().parseFromString(text, "application/xml").documentElement;
  if (!response.ok) {
    const messages =
      root?.nodeName === "errors" ? Array.from(root.children, (error) => error.textContent ?? "") : [];
    throw new ApiError(response.status, messages);
  }
  return root;
}

/** The numbers callers dial in on, as the service is configured (E.164). */
export async function accessNumbers(): Promise<string[]> {
  return items(await xml("GET", "/access-numbers")).map((element) => text(element, "number") ?? "");
}

/** Whether a conference has a recording to play (HEAD answers 200). */
export async function hasRecording(path: string): Promise<boolean> {
  const response = await send("HEAD", path, { Accept: "audio/wav" });
  return response.ok;
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

export function readConference(element: Element): Conference {
  return {
    id: numeric(element, "id") ?? 0,
    state: (text(element, "state") ?? "new") as ConferenceState,
    name: text(element, "name") ?? "",
    scheduledToStartAt: date(element, "scheduled-to-start-at"),
    startedAt: date(element, "started-at"),
    endedAt: date(element, "ended-at"),
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

export function readAttendee(element: Element, readAt: number): Attendee {
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

export function readCall(element: Element): Call {
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
export function items(root: Element | null): Element[] {
  return root === null ? [] : Array.from(root.children);
}

/** Escapes text for an XML element body. */
export function escapeXml(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
