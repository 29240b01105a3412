/**
 * Webhooks: a user's HTTP endpoints that receive the events of the event stream as signed JSON POSTs.
 * The rules here decide what a webhook may be (its URL, the event types it takes), which addresses it
 * may never reach (server-side request forgery), what each delivery says, and when it is tried again.
 * No I/O: resolving host names and sending are in src/webhooks.
 */
import { randomBytes } from "node:crypto";
import { isIP } from "node:net";
import { ValidationFailed } from "./errors.js";
import { CONFERENCE_EVENT_TYPES, type ConferenceEvent, type ConferenceEventType } from "./event.js";
import { FieldReader, type InputMap } from "./input.js";
import type { Versioned } from "./user.js";

export interface Webhook extends Versioned {
  userId: number;
  url: string;
  /** The event types it takes; null: every type, including types added later. */
  eventTypes: ConferenceEventType[] | null;
  enabled: boolean;
  /** When and why it was last disabled: a null reason with a time means its owner disabled it. */
  disabledAt: string | null;
  disabledReason: string | null;
}

export interface WebhookChanges {
  url?: string;
  eventTypes?: ConferenceEventType[] | null;
  enabled?: boolean;
}

/** Webhooks a user may have: each event is sent to every one of them. */
export const MAX_WEBHOOKS_PER_USER = 20;
export const MAX_URL_LENGTH = 2048;

const EVENT_TYPES: ReadonlySet<string> = new Set(CONFERENCE_EVENT_TYPES);

/**
 * A webhook document: url (required on create), event-types (an array of event-type; nil or left
 * out on create: every type), enabled (default true). The secret is the service's, never the client's.
 */
export function readWebhookChanges(input: InputMap, mode: "create" | "update"): WebhookChanges {
  const reader = new FieldReader(input);
  const changes: WebhookChanges = {};
  const url =
    mode === "create" ? reader.requiredText("url", MAX_URL_LENGTH) : reader.text("url", MAX_URL_LENGTH);
  if (url === null) reader.fail("url can't be blank");
  else if (url !== undefined) {
    const problem = urlProblem(url);
    if (problem === undefined) changes.url = new URL(url).href;
    else reader.fail(`url ${problem}`);
  }

  if (reader.has("event-types")) {
    const raw = input["event-types"];
    if (raw === null) changes.eventTypes = null;
    else {
      const items = Array.isArray(raw) ? raw : undefined;
      if (items === undefined || items.some((item) => typeof item !== "string")) {
        reader.fail('event-types must be an array of <event-type> elements (type="array")');
      } else if (items.length === 0) {
        reader.fail('event-types names no event type: leave it out, or send it nil="true", for every type');
      } else {
        const types = (items as string[]).map((item) => item.trim());
        const unknown = types.filter((type) => !EVENT_TYPES.has(type));
        if (unknown.length > 0)
          reader.fail(
            `event-types: ${unknown.map((type) => `"${type}"`).join(", ")} ${unknown.length === 1 ? "is not an event type" : "are not event types"}; the types are ${CONFERENCE_EVENT_TYPES.join(", ")}`,
          );
        else changes.eventTypes = CONFERENCE_EVENT_TYPES.filter((type) => types.includes(type));
      }
    }
  }

  const enabled = reader.boolean("enabled");
  if (enabled === null) reader.fail("enabled can't be blank");
  else if (enabled !== undefined) changes.enabled = enabled;
  reader.check();
  return changes;
}

/** What is wrong with a webhook URL's shape (not where it leads); undefined when nothing. */
export function urlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `is not a URL: "${text}"`;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return `must be an http:// or https:// URL, not ${url.protocol}`;
  if (url.username !== "" || url.password !== "")
    return "must not carry a user name or password (receivers check the signature instead)";
  if (url.hostname === "") return "has no host";
  return undefined;
}

/** The host of a webhook URL as DNS or an address literal reads it (IPv6 without its brackets). */
export function urlHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
}

export function takesEvent(eventTypes: readonly string[] | null, type: string): boolean {
  return eventTypes === null || eventTypes.includes(type);
}

/** Refuses a create when the user already has the most webhooks allowed. */
export function checkWebhookCount(existing: number): void {
  if (existing >= MAX_WEBHOOKS_PER_USER)
    throw new ValidationFailed([`a user may have at most ${MAX_WEBHOOKS_PER_USER} webhooks`]);
}

// ---------------------------------------------------------------------------------------------
// Addresses a webhook may not reach (server-side request forgery): a client must not make the
// service call into its own network, its host, or the cloud's metadata service.

interface Range {
  /** The first address as a number, the prefix length, and what the range is. */
  base: bigint;
  bits: number;
  name: string;
}

function parseIPv4(address: string): bigint {
  return address.split(".").reduce((value, part) => (value << 8n) | BigInt(Number(part)), 0n);
}

/** The eight 16-bit groups of an IPv6 address (`::` expanded, a trailing dotted quad read). */
function parseIPv6(address: string): bigint {
  let text = address.toLowerCase().replace(/%.*$/, "");
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = parseIPv4(dotted[1] as string);
    text = `${text.slice(0, -(dotted[1] as string).length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  const missing = 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array<string>(tail === undefined ? 0 : missing).fill("0"), ...tailGroups];
  return groups.reduce((value, group) => (value << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

function range(cidr: string, name: string): Range {
  const [address = "", bits = ""] = cidr.split("/");
  const base = isIP(address) === 4 ? parseIPv4(address) : parseIPv6(address);
  return { base, bits: Number(bits), name };
}

const IPV4_REFUSED: readonly Range[] = [
  range("0.0.0.0/8", "'this network' (0.0.0.0/8)"),
  range("10.0.0.0/8", "private"),
  range("100.64.0.0/10", "shared (carrier-grade NAT)"),
  range("127.0.0.0/8", "loopback"),
  range("169.254.0.0/16", "link-local"),
  range("172.16.0.0/12", "private"),
  range("192.0.0.0/24", "IETF protocol assignment"),
  range("192.0.2.0/24", "documentation"),
  range("192.88.99.0/24", "6to4 relay"),
  range("192.168.0.0/16", "private"),
  range("198.18.0.0/15", "benchmarking"),
  range("198.51.100.0/24", "documentation"),
  range("203.0.113.0/24", "documentation"),
  range("224.0.0.0/4", "multicast"),
  range("240.0.0.0/4", "reserved"),
];

/** IPv6 ranges that carry an IPv4 address in their low (or, for 6to4, second and third) groups. */
const IPV4_MAPPED = range("::ffff:0:0/96", "IPv4-mapped");
const NAT64 = range("64:ff9b::/96", "NAT64");
const SIX_TO_FOUR = range("2002::/16", "6to4");

const IPV6_REFUSED: readonly Range[] = [
  range("::/128", "unspecified"),
  range("::1/128", "loopback"),
  range("::/96", "IPv4-compatible (deprecated)"),
  range("64:ff9b:1::/48", "local-use NAT64"),
  range("100::/64", "discard-only"),
  range("2001::/32", "Teredo"),
  range("2001:2::/48", "benchmarking"),
  range("2001:db8::/32", "documentation"),
  range("fc00::/7", "unique local"),
  range("fe80::/10", "link-local"),
  range("fec0::/10", "site-local (deprecated)"),
  range("ff00::/8", "multicast"),
];

function inRange(value: bigint, width: number, candidate: Range): boolean {
  const shift = BigInt(width - candidate.bits);
  return value >> shift === candidate.base >> shift;
}

function ipv4Problem(value: bigint): string | undefined {
  return IPV4_REFUSED.find((candidate) => inRange(value, 32, candidate))?.name;
}

/**
 * What kind of address a webhook may not reach `address` is (loopback, private, link-local...), or
 * undefined when it is a public address. IPv6 addresses that embed an IPv4 one are judged by it.
 */
export function refusedAddressKind(address: string): string | undefined {
  const family = isIP(address);
  if (family === 4) return ipv4Problem(parseIPv4(address));
  if (family !== 6) return "unreadable";
  const value = parseIPv6(address);
  if (inRange(value, 128, IPV4_MAPPED) || inRange(value, 128, NAT64)) {
    const embedded = ipv4Problem(value & 0xffffffffn);
    return embedded && `${embedded} (in an IPv6 address)`;
  }
  if (inRange(value, 128, SIX_TO_FOUR)) {
    const embedded = ipv4Problem((value >> 80n) & 0xffffffffn);
    return embedded && `${embedded} (in a 6to4 address)`;
  }
  return IPV6_REFUSED.find((candidate) => inRange(value, 128, candidate))?.name;
}

/** The 422 message for a destination a webhook may not reach. */
export function refusedAddressMessage(host: string, address: string, kind: string): string {
  const where = host === address ? address : `${host} (${address})`;
  return `url leads to ${where}, a ${kind} address: webhooks may not call private, loopback or link-local networks`;
}

// ---------------------------------------------------------------------------------------------
// Deliveries.

/**
 * The JSON body of an event's delivery, the Standard Webhooks shape: `type`, `timestamp` (when it
 * happened) and `data`, whose fields are those of the event stream's data plus the event's id.
 */
export function webhookPayload(event: ConferenceEvent): string {
  return JSON.stringify({
    type: event.type,
    timestamp: event.at,
    data: {
      eventId: event.id,
      conferenceId: event.conferenceId,
      attendeeId: event.attendeeId,
      ...(event.reason !== null && { reason: event.reason }),
      ...(event.encryption !== null && { encryption: event.encryption }),
      ...(event.recovery !== null && { recovery: event.recovery }),
      ...(event.call !== null && { call: event.call }),
    },
  });
}

/** A delivery is tried for this long after its event; then it has failed. */
export const DELIVERY_WINDOW_MS = 24 * 3_600_000;

/**
 * The waits between attempts, as multiples of the base wait (5 s in production): 5 s, 1 min, 5 min,
 * 30 min, 1 h, 2 h, 4 h and 8 h, then a last attempt when the day is up (about 24 h after the
 * event). Each wait gets up to a tenth more at random, so that receivers that failed together are
 * not all tried again at the same instant.
 */
export const RETRY_MULTIPLES: readonly number[] = [1, 12, 60, 360, 720, 1440, 2880, 5760];
const JITTER = 0.1;
/** A Retry-After longer than this is not waited for in full. */
const MAX_RETRY_AFTER_MS = 3_600_000;

export interface RetryTiming {
  /** When the delivery was queued (its event), ms since the epoch. */
  createdAt: number;
  /** Attempts made so far, the failed one included (1 after the first). */
  attempts: number;
  /** When the failed attempt ended. */
  now: number;
  baseMs: number;
  /** 0 to 1, for the jitter. */
  random: number;
  /** The receiver's Retry-After, in ms from now, when it sent one. */
  retryAfterMs?: number | undefined;
}

/** When to try a failed delivery again, ms since the epoch; undefined: it has had its day, give up. */
export function nextAttemptAt(timing: RetryTiming): number | undefined {
  const deadline = timing.createdAt + DELIVERY_WINDOW_MS;
  if (timing.now >= deadline) return undefined;
  const multiple = RETRY_MULTIPLES[timing.attempts - 1];
  if (multiple === undefined) return deadline;
  let wait = timing.baseMs * multiple * (1 + JITTER * timing.random);
  if (timing.retryAfterMs !== undefined)
    wait = Math.max(wait, Math.min(timing.retryAfterMs, MAX_RETRY_AFTER_MS));
  return Math.min(timing.now + wait, deadline);
}

/** Retry-After as ms from `now`: delay-seconds or an HTTP date (RFC 9110 section 10.2.3). */
export function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** How an attempt ended: the receiver's status, or why there was none. */
export type AttemptOutcome = { status: number } | { error: string };

/**
 * delivered: a 2xx; gone: 410, the receiver wants no more (the webhook is disabled at once, as
 * Standard Webhooks advises); failed: anything else (3xx redirects are not followed), tried again.
 */
export function attemptResult(outcome: AttemptOutcome): "delivered" | "gone" | "failed" {
  if ("error" in outcome) return "failed";
  if (outcome.status >= 200 && outcome.status < 300) return "delivered";
  return outcome.status === 410 ? "gone" : "failed";
}

export const GONE_REASON = "the receiver answered 410 Gone";

/** Why a webhook whose deliveries failed for a day is disabled, with the last failure. */
export function failingReason(lastFailure: string): string {
  return `every delivery failed for a day; the last: ${lastFailure}`;
}

/** The log's words for an attempt's outcome. */
export function describeOutcome(outcome: AttemptOutcome): string {
  return "error" in outcome ? outcome.error : `HTTP ${outcome.status}`;
}

/** One attempt of a delivery, as the log shows it. */
export interface WebhookAttempt {
  attemptedAt: string;
  /** The receiver's HTTP status; null when there was none. */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/** One event's delivery to one webhook, with its attempts (the delivery log). */
export interface WebhookDelivery extends Versioned {
  webhookId: number;
  messageId: string;
  eventId: number;
  eventType: string;
  /** The JSON body, the same on every attempt. */
  payload: string;
  state: "pending" | "sending" | "delivered" | "failed";
  /** Attempts begun (one being made counts). */
  attemptCount: number;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  lastError: string | null;
  attempts: WebhookAttempt[];
}

/**
 * A delivery's webhook-id (Standard Webhooks): the same on every attempt, so a receiver can drop
 * repeats; never a `.`, which separates it from the timestamp in what is signed.
 */
export function newMessageId(): string {
  return `msg_${randomBytes(16).toString("base64url")}`;
}
