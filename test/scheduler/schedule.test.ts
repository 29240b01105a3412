/**
 * The scheduler's timing rules on a fake clock over a real SQLite store: a conference starts at the
 * first poll at or after its time and not one before, a reschedule or a delete takes effect at the
 * next poll, and a due conference no instance has room for is reported once, on a heartbeat. And the
 * lease rules (6 s lease, a renewal each quarter): another runner's conference is taken over at the
 * first heartbeat after its lease ran out, and only by an instance that has renewed without a break
 * for a whole lease; a handed-over one at once; one silent past takeOverWithinMs is ended instead; an
 * instance's own at its start; and each renewal tells which leases are still held, for how long.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import type { Conference } from "../../src/domain/conference.js";
import { RUNNER_GONE_REASON } from "../../src/domain/event.js";
import type { HeldLease, SchedulerStore, TakenOverConference } from "../../src/scheduler/ports.js";
import { Scheduler } from "../../src/scheduler/scheduler.js";
import { createConference, deleteConference, updateConference } from "../../src/store/conferences.js";
import { openSqliteStore, type Store } from "../../src/store/database.js";
import { schedulerStore } from "../../src/store/scheduler-store.js";
import { createUser, listBillingPackages } from "../../src/store/users.js";
import { FakeClock } from "../helpers/fake-clock.js";

const POLL_MS = 250;
const HEARTBEAT_MS = 5_000;
/** The lease the rules are tested with: renewed each quarter (1.5 s) when `leased`. */
const LEASE_MS = 6_000;
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
  /** The lease each conference was started under, by id. */
  startedLeases: Map<number, number>;
  takenOver: TakenOverConference[];
  /** What each renewal told onLeases. */
  renewals: { held: HeldLease[]; validForMs: number; askedAt: number }[];
  warnings: string[];
  scheduler: Scheduler;
}

interface RunningOptions {
  /** Participants the instance has room for; null for no limit. */
  room?: number | null;
  /** The instance's runner name (default "test"). */
  runner?: string;
  /**
   * Renews each quarter of the 6 s lease (LEASE_MS) rather than on the 5 s heartbeat the
   * scheduling tests above use.
   */
  leased?: boolean;
  takeOverWithinMs?: number;
  pollIntervalMs?: number;
  /** Puts something between the scheduler and its store (a failing or slow renewal). */
  wrap?: (store: SchedulerStore, clock: FakeClock, database: Store) => SchedulerStore;
}

/** A scheduler polling a fresh store on a fake clock at T0, with room for `room` participants. */
async function running(options: RunningOptions = {}): Promise<Running> {
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
  const startedLeases = new Map<number, number>();
  const takenOver: TakenOverConference[] = [];
  const renewals: Running["renewals"] = [];
  const warnings: string[] = [];
  const room = options.room ?? null;
  const scheduler = new Scheduler({
    store: options.wrap?.(schedulerStore(store), clock, store) ?? schedulerStore(store),
    runner: options.runner ?? "test",
    clock,
    room: () => room,
    logger: { info: () => {}, warn: (_fields, message) => warnings.push(message), error: () => {} },
    startConference: (conference: Conference, _attendees, lease) => {
      started.push(conference.id);
      startedLeases.set(conference.id, lease);
    },
    takeOverConference: (conference) => takenOver.push(conference),
    onLeases: (held, validForMs, askedAt) => renewals.push({ held: [...held], validForMs, askedAt }),
    pollIntervalMs: options.pollIntervalMs ?? POLL_MS,
    leaseMs: LEASE_MS,
    ...(!options.leased && { heartbeatIntervalMs: HEARTBEAT_MS }),
    ...(options.takeOverWithinMs !== undefined && { takeOverWithinMs: options.takeOverWithinMs }),
  });
  after(() => scheduler.stop());
  return { store, clock, userId: user.id, started, startedLeases, takenOver, renewals, warnings, scheduler };
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
  const r = await running({ room: 1 });
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

/** A call in a conference as its runner left it. */
interface CallLeft {
  readonly state: "new" | "calling" | "connected" | "failed";
  readonly dialIn?: boolean;
  /** When a connected call was answered (ms since the epoch). */
  readonly connectedAt?: number;
}

/**
 * A conference started by `runner` under lease 3, its lease last renewed at `heartbeatAt` (ms since
 * the epoch), with these calls; returns its id and its attendees' ids.
 */
async function runBy(
  r: Running,
  runner: string,
  heartbeatAt: number,
  calls: readonly CallLeft[] = [],
): Promise<{ id: number; attendees: number[] }> {
  const at = new Date(r.clock.now()).toISOString();
  const { id } = await createConference(
    r.store,
    r.userId,
    { name: "Running", scheduledToStartAt: at, noModerator: true },
    new Date(r.clock.now()),
  );
  await r.store.db
    .updateTable("conferences")
    .set({
      state: "started",
      started_at: new Date(heartbeatAt - 60_000).toISOString(),
      runner,
      runner_sip_uri: `sip:${runner}@192.0.2.1`,
      runner_heartbeat_at: new Date(heartbeatAt).toISOString(),
      runner_generation: 3,
    })
    .where("id", "=", id)
    .execute();
  const attendees: number[] = [];
  for (const [n, call] of calls.entries()) {
    const row = await r.store.db
      .insertInto("attendees")
      .values({
        created_at: at,
        updated_at: at,
        lock_version: 0,
        conference_id: id,
        state: call.state,
        phone_number_country_code: "1",
        phone_number_subscriber_number: `60455502${String(n).padStart(2, "0")}`,
        phone_number_extension: null,
        phone_number_location: null,
        moderator: 0,
        muted: null,
        hand_up: null,
        dial_in: call.dialIn ? 1 : 0,
        name: null,
        email: null,
        duration: null,
        connected_at: call.connectedAt === undefined ? null : new Date(call.connectedAt).toISOString(),
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    attendees.push(row.id);
  }
  return { id, attendees };
}

/** Who runs the conference now, under which lease, in which state. */
function runnerOf(r: Running, id: number) {
  return r.store.db
    .selectFrom("conferences")
    .select(["state", "runner", "runner_generation", "ended_at"])
    .where("id", "=", id)
    .executeTakeFirstOrThrow();
}

const takenIds = (r: Running) => r.takenOver.map((taken) => taken.conference.id);

/**
 * The store, refusing transactions past `budget`: a take-over that went on taking the same
 * conference again would loop for ever; with this it fails.
 */
function withTransactionBudget(store: Store, budget: number): Store {
  let left = budget;
  const db = new Proxy(store.db, {
    get(target, property) {
      if (property === "transaction")
        return () => {
          left--;
          if (left < 0) throw new Error(`more than ${budget} transactions: a take-over loops`);
          return target.transaction();
        };
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { ...store, db };
}

test("another runner's conference is taken over at the first heartbeat after its lease ran out, not one before: a new lease, its dialled calls called back", async () => {
  const r = await running({ leased: true });
  await r.scheduler.start();
  await r.clock.pass(2_000);
  // Its runner renewed last at T0+2 s: its lease runs to T0+8 s.
  const { id, attendees } = await runBy(r, "gone", r.clock.now(), [
    { state: "connected", connectedAt: T0 },
    { state: "calling" },
    { state: "connected", dialIn: true, connectedAt: T0 },
    { state: "new" },
    { state: "failed" },
  ]);
  await r.clock.pass(5_500);
  assert.deepEqual(takenIds(r), [], "T0+7.5 s: the lease still runs");
  assert.deepEqual(await runnerOf(r, id), {
    state: "started",
    runner: "gone",
    runner_generation: 3,
    ended_at: null,
  });
  await r.clock.pass(1_500);
  assert.deepEqual(takenIds(r), [id], "T0+9 s: the first heartbeat after the lease");
  const [taken] = r.takenOver;
  assert.equal(taken?.lease, 4, "a new lease, one on from the old");
  assert.deepEqual(taken?.callBack, attendees.slice(0, 1), "the dialled calls in the room, not the dial-in");
  assert.deepEqual(taken?.redial, attendees.slice(1, 2), "the one still being called, called again");
  assert.deepEqual(taken?.recovery, {
    previousInstance: "gone",
    instance: "test",
    gapSeconds: 7,
    calledBack: 2,
    cause: "runner-silent",
  });
  assert.deepEqual(await runnerOf(r, id), {
    state: "started",
    runner: "test",
    runner_generation: 4,
    ended_at: null,
  });
  await r.clock.pass(1_500);
  assert.deepEqual(r.renewals.at(-1)?.held, [{ conferenceId: id, lease: 4 }], "renewed as its own since");
  assert.deepEqual(takenIds(r), [id], "taken once");
});

test("an instance whose renewals failed takes over others' conferences only after a whole lease of good renewals", async () => {
  let failing = false;
  const r = await running({
    leased: true,
    wrap: (store) => ({
      ...store,
      renewLeases: (runner, now) =>
        failing ? Promise.reject(new Error("database unreachable")) : store.renewLeases(runner, now),
    }),
  });
  await r.scheduler.start();
  await r.clock.pass(6_000);
  // Silent since T0+4 s: takeable from the heartbeat at T0+12 s on (times are kept to the second).
  const { id } = await runBy(r, "gone", T0 + 4_000);
  failing = true;
  await r.clock.pass(4_500);
  assert.ok(
    r.warnings.filter((message) => message.startsWith("conference heartbeat failed")).length >= 3,
    "the renewals at T0+7.5, 9 and 10.5 s failed",
  );
  failing = false;
  // Renewing again from T0+12 s: it may judge others from T0+18 s.
  await r.clock.pass(6_000);
  assert.deepEqual(takenIds(r), [], "T0+16.5 s: not a whole lease of renewals yet");
  await r.clock.pass(1_500);
  assert.deepEqual(takenIds(r), [id], "T0+18 s");
  assert.equal((await runnerOf(r, id)).runner, "test");
});

test("a handed-over conference is taken at the next heartbeat, before the instance judges anyone silent; one handed over under a stale lease is not", async () => {
  const r = await running({ leased: true });
  const handed = await runBy(r, "gone", T0, [{ state: "connected", connectedAt: T0 - 30_000 }]);
  const stale = await runBy(r, "gone", T0);
  await r.scheduler.start();
  await r.clock.pass(500);
  const other = schedulerStore(r.store);
  await other.releaseLeases(
    "gone",
    [
      { conferenceId: handed.id, lease: 3 },
      { conferenceId: stale.id, lease: 2 },
    ],
    new Date(r.clock.now()),
  );
  assert.deepEqual(
    await other.renewLeases("gone", new Date(r.clock.now())),
    [{ conferenceId: stale.id, lease: 3 }],
    "the handed-over lease is no longer its runner's",
  );
  await r.clock.pass(1_000);
  assert.deepEqual(takenIds(r), [handed.id], "T0+1.5 s: its first heartbeat");
  const [taken] = r.takenOver;
  assert.equal(taken?.recovery.cause, "handed-over");
  assert.equal(taken?.lease, 5, "handing over moved the lease on, and taking it over again");
  assert.deepEqual(taken?.callBack, handed.attendees);
  assert.deepEqual(await runnerOf(r, stale.id), {
    state: "started",
    runner: "gone",
    runner_generation: 3,
    ended_at: null,
  });
});

test("a conference whose runner was last heard of before takeOverWithinMs is ended, its calls disconnected; one within it is taken over", async () => {
  const r = await running({ leased: true, takeOverWithinMs: 60_000 });
  const old = await runBy(r, "gone", T0 - 61_000, [
    { state: "connected", connectedAt: T0 - 70_000 },
    { state: "calling" },
  ]);
  const recent = await runBy(r, "gone", T0 - 50_000, [{ state: "connected", connectedAt: T0 - 70_000 }]);
  await r.scheduler.start();
  assert.deepEqual(takenIds(r), [], "at start: not its own, and nobody is judged silent yet");
  await r.clock.pass(6_000);
  assert.deepEqual(takenIds(r), [recent.id], "T0+6 s: 56 s silent, within a minute");
  assert.deepEqual(await runnerOf(r, old.id), {
    state: "ended",
    runner: null,
    runner_generation: 3,
    ended_at: new Date(T0 - 61_000).toISOString(),
  });
  const calls = await r.store.db
    .selectFrom("attendees")
    .select(["state", "duration", "call_result"])
    .where("conference_id", "=", old.id)
    .orderBy("id")
    .execute();
  assert.deepEqual(calls, [
    { state: "disconnected", duration: 9, call_result: RUNNER_GONE_REASON },
    { state: "disconnected", duration: null, call_result: RUNNER_GONE_REASON },
  ]);
  const events = await r.store.db
    .selectFrom("events")
    .select(["type", "reason"])
    .where("conference_id", "=", old.id)
    .where("type", "in", ["conference-ended", "conference-recovered"])
    .execute();
  assert.deepEqual(events, [{ type: "conference-ended", reason: RUNNER_GONE_REASON }]);
  assert.equal(
    r.warnings.filter((message) => message.startsWith("conference ended: the instance running it stopped"))
      .length,
    1,
  );
});

test("after its start an instance takes over others' conferences only once it has renewed for a whole lease", async () => {
  const r = await running({ leased: true });
  // Silent for 10 s when this instance starts: past the lease, but this one has not renewed yet.
  const others = await runBy(r, "other", T0 - 10_000);
  await r.scheduler.start();
  await r.clock.pass(4_500);
  assert.deepEqual(takenIds(r), [], "T0+4.5 s: not a lease of renewals yet");
  await r.clock.pass(1_500);
  assert.deepEqual(takenIds(r), [others.id], "T0+6 s: a whole lease renewed");
});

test("at start an instance takes over its own conferences at once, each once, though their lease still runs", async () => {
  const r = await running({
    leased: true,
    runner: "test",
    // Each look takes one conference at most: two transactions with the last, finding none.
    wrap: (store, _clock, database) => ({
      ...store,
      takeOverConferences: (claimant, gone, now) =>
        schedulerStore(withTransactionBudget(database, 10)).takeOverConferences(claimant, gone, now),
    }),
  });
  // A restart a second after its last renewal: its lease still runs, and no other instance may take it.
  const own = await runBy(r, "test", T0 - 1_000, [{ state: "connected", connectedAt: T0 - 30_000 }]);
  await r.scheduler.start();
  assert.deepEqual(takenIds(r), [own.id], "before any heartbeat");
  assert.deepEqual(r.takenOver[0]?.callBack, own.attendees);
  assert.equal(r.takenOver[0]?.recovery.previousInstance, "test");
  assert.equal(r.takenOver[0]?.lease, 4);
  assert.equal((await runnerOf(r, own.id)).runner_generation, 4);
});

test("each renewal tells onLeases the leases held, good for the lease less the time the renewal took", async () => {
  const RENEWAL_MS = 400;
  const r = await running({
    leased: true,
    pollIntervalMs: 3_600_000,
    wrap: (store, clock) => ({
      ...store,
      // The database answers 400 ms after it was asked.
      renewLeases: async (runner, now) => {
        const held = await store.renewLeases(runner, now);
        await new Promise<void>((resolve) => clock.setTimeout(resolve, RENEWAL_MS));
        return held;
      },
    }),
  });
  const id = await pending(r, -1_000);
  await r.scheduler.start();
  await r.clock.pass(0);
  assert.deepEqual(r.started, [id]);
  const lease = r.startedLeases.get(id);
  await r.clock.pass(1_500 + RENEWAL_MS);
  assert.deepEqual(r.renewals, [
    { held: [{ conferenceId: id, lease }], validForMs: 6_000 - RENEWAL_MS, askedAt: T0 + 1_500 },
  ]);
});

test("a conference taken over by another instance is missing from the next renewal's held leases", async () => {
  const r = await running({ leased: true });
  const lost = await pending(r, -1_000);
  const kept = await pending(r, 2_000);
  await r.scheduler.start();
  await r.clock.pass(1_500);
  const leaseOf = (id: number) => ({ conferenceId: id, lease: r.startedLeases.get(id) });
  assert.deepEqual(r.renewals.at(-1)?.held, [leaseOf(lost)]);
  // `kept` starts here at T0+2 s. Then another instance, judging this one silent since T0+2 s (its
  // clock ahead, say), takes `lost` over: last renewed at T0+1.5 s.
  await r.clock.pass(500);
  assert.deepEqual(r.started, [lost, kept]);
  const now = new Date(r.clock.now());
  const taken = await schedulerStore(r.store).takeOverConferences(
    { runner: "other", sipUri: null, room: null },
    { silentBefore: now, endBefore: new Date(0) },
    now,
  );
  assert.deepEqual(
    taken.takenOver.map((conference) => conference.conference.id),
    [lost],
  );
  await r.clock.pass(1_000);
  assert.equal(r.renewals.length, 2, "the renewal at T0+3 s");
  assert.deepEqual(r.renewals.at(-1)?.held, [leaseOf(kept)]);
});

test("a renewal says when it was asked for: a conference claimed while it was on its way is not among its leases, and started after", async () => {
  const RENEWAL_MS = 700;
  const startedAt = new Map<number, number>();
  const r = await running({
    leased: true,
    wrap: (store, clock) => ({
      ...store,
      // The renewal is made at once; its answer arrives 700 ms later.
      renewLeases: async (runner, now) => {
        const held = await store.renewLeases(runner, now);
        await new Promise<void>((resolve) => clock.setTimeout(resolve, RENEWAL_MS));
        return held;
      },
      claimDueConference: async (claimant, now) => {
        const claimed = await store.claimDueConference(claimant, now);
        if (claimed !== undefined) startedAt.set(claimed.conference.id, now.getTime());
        return claimed;
      },
    }),
  });
  await r.scheduler.start();
  const id = await pending(r, 2_000);
  // Renewal asked at T0+1.5 s, the conference claimed and started at T0+2 s, the answer at T0+2.2 s.
  await r.clock.pass(1_500 + RENEWAL_MS);
  assert.deepEqual(r.started, [id]);
  const [renewal] = r.renewals;
  assert.deepEqual(renewal?.held, [], "the renewal's snapshot was taken before the claim");
  // So the runtime, which judges only rooms opened before askedAt, leaves this one alone.
  assert.ok((renewal?.askedAt ?? Number.POSITIVE_INFINITY) < (startedAt.get(id) ?? 0));
});

test("stop waits for a heartbeat in progress: nothing handed over after it resolves is taken back", async () => {
  const SLOW_MS = 700;
  const r = await running({
    leased: true,
    wrap: (store, clock) => ({
      ...store,
      // A heartbeat still on its way when the instance stops (the database slow to answer).
      markDelayedConferences: async (dueBefore, now) => {
        await new Promise<void>((resolve) => clock.setTimeout(resolve, SLOW_MS));
        return store.markDelayedConferences(dueBefore, now);
      },
    }),
  });
  const handed = await runBy(r, "test", T0, [{ state: "connected", connectedAt: T0 - 30_000 }]);
  await r.scheduler.start();
  assert.deepEqual(takenIds(r), [handed.id], "its own, at start");
  // The first heartbeat (T0+1.5 s) is held up in markDelayedConferences when the instance stops.
  await r.clock.pass(1_500);
  let stopped = false;
  const stopping = r.scheduler.stop().then(() => {
    stopped = true;
  });
  await r.clock.pass(SLOW_MS / 2);
  assert.equal(stopped, false, "stop waits for the heartbeat");
  await r.clock.pass(SLOW_MS);
  await stopping;
  // As main.ts does once the scheduler has stopped: the rooms handed over.
  const [taken] = r.takenOver;
  await schedulerStore(r.store).releaseLeases(
    "test",
    [{ conferenceId: handed.id, lease: taken?.lease ?? 0 }],
    new Date(r.clock.now()),
  );
  await r.clock.pass(10_000);
  assert.deepEqual(takenIds(r), [handed.id], "not taken back by its own instance");
  assert.equal((await runnerOf(r, handed.id)).runner_generation, (taken?.lease ?? 0) + 1);
});
