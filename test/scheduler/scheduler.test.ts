/**
 * The scheduler through the real service and its store (SQLite and PostgreSQL, one loop): a
 * conference past its time starts at once, a restart ends what a dead instance left behind, and
 * (PostgreSQL alone, the store several instances share) a conference is started by exactly one of two
 * instances. Its timing rules run on a fake clock in schedule.test.ts.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { loadConfig } from "../../src/config.js";
import { schedulerStore } from "../../src/store/scheduler-store.js";
import { createTestDatabase, forEachStore, postgresOnly, type TestDatabase } from "../helpers/databases.js";
import {
  createUser,
  scrapeMetrics,
  startTestService,
  type TestService,
  totalOf,
} from "../helpers/service.js";
import { until } from "../helpers/until.js";

type Auth = [string, string];

function field(xml: Record<string, unknown>, name: string): string | undefined {
  const value = (xml.conference as Record<string, unknown> | undefined)?.[name];
  if (typeof value === "string") return value;
  const inner = (value as { "#text"?: unknown } | undefined)?.["#text"];
  return inner === undefined ? undefined : String(inner);
}

/**
 * A pending conference without a moderator starting at `startAt`, with the attendees `prepare` adds
 * before it is set pending (none by default); returns its path.
 */
async function pendingConference(
  api: TestService,
  user: { id: number; auth: Auth },
  startAt: Date,
  prepare: (path: string) => Promise<void> = async () => {},
): Promise<string> {
  const created = await api.request("POST", `/users/${user.id}/conferences`, {
    auth: user.auth,
    body: `<conference><name>Planned</name><scheduled-to-start-at>${startAt.toISOString()}</scheduled-to-start-at>
      <no-moderator type="boolean">true</no-moderator></conference>`,
  });
  assert.equal(created.status, 201, created.text);
  const path = String(created.headers.location);
  await prepare(path);
  const pending = await api.request("PUT", path, {
    auth: user.auth,
    body: "<conference><state>pending</state></conference>",
  });
  assert.equal(pending.status, 200, pending.text);
  return path;
}

async function stateOf(api: TestService, auth: Auth, path: string): Promise<Record<string, unknown>> {
  return (await api.request("GET", path, { auth })).xml;
}

async function waitForState(api: TestService, auth: Auth, path: string, wanted: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const xml = await stateOf(api, auth, path);
    if (field(xml, "state") === wanted) return xml;
    if (Date.now() > deadline) throw new Error(`${path} still ${field(xml, "state")}, not ${wanted}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// Every describe has services of its own (on PostgreSQL a database of its own too) and mostly waits
// on the scheduler's polls and heartbeats and on PostgreSQL making its database: they run at once.
describe("the scheduler", { concurrency: true }, () => {
  describe("the scheduler on each store", { concurrency: false }, () => {
    forEachStore("scheduler", (kind) => {
      let api: TestService;
      let user: { id: number; auth: Auth };
      before(async () => {
        api = await startTestService({}, { store: kind });
        user = await createUser(api);
      });
      after(() => api.close());

      // The timing rules (on time, not a poll early, reschedules, deletes) are proven on a fake clock in
      // schedule.test.ts; here, through the API and the service, a conference past its time starts at once.
      it("starts a conference at once when its time has passed", async () => {
        const madePendingAt = Date.now();
        const past = await pendingConference(api, user, new Date(madePendingAt - 3600_000));
        // Started within 5 s of being made pending; reading it ended may take longer on a loaded machine.
        const late = await waitForState(api, user.auth, past, "ended", 10_000);
        assert.ok(Date.parse(field(late, "started-at") ?? "") - madePendingAt < 5000);
      });

      it("ends a started conference with no one to call at once", async () => {
        const path = await pendingConference(api, user, new Date());
        const ended = await waitForState(api, user.auth, path, "ended");
        assert.ok(field(ended, "ended-at"));
      });
    });
  });

  describe("crash recovery on each store", { concurrency: false }, () => {
    forEachStore("crash recovery", (kind) => {
      let database: TestDatabase | undefined;
      after(() => database?.drop());

      it("ends a conference its instance left started too long ago to call back: calls disconnected with their seconds, a log line, no phantom", async () => {
        database = kind === "postgres" ? await createTestDatabase() : undefined;
        // The data directory outlives the first instance, as it does across a real restart.
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-restart-"));
        after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
        const stores = database === undefined ? {} : { databaseUrl: database.url };
        // It renews no lease while the test plays its death (its renewal would make the row fresh).
        const first = await startTestService({ dataDir, ...stores }, { heartbeatIntervalMs: 3_600_000 });
        const user = await createUser(first);
        const conferencePath = await pendingConference(first, user, new Date(Date.now() + 3600_000));
        const conferenceId = Number(conferencePath.split("/").pop());
        const created = await first.request("POST", `${conferencePath}/attendees`, {
          auth: user.auth,
          body: "<attendee><phone-number>604-555-0150</phone-number></attendee>",
        });
        assert.equal(created.status, 201);
        // What a running instance leaves when it dies: the conference started and run by it, with its
        // last heartbeat 10 s after the attendee's call was answered, 20 minutes ago (past
        // BRIDGELINE_TAKE_OVER_WITHIN_MINUTES: nobody is called back so late).
        const answeredAt = new Date(Date.now() - 20 * 60_000);
        const heartbeatAt = new Date(answeredAt.getTime() + 10_000);
        await first.inspect(async (db) => {
          await db
            .updateTable("conferences")
            .set({
              state: "started",
              started_at: answeredAt.toISOString(),
              runner: `test:${first.dataDir}`,
              runner_heartbeat_at: heartbeatAt.toISOString(),
            })
            .where("id", "=", conferenceId)
            .execute();
          await db
            .updateTable("attendees")
            .set({ state: "connected", connected_at: answeredAt.toISOString(), muted: 0, hand_up: 0 })
            .where("conference_id", "=", conferenceId)
            .execute();
        });
        const shownWhileDead = await first.request("GET", `${conferencePath}/attendees`, { auth: user.auth });
        assert.match(shownWhileDead.text, /<state>connected<\/state>/);
        await first.close();

        const second = await startTestService({ dataDir, ...stores });
        try {
          const conference = await stateOf(second, user.auth, conferencePath);
          assert.equal(field(conference, "state"), "ended");
          assert.equal(field(conference, "ended-at"), heartbeatAt.toISOString().replace(/\.\d{3}Z$/, "Z"));
          const attendees = await second.request("GET", `${conferencePath}/attendees`, { auth: user.auth });
          assert.match(attendees.text, /<state>disconnected<\/state>/);
          assert.match(attendees.text, /<duration type="integer">10<\/duration>/);
          assert.ok(
            second.logs.some(
              (line) =>
                line.includes("the instance running it stopped") &&
                line.includes(`"conferenceId":${conferenceId}`),
            ),
          );
        } finally {
          await second.close();
        }
      });
    });
  });

  describe("two instances on one PostgreSQL database", postgresOnly, () => {
    let database: TestDatabase;
    let instances: TestService[] = [];
    before(async () => {
      database = await createTestDatabase();
      instances = [
        await startTestService({ databaseUrl: database.url }),
        await startTestService({ databaseUrl: database.url }),
      ];
    });
    after(async () => {
      for (const instance of instances) await instance.close();
      await database?.drop();
    });

    it("starts each due conference exactly once, whichever instance claims it", async () => {
      const [first] = instances as [TestService, TestService];
      const user = await createUser(first);
      const at = new Date(Date.now() + 1500);
      const paths: string[] = [];
      for (let i = 0; i < 12; i++) paths.push(await pendingConference(first, user, at));
      for (const path of paths) await waitForState(first, user.auth, path, "ended");
      const starts = instances.flatMap((instance) =>
        instance.logs
          .filter((line) => line.includes('"msg":"conference started"'))
          .map((line) => JSON.parse(line).conferenceId as number),
      );
      const ids = paths.map((path) => Number(path.split("/").pop())).sort((a, b) => a - b);
      assert.deepEqual(
        [...starts].sort((a, b) => a - b),
        ids,
        "each conference started once in all",
      );
    });
  });

  describe("BRIDGELINE_MAX_PARTICIPANTS on one of two instances", postgresOnly, () => {
    let database: TestDatabase;
    let full: TestService;
    let roomy: TestService;
    before(async () => {
      database = await createTestDatabase();
      const conferences = loadConfig({}).conferences;
      full = await startTestService({
        databaseUrl: database.url,
        conferences: { ...conferences, maxParticipants: 2 },
      });
      roomy = await startTestService({
        databaseUrl: database.url,
        conferences: { ...conferences, maxParticipants: null },
      });
    });
    after(async () => {
      await full?.close();
      await roomy?.close();
      await database?.drop();
    });

    it("an instance without room for a conference's attendees leaves it to the other", async () => {
      const user = await createUser(full);
      const at = new Date(Date.now() + 1000);
      const paths: string[] = [];
      for (let i = 0; i < 6; i++) {
        // Three dial-in attendees: more than the limited instance takes on.
        const path = await pendingConference(full, user, at, async (conference) => {
          for (let n = 0; n < 3; n++) {
            const added = await full.request("POST", `${conference}/attendees`, {
              auth: user.auth,
              body: '<attendee><dial-in type="boolean">true</dial-in></attendee>',
            });
            assert.equal(added.status, 201, added.text);
          }
        });
        paths.push(path);
      }
      for (const path of paths) await waitForState(full, user.auth, path, "ended");
      const startedBy = (instance: TestService) =>
        instance.logs.filter((line) => line.includes('"msg":"conference started"')).length;
      assert.equal(startedBy(full), 0, "the limited instance claimed none");
      assert.equal(startedBy(roomy), paths.length);
    });
  });

  describe("a due conference no instance has room for, on each store", { concurrency: false }, () => {
    forEachStore("a due conference no instance has room for", (kind) => {
      let api: TestService;
      let user: { id: number; auth: Auth };
      before(async () => {
        api = await startTestService(
          { conferences: { ...loadConfig({}).conferences, maxParticipants: 1 }, metricsPort: 0 },
          { store: kind, heartbeatIntervalMs: 100 },
        );
        user = await createUser(api);
      });
      after(() => api.close());

      it("is reported once, in the log and as an event, stays pending, and starts once there is room", async () => {
        // Due a minute ago, with two dial-in attendees: more than the only instance takes on.
        const path = await pendingConference(api, user, new Date(Date.now() - 60_000), async (conference) => {
          for (let n = 0; n < 2; n++) {
            const added = await api.request("POST", `${conference}/attendees`, {
              auth: user.auth,
              body: '<attendee><dial-in type="boolean">true</dial-in></attendee>',
            });
            assert.equal(added.status, 201, added.text);
          }
        });
        const conferenceId = Number(path.split("/").pop());
        const reported = () =>
          api.logs.filter(
            (line) =>
              line.includes("conference due but not started") &&
              line.includes(`"conferenceId":${conferenceId}`),
          );
        const delayedEvents = () =>
          api.inspect((db) =>
            db
              .selectFrom("events")
              .select("reason")
              .where("conference_id", "=", conferenceId)
              .where("type", "=", "conference-delayed")
              .execute(),
          );
        await until("the delay reported", async () => (reported().length > 0 ? true : undefined), {
          timeoutMs: 3000,
        });
        // Reported once however many heartbeats follow: proven on a fake clock in schedule.test.ts.
        assert.equal(reported().length, 1, reported().join("\n"));
        assert.match(reported()[0] ?? "", /"attendees":2/);
        assert.deepEqual(await delayedEvents(), [{ reason: "no instance has room for it" }]);
        assert.equal(totalOf(await scrapeMetrics(api), "bridgeline_conferences_delayed_total"), 1);
        const now = new Date();
        assert.deepEqual(
          await api.inspect((db) =>
            schedulerStore({ db, dialect: kind, close: async () => {} }).markDelayedConferences(now, now),
          ),
          [],
          "another instance looking now marks it no more",
        );
        assert.equal(field(await stateOf(api, user.auth, path), "state"), "pending");

        // One attendee fewer: it fits, and starts.
        const attendees = await api.inspect((db) =>
          db.selectFrom("attendees").select("id").where("conference_id", "=", conferenceId).execute(),
        );
        const removed = await api.request("DELETE", `${path}/attendees/${attendees[0]?.id}`, {
          auth: user.auth,
        });
        assert.equal(removed.status, 204, removed.text);
        await waitForState(api, user.auth, path, "started", 3000).catch(() =>
          waitForState(api, user.auth, path, "ended"),
        );
        assert.equal((await delayedEvents()).length, 1);
        // Started a minute or more after its time: the scheduler's lag says so.
        const metrics = await scrapeMetrics(api);
        assert.equal(totalOf(metrics, "bridgeline_conference_start_lag_seconds_count"), 1);
        assert.ok(totalOf(metrics, "bridgeline_conference_start_lag_seconds_sum") >= 60);
        assert.equal(totalOf(metrics, "bridgeline_conferences_delayed_total"), 1);
      });
    });
  });
});
