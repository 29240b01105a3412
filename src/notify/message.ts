/**
 * Writes a notification e-mail from its facts: subject, plain text and HTML saying the same things,
 * and the iCalendar object (RFC 5545/5546) that lets a calendar add, move or remove the event.
 */
import escapeHtml from "escape-html";
import ical, { ICalCalendarMethod, ICalEventStatus } from "ical-generator";
import { parsePhoneNumberFromString } from "libphonenumber-js";
import { DateTime } from "luxon";
import { KEYPAD } from "../domain/keypad.js";
import type { NotificationFacts, OutboxFacts, WebhookDisabledFacts } from "../domain/notification.js";

export interface MessageSettings {
  /** The From header, `Name <address>` or a bare address. */
  from: string;
  accessNumbers: readonly string[];
  /** Where people reach the web listener (BRIDGELINE_PUBLIC_URL): the join links start with it. */
  publicUrl: string;
  supportEmail: string;
  supportPhone: string | null;
}

export interface NotificationMessage {
  subject: string;
  text: string;
  html: string;
  /** The iCalendar object of a message about a conference; none for other messages. */
  calendar?: { method: "REQUEST" | "CANCEL"; content: string };
}

/** Conferences have no end time; calendars get an hour-long event. */
const CALENDAR_EVENT_MINUTES = 60;

/**
 * Header fields are one line: line breaks and other control characters in user-supplied names are
 * turned into spaces, so no name can add a header (an injected `Bcc:`, say).
 */
export function headerSafe(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what goes.
  return value.replace(/[\u0000-\u001f\u007f\u0085\u2028\u2029]+/g, " ").trim();
}

/** The address of a mailbox written `Name <address>` or bare. */
export function addressOf(mailbox: string): string {
  return /<([^<>]*)>\s*$/.exec(mailbox)?.[1] ?? mailbox;
}

export function mailDomain(from: string): string {
  const address = addressOf(from);
  return address.slice(address.lastIndexOf("@") + 1) || "localhost";
}

/** The calendar UID stays the same for every message about one conference. */
function calendarUid(facts: NotificationFacts, from: string): string {
  const created = Date.parse(facts.conference.createdAt);
  return `conference-${facts.conference.id}-${created}@${mailDomain(from)}`;
}

function formatNumber(e164: string): string {
  return parsePhoneNumberFromString(e164)?.formatInternational() ?? e164;
}

function startTime(facts: NotificationFacts): string {
  const zone = facts.recipient.timeZone;
  const start = DateTime.fromISO(facts.conference.scheduledToStartAt, { zone: zone.iana });
  return `${start.toFormat("cccc, LLLL d, yyyy 'at' h:mm a ZZZZ")} (${zone.name})`;
}

/** The join page with the conference filled in: a browser joins there with the PIN. */
function joinUrl(settings: MessageSettings, conferenceId: number): string {
  const url = new URL("/join", settings.publicUrl);
  url.searchParams.set("conference", String(conferenceId));
  return url.href;
}

/** One paragraph, list or link of the message, rendered once as text and once as HTML. */
type Block = { paragraph: string } | { heading: string; items: string[] } | { label: string; url: string };

function supportBlock(settings: MessageSettings): Block {
  return {
    heading: "Support",
    items: [
      `E-mail: ${settings.supportEmail}`,
      ...(settings.supportPhone === null ? [] : [`Telephone: ${settings.supportPhone}`]),
    ],
  };
}

function blocks(facts: NotificationFacts, settings: MessageSettings): Block[] {
  const { conference, recipient } = facts;
  const when = startTime(facts);
  const greeting = `Hello ${recipient.name ? headerSafe(recipient.name) : recipient.email},`;
  const support = supportBlock(settings);
  if (facts.kind === "cancellation") {
    return [
      { paragraph: greeting },
      {
        paragraph: `${conference.ownerName} has cancelled the conference call "${conference.name}" that was to start on ${when}.`,
      },
      support,
    ];
  }
  const seesModeratorPin = recipient.role !== "member";
  const opening =
    facts.kind === "invitation"
      ? `${conference.ownerName} invites you to the conference call "${conference.name}".`
      : `The conference call "${conference.name}" from ${conference.ownerName} has changed. Here are its current details.`;
  const joining = recipient.callAt
    ? `We will call you at ${formatNumber(`+1${recipient.callAt.subscriberNumber}`)}${
        recipient.callAt.extension ? ` (extension ${recipient.callAt.extension})` : ""
      } when the conference starts. If you miss the call, dial in as below.`
    : "Dial in: call one of the access numbers below at the start time and enter your PIN when asked.";
  const access =
    settings.accessNumbers.length > 0
      ? settings.accessNumbers.map(formatNumber)
      : [`No access number is configured yet; ask support (${settings.supportEmail}).`];
  const pins = [`Member PIN: ${conference.memberPin}`];
  if (seesModeratorPin) {
    pins.push(
      `Moderator PIN: ${conference.moderatorPin} (yours alone: it lets you run the conference; do not share it)`,
    );
  }
  const keypad = KEYPAD.filter((entry) => seesModeratorPin || !entry.moderatorOnly).map(
    (entry) => `${entry.keys}  ${entry.description}${entry.moderatorOnly ? " (moderator)" : ""}`,
  );
  return [
    { paragraph: greeting },
    { paragraph: opening },
    { paragraph: `When: ${when}` },
    { paragraph: joining },
    { heading: "Access numbers", items: access },
    { label: "Join from a browser", url: joinUrl(settings, conference.id) },
    { heading: "PINs", items: pins },
    { heading: "Keypad commands during the call", items: keypad },
    support,
  ];
}

function asText(content: Block[]): string {
  return `${content
    .map((block) =>
      "paragraph" in block
        ? block.paragraph
        : "url" in block
          ? `${block.label}: ${block.url}`
          : `${block.heading}:\n${block.items.map((item) => `  ${item}`).join("\n")}`,
    )
    .join("\n\n")}\n`;
}

function asHtml(content: Block[], title: string): string {
  const body = content
    .map((block) =>
      "paragraph" in block
        ? `<p>${escapeHtml(block.paragraph)}</p>`
        : "url" in block
          ? `<p>${escapeHtml(block.label)}: <a href="${escapeHtml(block.url)}">${escapeHtml(block.url)}</a></p>`
          : `<h2>${escapeHtml(block.heading)}</h2>\n<ul>${block.items
              .map((item) => `<li>${escapeHtml(item)}</li>`)
              .join("")}</ul>`,
    )
    .join("\n");
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>\n<body>\n${body}\n</body></html>\n`;
}

function subject(facts: NotificationFacts): string {
  const prefix = { invitation: "Invitation", update: "Updated", cancellation: "Cancelled" }[facts.kind];
  return headerSafe(`${prefix}: ${facts.conference.name} (${startTime(facts)})`);
}

function calendar(facts: NotificationFacts, settings: MessageSettings, description: string) {
  const cancelled = facts.kind === "cancellation";
  const start = new Date(facts.conference.scheduledToStartAt);
  const events = ical({
    prodId: { company: "Bridgeline", product: "Bridgeline", language: "EN" },
    method: cancelled ? ICalCalendarMethod.CANCEL : ICalCalendarMethod.REQUEST,
  });
  events.createEvent({
    id: calendarUid(facts, settings.from),
    sequence: facts.sequence,
    start,
    end: new Date(start.getTime() + CALENDAR_EVENT_MINUTES * 60_000),
    summary: facts.conference.name,
    description,
    location: `${
      settings.accessNumbers.length > 0
        ? `Telephone ${settings.accessNumbers.map(formatNumber).join(", ")}`
        : "Telephone conference"
    }; browser ${joinUrl(settings, facts.conference.id)}`,
    status: cancelled ? ICalEventStatus.CANCELLED : ICalEventStatus.CONFIRMED,
    organizer: { name: facts.conference.ownerName, email: addressOf(settings.from) },
    attendees: [{ email: facts.recipient.email, name: facts.recipient.name ?? undefined }],
  });
  return { method: cancelled ? ("CANCEL" as const) : ("REQUEST" as const), content: events.toString() };
}

export function composeNotification(
  facts: NotificationFacts,
  settings: MessageSettings,
): NotificationMessage {
  const content = blocks(facts, settings);
  const text = asText(content);
  const title = subject(facts);
  return { subject: title, text, html: asHtml(content, title), calendar: calendar(facts, settings, text) };
}

/** The e-mail to a webhook's owner when the service disabled the webhook. */
export function composeWebhookDisabled(
  facts: WebhookDisabledFacts,
  settings: MessageSettings,
): NotificationMessage {
  const { webhook, recipient } = facts;
  const path = `/users/${webhook.userId}/webhooks/${webhook.id}`;
  const content: Block[] = [
    { paragraph: `Hello ${recipient.name ? headerSafe(recipient.name) : recipient.email},` },
    {
      paragraph: `Bridgeline disabled your webhook ${webhook.id} to ${webhook.url} on ${webhook.disabledAt.slice(0, 19).replace("T", " ")} UTC: ${webhook.reason}.`,
    },
    {
      paragraph: `Events are no longer sent to it. Its delivery log is at ${path}/deliveries. Once the receiver answers again, enable the webhook with a PUT to ${path} carrying <enabled>true</enabled>; events from then on are sent to it.`,
    },
    supportBlock(settings),
  ];
  const title = headerSafe(`Webhook disabled: ${webhook.url}`);
  return { subject: title, text: asText(content), html: asHtml(content, title) };
}

/** The message of any kind the notification outbox holds. */
export function composeMessage(facts: OutboxFacts, settings: MessageSettings): NotificationMessage {
  return facts.kind === "webhook-disabled"
    ? composeWebhookDisabled(facts, settings)
    : composeNotification(facts, settings);
}
