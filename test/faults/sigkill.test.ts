/**
 * SIGKILL of the service while conferences run and API writes are in flight, then a restart on the
 * same database, on SQLite and on PostgreSQL (one loop): every write answered 2xx is there, no call
 * is left marked in progress, the conferences that were running are ended with the recovery reason,
 * and the restarted service takes new sign-ups and conferences. The scenario is
 * test/faults/kill-scenario.ts; bench/faults runs it longer. Runs the compiled service: `npm run
 * build:service` first (scripts/run-tests.sh does).
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { forEachStore } from "../helpers/databases.js";
import { skipWithout } from "../helpers/sipp.js";
import { killMidLoad, RECOVERY_REASON } from "./kill-scenario.js";

describe("SIGKILL of the service", { skip: skipWithout("sipp") }, () => {
  forEachStore("mid-load", (kind) => {
    // Undone after each store's run: the first's carrier and service do not outlive it.
    const cleanups: Array<() => Promise<unknown>> = [];
    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    });

    test(`on ${kind}: nothing acknowledged is lost, running conferences end with the recovery reason`, async () => {
      const outcome = await killMidLoad(
        { store: kind, writers: 4, writesBeforeKill: 60, rooms: 2, attendeesPerRoom: 2 },
        cleanups,
      );
      assert.ok(outcome.acknowledged >= 60, `${outcome.acknowledged} writes acknowledged before the kill`);
      assert.deepEqual(outcome.lost, [], "every acknowledged write reads back");
      assert.deepEqual(
        outcome.rooms,
        outcome.rooms.map(() => ({ state: "ended", endedReason: RECOVERY_REASON })),
      );
      assert.equal(outcome.callsLeftInProgress, 0, "no attendee is left calling or connected");
      assert.ok(outcome.recoveryLogged, "the restarted service logs the conferences it ended");
      assert.equal(
        outcome.notServedAfterwards,
        "",
        "a sign-up and a new conference's call succeed after the restart",
      );
    });
  });
});
