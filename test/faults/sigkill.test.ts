/**
 * SIGKILL of the service while conferences run and API writes are in flight, then a restart on the
 * same database as the same instance, on SQLite and on PostgreSQL (one loop): every write answered
 * 2xx is there; the conferences that were running are taken over by the restarted instance, still
 * started, and every attendee that was connected is called back exactly once and is connected
 * again; and the restarted service takes new sign-ups and conferences. The scenario is
 * test/faults/kill-scenario.ts; bench/faults runs it longer. Runs the compiled service: `npm run
 * build:service` first (scripts/run-tests.sh does).
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { forEachStore } from "../helpers/databases.js";
import { skipWithout } from "../helpers/sipp.js";
import { INSTANCE, killMidLoad } from "./kill-scenario.js";

describe("SIGKILL of the service", { skip: skipWithout("sipp") }, () => {
  forEachStore("mid-load", (kind) => {
    // Undone after each store's run: the first's trunk and service do not outlive it.
    const cleanups: Array<() => Promise<unknown>> = [];
    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    });

    test(`on ${kind}: nothing acknowledged is lost, the restarted instance takes its conferences over and calls every attendee back once`, async (t) => {
      const outcome = await killMidLoad(
        { store: kind, writers: 4, writesBeforeKill: 60, rooms: 2, attendeesPerRoom: 2 },
        cleanups,
      );
      assert.ok(outcome.acknowledged >= 60, `${outcome.acknowledged} writes acknowledged before the kill`);
      assert.deepEqual(outcome.lost, [], "every acknowledged write reads back");
      assert.deepEqual(
        outcome.rooms.map(({ state, recovery }) => ({
          state,
          cause: recovery?.cause,
          previousInstance: recovery?.previousInstance,
          instance: recovery?.instance,
          calledBack: recovery?.calledBack,
        })),
        outcome.rooms.map(() => ({
          state: "started",
          cause: "runner-silent",
          previousInstance: INSTANCE,
          instance: INSTANCE,
          calledBack: 2,
        })),
        "every live conference is still started, taken over by the restarted instance from its earlier run",
      );
      assert.deepEqual(
        outcome.attendees.filter(
          ({ callsSinceKill, state }) => callsSinceKill !== 1 || state !== "connected",
        ),
        [],
        "every live attendee is called back exactly once and is connected again",
      );
      assert.equal(outcome.attendees.length, 4);
      assert.ok(outcome.takeOverLogged, "the restarted service logs the conferences it took over");
      t.diagnostic(
        `restart ${outcome.restartMs} ms; first phone ringing again ${outcome.ringMs} ms after the kill`,
      );
      assert.equal(
        outcome.notServedAfterwards,
        "",
        "a sign-up and a new conference's call succeed after the restart",
      );
    });
  });
});
