/**
 * Queues the notification outbox's messages. They are queued inside the transaction of the change
 * that causes them, so a change and its e-mails commit or roll back together; the outbox worker
 * claims and sends them through store/notification-outbox.ts.
 */
import type { Kysely, Selectable } from "kysely";
import {
  attendeeRecipient,
  type NotificationFacts,
  type NotificationKind,
  type NotificationRecipient,
  notificationRecipients,
  type RecipientCandidate,
  type RecipientSources,
  type WebhookDisabledFacts,
} from "../domain/notification.js";
import type { ConferenceTable, Database } from "./schema.js";
import { timestamp } from "./values.js";

/** The owner and the candidates (every attendee of the conference unless one is given), with zones. */
async function recipientSources(
  trx: Kysely<Database>,
  conference: Selectable<ConferenceTable>,
  only?: RecipientCandidate,
): Promise<RecipientSources> {
  const [owner, attendees] = await Promise.all([
    trx
      .selectFrom("users")
      .select(["name", "email", "time_zone"])
      .where("id", "=", conference.user_id)
      .executeTakeFirstOrThrow(),
    only === undefined
      ? trx
          .selectFrom("attendees")
          .select([
            "email",
            "name",
            "moderator",
            "dial_in",
            "phone_number_subscriber_number",
            "phone_number_extension",
          ])
          .where("conference_id", "=", conference.id)
          .orderBy("id")
          .execute()
      : [],
  ]);
  const candidates = only === undefined ? attendees.map(toCandidate) : [only];
  return {
    owner: { name: owner.name, email: owner.email, timeZone: owner.time_zone },
    attendees: candidates,
    knownTimeZones: await knownTimeZones(trx, conference.user_id, candidates),
  };
}

function toCandidate(row: {
  email: string | null;
  name: string | null;
  moderator: number | boolean;
  dial_in: number | boolean;
  phone_number_subscriber_number: string | null;
  phone_number_extension: string | null;
}): RecipientCandidate {
  return {
    email: row.email,
    name: row.name,
    moderator: Boolean(row.moderator),
    dialIn: Boolean(row.dial_in),
    phoneNumberSubscriberNumber: row.phone_number_subscriber_number,
    phoneNumberExtension: row.phone_number_extension,
  };
}

/** Time zones of the addresses: a person's own account first, else the owner's contact entry. */
async function knownTimeZones(
  trx: Kysely<Database>,
  ownerId: number,
  candidates: readonly RecipientCandidate[],
): Promise<Map<string, string>> {
  const addresses = [
    ...new Set(candidates.flatMap((c) => (c.email === null ? [] : [c.email.toLowerCase()]))),
  ];
  const zones = new Map<string, string>();
  if (addresses.length === 0) return zones;
  const [contacts, users] = await Promise.all([
    trx
      .selectFrom("contacts")
      .select(["email", "time_zone"])
      .where("user_id", "=", ownerId)
      .where("time_zone", "is not", null)
      .where((eb) => eb(eb.fn("lower", ["email"]), "in", addresses))
      .orderBy("id")
      .execute(),
    trx
      .selectFrom("users")
      .select(["email", "time_zone"])
      .where("time_zone", "is not", null)
      .where((eb) => eb(eb.fn("lower", ["email"]), "in", addresses))
      .execute(),
  ]);
  for (const row of [...contacts, ...users]) {
    if (row.email !== null && row.time_zone !== null) zones.set(row.email.toLowerCase(), row.time_zone);
  }
  return zones;
}

/** Moves the conference's iCalendar SEQUENCE on and returns the one for this round of messages. */
async function nextSequence(trx: Kysely<Database>, conferenceId: number): Promise<number> {
  const row = await trx
    .updateTable("conferences")
    .set((eb) => ({ notification_sequence: eb("notification_sequence", "+", 1) }))
    .where("id", "=", conferenceId)
    .returning("notification_sequence")
    .executeTakeFirstOrThrow();
  return row.notification_sequence - 1;
}

async function queue(
  trx: Kysely<Database>,
  conference: Selectable<ConferenceTable>,
  ownerName: string,
  kind: NotificationKind,
  recipients: NotificationRecipient[],
  now: Date,
): Promise<void> {
  if (recipients.length === 0) return;
  const sequence = await nextSequence(trx, conference.id);
  const at = timestamp(now);
  await trx
    .insertInto("notifications")
    .values(
      recipients.map((recipient) => {
        const facts: NotificationFacts = {
          kind,
          sequence,
          conference: {
            id: conference.id,
            name: conference.name,
            createdAt: conference.created_at,
            scheduledToStartAt: conference.scheduled_to_start_at,
            memberPin: conference.member_pin,
            moderatorPin: conference.moderator_pin,
            ownerName,
          },
          recipient,
        };
        return {
          created_at: at,
          conference_id: conference.id,
          kind,
          recipient: recipient.email,
          facts: JSON.stringify(facts),
          state: "queued",
          attempts: 0,
          next_attempt_at: at,
        };
      }),
    )
    .execute();
}

async function conferenceRow(trx: Kysely<Database>, conferenceId: number) {
  return trx.selectFrom("conferences").selectAll().where("id", "=", conferenceId).executeTakeFirstOrThrow();
}

/**
 * Queues the message of `kind` to the owner and every attendee with an address, when the conference
 * sends notification e-mails. Called inside the change's transaction (before the row goes, for a
 * cancellation).
 */
export async function queueConferenceNotifications(
  trx: Kysely<Database>,
  conferenceId: number,
  kind: NotificationKind,
  now: Date,
): Promise<void> {
  const conference = await conferenceRow(trx, conferenceId);
  if (!conference.send_notification_emails) return;
  const sources = await recipientSources(trx, conference);
  await queue(trx, conference, sources.owner.name, kind, notificationRecipients(sources), now);
}

/** Queues the message of `kind` to one attendee (added, changed or removed), if it has an address. */
export async function queueAttendeeNotification(
  trx: Kysely<Database>,
  conferenceId: number,
  attendee: RecipientCandidate,
  kind: NotificationKind,
  now: Date,
): Promise<void> {
  if (attendee.email === null) return;
  const conference = await conferenceRow(trx, conferenceId);
  if (!conference.send_notification_emails) return;
  // One attendee's message needs only its own entry and zone, not the whole conference's.
  const sources = await recipientSources(trx, conference, attendee);
  const recipient = attendeeRecipient(sources, attendee);
  // The owner's own attendee entry leaving does not cancel the owner's conference.
  if (recipient === null || (kind === "cancellation" && recipient.role === "owner")) return;
  await queue(trx, conference, sources.owner.name, kind, [recipient], now);
}

/** Queues the e-mail telling a webhook's owner that the service disabled it, and why. */
export async function queueWebhookDisabledNotice(
  trx: Kysely<Database>,
  webhook: {
    id: number;
    userId: number;
    url: string;
    disabledAt: string | null;
    disabledReason: string | null;
  },
  now: Date,
): Promise<void> {
  const owner = await trx
    .selectFrom("users")
    .select(["name", "email"])
    .where("id", "=", webhook.userId)
    .executeTakeFirstOrThrow();
  const at = timestamp(now);
  const facts: WebhookDisabledFacts = {
    kind: "webhook-disabled",
    webhook: {
      id: webhook.id,
      userId: webhook.userId,
      url: webhook.url,
      disabledAt: webhook.disabledAt ?? at,
      reason: webhook.disabledReason ?? "",
    },
    recipient: { email: owner.email, name: owner.name },
  };
  await trx
    .insertInto("notifications")
    .values({
      created_at: at,
      conference_id: null,
      kind: facts.kind,
      recipient: owner.email,
      facts: JSON.stringify(facts),
      state: "queued",
      attempts: 0,
      next_attempt_at: at,
    })
    .execute();
}
