import type { Attendee } from "../domain/attendee.js";
import type { CallRecord } from "../domain/call-record.js";
import type { Conference } from "../domain/conference.js";
import type { Contact } from "../domain/contact.js";
import type { User, Versioned } from "../domain/user.js";
import type { Webhook, WebhookDelivery } from "../domain/webhook.js";
import type { BillingPackage } from "../store/users.js";
import { array, boolean, datetime, float, integer, nested, text, type XmlElement } from "./xml.js";

export type Representation = "extended" | "basic";

/**
 * The versioned elements first, then the resource's own. Object.assign rather than a leading
 * spread: on Node 20 `{ ...versioned, a, b }` is about a hundred times slower (measured).
 */
function versioned<Fields extends Record<string, XmlElement>>(record: Versioned, fields: Fields) {
  return Object.assign(
    {
      id: integer(record.id),
      "created-at": datetime(record.createdAt),
      "updated-at": datetime(record.updatedAt),
      "lock-version": integer(record.lockVersion),
    },
    fields,
  );
}

/** The user document: write-only fields (password, card number and code, package) never appear. */
export function userElement(user: User): XmlElement {
  const card = user.creditCard;
  const address = user.address;
  return versioned(user, {
    name: text(user.name),
    email: text(user.email),
    im: text(user.im),
    "im-network": text(user.imNetwork),
    "time-zone": text(user.timeZone),
    "member-pin": text(user.memberPin),
    "moderator-pin": text(user.moderatorPin),
    "terms-of-service": boolean(user.termsOfService),
    "credit-card": nested(
      card &&
        versioned(card, {
          name: text(card.name),
          "expiry-month": integer(card.expiryMonth),
          "expiry-year": integer(card.expiryYear),
          brand: text(card.brand),
          "last-four-digits": text(card.lastFour),
        }),
    ),
    address: nested(
      address &&
        versioned(address, {
          "street-address": text(address.streetAddress),
          "postal-code": text(address.postalCode),
          location: text(address.location),
          subdivision: text(address.subdivision),
          country: text(address.country),
        }),
    ),
    "phone-numbers": array(
      "phone-number",
      user.phoneNumbers.map((phone) =>
        versioned(phone, {
          "country-code": integer(phone.countryCode),
          "subscriber-number": text(phone.subscriberNumber),
          location: text(phone.location),
          extension: text(phone.extension),
        }),
      ),
    ),
  });
}

export function contactElement(contact: Contact): XmlElement {
  return versioned(contact, {
    name: text(contact.name),
    email: text(contact.email),
    "phone-number": text(contact.phoneNumber),
    im: text(contact.im),
    "im-network": text(contact.imNetwork),
    "time-zone": text(contact.timeZone),
  });
}

/** The create response alone carries the create-only flags (spec, Conference). */
export function conferenceElement(
  conference: Conference,
  representation: Representation,
  created = false,
): XmlElement {
  const basic = versioned(conference, {
    state: text(conference.state),
    name: text(conference.name),
    "scheduled-to-start-at": datetime(conference.scheduledToStartAt),
    "started-at": datetime(conference.startedAt),
    "ended-at": datetime(conference.endedAt),
  });
  if (representation === "basic") return basic;
  const extended = Object.assign(basic, {
    "direct-dial": boolean(conference.directDial),
    "dial-in-locked": boolean(conference.dialInLocked),
    "record-audio": boolean(conference.recordAudio),
    "lecture-mode": boolean(conference.lectureMode),
    "encrypted-only": boolean(conference.encryptedOnly),
    "accounting-code": integer(conference.accountingCode),
    "member-pin": text(conference.memberPin),
    "moderator-pin": text(conference.moderatorPin),
  });
  if (!created) return extended;
  return Object.assign(extended, {
    "send-notification-emails": boolean(conference.sendNotificationEmails),
    "announce-attendees": boolean(conference.announceAttendees),
  });
}

/**
 * muted, hand-up and duration stay nil until the attendee has been called; encryption (tls+srtp,
 * tls, srtp or none) until it has been connected, then it tells its current or last call's.
 */
export function attendeeElement(attendee: Attendee, representation: Representation): XmlElement {
  if (representation === "basic") {
    return versioned(attendee, {
      state: text(attendee.state),
      "phone-number": text(attendee.phoneNumberSubscriberNumber),
      moderator: boolean(attendee.moderator),
      duration: integer(attendee.duration),
    });
  }
  return versioned(attendee, {
    state: text(attendee.state),
    "phone-number-subscriber-number": text(attendee.phoneNumberSubscriberNumber),
    "phone-number-country-code": text(attendee.phoneNumberCountryCode),
    "phone-number-extension": text(attendee.phoneNumberExtension),
    "phone-number-location": text(attendee.phoneNumberLocation),
    moderator: boolean(attendee.moderator),
    muted: boolean(attendee.muted),
    "hand-up": boolean(attendee.handUp),
    "dial-in": boolean(attendee.dialIn),
    name: text(attendee.name),
    email: text(attendee.email),
    duration: integer(attendee.duration),
    encryption: text(attendee.encryption),
  });
}

export function billingPackageElement(billingPackage: BillingPackage): XmlElement {
  return { id: integer(billingPackage.id), name: text(billingPackage.name) };
}

/**
 * A webhook. event-types is nil when it takes every type; the secret appears in the create response
 * alone (the only time it is shown).
 */
export function webhookElement(webhook: Webhook, secret?: string): XmlElement {
  const element = versioned(webhook, {
    url: text(webhook.url),
    "event-types":
      webhook.eventTypes === null
        ? { "@_type": "array", "@_nil": "true" }
        : array("event-type", webhook.eventTypes),
    enabled: boolean(webhook.enabled),
    "disabled-at": datetime(webhook.disabledAt),
    "disabled-reason": text(webhook.disabledReason),
  });
  return secret === undefined ? element : Object.assign(element, { secret: text(secret) });
}

/** A delivery of the webhook log, with every attempt (duration-ms in milliseconds). */
export function deliveryElement(delivery: WebhookDelivery): XmlElement {
  return versioned(delivery, {
    "message-id": text(delivery.messageId),
    "event-id": integer(delivery.eventId),
    "event-type": text(delivery.eventType),
    state: text(delivery.state),
    "attempt-count": integer(delivery.attemptCount),
    "next-attempt-at": datetime(delivery.nextAttemptAt),
    "delivered-at": datetime(delivery.deliveredAt),
    "last-error": text(delivery.lastError),
    payload: text(delivery.payload),
    attempts: array(
      "attempt",
      delivery.attempts.map((attempt) => ({
        "attempted-at": datetime(attempt.attemptedAt),
        "status-code": integer(attempt.statusCode),
        error: text(attempt.error),
        "duration-ms": integer(attempt.durationMs),
      })),
    ),
  });
}

/**
 * A call record: times to the second as everywhere in this API (the CSV export keeps milliseconds),
 * the cause and quality nil when unknown, shares as decimals 0-1.
 */
export function callElement(record: CallRecord): XmlElement {
  const { cause, quality, callerVerification: verification } = record;
  return {
    id: integer(record.id),
    "conference-id": integer(record.conferenceId),
    "attendee-id": integer(record.attendeeId),
    direction: text(record.direction),
    number: text(record.number),
    route: text(record.route),
    instance: text(record.instance),
    "invited-at": datetime(record.invitedAt),
    "answered-at": datetime(record.answeredAt),
    "ended-at": datetime(record.endedAt),
    duration: integer(record.durationSeconds),
    "sip-status": integer(record.sipStatus),
    "sip-reason": text(record.sipReason),
    cause: nested(
      cause === null
        ? null
        : { protocol: text(cause.protocol), code: integer(cause.cause), text: text(cause.text) },
    ),
    "hung-up-by": text(record.hungUpBy),
    "end-reason": text(record.endReason),
    codec: text(record.codec),
    srtp: boolean(record.srtp),
    tls: boolean(record.tls),
    quality: nested(
      quality === null
        ? null
        : {
            "packets-sent": integer(quality.packetsSent),
            "packets-received": integer(quality.packetsReceived),
            "loss-share": float(quality.lossShare, 4),
            "remote-loss-share": float(quality.remoteLossShare, 4),
            "jitter-ms": float(quality.jitterMs, 1),
            "remote-jitter-ms": float(quality.remoteJitterMs, 1),
            "round-trip-ms": float(quality.roundTripMs, 1),
            "concealment-share": float(quality.concealmentShare, 4),
            mos: float(quality.mos, 2),
          },
    ),
    "caller-verification": nested(
      verification === null
        ? null
        : {
            status: text(verification.status),
            attestation: text(verification.attestation),
            reason: text(verification.reason),
          },
    ),
  };
}
