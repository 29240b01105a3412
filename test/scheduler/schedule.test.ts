/**
 * The scheduler's timing rules on a fake clock over a real SQLite store: a conference starts at the
 * first poll at or after its time and not one before, a reschedule or a delete takes effect at the
 * next poll, and a due conference no instance has room for is reported once, on a heartbeat.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import type { Conference } from "../../src/domain/conference.js";
import { Scheduler } from "../../src/scheduler/scheduler.js";
import { createConference, deleteConference, updateConference } from "../../src/store/conferences.js";
import { openSqliteStore, type Store } from "../../src/store/database.js";
import { schedulerStore } from "../../src/store/scheduler-store.js";
import { createUser, listBillingPackages } from "../../src/store/users.js";
import { FakeClock } from "../helpers/fake-clock.js";

const POLL_MS = 250;
const HEARTBEAT_MS = 5_000;
/** Where the fake clock starts: any whole second will do (the store keeps times to the second). */
const T0 = Date.parse("2031-05-01T09:00:00.000Z");

const dataDirs: string[] = [];
after(() => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

interface Running {
  store: Store;
  clock: FakeClock;
  userId: number;
  started: number[];
  takenOver: number[];
  warnings: string[];
  scheduler: Scheduler;
}

/** A scheduler polling a fresh store on a fake clock at T0, with room for `room` participants. */
async function running(room: number | null = null): Promise<Running> {
  const dir = mkdtempSync(path.join(tmpdir(), "bridgeline-schedule-"));
  dataDirs.push(dir);
  const store = await openSqliteStore(dir);
  after(() => store.close());
  const clock = new FakeClock(T0);
  const [billing] = await listBillingPackages(store, []);
  const user = await createUser(
    store,
    { name: "Alice", email: "alice@example.com", billingPackageId: billing?.id ?? 1 },
    "not a password hash",
    new Date(T0),
  );
  const started: number[] = [];
  const takenOver: number[] = [];
  const warnings: string[] = [];
  const scheduler = new Scheduler({
    store: schedulerStore(store),
    runner: "test",
    clock,
    room: () => room,
    logger: { info: () => {}, warn: (_fields, message) => warnings.push(message), error: () => {} },
    startConference: (conference: Conference) => started.push(conference.id),
    takeOverConference: ({ conference }) => takenOver.push(conference.id),
    pollIntervalMs: POLL_MS,
    heartbeatIntervalMs: HEARTBEAT_MS,
  });
  return { store, clock, userId: user.id, started, takenOver, warnings, scheduler };
}

/** A pending conference without a moderator, due `inMs` after the clock's now. */
async function pending(r: Running, inMs: number, dialInAttendees = 0): Promise<number> {
  const now = new Date(r.clock.now());
  const conference = await createConference(
    r.store,
    r.userId,
    { name: "Planned", scheduledToStartAt: new Date(r.clock.now() + inMs).toISOString(), noModerator: true },
    now,
  );
  for (let n = 0; n < dialInAttendees; n++)
    await r.store.db
      .insertInto("attendees")
      .values({
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
        lock_version: 0,
        conference_id: conference.id,
        state: "new",
        phone_number_country_code: null,
        phone_number_subscriber_number: null,
        phone_number_extension: null,
        phone_number_location: null,
        moderator: 0,
        muted: null,
        hand_up: null,
        dial_in: 1,
        name: null,
        email: null,
        duration: null,
      })
      .execute();
  await updateConference(r.store, r.userId, conference.id, { state: "pending" }, undefined, now);
  return conference.id;
}

test("a conference starts at the first poll at or after its time, not a poll before; one past due at the first poll", async () => {
  const r = await running();
  const late = await pending(r, -3_600_000);
  const due = await pending(r, 10_000);
  await r.scheduler.start();
  await r.clock.pass(0);
  assert.deepEqual(r.started, [late], "past its time: at once");
  await r.clock.pass(10_000 - POLL_MS);
  assert.deepEqual(r.started, [late], "not a poll early");
  await r.clock.pass(POLL_MS);
  assert.deepEqual(r.started, [late, due]);
  await r.scheduler.stop();
});

test("a reschedule or a delete takes effect at the next poll: earlier starts earlier, later and deleted wait", async () => {
  const r = await running();
  const earlier = await pending(r, 60_000);
  const later = await pending(r, 2_000);
  const deleted = await pending(r, 2_000);
  await r.scheduler.start();
  const now = new Date(r.clock.now());
  const at = (ms: number) => new Date(r.clock.now() + ms).toISOString();
  await updateConference(r.store, r.userId, earlier, { scheduledToStartAt: at(1_000) }, undefined, now);
  await updateConference(r.store, r.userId, later, { scheduledToStartAt: at(60_000) }, undefined, now);
  await deleteConference(r.store, r.userId, deleted, now);
  await r.clock.pass(1_000 - POLL_MS);
  assert.deepEqual(r.started, []);
  await r.clock.pass(POLL_MS);
  assert.deepEqual(r.started, [earlier]);
  await r.clock.pass(60_000 - 1_000 - POLL_MS);
  assert.deepEqual(
    r.started,
    [earlier],
    "the later one waits for its new time; the deleted one never starts",
  );
  await r.clock.pass(POLL_MS);
  assert.deepEqual(r.started, [earlier, later]);
  await r.scheduler.stop();
});

test("a due conference no instance has room for stays pending and is reported once, 5 s after its time, on a heartbeat", async () => {
  const r = await running(1);
  // Due a second after the clock's start (times are stored to the second): 4 s late at the first heartbeat.
  const crowded = await pending(r, 1_000, 2);
  await r.scheduler.start();
  const reported = () => r.warnings.filter((message) => message.startsWith("conference due but not started"));
  await r.clock.pass(HEARTBEAT_MS);
  assert.equal(reported().length, 0, "4 s late at the first heartbeat");
  await r.clock.pass(4 * HEARTBEAT_MS);
  assert.equal(reported().length, 1, "reported by the next heartbeat, and by none after");
  assert.deepEqual(r.started, []);
  const row = await r.store.db
    .selectFrom("conferences")
    .select("state")
    .where("id", "=", crowded)
    .executeTakeFirstOrThrow();
  assert.equal(row.state, "pending");
  await r.scheduler.stop();
  assert.equal(r.clock.pending, 0, "stopped: no poll or heartbeat left armed");
});
