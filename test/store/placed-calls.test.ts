/**
 * The per-user call limits as the store counts them (toll fraud): calls in progress and placed in the
 * last hour, over every instance. On PostgreSQL two stores on one database stand for two instances
 * placing calls for the same user at once; on SQLite one store.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, it } from "node:test";
import { OPEN_CALLING_POLICY } from "../../src/domain/phone.js";
import { openPostgresStore, openSqliteStore, type Store } from "../../src/store/database.js";
import { endPlacedCall, placedCallCounts, reservePlacedCalls } from "../../src/store/placed-calls.js";
import { flag } from "../../src/store/values.js";
import { createTestDatabase, forEachStore, type TestDatabase } from "../helpers/databases.js";

const policy = { ...OPEN_CALLING_POLICY, maxCallsInProgressPerUser: 5, maxCallsPerHourPerUser: 8 };
const NOW = new Date("2026-11-26T12:00:00Z");

forEachStore("placed calls counted against the per-user limits", (kind) => {
  let database: TestDatabase | undefined;
  let dataDir: string | undefined;
  let stores: Store[] = [];
  let userId: number;
  let conferenceId: number;

  before(async () => {
    if (kind === "postgres") {
      database = await createTestDatabase();
      const url = database.url;
      stores = [await openPostgresStore(url), await openPostgresStore(url)];
    } else {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-placed-"));
      stores = [await openSqliteStore(dataDir)];
    }
    const db = stores[0]?.db;
    assert.ok(db);
    const at = NOW.toISOString();
    const user = await db
      .insertInto("users")
      .values({
        created_at: at,
        updated_at: at,
        lock_version: 0,
        name: "Alice",
        email: "alice@example.com",
        password_hash: "x",
        im: null,
        im_network: null,
        time_zone: null,
        member_pin: "1111111",
        moderator_pin: "2222222",
        terms_of_service: flag(true),
        billing_package_id: 1,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    userId = user.id;
    conferenceId = await newConference("started");
  });
  after(async () => {
    for (const store of stores) await store.close();
    await database?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  let conferenceCount = 0;

  async function newConference(state: string): Promise<number> {
    const at = NOW.toISOString();
    const row = await stores[0]?.db
      .insertInto("conferences")
      .values({
        created_at: at,
        updated_at: at,
        lock_version: 0,
        user_id: userId,
        name: "Limits",
        state,
        scheduled_to_start_at: at,
        started_at: at,
        ended_at: null,
        direct_dial: flag(false),
        dial_in_locked: flag(false),
        record_audio: flag(false),
        lecture_mode: flag(false),
        accounting_code: null,
        member_pin: `3${conferenceCount}`.padEnd(7, "0"),
        moderator_pin: `4${conferenceCount++}`.padEnd(7, "0"),
        send_notification_emails: flag(false),
        announce_attendees: flag(false),
        runner: null,
        runner_sip_uri: null,
        runner_heartbeat_at: null,
        recording_file: null,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    assert.ok(row);
    return row.id;
  }

  function reserve(store: Store, attendeeIds: number[], at = NOW, conference = conferenceId) {
    return reservePlacedCalls(store, { userId, conferenceId: conference }, attendeeIds, policy, at);
  }

  it("grants exactly the calls in progress allowed when instances ask at once, and refuses the rest with the reason", async () => {
    const asks = Array.from({ length: 12 }, (_, i) => reserve(stores[i % stores.length] as Store, [i + 1]));
    const results = (await Promise.all(asks)).flatMap((allowances) => [...allowances.values()]);
    const granted = results.filter((allowance) => "placedCallId" in allowance);
    const refused = results.filter((allowance) => "refused" in allowance);
    assert.equal(granted.length, 5);
    assert.equal(refused.length, 7);
    assert.deepEqual(
      new Set(refused.map((allowance) => ("refused" in allowance ? allowance.refused : ""))),
      new Set(["the account has 5 calls in progress, the most it may have at once"]),
    );
    assert.deepEqual(await placedCallCounts(stores[0] as Store, userId, NOW), { inProgress: 5, lastHour: 5 });
  });

  it("a call that ends frees its place; the hourly count keeps it", async () => {
    const store = stores[0] as Store;
    const first = await reserve(store, [20]);
    assert.ok("refused" in (first.get(20) ?? {}));
    const ids = await store.db.selectFrom("placed_calls").select("id").orderBy("id").execute();
    await endPlacedCall(store, ids[0]?.id ?? 0, NOW);
    await endPlacedCall(store, ids[1]?.id ?? 0, NOW);
    const batch = await reserve(store, [21, 22, 23]);
    assert.deepEqual(
      [...batch.values()].map((allowance) => "placedCallId" in allowance),
      [true, true, false],
    );
    // 7 placed this hour, 5 in progress.
    assert.deepEqual(await placedCallCounts(store, userId, NOW), { inProgress: 5, lastHour: 7 });
  });

  it("calls of a conference no longer started stop counting as in progress (a crashed instance holds none)", async () => {
    const store = stores[0] as Store;
    await store.db
      .updateTable("conferences")
      .set({ state: "ended" })
      .where("id", "=", conferenceId)
      .execute();
    assert.deepEqual(await placedCallCounts(store, userId, NOW), { inProgress: 0, lastHour: 7 });
    const other = await newConference("started");
    const batch = await reserve(store, [30, 31, 32], NOW, other);
    // The hourly limit (8) is what stops the second.
    assert.deepEqual(
      [...batch.values()].map((allowance) => ("refused" in allowance ? allowance.refused : "placed")),
      [
        "placed",
        "the account has placed 8 calls in the last hour, the most it may place in an hour",
        "the account has placed 8 calls in the last hour, the most it may place in an hour",
      ],
    );
  });

  it("a deleted conference's calls still count this hour; an hour on they are swept", async () => {
    const store = stores[0] as Store;
    await store.db.deleteFrom("conferences").execute();
    assert.deepEqual(await placedCallCounts(store, userId, NOW), { inProgress: 0, lastHour: 8 });
    const later = new Date(NOW.getTime() + 3_600_000);
    const fresh = await newConference("started");
    const batch = await reserve(store, [40], later, fresh);
    assert.ok("placedCallId" in (batch.get(40) ?? {}));
    const rows = await store.db.selectFrom("placed_calls").select("conference_id").execute();
    assert.deepEqual(
      rows.map((row) => row.conference_id),
      [fresh],
      "the rows that no longer count were swept",
    );
  });
});
