/**
 * Who is told what about a conference by e-mail (spec, "What the service does" item 6). The rules
 * decide recipients, their role (which PIN they may see), their time zone and how they join; the
 * message itself is written in src/notify from these facts.
 */
import { USER_TIME_ZONES } from "./reference-data.js";

export type NotificationKind = "invitation" | "update" | "cancellation";

/** The owner and the moderator see the moderator PIN; members never do. */
export type RecipientRole = "owner" | "moderator" | "member";

export interface NotificationRecipient {
  email: string;
  name: string | null;
  role: RecipientRole;
  /** The zone the start time is shown in: the recipient's own where known, else the owner's. */
  timeZone: { name: string; iana: string };
  /** The number the service calls at the start; null when the recipient dials in. */
  callAt: { subscriberNumber: string; extension: string | null } | null;
}

export interface NotificationConference {
  id: number;
  name: string;
  createdAt: string;
  scheduledToStartAt: string;
  memberPin: string;
  moderatorPin: string;
  ownerName: string;
}

/** Everything one message says, frozen when the change that causes it is committed. */
export interface NotificationFacts {
  kind: NotificationKind;
  /** The iCalendar SEQUENCE: the conference's lock-version, which every change moves on. */
  sequence: number;
  conference: NotificationConference;
  recipient: NotificationRecipient;
}

/** The e-mail to a webhook's owner when the service disables it (src/store/webhook-outbox.ts). */
export interface WebhookDisabledFacts {
  kind: "webhook-disabled";
  webhook: { id: number; userId: number; url: string; disabledAt: string; reason: string };
  recipient: { email: string; name: string | null };
}

/** What a message of the notification outbox says: about a conference, or a webhook disabled. */
export type OutboxFacts = NotificationFacts | WebhookDisabledFacts;

export interface RecipientCandidate {
  email: string | null;
  name: string | null;
  moderator: boolean;
  dialIn: boolean;
  phoneNumberSubscriberNumber: string | null;
  phoneNumberExtension: string | null;
}

export interface RecipientSources {
  owner: { name: string; email: string; timeZone: string | null };
  attendees: readonly RecipientCandidate[];
  /** Time-zone names known for addresses (lower case): the person's own account, else a contact. */
  knownTimeZones: ReadonlyMap<string, string>;
}

const UTC = { name: "UTC", iana: "UTC" };

function zoneNamed(name: string | null | undefined): { name: string; iana: string } | undefined {
  if (name == null) return undefined;
  const iana = USER_TIME_ZONES.get(name);
  return iana === undefined ? undefined : { name, iana };
}

function joining(candidate: RecipientCandidate | undefined): NotificationRecipient["callAt"] {
  if (candidate === undefined || candidate.dialIn || candidate.phoneNumberSubscriberNumber === null)
    return null;
  return {
    subscriberNumber: candidate.phoneNumberSubscriberNumber,
    extension: candidate.phoneNumberExtension,
  };
}

/**
 * The owner and every attendee with an e-mail address, one message per address: the owner's copy
 * (with the moderator PIN) wins over an attendee entry with the same address, and a moderator's
 * entry over a member's.
 */
export function notificationRecipients(sources: RecipientSources): NotificationRecipient[] {
  const ownerZone = zoneNamed(sources.owner.timeZone) ?? UTC;
  const zoneOf = (email: string) => zoneNamed(sources.knownTimeZones.get(email.toLowerCase())) ?? ownerZone;
  const ownerAddress = sources.owner.email.toLowerCase();
  const byAddress = new Map<string, RecipientCandidate>();
  for (const candidate of sources.attendees) {
    if (candidate.email === null) continue;
    const address = candidate.email.toLowerCase();
    const seen = byAddress.get(address);
    if (seen === undefined || (candidate.moderator && !seen.moderator)) byAddress.set(address, candidate);
  }
  const recipients: NotificationRecipient[] = [
    {
      email: sources.owner.email,
      name: sources.owner.name,
      role: "owner",
      timeZone: ownerZone,
      callAt: joining(byAddress.get(ownerAddress)),
    },
  ];
  for (const [address, candidate] of byAddress) {
    if (address === ownerAddress) continue;
    recipients.push({
      email: candidate.email as string,
      name: candidate.name,
      role: candidate.moderator ? "moderator" : "member",
      timeZone: zoneOf(address),
      callAt: joining(candidate),
    });
  }
  return recipients;
}

/** The recipient facts of one attendee (added, changed or removed later); null without an address. */
export function attendeeRecipient(
  sources: RecipientSources,
  attendee: RecipientCandidate,
): NotificationRecipient | null {
  if (attendee.email === null) return null;
  const address = attendee.email.toLowerCase();
  return (
    notificationRecipients({ ...sources, attendees: [attendee] }).find(
      (recipient) => recipient.email.toLowerCase() === address,
    ) ?? null
  );
}

/**
 * What a conference update tells its recipients: an invitation when it becomes pending, an update
 * when a pending conference's name or start time changes, otherwise nothing.
 */
export function notificationForConferenceChange(
  before: { state: string; name: string; scheduledToStartAt: string },
  after: { state: string; name: string; scheduledToStartAt: string },
): NotificationKind | null {
  if (before.state === "new" && after.state === "pending") return "invitation";
  if (
    before.state === "pending" &&
    after.state === "pending" &&
    (before.name !== after.name || before.scheduledToStartAt !== after.scheduledToStartAt)
  ) {
    return "update";
  }
  return null;
}

/** Invitations have gone out once a conference is pending; until it ends, changes are news to people. */
export function attendeesHaveBeenInvited(state: string): boolean {
  return state === "pending" || state === "started";
}

/** Changes that alter what the attendee's invitation says: the number called, dialling in, the role. */
export function invitationChanged(before: RecipientCandidate, after: RecipientCandidate): boolean {
  return (
    before.phoneNumberSubscriberNumber !== after.phoneNumberSubscriberNumber ||
    before.phoneNumberExtension !== after.phoneNumberExtension ||
    before.dialIn !== after.dialIn ||
    before.moderator !== after.moderator
  );
}
