// Long because it is the append-only list of every schema change since the first; old migrations are never edited.
import {
  type ColumnDefinitionBuilder,
  type Kysely,
  type Migration,
  type MigrationProvider,
  sql,
} from "kysely";
import type { StoreDialect } from "./database.js";

/*
 * Migrations are code, not files, so that the build needs no loader and both dialects share one
 * schema: only the id, timestamp and boolean column types differ.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run before the schema type exists.
type AnyDb = Kysely<any>;

function columnTypes(dialect: StoreDialect) {
  const postgres = dialect === "postgres";
  return {
    id: postgres ? sql`serial` : sql`integer`,
    timestamp: postgres ? sql`timestamptz` : sql`text`,
    flag: postgres ? sql`boolean` : sql`integer`,
    idColumn: (c: ColumnDefinitionBuilder) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()),
  };
}

type ColumnTypes = ReturnType<typeof columnTypes>;

/** A table of a resource the API shows: id, created_at, updated_at, lock_version. */
function versionedTable(db: AnyDb, t: ColumnTypes, name: string) {
  return db.schema
    .createTable(name)
    .addColumn("id", t.id, t.idColumn)
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .addColumn("lock_version", "integer", (c) => c.notNull().defaultTo(0));
}

function initialSchema(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  const versioned = (name: string, db: AnyDb) => versionedTable(db, t, name);

  return {
    async up(db: AnyDb) {
      await db.schema
        .createTable("billing_packages")
        .addColumn("id", "integer", (c) => c.primaryKey())
        .addColumn("name", "text", (c) => c.notNull())
        .execute();
      await db
        .insertInto("billing_packages")
        .values([
          { id: 1, name: "Basic" },
          { id: 2, name: "Professional" },
          { id: 3, name: "Enterprise" },
        ])
        .execute();

      await versioned("users", db)
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("email", "text", (c) => c.notNull().unique())
        .addColumn("password_hash", "text", (c) => c.notNull())
        .addColumn("im", "text")
        .addColumn("im_network", "text")
        .addColumn("time_zone", "text")
        .addColumn("member_pin", "text", (c) => c.notNull())
        .addColumn("moderator_pin", "text", (c) => c.notNull())
        .addColumn("terms_of_service", t.flag, (c) => c.notNull())
        .addColumn("billing_package_id", "integer", (c) => c.notNull().references("billing_packages.id"))
        .execute();

      const ownedByUser = (name: string) =>
        versioned(name, db).addColumn("user_id", "integer", (c) =>
          c.notNull().references("users.id").onDelete("cascade"),
        );
      await ownedByUser("credit_cards")
        .addColumn("name", "text")
        .addColumn("expiry_month", "integer", (c) => c.notNull())
        .addColumn("expiry_year", "integer", (c) => c.notNull())
        .addColumn("last_four", "text", (c) => c.notNull())
        .addColumn("brand", "text", (c) => c.notNull())
        .addUniqueConstraint("credit_cards_user_unique", ["user_id"])
        .execute();
      await ownedByUser("addresses")
        .addColumn("street_address", "text")
        .addColumn("postal_code", "text", (c) => c.notNull())
        .addColumn("location", "text")
        .addColumn("subdivision", "text", (c) => c.notNull())
        .addColumn("country", "text", (c) => c.notNull())
        .addUniqueConstraint("addresses_user_unique", ["user_id"])
        .execute();
      await ownedByUser("phone_numbers")
        .addColumn("country_code", "integer", (c) => c.notNull())
        .addColumn("subscriber_number", "text", (c) => c.notNull())
        .addColumn("location", "text")
        .addColumn("extension", "text")
        .execute();
      await db.schema.createIndex("phone_numbers_user").on("phone_numbers").column("user_id").execute();

      await ownedByUser("contacts")
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("email", "text")
        .addColumn("phone_number", "text")
        .addColumn("im", "text")
        .addColumn("im_network", "text")
        .addColumn("time_zone", "text")
        .execute();
      await db.schema.createIndex("contacts_user").on("contacts").column("user_id").execute();

      await ownedByUser("conferences")
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("scheduled_to_start_at", t.timestamp, (c) => c.notNull())
        .addColumn("started_at", t.timestamp)
        .addColumn("ended_at", t.timestamp)
        .addColumn("direct_dial", t.flag, (c) => c.notNull())
        .addColumn("dial_in_locked", t.flag, (c) => c.notNull())
        .addColumn("record_audio", t.flag, (c) => c.notNull())
        .addColumn("lecture_mode", t.flag, (c) => c.notNull())
        .addColumn("accounting_code", "integer")
        .addColumn("member_pin", "text", (c) => c.notNull())
        .addColumn("moderator_pin", "text", (c) => c.notNull())
        .addColumn("send_notification_emails", t.flag, (c) => c.notNull())
        .addColumn("announce_attendees", t.flag, (c) => c.notNull())
        .execute();
      await db.schema.createIndex("conferences_user").on("conferences").column("user_id").execute();
      await db.schema
        .createIndex("conferences_schedule")
        .on("conferences")
        .columns(["state", "scheduled_to_start_at"])
        .execute();

      await versioned("attendees", db)
        .addColumn("conference_id", "integer", (c) =>
          c.notNull().references("conferences.id").onDelete("cascade"),
        )
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("phone_number_country_code", "text")
        .addColumn("phone_number_subscriber_number", "text")
        .addColumn("phone_number_extension", "text")
        .addColumn("phone_number_location", "text")
        .addColumn("moderator", t.flag, (c) => c.notNull())
        .addColumn("muted", t.flag)
        .addColumn("hand_up", t.flag)
        .addColumn("dial_in", t.flag, (c) => c.notNull())
        .addColumn("name", "text")
        .addColumn("email", "text")
        .addColumn("duration", "integer")
        .execute();
      await db.schema.createIndex("attendees_conference").on("attendees").column("conference_id").execute();

      await db.schema
        .createTable("pins")
        .addColumn("pin", "text", (c) => c.primaryKey())
        .addColumn("role", "text", (c) => c.notNull())
        .addColumn("user_id", "integer", (c) => c.references("users.id").onDelete("cascade"))
        .addColumn("conference_id", "integer", (c) => c.references("conferences.id").onDelete("cascade"))
        .execute();
    },
  };
}

/**
 * What running conferences need: which instance runs a started conference and when it last said so
 * (crash recovery), and when an attendee's current call was answered (live duration, failure reason).
 */
function conferenceRuntime(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDb) {
      await db.schema.alterTable("conferences").addColumn("runner", "text").execute();
      await db.schema.alterTable("conferences").addColumn("runner_heartbeat_at", t.timestamp).execute();
      await db.schema.alterTable("attendees").addColumn("connected_at", t.timestamp).execute();
      await db.schema.alterTable("attendees").addColumn("call_result", "text").execute();
    },
  };
}

/** The recording's file name in the data directory's recordings/ folder; null until one exists. */
function conferenceRecording(): Migration {
  return {
    async up(db: AnyDb) {
      await db.schema.alterTable("conferences").addColumn("recording_file", "text").execute();
    },
  };
}

/**
 * The notification outbox: each e-mail to send, queued in the transaction of the change that causes
 * it, with what it says frozen at that moment (a cancelled conference's row is gone by sending time);
 * and the conference's iCalendar SEQUENCE, which every message about it moves on.
 */
function notificationOutbox(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDb) {
      await createNotificationsTable(db, t, "notifications", true);
      await db.schema
        .alterTable("conferences")
        .addColumn("notification_sequence", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await createNotificationsDueIndex(db);
    },
  };
}

/** The notification outbox's table: conference_id NOT NULL as first made (0004), nullable since 0007. */
async function createNotificationsTable(
  db: AnyDb,
  t: ColumnTypes,
  name: string,
  conferenceRequired: boolean,
): Promise<void> {
  await db.schema
    .createTable(name)
    .addColumn("id", t.id, t.idColumn)
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("conference_id", "integer", (c) => (conferenceRequired ? c.notNull() : c))
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("recipient", "text", (c) => c.notNull())
    .addColumn("facts", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("next_attempt_at", t.timestamp, (c) => c.notNull())
    .addColumn("claimed_by", "text")
    .addColumn("claimed_at", t.timestamp)
    .addColumn("sent_at", t.timestamp)
    .addColumn("last_error", "text")
    .execute();
}

async function createNotificationsDueIndex(db: AnyDb): Promise<void> {
  await db.schema
    .createIndex("notifications_due")
    .on("notifications")
    .columns(["state", "next_attempt_at"])
    .execute();
}

/**
 * The moderator console: the event log that live views follow (kept an hour), console sign-in
 * sessions, and the markers through which the API asks a running room to call an attendee again or
 * to end the conference, whichever instance runs it.
 */
function consoleEvents(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDb) {
      await db.schema
        .createTable("events")
        .addColumn("id", t.id, t.idColumn)
        .addColumn("user_id", "integer", (c) => c.notNull())
        .addColumn("conference_id", "integer", (c) => c.notNull())
        .addColumn("attendee_id", "integer")
        .addColumn("type", "text", (c) => c.notNull())
        .addColumn("reason", "text")
        .addColumn("created_at", t.timestamp, (c) => c.notNull())
        .execute();
      await db.schema.createIndex("events_created").on("events").column("created_at").execute();
      await db.schema
        .createTable("console_sessions")
        .addColumn("token_hash", "text", (c) => c.primaryKey())
        .addColumn("user_id", "integer", (c) => c.notNull().references("users.id").onDelete("cascade"))
        .addColumn("csrf_token", "text", (c) => c.notNull())
        .addColumn("created_at", t.timestamp, (c) => c.notNull())
        .addColumn("last_seen_at", t.timestamp, (c) => c.notNull())
        .execute();
      await db.schema.alterTable("attendees").addColumn("call_requested_at", t.timestamp).execute();
      await db.schema.alterTable("conferences").addColumn("end_requested_at", t.timestamp).execute();
    },
  };
}

/**
 * Dial-in across instances: where each running conference's room takes calls, and the one-time
 * tokens of callers handed from the instance that answered them to the one that runs their room.
 */
function dialInHandoffs(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDb) {
      await db.schema.alterTable("conferences").addColumn("runner_sip_uri", "text").execute();
      await db.schema
        .createTable("dial_in_handoffs")
        .addColumn("token", "text", (c) => c.primaryKey())
        .addColumn("conference_id", "integer", (c) =>
          c.notNull().references("conferences.id").onDelete("cascade"),
        )
        .addColumn("attendee_id", "integer", (c) => c.notNull())
        .addColumn("moderator", t.flag, (c) => c.notNull())
        .addColumn("created_at", t.timestamp, (c) => c.notNull())
        .execute();
    },
  };
}

/**
 * Webhooks: each user's endpoints, the outbox of deliveries (one per webhook and event, queued in the
 * event's transaction), and the log of every attempt. The notification outbox also takes messages
 * that are about no conference (a webhook disabled), so its conference_id may be null: SQLite cannot
 * drop a NOT NULL, so there the table is rebuilt.
 */
function webhooks(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDb) {
      await versionedTable(db, t, "webhooks")
        .addColumn("user_id", "integer", (c) => c.notNull().references("users.id").onDelete("cascade"))
        .addColumn("url", "text", (c) => c.notNull())
        .addColumn("event_types", "text")
        .addColumn("secret", "text", (c) => c.notNull())
        .addColumn("enabled", t.flag, (c) => c.notNull())
        .addColumn("disabled_at", t.timestamp)
        .addColumn("disabled_reason", "text")
        .execute();
      await db.schema.createIndex("webhooks_user").on("webhooks").column("user_id").execute();
      await versionedTable(db, t, "webhook_deliveries")
        .addColumn("webhook_id", "integer", (c) => c.notNull().references("webhooks.id").onDelete("cascade"))
        .addColumn("message_id", "text", (c) => c.notNull().unique())
        .addColumn("event_id", "integer", (c) => c.notNull())
        .addColumn("event_type", "text", (c) => c.notNull())
        .addColumn("payload", "text", (c) => c.notNull())
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("next_attempt_at", t.timestamp)
        .addColumn("claimed_by", "text")
        .addColumn("claimed_at", t.timestamp)
        .addColumn("delivered_at", t.timestamp)
        .addColumn("last_error", "text")
        .execute();
      await db.schema
        .createIndex("webhook_deliveries_due")
        .on("webhook_deliveries")
        .columns(["state", "next_attempt_at"])
        .execute();
      await db.schema
        .createIndex("webhook_deliveries_webhook")
        .on("webhook_deliveries")
        .columns(["webhook_id", "id"])
        .execute();
      await db.schema
        .createTable("webhook_attempts")
        .addColumn("id", t.id, t.idColumn)
        .addColumn("delivery_id", "integer", (c) =>
          c.notNull().references("webhook_deliveries.id").onDelete("cascade"),
        )
        .addColumn("attempted_at", t.timestamp, (c) => c.notNull())
        .addColumn("status_code", "integer")
        .addColumn("error", "text")
        .addColumn("duration_ms", "integer", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("webhook_attempts_delivery")
        .on("webhook_attempts")
        .column("delivery_id")
        .execute();

      if (dialect === "postgres") {
        await db.schema
          .alterTable("notifications")
          .alterColumn("conference_id", (c) => c.dropNotNull())
          .execute();
        return;
      }
      await createNotificationsTable(db, t, "notifications_rebuilt", false);
      await sql`insert into notifications_rebuilt select id, created_at, conference_id, kind, recipient, facts, state, attempts, next_attempt_at, claimed_by, claimed_at, sent_at, last_error from notifications`.execute(
        db,
      );
      await db.schema.dropTable("notifications").execute();
      await db.schema.alterTable("notifications_rebuilt").renameTo("notifications").execute();
      await createNotificationsDueIndex(db);
    },
  };
}

/** The calls placed for each user, counted against the per-user call limits (toll fraud). */
function placedCalls(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDb) {
      await db.schema
        .createTable("placed_calls")
        .addColumn("id", t.id, t.idColumn)
        .addColumn("user_id", "integer", (c) => c.notNull().references("users.id").onDelete("cascade"))
        // No foreign key: a deleted conference's calls still count against the hourly limit.
        .addColumn("conference_id", "integer", (c) => c.notNull())
        .addColumn("attendee_id", "integer", (c) => c.notNull())
        .addColumn("placed_at", t.timestamp, (c) => c.notNull())
        .addColumn("ended_at", t.timestamp)
        .execute();
      await db.schema
        .createIndex("placed_calls_user_placed_at")
        .on("placed_calls")
        .columns(["user_id", "placed_at"])
        .execute();
    },
  };
}

/**
 * Attempts counted per key in fixed windows, shared by the instances (store/attempt-counts.ts); the
 * index serves the sweep of windows that ended.
 */
function attemptCounts(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDb) {
      await db.schema
        .createTable("attempt_counts")
        .addColumn("key", "text", (c) => c.primaryKey())
        .addColumn("count", "integer", (c) => c.notNull())
        .addColumn("window_ends_at", t.timestamp, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("attempt_counts_window_ends_at")
        .on("attempt_counts")
        .column("window_ends_at")
        .execute();
    },
  };
}

/**
 * Encrypted-only conferences and how each call is protected (domain/encryption.ts): the attendee's
 * current or last call, the attendee-connected event's, and a caller's carried to another instance.
 */
function callEncryption(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDb) {
      await db.schema
        .alterTable("conferences")
        .addColumn("encrypted_only", t.flag, (c) => c.notNull().defaultTo(dialect === "postgres" ? false : 0))
        .execute();
      await db.schema.alterTable("attendees").addColumn("encryption", "text").execute();
      await db.schema.alterTable("events").addColumn("encryption", "text").execute();
      await db.schema.alterTable("dial_in_handoffs").addColumn("encryption", "text").execute();
    },
  };
}

/**
 * The instances alive now, each with the SIP URI the others call it at (store/sip-instances.ts): an
 * instance takes SIP requests from the others' addresses as from a trunk.
 */
function sipInstances(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDb) {
      await db.schema
        .createTable("sip_instances")
        .addColumn("runner", "text", (c) => c.primaryKey())
        .addColumn("sip_uri", "text", (c) => c.notNull())
        .addColumn("seen_at", t.timestamp, (c) => c.notNull())
        .execute();
    },
  };
}
/**
 * Conferences that outlive their instance (store/leases.ts): the runner's lease generation (the
 * fencing token) and hand-over, the recording's later parts, and the take-over's details on its event.
 */
function conferenceLeases(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDb) {
      await db.schema
        .alterTable("conferences")
        .addColumn("runner_generation", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable("conferences").addColumn("runner_released_at", t.timestamp).execute();
      await db.schema.alterTable("conferences").addColumn("recording_parts", "text").execute();
      await db.schema.alterTable("events").addColumn("details", "text").execute();
    },
  };
}

/**
 * Call records (store/call-records.ts): one row per call placed to or taken from an attendee, kept
 * with its conference; no key on the attendee, whose record outlives its removal.
 */
function callRecords(dialect: StoreDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDb) {
      await db.schema
        .createTable("call_records")
        .addColumn("id", t.id, t.idColumn)
        .addColumn("conference_id", "integer", (c) =>
          c.notNull().references("conferences.id").onDelete("cascade"),
        )
        .addColumn("attendee_id", "integer", (c) => c.notNull())
        .addColumn("direction", "text", (c) => c.notNull())
        .addColumn("number", "text")
        .addColumn("route", "text")
        .addColumn("instance", "text", (c) => c.notNull())
        .addColumn("invited_at", t.timestamp, (c) => c.notNull())
        .addColumn("answered_at", t.timestamp)
        .addColumn("ended_at", t.timestamp, (c) => c.notNull())
        .addColumn("sip_status", "integer", (c) => c.notNull())
        .addColumn("sip_reason", "text", (c) => c.notNull())
        .addColumn("cause_protocol", "text")
        .addColumn("cause", "integer")
        .addColumn("cause_text", "text")
        .addColumn("hung_up_by", "text")
        .addColumn("end_reason", "text", (c) => c.notNull())
        .addColumn("codec", "text")
        .addColumn("srtp", t.flag, (c) => c.notNull())
        .addColumn("tls", t.flag, (c) => c.notNull())
        // The figures of domain/call-record.ts CallQuality, as JSON; null when the call had no media.
        .addColumn("quality", "text")
        // A caller's STIR/SHAKEN verification: passed, failed or none; null for calls we placed.
        .addColumn("verification_status", "text")
        .addColumn("attestation", "text")
        .addColumn("verification_reason", "text")
        .execute();
      await db.schema
        .createIndex("call_records_conference")
        .on("call_records")
        .columns(["conference_id", "id"])
        .execute();
    },
  };
}

export function migrationProvider(dialect: StoreDialect): MigrationProvider {
  return {
    async getMigrations() {
      return {
        "0001_initial_schema": initialSchema(dialect),
        "0002_conference_runtime": conferenceRuntime(dialect),
        "0003_conference_recording": conferenceRecording(),
        "0004_notification_outbox": notificationOutbox(dialect),
        "0005_console_events": consoleEvents(dialect),
        "0006_dial_in_handoffs": dialInHandoffs(dialect),
        "0007_webhooks": webhooks(dialect),
        "0008_placed_calls": placedCalls(dialect),
        "0009_attempt_counts": attemptCounts(dialect),
        "0010_call_encryption": callEncryption(dialect),
        "0011_sip_instances": sipInstances(dialect),
        "0012_conference_leases": conferenceLeases(dialect),
        "0013_call_records": callRecords(dialect),
      };
    },
  };
}
