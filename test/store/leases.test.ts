/**
 * The runner's lease in the store, on both dialects: every write a room makes is refused (LeaseLost,
 * nothing changed) once its conference has another lease, lands with the current one, and a write
 * without a lease (the API's) passes; and the take-over of a conference whose runner went: its calls
 * disconnected up to the last heartbeat, its placed calls ended, the attendees to call back, its
 * events with the take-over's details; each conference taken once by instances looking together
 * (two stores on one PostgreSQL database stand for two instances), and one too big for the
 * claimant's room left to another.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, it } from "node:test";
import type { RoomScope } from "../../src/conference/ports.js";
import type { NewCallRecord } from "../../src/domain/call-record.js";
import { type ConferenceEvent, eventData, RUNNER_GONE_REASON } from "../../src/domain/event.js";
import { OPEN_CALLING_POLICY } from "../../src/domain/phone.js";
import type { Claimant } from "../../src/scheduler/ports.js";
import { listCallRecords } from "../../src/store/call-records.js";
import { conferenceStore } from "../../src/store/conference-store.js";
import { openPostgresStore, openSqliteStore, type Store } from "../../src/store/database.js";
import { eventsAfter } from "../../src/store/events.js";
import { checkLease, LeaseLost } from "../../src/store/leases.js";
import { schedulerStore } from "../../src/store/scheduler-store.js";
import { createUser, listBillingPackages } from "../../src/store/users.js";
import { createTestDatabase, fillDataDir, forEachStore, type TestDatabase } from "../helpers/databases.js";

/** Whole seconds: the store keeps times to the second. */
const NOW = new Date("2031-06-02T10:00:00.000Z");
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);
/** The lease the conferences below run under. */
const LEASE = 2;

forEachStore("the runner's lease", (kind) => {
  let database: TestDatabase | undefined;
  let dataDir: string | undefined;
  /** Two instances' stores on one database (PostgreSQL); SQLite's one file has one. */
  let stores: Store[] = [];
  let store: Store;
  let userId: number;

  before(async () => {
    if (kind === "postgres") {
      database = await createTestDatabase();
      stores = [await openPostgresStore(database.url), await openPostgresStore(database.url)];
    } else {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-leases-"));
      await fillDataDir(dataDir);
      stores = [await openSqliteStore(dataDir)];
    }
    store = stores[0] as Store;
    const [billing] = await listBillingPackages(store, []);
    const user = await createUser(
      store,
      { name: "Alice", email: "alice@example.com", billingPackageId: billing?.id ?? 1 },
      "not a password hash",
      NOW,
    );
    userId = user.id;
  });
  after(async () => {
    for (const each of stores) await each.close();
    await database?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /**
   * A conference started by `runner` under `generation`, its lease last renewed `heartbeatAt` (by
   * default now: no take-over below finds it silent).
   */
  async function startedConference(
    runner = "gone",
    heartbeatAt = NOW,
    generation = LEASE,
    releasedAt: Date | null = null,
  ): Promise<number> {
    const at = NOW.toISOString();
    const row = await store.db
      .insertInto("conferences")
      .values({
        created_at: at,
        updated_at: at,
        lock_version: 0,
        user_id: userId,
        name: "Leased",
        state: "started",
        scheduled_to_start_at: ago(600).toISOString(),
        started_at: ago(600).toISOString(),
        ended_at: null,
        direct_dial: 1,
        dial_in_locked: 0,
        record_audio: 0,
        lecture_mode: 0,
        accounting_code: null,
        member_pin: "",
        moderator_pin: "",
        send_notification_emails: 0,
        announce_attendees: 0,
        runner,
        runner_sip_uri: `sip:${runner}@192.0.2.1`,
        runner_heartbeat_at: heartbeatAt.toISOString(),
        runner_generation: generation,
        runner_released_at: releasedAt?.toISOString() ?? null,
        recording_file: null,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    return row.id;
  }

  /** An attendee of the conference, its call as the runner left it. */
  async function addAttendee(
    conferenceId: number,
    call: {
      state: string;
      dialIn?: boolean;
      /** How long before NOW the call was answered. */
      connectedSecondsAgo?: number;
      duration?: number;
      number?: string | null;
    },
  ): Promise<number> {
    const at = NOW.toISOString();
    const row = await store.db
      .insertInto("attendees")
      .values({
        created_at: at,
        updated_at: at,
        lock_version: 0,
        conference_id: conferenceId,
        state: call.state,
        phone_number_country_code: "1",
        phone_number_subscriber_number: call.number === undefined ? "6045550123" : call.number,
        phone_number_extension: null,
        phone_number_location: null,
        moderator: 0,
        muted: call.state === "connected" ? 0 : null,
        hand_up: call.state === "connected" ? 0 : null,
        dial_in: call.dialIn ? 1 : 0,
        name: null,
        email: null,
        duration: call.duration ?? null,
        connected_at:
          call.connectedSecondsAgo === undefined ? null : ago(call.connectedSecondsAgo).toISOString(),
        call_result: null,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    return row.id;
  }

  async function placeCall(conferenceId: number, attendeeId: number, endedAt: Date | null): Promise<number> {
    const row = await store.db
      .insertInto("placed_calls")
      .values({
        user_id: userId,
        conference_id: conferenceId,
        attendee_id: attendeeId,
        placed_at: ago(120).toISOString(),
        ended_at: endedAt?.toISOString() ?? null,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    return row.id;
  }

  /** Everything a room's write may change about a conference, as the store holds it. */
  async function snapshot(conferenceId: number) {
    const [conference, attendees, events, placedCalls, deliveries, callRecords] = await Promise.all([
      store.db.selectFrom("conferences").selectAll().where("id", "=", conferenceId).execute(),
      store.db.selectFrom("attendees").selectAll().where("conference_id", "=", conferenceId).execute(),
      store.db.selectFrom("events").selectAll().where("conference_id", "=", conferenceId).execute(),
      store.db.selectFrom("placed_calls").selectAll().where("conference_id", "=", conferenceId).execute(),
      store.db
        .selectFrom("webhook_deliveries")
        .select((eb) => eb.fn.countAll<number>().as("count"))
        .executeTakeFirstOrThrow(),
      store.db.selectFrom("call_records").selectAll().where("conference_id", "=", conferenceId).execute(),
    ]);
    return { conference, attendees, events, placedCalls, deliveries: Number(deliveries.count), callRecords };
  }

  function conferenceRow(conferenceId: number) {
    return store.db
      .selectFrom("conferences")
      .select(["state", "runner", "runner_generation", "runner_released_at"])
      .where("id", "=", conferenceId)
      .executeTakeFirstOrThrow();
  }

  const claimant = (runner: string, room: number | null = null): Claimant => ({
    runner,
    sipUri: `sip:${runner}@192.0.2.2`,
    room,
  });

  /** Everyone silent since before NOW is gone; nobody is too long gone to call back. */
  const GONE = { silentBefore: NOW, endBefore: ago(3600) };

  /** Each of a room's writes, made about `conferenceId` with `scope`; its attendee connected. */
  const writes: Record<string, (scope: RoomScope, attendeeId: number) => Promise<unknown>> = {
    recordAttendeeCall: (scope, attendeeId) =>
      conferenceStore(store).recordAttendeeCall(
        scope,
        attendeeId,
        { kind: "disconnected", result: "BYE" },
        NOW,
      ),
    recordAttendeeControls: (scope, attendeeId) =>
      conferenceStore(store).recordAttendeeControls(scope, attendeeId, { muted: true, handUp: true }, NOW),
    recordConferenceControls: (scope) =>
      conferenceStore(store).recordConferenceControls(scope, { lectureMode: true, dialInLocked: true }, NOW),
    endConference: (scope) => conferenceStore(store).endConference(scope, "the moderator left", NOW),
    appendEvent: (scope, attendeeId) =>
      conferenceStore(store).appendEvent(scope, attendeeId, "talking-started", NOW),
    reservePlacedCalls: (scope, attendeeId) =>
      conferenceStore(store).reservePlacedCalls(scope, [attendeeId], OPEN_CALLING_POLICY, NOW),
    recordCall: (scope, attendeeId) => conferenceStore(store).recordCall(scope, callRecord(attendeeId), NOW),
  };

  /** A call record as a room writes one. */
  const callRecord = (attendeeId: number): NewCallRecord => ({
    attendeeId,
    direction: "outbound",
    number: "+16045550123",
    route: "sip:carrier.example",
    instance: "gone",
    invitedAt: ago(65).toISOString(),
    answeredAt: ago(60).toISOString(),
    endedAt: NOW.toISOString(),
    sipStatus: 200,
    sipReason: "OK",
    cause: { protocol: "Q.850", cause: 16, text: "Normal call clearing" },
    hungUpBy: "attendee",
    endReason: "BYE",
    codec: "PCMA",
    srtp: false,
    tls: false,
    quality: null,
    callerVerification: { status: "passed", attestation: "A", reason: null },
  });

  it("a call's record is written with a call-ended event carrying it, as live views and webhooks read it", async () => {
    const conferenceId = await startedConference();
    const attendeeId = await addAttendee(conferenceId, { state: "disconnected" });
    const since = await store.db
      .selectFrom("events")
      .select((eb) => eb.fn.max("id").as("id"))
      .executeTakeFirstOrThrow();
    await conferenceStore(store).recordCall(
      { userId, conferenceId, lease: LEASE },
      callRecord(attendeeId),
      NOW,
    );
    const [record] = await listCallRecords(store, conferenceId);
    assert.equal(record?.attendeeId, attendeeId);
    assert.equal(record?.durationSeconds, 60);
    assert.deepEqual(record?.callerVerification, { status: "passed", attestation: "A", reason: null });
    assert.deepEqual(record?.cause, { protocol: "Q.850", cause: 16, text: "Normal call clearing" });
    const events = await eventsAfter(store, Number(since.id ?? 0), { conferenceId }, 10);
    assert.deepEqual(
      events.map((each) => each.type),
      ["call-ended"],
    );
    assert.deepEqual(events[0]?.call, record);
    assert.equal(events[0]?.recovery, null);
    assert.deepEqual(
      JSON.parse(eventData(events[0] as ConferenceEvent)).call,
      JSON.parse(JSON.stringify(record)),
    );
  });

  for (const [name, write] of Object.entries(writes)) {
    it(`${name}: refused with a stale lease, nothing changed; lands with the current lease, and without one`, async () => {
      const stale = await startedConference();
      const staleAttendee = await addAttendee(stale, { state: "connected", connectedSecondsAgo: 30 });
      const before = await snapshot(stale);
      const error = await write({ userId, conferenceId: stale, lease: LEASE - 1 }, staleAttendee).then(
        () => assert.fail("a write under a stale lease landed"),
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof LeaseLost, String(error));
      assert.deepEqual([error.conferenceId, error.generation, error.current], [stale, LEASE - 1, LEASE]);
      assert.ok(conferenceStore(store).leaseLost(error), "the room's port tells it the lease is lost");
      assert.deepEqual(await snapshot(stale), before, "rows and events as they were");

      for (const scope of [
        (conferenceId: number) => ({ userId, conferenceId, lease: LEASE }),
        (conferenceId: number) => ({ userId, conferenceId }),
      ]) {
        const current = await startedConference();
        const attendee = await addAttendee(current, { state: "connected", connectedSecondsAgo: 30 });
        const unchanged = await snapshot(current);
        await write(scope(current), attendee);
        assert.notDeepEqual(await snapshot(current), unchanged, `landed: ${JSON.stringify(scope(current))}`);
      }
    });
  }

  it("takes over a silent runner's conference: calls disconnected up to its last heartbeat, placed calls ended, the dialled ones to call back, events with the details", async () => {
    const heartbeatAt = ago(10);
    const id = await startedConference("gone", heartbeatAt, 5);
    const connected = await addAttendee(id, { state: "connected", connectedSecondsAgo: 40 });
    const again = await addAttendee(id, { state: "connected", connectedSecondsAgo: 30, duration: 15 });
    const calling = await addAttendee(id, { state: "calling" });
    const dialIn = await addAttendee(id, { state: "connected", dialIn: true, connectedSecondsAgo: 40 });
    const fresh = await addAttendee(id, { state: "new" });
    const failed = await addAttendee(id, { state: "busy" });
    const placed = [await placeCall(id, connected, null), await placeCall(id, calling, null)];
    const endedBefore = await placeCall(id, failed, ago(60));
    const other = await startedConference("alive", NOW);
    const otherCall = await placeCall(other, await addAttendee(other, { state: "calling" }), null);
    const lastEvent = await store.db
      .selectFrom("events")
      .select((eb) => eb.fn.max("id").as("id"))
      .executeTakeFirstOrThrow();

    const { takenOver, ended } = await schedulerStore(store).takeOverConferences(claimant("new"), GONE, NOW);
    assert.deepEqual(ended, []);
    assert.deepEqual(
      takenOver.map((taken) => taken.conference.id),
      [id],
      "the live runner's conference is left",
    );
    const [taken] = takenOver;
    assert.equal(taken?.lease, 6);
    assert.equal(taken?.attendees, 6);
    assert.deepEqual(taken?.callBack, [connected, again], "the dialled calls in the room");
    assert.deepEqual(taken?.redial, [calling], "the one still being called");
    const recovery = {
      previousInstance: "gone",
      instance: "new",
      gapSeconds: 10,
      calledBack: 3,
      cause: "runner-silent",
    };
    assert.deepEqual(taken?.recovery, recovery);

    assert.deepEqual(await conferenceRow(id), {
      state: "started",
      runner: "new",
      runner_generation: 6,
      runner_released_at: null,
    });
    const calls = await store.db
      .selectFrom("attendees")
      .select(["id", "state", "duration", "connected_at", "call_result"])
      .where("conference_id", "=", id)
      .orderBy("id")
      .execute();
    const disconnected = (attendeeId: number, duration: number | null) => ({
      id: attendeeId,
      state: "disconnected",
      duration,
      connected_at: null,
      call_result: RUNNER_GONE_REASON,
    });
    const untouched = (attendeeId: number, state: string) => ({
      id: attendeeId,
      state,
      duration: null,
      connected_at: null,
      call_result: null,
    });
    assert.deepEqual(calls, [
      disconnected(connected, 30),
      disconnected(again, 15 + 20),
      disconnected(calling, null),
      disconnected(dialIn, 30),
      untouched(fresh, "new"),
      untouched(failed, "busy"),
    ]);
    const placedCalls = await store.db
      .selectFrom("placed_calls")
      .select(["id", "ended_at"])
      .where("id", "in", [...placed, endedBefore, otherCall])
      .orderBy("id")
      .execute();
    assert.deepEqual(
      placedCalls.map((row) => [row.id, row.ended_at === null ? null : new Date(row.ended_at).toISOString()]),
      [
        [placed[0], heartbeatAt.toISOString()],
        [placed[1], heartbeatAt.toISOString()],
        [endedBefore, ago(60).toISOString()],
        [otherCall, null],
      ],
    );

    const events = await eventsAfter(store, Number(lastEvent.id ?? 0), {}, 100);
    assert.deepEqual(
      events.map((event) => [event.conferenceId, event.type, event.attendeeId, event.reason]),
      [
        [id, "attendee-disconnected", connected, RUNNER_GONE_REASON],
        [id, "attendee-disconnected", again, RUNNER_GONE_REASON],
        [id, "attendee-disconnected", calling, RUNNER_GONE_REASON],
        [id, "attendee-disconnected", dialIn, RUNNER_GONE_REASON],
        [id, "conference-recovered", null, null],
      ],
    );
    const recovered = events.at(-1);
    assert.deepEqual(recovered?.recovery, recovery, "the details read back");
    assert.deepEqual(recovered && JSON.parse(eventData(recovered)).recovery, recovery, "and are sent on");
    assert.ok(events.slice(0, -1).every((event) => event.recovery === null));
  });

  it("a conference handed over is taken at once, as handed over; its old runner's renewals no longer hold it", async () => {
    const id = await startedConference("stopping", NOW, 3);
    const connected = await addAttendee(id, { state: "connected", connectedSecondsAgo: 40 });
    const scheduling = schedulerStore(store);
    assert.deepEqual(
      (await scheduling.renewLeases("stopping", NOW)).filter((held) => held.conferenceId === id),
      [{ conferenceId: id, lease: 3 }],
    );
    await scheduling.releaseLeases("stopping", [{ conferenceId: id, lease: 3 }], ago(2));
    assert.deepEqual(
      (await scheduling.renewLeases("stopping", NOW)).filter((held) => held.conferenceId === id),
      [],
    );
    // Nobody is silent yet: only the hand-over makes it takeable.
    const { takenOver } = await scheduling.takeOverConferences(
      claimant("heir"),
      { endBefore: ago(3600) },
      NOW,
    );
    assert.deepEqual(
      takenOver.map((taken) => [taken.conference.id, taken.lease, taken.callBack, taken.recovery.cause]),
      [[id, 5, [connected], "handed-over"]],
    );
    assert.equal(takenOver[0]?.recovery.gapSeconds, 2, "from the hand-over");
    const calls = await store.db
      .selectFrom("attendees")
      .select("duration")
      .where("id", "=", connected)
      .executeTakeFirstOrThrow();
    assert.equal(calls.duration, 38, "counted to the hand-over");
  });

  it("instances taking over together take each conference once", async () => {
    const ids: number[] = [];
    for (let n = 0; n < 8; n++) {
      const id = await startedConference("gone", ago(10));
      await addAttendee(id, { state: "connected", connectedSecondsAgo: 40 });
      ids.push(id);
    }
    const results = await Promise.all(
      ["first", "second"].map((runner, n) =>
        schedulerStore(stores[n % stores.length] as Store).takeOverConferences(claimant(runner), GONE, NOW),
      ),
    );
    const taken = results.flatMap((result) => result.takenOver.map((conference) => conference.conference.id));
    assert.deepEqual(
      taken.sort((a, b) => a - b),
      ids,
      "every one, once",
    );
    for (const id of ids) {
      const row = await conferenceRow(id);
      assert.equal(row.runner_generation, LEASE + 1, `conference ${id}: one take-over`);
      const recovered = await store.db
        .selectFrom("events")
        .select("details")
        .where("conference_id", "=", id)
        .where("type", "=", "conference-recovered")
        .execute();
      assert.equal(recovered.length, 1);
      assert.equal(JSON.parse(recovered[0]?.details ?? "{}").instance, row.runner);
    }
  });

  it("a write its paused runner left open holds the conference's row no longer than the store's idle-in-transaction limit", {
    skip: kind === "sqlite" && "PostgreSQL's row locks and its server-side limit",
  }, async () => {
    const paused = await openPostgresStore((database as TestDatabase).url, { idleInTransactionMs: 300 });
    try {
      const id = await startedConference("gone", ago(10));
      let resume = () => {};
      const held = new Promise<void>((resolve) => {
        resume = resolve;
      });
      // The room's write checked its lease, then its instance stopped before the next statement.
      const write = paused.db
        .transaction()
        .execute(async (trx) => {
          await checkLease(trx, "postgres", { conferenceId: id, lease: LEASE });
          await held;
          await trx.selectFrom("conferences").select("id").execute();
        })
        .catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const taken = async () =>
        (await schedulerStore(store).takeOverConferences(claimant("first"), GONE, NOW)).takenOver.some(
          (conference) => conference.conference.id === id,
        );
      assert.equal(await taken(), false, "passed over while the open write holds its row");
      await new Promise((resolve) => setTimeout(resolve, 600));
      assert.equal(await taken(), true, "taken once the server ended the idle transaction");
      resume();
      assert.ok((await write) instanceof Error, "the paused write fails when its instance resumes");
    } finally {
      await paused.close();
    }
  });

  it("a conference too big for the claimant's room is left, unchanged, for another; the others are still taken", async () => {
    const big = await startedConference("gone", ago(10));
    for (let n = 0; n < 3; n++) await addAttendee(big, { state: "connected", connectedSecondsAgo: 40 });
    const small = await startedConference("gone", ago(10));
    await addAttendee(small, { state: "connected", connectedSecondsAgo: 40 });
    const empty = await startedConference("gone", ago(10));
    const before = await snapshot(big);
    const scheduling = schedulerStore(store);
    const first = await scheduling.takeOverConferences(claimant("small", 2), GONE, NOW);
    const takenBySmall = first.takenOver.map((taken) => taken.conference.id);
    assert.ok(takenBySmall.includes(small) && takenBySmall.includes(empty), String(takenBySmall));
    assert.ok(!takenBySmall.includes(big));
    assert.deepEqual(await snapshot(big), before);
    const second = await scheduling.takeOverConferences(claimant("large", 3), GONE, NOW);
    assert.deepEqual(
      second.takenOver.map((taken) => taken.conference.id),
      [big],
    );
  });

  it("a claimant takes over no more than its room holds, over all the conferences it takes at once", async () => {
    const ids = [await startedConference("gone", ago(10)), await startedConference("gone", ago(10))];
    for (const id of ids)
      for (let n = 0; n < 2; n++) await addAttendee(id, { state: "connected", connectedSecondsAgo: 40 });
    const { takenOver } = await schedulerStore(store).takeOverConferences(claimant("tight", 3), GONE, NOW);
    assert.equal(takenOver.length, 1, "2 + 2 participants do not fit in 3");
  });
});
