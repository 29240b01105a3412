import type { Attendee } from "../domain/attendee.js";
import type { CallRecord } from "../domain/call-record.js";
import type { Conference } from "../domain/conference.js";
import type { Contact } from "../domain/contact.js";
import type { User, Versioned } from "../domain/user.js";
import type { Webhook, WebhookDelivery } from "../domain/webhook.js";
import type { BillingPackage } from "../store/users.js";
import { documentType } from "./documents.js";
import * as schemas from "./schemas.js";
import {
  type AccessNumberDocument,
  type AttendeeBasicDocument,
  type AttendeeDocument,
  type BillingPackageDocument,
  type CallDocument,
  type ConferenceBasicDocument,
  type ConferenceDocument,
  type ContactDocument,
  type DeliveryDocument,
  ListOf,
  type StartTimeDocument,
  type UserDocument,
  type WebhookDocument,
} from "./schemas.js";

export type Representation = "extended" | "basic";

/*
 * Each resource as its document (schemas.ts): the stored record's fields under their API names.
 * Types are the schema's; the writers of both representations are compiled from it.
 */

/** Datetimes are given in UTC, to the second, with a Z. */
export function utc(iso: string): string;
export function utc(iso: string | null): string | null;
export function utc(iso: string | null): string | null {
  return iso === null ? null : `${iso.slice(0, 19)}Z`;
}

/** A decimal figure rounded to `digits` decimals. */
function figure(value: number | null, digits: number): number | null {
  return value === null ? null : Number(value.toFixed(digits));
}

/**
 * The versioned fields first, then the resource's own. Object.assign rather than a leading
 * spread: on Node 20 `{ ...versioned, a, b }` is about a hundred times slower (measured).
 */
function versioned<Fields extends object>(record: Versioned, fields: Fields) {
  return Object.assign(
    {
      id: record.id,
      "created-at": utc(record.createdAt),
      "updated-at": utc(record.updatedAt),
      "lock-version": record.lockVersion,
    },
    fields,
  );
}

/** The user document: write-only fields (password, card number and code, package) never appear. */
export function userDocument(user: User): UserDocument {
  const card = user.creditCard;
  const address = user.address;
  return versioned(user, {
    name: user.name,
    email: user.email,
    im: user.im,
    "im-network": user.imNetwork,
    "time-zone": user.timeZone,
    "member-pin": user.memberPin,
    "moderator-pin": user.moderatorPin,
    "terms-of-service": user.termsOfService,
    "credit-card":
      card &&
      versioned(card, {
        name: card.name,
        "expiry-month": card.expiryMonth,
        "expiry-year": card.expiryYear,
        brand: card.brand,
        "last-four-digits": card.lastFour,
      }),
    address:
      address &&
      versioned(address, {
        "street-address": address.streetAddress,
        "postal-code": address.postalCode,
        location: address.location,
        subdivision: address.subdivision,
        country: address.country,
      }),
    "phone-numbers": user.phoneNumbers.map((phone) =>
      versioned(phone, {
        "country-code": phone.countryCode,
        "subscriber-number": phone.subscriberNumber,
        location: phone.location,
        extension: phone.extension,
      }),
    ),
  });
}

export function contactDocument(contact: Contact): ContactDocument {
  return versioned(contact, {
    name: contact.name,
    email: contact.email,
    "phone-number": contact.phoneNumber,
    im: contact.im,
    "im-network": contact.imNetwork,
    "time-zone": contact.timeZone,
  });
}

export function conferenceBasicDocument(conference: Conference): ConferenceBasicDocument {
  return versioned(conference, {
    state: conference.state,
    name: conference.name,
    "scheduled-to-start-at": utc(conference.scheduledToStartAt),
    "started-at": utc(conference.startedAt),
    "ended-at": utc(conference.endedAt),
  });
}

/** The create response alone carries the create-only flags (spec, Conference). */
export function conferenceDocument(conference: Conference, created = false): ConferenceDocument {
  const extended: ConferenceDocument = Object.assign(conferenceBasicDocument(conference), {
    "direct-dial": conference.directDial,
    "dial-in-locked": conference.dialInLocked,
    "record-audio": conference.recordAudio,
    "lecture-mode": conference.lectureMode,
    "encrypted-only": conference.encryptedOnly,
    "accounting-code": conference.accountingCode,
    "member-pin": conference.memberPin,
    "moderator-pin": conference.moderatorPin,
  });
  if (!created) return extended;
  return Object.assign(extended, {
    "send-notification-emails": conference.sendNotificationEmails,
    "announce-attendees": conference.announceAttendees,
  });
}

export function attendeeBasicDocument(attendee: Attendee): AttendeeBasicDocument {
  return versioned(attendee, {
    state: attendee.state,
    "phone-number": attendee.phoneNumberSubscriberNumber,
    moderator: attendee.moderator,
    duration: attendee.duration,
  });
}

/**
 * muted, hand-up and duration stay nil until the attendee has been called; encryption (tls+srtp,
 * tls, srtp or none) until it has been connected, then it tells its current or last call's.
 */
export function attendeeDocument(attendee: Attendee): AttendeeDocument {
  return versioned(attendee, {
    state: attendee.state,
    "phone-number-subscriber-number": attendee.phoneNumberSubscriberNumber,
    "phone-number-country-code": attendee.phoneNumberCountryCode,
    "phone-number-extension": attendee.phoneNumberExtension,
    "phone-number-location": attendee.phoneNumberLocation,
    moderator: attendee.moderator,
    muted: attendee.muted,
    "hand-up": attendee.handUp,
    "dial-in": attendee.dialIn,
    name: attendee.name,
    email: attendee.email,
    duration: attendee.duration,
    encryption: attendee.encryption,
  });
}

export function billingPackageDocument(billingPackage: BillingPackage): BillingPackageDocument {
  return { id: billingPackage.id, name: billingPackage.name };
}

export function accessNumberDocument(number: string): AccessNumberDocument {
  return { number };
}

/**
 * A webhook. event-types is nil when it takes every type; the secret appears in the create response
 * alone (the only time it is shown).
 */
export function webhookDocument(webhook: Webhook, secret?: string): WebhookDocument {
  const document: WebhookDocument = versioned(webhook, {
    url: webhook.url,
    "event-types": webhook.eventTypes === null ? null : [...webhook.eventTypes],
    enabled: webhook.enabled,
    "disabled-at": utc(webhook.disabledAt),
    "disabled-reason": webhook.disabledReason,
  });
  return secret === undefined ? document : Object.assign(document, { secret });
}

/** A delivery of the webhook log, with every attempt (duration-ms in milliseconds). */
export function deliveryDocument(delivery: WebhookDelivery): DeliveryDocument {
  return versioned(delivery, {
    "message-id": delivery.messageId,
    "event-id": delivery.eventId,
    "event-type": delivery.eventType,
    state: delivery.state,
    "attempt-count": delivery.attemptCount,
    "next-attempt-at": utc(delivery.nextAttemptAt),
    "delivered-at": utc(delivery.deliveredAt),
    "last-error": delivery.lastError,
    payload: delivery.payload,
    attempts: delivery.attempts.map((attempt) => ({
      "attempted-at": utc(attempt.attemptedAt),
      "status-code": attempt.statusCode,
      error: attempt.error,
      "duration-ms": attempt.durationMs,
    })),
  });
}

/**
 * A call record: times to the second as everywhere in this API (the CSV export keeps milliseconds),
 * the cause and quality nil when unknown, shares as decimals 0-1.
 */
export function callDocument(record: CallRecord): CallDocument {
  const { cause, quality, callerVerification: verification } = record;
  return {
    id: record.id,
    "conference-id": record.conferenceId,
    "attendee-id": record.attendeeId,
    direction: record.direction,
    number: record.number,
    route: record.route,
    instance: record.instance,
    "invited-at": utc(record.invitedAt),
    "answered-at": utc(record.answeredAt),
    "ended-at": utc(record.endedAt),
    duration: record.durationSeconds,
    "sip-status": record.sipStatus,
    "sip-reason": record.sipReason,
    cause: cause === null ? null : { protocol: cause.protocol, code: cause.cause, text: cause.text },
    "hung-up-by": record.hungUpBy,
    "end-reason": record.endReason,
    codec: record.codec,
    srtp: record.srtp,
    tls: record.tls,
    quality:
      quality === null
        ? null
        : {
            "packets-sent": quality.packetsSent,
            "packets-received": quality.packetsReceived,
            "loss-share": figure(quality.lossShare, 4),
            "remote-loss-share": figure(quality.remoteLossShare, 4),
            "jitter-ms": figure(quality.jitterMs, 1),
            "remote-jitter-ms": figure(quality.remoteJitterMs, 1),
            "round-trip-ms": figure(quality.roundTripMs, 1),
            "concealment-share": figure(quality.concealmentShare, 4),
            mos: figure(quality.mos, 2),
          },
    "caller-verification":
      verification === null
        ? null
        : { status: verification.status, attestation: verification.attestation, reason: verification.reason },
  };
}

/** The documents the API answers with, compiled once. */
export const Documents = {
  user: documentType<UserDocument>(schemas.User),
  contact: documentType<ContactDocument>(schemas.Contact),
  contacts: documentType<ContactDocument[]>(ListOf("contacts", schemas.Contact)),
  conference: documentType<ConferenceDocument>(schemas.Conference),
  conferenceBasic: documentType<ConferenceBasicDocument>(schemas.ConferenceBasic),
  conferences: documentType<ConferenceDocument[]>(ListOf("conferences", schemas.Conference)),
  conferencesBasic: documentType<ConferenceBasicDocument[]>(ListOf("conferences", schemas.ConferenceBasic)),
  attendee: documentType<AttendeeDocument>(schemas.Attendee),
  attendeeBasic: documentType<AttendeeBasicDocument>(schemas.AttendeeBasic),
  attendees: documentType<AttendeeDocument[]>(ListOf("attendees", schemas.Attendee)),
  attendeesBasic: documentType<AttendeeBasicDocument[]>(ListOf("attendees", schemas.AttendeeBasic)),
  billingPackages: documentType<BillingPackageDocument[]>(ListOf("billing-packages", schemas.BillingPackage)),
  accessNumbers: documentType<AccessNumberDocument[]>(ListOf("access-numbers", schemas.AccessNumber)),
  webhook: documentType<WebhookDocument>(schemas.Webhook),
  webhooks: documentType<WebhookDocument[]>(ListOf("webhooks", schemas.Webhook)),
  delivery: documentType<DeliveryDocument>(schemas.Delivery),
  deliveries: documentType<DeliveryDocument[]>(ListOf("deliveries", schemas.Delivery)),
  calls: documentType<CallDocument[]>(ListOf("calls", schemas.Call)),
  startTime: documentType<StartTimeDocument>(schemas.StartTime),
};
