/**
 * PostgreSQL restarted mid-conference. The service runs on a cluster of the test's own (the
 * machine's shared server is left alone); three phones are in a room when the cluster stops. While
 * it is down the API answers 503 with an XML error and Retry-After (not 500), one phone hangs up,
 * and the room keeps mixing the other two. Once it is back the room's state writes made meanwhile
 * (the hang-up, talking stopped) land, in the order they happened, with the times they happened,
 * and the API serves again. The two phones heard each other in every second of the outage.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { sql } from "kysely";
import { loadConfig } from "../../src/config.js";
import { openPostgresStore, unreachableReason } from "../../src/store/database.js";
import { EventStream, type StreamEvent } from "../helpers/event-stream.js";
import { createUser, signupXml, startTestService } from "../helpers/service.js";
import { skipWithout } from "../helpers/sipp.js";
import { postgresBinaries, ThrowawayPostgres } from "../helpers/throwaway-postgres.js";
import { until } from "../helpers/until.js";
import { errorMessages, textOf } from "../helpers/xml.js";
import {
  allConnected,
  assertHeardEachOther,
  attendeeStates,
  conferenceOf,
  sipCallingPhones,
  startPhone,
  startRoom,
} from "./rooms.js";

/** How long the database stays down: long enough for several retries of the room's writes. */
const OUTAGE_MS = 5_000;

// PostgreSQL-only, on a cluster of its own: what it needs is PostgreSQL's programs, not the shared
// server (whose reachability postgresOnly goes by).
const skip = (postgresBinaries() === null && "PostgreSQL is not installed") || skipWithout("baresip");
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe("PostgreSQL restarted mid-conference", { skip }, () => {
  test("rooms keep mixing, their writes land in order once it is back, the API answers 503 meanwhile", async () => {
    const cluster = await ThrowawayPostgres.create();
    cleanups.push(() => cluster.destroy());
    const phones = [
      await startPhone(cleanups, "+16045550601", 440),
      await startPhone(cleanups, "+16045550602", 880),
      await startPhone(cleanups, "+16045550603", 660),
    ];
    const [first, second, leaving] = phones as [(typeof phones)[0], (typeof phones)[0], (typeof phones)[0]];
    const api = await startTestService({
      databaseUrl: cluster.url,
      sip: sipCallingPhones(phones),
      // A lease longer than the outage: the rooms' audio lasts it (past its lease a room on
      // PostgreSQL falls silent, as another instance may run its conference then).
      conferences: { ...loadConfig({}).conferences, leaseSeconds: 3 * (OUTAGE_MS / 1000) },
    });
    cleanups.push(() => api.close());
    const owner = await createUser(api);
    const room = await startRoom(api, owner, phones);
    await allConnected(api, owner, [room]);
    const leavingId = await attendeeIdOf(leaving.baresip.user);

    cluster.stop();
    const stoppedAt = new Date();
    // The API: a clear XML error saying so, and when to try again; reads and writes alike.
    const read = await api.request("GET", room.path, { auth: owner.auth });
    assert.equal(read.status, 503, read.text);
    assert.equal(read.headers["retry-after"], "5");
    assert.match(errorMessages(read).join(), /^The database is unavailable \(.+\); try again shortly$/);
    const signup = await api.request("POST", "/users", {
      body: signupXml(`outage-${process.pid}@example.com`),
    });
    assert.equal(signup.status, 503, signup.text);
    assert.ok(
      !api.logs.some((line) => line.includes('"statusCode":500')),
      "no request was answered 500 during the outage",
    );
    // A phone hangs up while the store is away: the room lets it go and keeps the others mixing.
    await leaving.baresip.command("hangup");
    await leaving.baresip.waitForEvent("CALL_CLOSED");
    await until("the room's write waiting for the database", async () =>
      api.logs.some((line) => line.includes("database unreachable: the conference's state changes wait"))
        ? true
        : undefined,
    );
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, OUTAGE_MS - (Date.now() - +stoppedAt))));
    cluster.start();
    const restartedAt = new Date();

    // Back: the API serves again, and the hang-up made during the outage is stored.
    await until("the API serving again", async () => {
      const again = await api.request("GET", room.path, { auth: owner.auth });
      return again.status === 200 ? true : undefined;
    });
    await until("the hang-up stored", async () => {
      const states = await attendeeStates(api, owner, room);
      const gone = states.find((item) => Number(textOf(item, "id")) === leavingId);
      return gone !== undefined && textOf(gone, "state") === "disconnected" ? true : undefined;
    });
    assert.equal(textOf(await conferenceOf(api, owner, room), "state"), "started");

    // In order: every event of the room after the one before it, in time as in sequence; the
    // hang-up's event carries the moment it happened, inside the outage.
    const events = await EventStream.open(`${api.httpUrl}${room.path}/events`, {
      auth: owner.auth,
      lastEventId: 0,
    });
    cleanups.push(async () => events.close());
    const disconnected = await events.waitFor(
      "the hang-up's event",
      (event) => event.type === "attendee-disconnected" && event.data.attendeeId === leavingId,
    );
    const at = new Date(disconnected.data.at);
    assert.ok(at >= stoppedAt && at <= restartedAt, `the hang-up is dated ${disconnected.data.at}`);
    assertInOrder(events.events);

    // The two phones left heard each other in every second since the database went away.
    const seconds = Math.floor((Date.now() - +stoppedAt) / 1000) - 1;
    await assertHeardEachOther({ ...room, phones: [first, second] }, seconds);

    async function attendeeIdOf(user: string): Promise<number> {
      const states = await attendeeStates(api, owner, room);
      const found = states.find((item) => `+1${textOf(item, "phone-number-subscriber-number")}` === user);
      assert.ok(found !== undefined, `attendee ${user} listed`);
      return Number(textOf(found, "id"));
    }
  });
});

describe("PostgreSQL restarted under an open transaction", { skip }, () => {
  test("the transaction fails with an error that says the database is away; the process and the pool go on", async () => {
    const cluster = await ThrowawayPostgres.create();
    cleanups.push(() => cluster.destroy());
    const store = await openPostgresStore(cluster.url);
    cleanups.push(() => store.close());
    let stopped: () => void = () => {};
    const serverStopped = new Promise<void>((resolve) => {
      stopped = resolve;
    });
    let checkedOut: () => void = () => {};
    const clientCheckedOut = new Promise<void>((resolve) => {
      checkedOut = resolve;
    });
    // Its client is checked out, between two queries, when the server goes: the cut is reported on
    // the client (an unheard "error" event there would end this process), then to the next query.
    const transaction = store.db.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      checkedOut();
      await serverStopped;
      await sql`select 1`.execute(trx);
    });
    await clientCheckedOut;
    cluster.stop();
    stopped();
    const failure = await transaction.then(
      () => assert.fail("the transaction went through with the server down"),
      (error: unknown) => error,
    );
    assert.notEqual(
      unreachableReason(failure),
      undefined,
      `not taken for the database away: ${String(failure)}`,
    );
    cluster.start();
    await until("the pool connecting again", async () =>
      sql`select 1`.execute(store.db).then(
        () => true,
        () => undefined,
      ),
    );
  });
});

/** Ids and times rise together: no event landed before one that happened earlier. */
function assertInOrder(events: readonly StreamEvent[]): void {
  for (let i = 1; i < events.length; i++) {
    const [before, after] = [events[i - 1] as StreamEvent, events[i] as StreamEvent];
    assert.ok(before.id < after.id);
    assert.ok(
      before.data.at <= after.data.at,
      `event ${after.id} (${after.type} at ${after.data.at}) landed after event ${before.id} (${before.type} at ${before.data.at})`,
    );
  }
}
