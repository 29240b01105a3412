import type { Generated } from "kysely";

/*
 * Column conventions shared by SQLite and PostgreSQL: timestamps are read back as ISO 8601 UTC
 * strings, booleans are written as 0/1 and read back through Boolean(), ids are 32-bit integers.
 */
type Timestamp = string;
type Flag = number | boolean;

interface Versioned {
  id: Generated<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
  lock_version: number;
}

export interface BillingPackageTable {
  id: number;
  name: string;
}

export interface UserTable extends Versioned {
  name: string;
  email: string;
  password_hash: string;
  im: string | null;
  im_network: string | null;
  time_zone: string | null;
  member_pin: string;
  moderator_pin: string;
  terms_of_service: Flag;
  billing_package_id: number;
}

export interface CreditCardTable extends Versioned {
  user_id: number;
  name: string | null;
  expiry_month: number;
  expiry_year: number;
  last_four: string;
  brand: string;
}

export interface AddressTable extends Versioned {
  user_id: number;
  street_address: string | null;
  postal_code: string;
  location: string | null;
  subdivision: string;
  country: string;
}

export interface PhoneNumberTable extends Versioned {
  user_id: number;
  country_code: number;
  subscriber_number: string;
  location: string | null;
  extension: string | null;
}

export interface ContactTable extends Versioned {
  user_id: number;
  name: string;
  email: string | null;
  phone_number: string | null;
  im: string | null;
  im_network: string | null;
  time_zone: string | null;
}

export interface ConferenceTable extends Versioned {
  user_id: number;
  name: string;
  state: string;
  scheduled_to_start_at: Timestamp;
  started_at: Timestamp | null;
  ended_at: Timestamp | null;
  direct_dial: Flag;
  dial_in_locked: Flag;
  record_audio: Flag;
  lecture_mode: Flag;
  encrypted_only: Generated<Flag>;
  accounting_code: number | null;
  member_pin: string;
  moderator_pin: string;
  send_notification_emails: Flag;
  announce_attendees: Flag;
  /** The instance running the started conference; null otherwise. */
  runner: string | null;
  /** Where the runner takes calls for the conference's room (other instances carry callers there). */
  runner_sip_uri: string | null;
  /** When the runner last confirmed it still runs the conference: its lease runs from then. */
  runner_heartbeat_at: Timestamp | null;
  /**
   * The fencing token of the runner's lease: one more with each claim and take-over. A room's writes
   * are refused once it is not theirs any more (store/leases.ts).
   */
  runner_generation: Generated<number>;
  /** When the runner handed the conference over as it stopped (any instance takes it at once). */
  runner_released_at: Generated<Timestamp | null>;
  /** The recording's file name in the data directory's recordings/ folder; null until one exists. */
  recording_file: string | null;
  /**
   * The recording's later parts (a JSON array of file names, in order): each room that took the
   * conference over records into a file of its own. Null while there is one part.
   */
  recording_parts: Generated<string | null>;
  /** How many notification messages about the conference were queued: the next iCalendar SEQUENCE. */
  notification_sequence: Generated<number>;
  /** Set through the API to have the running room end the conference. */
  end_requested_at: Generated<Timestamp | null>;
}

export interface AttendeeTable extends Versioned {
  conference_id: number;
  state: string;
  phone_number_country_code: string | null;
  phone_number_subscriber_number: string | null;
  phone_number_extension: string | null;
  phone_number_location: string | null;
  moderator: Flag;
  muted: Flag | null;
  hand_up: Flag | null;
  dial_in: Flag;
  name: string | null;
  email: string | null;
  duration: number | null;
  /** When the current call was answered; null when not connected. */
  connected_at: Timestamp | null;
  /** How the last call ended, e.g. "486 Busy Here", for the log and the console. */
  call_result: string | null;
  /** How the current or last call is protected (tls+srtp, tls, srtp, none); null until connected. */
  encryption: Generated<string | null>;
  /** Set through the API to have the running room dial the attendee again (or now). */
  call_requested_at: Generated<Timestamp | null>;
}

/** Every live PIN, so that a PIN typed on a dial-in call names exactly one room and role. */
export interface PinTable {
  pin: string;
  role: string;
  user_id: number | null;
  conference_id: number | null;
}

/** The notification outbox (queued by store/notifications.ts, sent through store/notification-outbox.ts). */
export interface NotificationTable {
  id: Generated<number>;
  created_at: Timestamp;
  /** The conference the message is about; null for a message about something else (a webhook disabled). */
  conference_id: number | null;
  kind: string;
  recipient: string;
  /** JSON of the domain's NotificationFacts: everything the message says, as it was when queued. */
  facts: string;
  /** queued, sending (claimed by a worker), sent, refused (permanently, by the server) or failed (gave up). */
  state: string;
  attempts: number;
  next_attempt_at: Timestamp;
  claimed_by: string | null;
  claimed_at: Timestamp | null;
  sent_at: Timestamp | null;
  last_error: string | null;
}

/** What happened in a conference, for live views (see store/events.ts). */
export interface EventTable {
  id: Generated<number>;
  user_id: number;
  conference_id: number;
  attendee_id: number | null;
  type: string;
  reason: string | null;
  /** On attendee-connected: how the call is protected. */
  encryption: Generated<string | null>;
  /** As JSON: on conference-recovered the take-over (RecoveryDetails), on call-ended the call's record. */
  details: Generated<string | null>;
  created_at: Timestamp;
}

/** A console sign-in: the cookie's token is kept only as its SHA-256. */
export interface ConsoleSessionTable {
  token_hash: string;
  user_id: number;
  csrf_token: string;
  created_at: Timestamp;
  last_seen_at: Timestamp;
}

/**
 * A caller admitted by one instance to a room that runs on another: the internal call that carries
 * them there shows the token, which the running instance takes once.
 */
export interface DialInHandoffTable {
  token: string;
  conference_id: number;
  attendee_id: number;
  moderator: Flag;
  /** How the caller's own call is protected, for the room that takes it. */
  encryption: Generated<string | null>;
  created_at: Timestamp;
}

/** A user's webhook (see store/webhooks.ts); the secret signs its requests and is shown once. */
export interface WebhookTable extends Versioned {
  user_id: number;
  url: string;
  /** JSON array of event types; null: every type. */
  event_types: string | null;
  secret: string;
  enabled: Flag;
  disabled_at: Timestamp | null;
  disabled_reason: string | null;
}

/**
 * The webhook outbox: one row per webhook and event, queued in the transaction of the event, with
 * the body it sends frozen then (events are kept an hour, deliveries are tried for a day).
 */
export interface WebhookDeliveryTable extends Versioned {
  webhook_id: number;
  /** The webhook-id header: the same on every attempt. */
  message_id: string;
  event_id: number;
  event_type: string;
  payload: string;
  /** pending, sending (claimed by a worker), delivered or failed (given up). */
  state: string;
  attempts: number;
  /** When it is next due (to the millisecond); null once delivered or failed. */
  next_attempt_at: Timestamp | null;
  claimed_by: string | null;
  claimed_at: Timestamp | null;
  delivered_at: Timestamp | null;
  last_error: string | null;
}

/** The delivery log: one row per attempt. */
export interface WebhookAttemptTable {
  id: Generated<number>;
  delivery_id: number;
  attempted_at: Timestamp;
  /** The receiver's HTTP status; null when there was none (refused, timed out...). */
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

/** A call placed for a user's conference, kept while it counts against the user's call limits. */
export interface PlacedCallTable {
  id: Generated<number>;
  user_id: number;
  conference_id: number;
  attendee_id: number;
  placed_at: Timestamp;
  /** When the call failed or hung up; null while it is in progress. */
  ended_at: Timestamp | null;
}

/** A call placed to or taken from an attendee, once over (domain/call-record.ts). */
export interface CallRecordTable {
  id: Generated<number>;
  conference_id: number;
  attendee_id: number;
  direction: string;
  number: string | null;
  route: string | null;
  instance: string;
  invited_at: Timestamp;
  answered_at: Timestamp | null;
  ended_at: Timestamp;
  sip_status: number;
  sip_reason: string;
  cause_protocol: string | null;
  cause: number | null;
  cause_text: string | null;
  hung_up_by: string | null;
  end_reason: string;
  codec: string | null;
  srtp: Flag;
  tls: Flag;
  /** CallQuality as JSON; null when the call had no media. */
  quality: string | null;
  verification_status: string | null;
  attestation: string | null;
  verification_reason: string | null;
}

/** Attempts under one key (a client address, a caller) in the window open now (store/attempt-counts.ts). */
export interface AttemptCountTable {
  key: string;
  count: number;
  window_ends_at: Timestamp;
}

/** An instance alive now and where it takes SIP requests (store/sip-instances.ts). */
export interface SipInstanceTable {
  /** The instance's name (BRIDGELINE_INSTANCE_ID), as a conference's runner. */
  runner: string;
  sip_uri: string;
  /** Its last heartbeat. */
  seen_at: Timestamp;
}

export interface Database {
  billing_packages: BillingPackageTable;
  users: UserTable;
  credit_cards: CreditCardTable;
  addresses: AddressTable;
  phone_numbers: PhoneNumberTable;
  contacts: ContactTable;
  conferences: ConferenceTable;
  attendees: AttendeeTable;
  pins: PinTable;
  notifications: NotificationTable;
  events: EventTable;
  console_sessions: ConsoleSessionTable;
  dial_in_handoffs: DialInHandoffTable;
  webhooks: WebhookTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_attempts: WebhookAttemptTable;
  attempt_counts: AttemptCountTable;
  placed_calls: PlacedCallTable;
  call_records: CallRecordTable;
  sip_instances: SipInstanceTable;
}
