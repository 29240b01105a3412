/**
 * The API's documents as JSON Schema (TypeBox): the one description of each representation's
 * fields and types. The XML and JSON writers are compiled from it (documents.ts), JSON request
 * bodies are type-checked against it, the representations are typed by it (Static), and
 * /openapi.json is generated from it. Field rules beyond the types (lengths, numbers a policy
 * refuses, free-form times) stay in domain/, the same for both representations.
 *
 * Names are the XML element names, hyphenated, in JSON too: one vocabulary for fields, search
 * parameters and error messages ("scheduled-to-start-at can't be blank") whichever the client reads.
 * The `xml` keywords are OpenAPI's XML Object: an element's name, and a list's item name.
 */
import { type Static, type TObject, type TSchema, Type } from "@sinclair/typebox";

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/** UTC, to the second, with a Z (2026-12-01T17:30:00Z). */
const DateTime = Type.String({ format: "date-time" });
/** A decimal figure; the XML writes it as type="float". */
const Figure = Type.Number();
const ReadOnlyId = Type.Integer({ readOnly: true, description: "The resource's id" });

/** The versioned fields every stored resource starts with (lock-version for optimistic locking). */
function versioned<P extends Record<string, TSchema>>(properties: P) {
  return {
    id: ReadOnlyId,
    "created-at": Type.String({ format: "date-time", readOnly: true }),
    "updated-at": Type.String({ format: "date-time", readOnly: true }),
    "lock-version": Type.Integer({
      description: "Incremented by every change; send it back with a PUT to refuse a lost update (409)",
    }),
    ...properties,
  };
}

/** A list of `item`, rooted at `name` in XML (type="array"), a plain array in JSON. */
export function ListOf<T extends TSchema>(name: string, item: T) {
  return Type.Array(item, { xml: { name, wrapped: true } });
}

export const CreditCard = Type.Object(
  versioned({
    name: Nullable(Type.String()),
    "expiry-month": Nullable(Type.Integer()),
    "expiry-year": Nullable(Type.Integer()),
    brand: Nullable(Type.String()),
    "last-four-digits": Nullable(Type.String()),
  }),
  { xml: { name: "credit-card" } },
);

export const Address = Type.Object(
  versioned({
    "street-address": Nullable(Type.String()),
    "postal-code": Nullable(Type.String()),
    location: Nullable(Type.String()),
    subdivision: Nullable(Type.String()),
    country: Nullable(Type.String()),
  }),
  { xml: { name: "address" } },
);

export const PhoneNumber = Type.Object(
  versioned({
    "country-code": Nullable(Type.Integer()),
    "subscriber-number": Nullable(Type.String()),
    location: Nullable(Type.String()),
    extension: Nullable(Type.String()),
  }),
  { xml: { name: "phone-number" } },
);

export const User = Type.Object(
  versioned({
    name: Nullable(Type.String()),
    email: Nullable(Type.String()),
    im: Nullable(Type.String()),
    "im-network": Nullable(Type.String()),
    "time-zone": Nullable(Type.String()),
    "member-pin": Nullable(Type.String()),
    "moderator-pin": Nullable(Type.String()),
    "terms-of-service": Nullable(Type.Boolean()),
    "credit-card": Nullable(CreditCard),
    address: Nullable(Address),
    "phone-numbers": Type.Array(PhoneNumber, { xml: { name: "phone-numbers", wrapped: true } }),
  }),
  { title: "User", xml: { name: "user" } },
);

export const Contact = Type.Object(
  versioned({
    name: Nullable(Type.String()),
    email: Nullable(Type.String()),
    "phone-number": Nullable(Type.String()),
    im: Nullable(Type.String()),
    "im-network": Nullable(Type.String()),
    "time-zone": Nullable(Type.String()),
  }),
  { title: "Contact", xml: { name: "contact" } },
);

const ConferenceState = Type.Union(
  [Type.Literal("new"), Type.Literal("pending"), Type.Literal("started"), Type.Literal("ended")],
  { readOnly: true },
);

const conferenceBasicFields = versioned({
  state: ConferenceState,
  name: Nullable(Type.String()),
  "scheduled-to-start-at": Nullable(DateTime),
  "started-at": Nullable(Type.String({ format: "date-time", readOnly: true })),
  "ended-at": Nullable(Type.String({ format: "date-time", readOnly: true })),
});

export const ConferenceBasic = Type.Object(conferenceBasicFields, {
  title: "ConferenceBasic",
  description: "A conference as ?representation=basic gives it",
  xml: { name: "conference" },
});

export const Conference = Type.Object(
  {
    ...conferenceBasicFields,
    "direct-dial": Nullable(Type.Boolean()),
    "dial-in-locked": Nullable(Type.Boolean()),
    "record-audio": Nullable(Type.Boolean()),
    "lecture-mode": Nullable(Type.Boolean()),
    "encrypted-only": Nullable(Type.Boolean()),
    "accounting-code": Nullable(Type.Integer()),
    "member-pin": Nullable(Type.String({ readOnly: true })),
    "moderator-pin": Nullable(Type.String({ readOnly: true })),
    "send-notification-emails": Type.Optional(
      Nullable(Type.Boolean({ description: "In the create response only" })),
    ),
    "announce-attendees": Type.Optional(
      Nullable(Type.Boolean({ description: "In the create response only" })),
    ),
  },
  { title: "Conference", xml: { name: "conference" } },
);

const AttendeeState = Type.String({
  readOnly: true,
  description: "new, calling, connected, disconnected, busy, no-answer, failed, queued...",
});

export const AttendeeBasic = Type.Object(
  versioned({
    state: AttendeeState,
    "phone-number": Nullable(Type.String()),
    moderator: Nullable(Type.Boolean()),
    duration: Nullable(Type.Integer({ readOnly: true })),
  }),
  {
    title: "AttendeeBasic",
    description: "An attendee as ?representation=basic gives it",
    xml: { name: "attendee" },
  },
);

export const Attendee = Type.Object(
  versioned({
    state: AttendeeState,
    "phone-number-subscriber-number": Nullable(Type.String({ readOnly: true })),
    "phone-number-country-code": Nullable(Type.String({ readOnly: true })),
    "phone-number-extension": Nullable(Type.String({ readOnly: true })),
    "phone-number-location": Nullable(Type.String()),
    moderator: Nullable(Type.Boolean()),
    muted: Nullable(Type.Boolean({ description: "nil until the attendee has been called" })),
    "hand-up": Nullable(Type.Boolean({ description: "nil until the attendee has been called" })),
    "dial-in": Nullable(Type.Boolean()),
    name: Nullable(Type.String()),
    email: Nullable(Type.String()),
    duration: Nullable(Type.Integer({ readOnly: true, description: "Seconds connected" })),
    encryption: Nullable(
      Type.String({ readOnly: true, description: "tls+srtp, tls, srtp or none; nil until connected" }),
    ),
  }),
  { title: "Attendee", xml: { name: "attendee" } },
);

export const BillingPackage = Type.Object(
  { id: Type.Integer(), name: Nullable(Type.String()) },
  { title: "BillingPackage", xml: { name: "billing-package" } },
);

export const AccessNumber = Type.Object(
  { number: Nullable(Type.String({ description: "E.164" })) },
  { title: "AccessNumber", xml: { name: "access-number" } },
);

export const Webhook = Type.Object(
  {
    ...versioned({
      url: Nullable(Type.String()),
      "event-types": Nullable(
        Type.Array(Type.String({ xml: { name: "event-type" } }), {
          description: "nil: every type",
          xml: { name: "event-types", wrapped: true },
        }),
      ),
      enabled: Nullable(Type.Boolean()),
      "disabled-at": Nullable(Type.String({ format: "date-time", readOnly: true })),
      "disabled-reason": Nullable(Type.String({ readOnly: true })),
    }),
    secret: Type.Optional(
      Nullable(
        Type.String({ readOnly: true, description: "In the create response only: the signing secret" }),
      ),
    ),
  },
  { title: "Webhook", xml: { name: "webhook" } },
);

const DeliveryAttempt = Type.Object(
  {
    "attempted-at": Nullable(DateTime),
    "status-code": Nullable(Type.Integer()),
    error: Nullable(Type.String()),
    "duration-ms": Nullable(Type.Integer()),
  },
  { xml: { name: "attempt" } },
);

export const Delivery = Type.Object(
  versioned({
    "message-id": Nullable(Type.String()),
    "event-id": Nullable(Type.Integer()),
    "event-type": Nullable(Type.String()),
    state: Nullable(Type.String()),
    "attempt-count": Nullable(Type.Integer()),
    "next-attempt-at": Nullable(DateTime),
    "delivered-at": Nullable(DateTime),
    "last-error": Nullable(Type.String()),
    payload: Nullable(Type.String()),
    attempts: Type.Array(DeliveryAttempt, { xml: { name: "attempts", wrapped: true } }),
  }),
  { title: "Delivery", xml: { name: "delivery" } },
);

export const Call = Type.Object(
  {
    id: Type.Integer(),
    "conference-id": Type.Integer(),
    "attendee-id": Type.Integer(),
    direction: Type.String({ description: "outbound, inbound or browser" }),
    number: Nullable(Type.String()),
    route: Nullable(Type.String()),
    instance: Nullable(Type.String()),
    "invited-at": DateTime,
    "answered-at": Nullable(DateTime),
    "ended-at": DateTime,
    duration: Type.Integer({ description: "Seconds from the answer to the end" }),
    "sip-status": Type.Integer(),
    "sip-reason": Nullable(Type.String()),
    cause: Nullable(
      Type.Object({
        protocol: Nullable(Type.String({ description: "Q.850 or SIP" })),
        code: Nullable(Type.Integer()),
        text: Nullable(Type.String()),
      }),
    ),
    "hung-up-by": Nullable(Type.String({ description: "attendee or service" })),
    "end-reason": Nullable(Type.String()),
    codec: Nullable(Type.String()),
    srtp: Nullable(Type.Boolean()),
    tls: Nullable(Type.Boolean()),
    quality: Nullable(
      Type.Object({
        "packets-sent": Nullable(Type.Integer()),
        "packets-received": Nullable(Type.Integer()),
        "loss-share": Nullable(Figure),
        "remote-loss-share": Nullable(Figure),
        "jitter-ms": Nullable(Figure),
        "remote-jitter-ms": Nullable(Figure),
        "round-trip-ms": Nullable(Figure),
        "concealment-share": Nullable(Figure),
        mos: Nullable(Figure),
      }),
    ),
    "caller-verification": Nullable(
      Type.Object({
        status: Nullable(Type.String({ description: "passed, failed or none" })),
        attestation: Nullable(Type.String()),
        reason: Nullable(Type.String()),
      }),
    ),
  },
  { title: "Call", xml: { name: "call" } },
);

export const StartTime = Type.Object(
  {
    text: Type.String({ description: "The text as sent" }),
    "scheduled-to-start-at": Type.String({ format: "date-time", description: "The instant it reads as" }),
    "time-zone": Type.String({ description: "The IANA zone it was read in: the user's, else UTC" }),
  },
  { title: "StartTime", xml: { name: "start-time" } },
);

/** Errors: every problem found, in one answer. XML: `<errors><error>…</error></errors>`. */
export const Errors = Type.Object(
  { errors: Type.Array(Type.String()) },
  { title: "Errors", description: "XML: <errors><error>message</error>…</errors>" },
);

export type UserDocument = Static<typeof User>;
export type ContactDocument = Static<typeof Contact>;
export type ConferenceDocument = Static<typeof Conference>;
export type ConferenceBasicDocument = Static<typeof ConferenceBasic>;
export type AttendeeDocument = Static<typeof Attendee>;
export type AttendeeBasicDocument = Static<typeof AttendeeBasic>;
export type BillingPackageDocument = Static<typeof BillingPackage>;
export type AccessNumberDocument = Static<typeof AccessNumber>;
export type WebhookDocument = Static<typeof Webhook>;
export type DeliveryDocument = Static<typeof Delivery>;
export type CallDocument = Static<typeof Call>;
export type StartTimeDocument = Static<typeof StartTime>;

/*
 * Request bodies. The domain reads them (domain/*.ts) with the rules and messages of both
 * representations; these say the fields and their JSON types. In XML every value is an element's
 * text, in JSON the type given here (a JSON body with another type is refused 422).
 */
const Text = Nullable(Type.String());
/** A flag: true or false (nil is refused, as a flag cannot be unset). */
const Flag = Type.Boolean();
const LockVersion = Type.Integer({
  description: "The lock-version last read: a PUT made against an older one is refused 409",
});

export const UserWrite = Type.Object(
  {
    name: Type.String(),
    email: Type.String(),
    password: Type.String({ writeOnly: true }),
    "password-confirmation": Type.String({ writeOnly: true }),
    im: Type.Optional(Text),
    "im-network": Type.Optional(Text),
    "time-zone": Type.Optional(Text),
    "terms-of-service": Type.Boolean({ description: "Must be true to sign up" }),
    "billing-package": Type.Object({ id: Type.Integer() }, { description: "One of GET /billing-packages" }),
    "credit-card": Type.Optional(
      Nullable(
        Type.Object({
          name: Type.Optional(Text),
          "expiry-month": Type.Optional(Nullable(Type.Integer())),
          "expiry-year": Type.Optional(Nullable(Type.Integer())),
          number: Type.Optional(Nullable(Type.String({ writeOnly: true }))),
          "security-code": Type.Optional(Nullable(Type.String({ writeOnly: true }))),
        }),
      ),
    ),
    address: Type.Optional(
      Nullable(
        Type.Object({
          "street-address": Type.Optional(Text),
          location: Type.Optional(Text),
          country: Text,
          subdivision: Text,
          "postal-code": Text,
        }),
      ),
    ),
    "phone-numbers": Type.Optional(
      Type.Array(
        Type.Object(
          {
            id: Type.Optional(Nullable(Type.Integer({ description: "On update: the number changed" }))),
            "country-code": Type.Optional(Nullable(Type.Integer())),
            "subscriber-number": Text,
            location: Type.Optional(Text),
            extension: Type.Optional(Text),
          },
          { xml: { name: "phone-number" } },
        ),
        { xml: { name: "phone-numbers", wrapped: true } },
      ),
    ),
    "lock-version": Type.Optional(LockVersion),
  },
  { title: "UserWrite", xml: { name: "user" } },
);

export const ContactWrite = Type.Object(
  {
    name: Type.String(),
    email: Type.Optional(Text),
    "phone-number": Type.Optional(Text),
    im: Type.Optional(Text),
    "im-network": Type.Optional(Text),
    "time-zone": Type.Optional(Text),
    "lock-version": Type.Optional(LockVersion),
  },
  { title: "ContactWrite", xml: { name: "contact" } },
);

export const ConferenceWrite = Type.Object(
  {
    name: Type.String(),
    "scheduled-to-start-at": Type.String({
      description:
        "An ISO 8601 time, or free-form text read in the owner's time zone: tomorrow at 9am, next Tuesday 3pm, in 2 hours",
    }),
    "direct-dial": Type.Optional(Flag),
    "dial-in-locked": Type.Optional(Flag),
    "record-audio": Type.Optional(Flag),
    "lecture-mode": Type.Optional(Flag),
    "encrypted-only": Type.Optional(Flag),
    "send-notification-emails": Type.Optional(Type.Boolean({ description: "On create only" })),
    "announce-attendees": Type.Optional(Type.Boolean({ description: "On create only" })),
    "accounting-code": Type.Optional(Nullable(Type.Integer())),
    state: Type.Optional(Nullable(Type.String({ description: "Only pending may be asked for (from new)" }))),
    "lock-version": Type.Optional(LockVersion),
  },
  { title: "ConferenceWrite", xml: { name: "conference" } },
);

export const AttendeeWrite = Type.Object(
  {
    "phone-number": Type.Optional(
      Nullable(
        Type.String({
          description: "A North American number, e.g. +1 604 555 0101; blank only with dial-in",
        }),
      ),
    ),
    extension: Type.Optional(Text),
    "phone-number-location": Type.Optional(Text),
    "dial-in": Type.Optional(Flag),
    moderator: Type.Optional(Flag),
    muted: Type.Optional(Type.Boolean({ description: "On update only, while started" })),
    "hand-up": Type.Optional(Type.Boolean({ description: "On update only, while started" })),
    name: Type.Optional(Nullable(Type.String({ description: "On create only" }))),
    email: Type.Optional(Nullable(Type.String({ description: "On create only" }))),
    "lock-version": Type.Optional(LockVersion),
  },
  { title: "AttendeeWrite", xml: { name: "attendee" } },
);

export const WebhookWrite = Type.Object(
  {
    url: Type.String(),
    "event-types": Type.Optional(
      Nullable(
        Type.Array(Type.String({ xml: { name: "event-type" } }), {
          description: "nil or absent: every type",
          xml: { name: "event-types", wrapped: true },
        }),
      ),
    ),
    enabled: Type.Optional(Flag),
    "lock-version": Type.Optional(LockVersion),
  },
  { title: "WebhookWrite", xml: { name: "webhook" } },
);

/**
 * A PUT's body: the create body's fields, every one optional (a PUT changes what it names; the
 * domain refuses blanking a required one). Titled `<Resource>Update`.
 */
function changesOf(write: TObject, title: string) {
  return Type.Partial(write, { title, xml: write.xml });
}

export const UserUpdate = changesOf(UserWrite, "UserUpdate");
export const ContactUpdate = changesOf(ContactWrite, "ContactUpdate");
export const ConferenceUpdate = changesOf(ConferenceWrite, "ConferenceUpdate");
export const AttendeeUpdate = changesOf(AttendeeWrite, "AttendeeUpdate");
export const WebhookUpdate = changesOf(WebhookWrite, "WebhookUpdate");
