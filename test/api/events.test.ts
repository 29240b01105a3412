/**
 * The events stream (Server-Sent Events): its framing, authentication and scope (one conference or
 * all of a user's), a first connection getting only new events, and a reconnection with
 * Last-Event-ID getting every stored event after that id, then the live ones, each once.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import { appendEvents } from "../../src/store/events.js";
import { postgresOnly } from "../helpers/databases.js";
import { EventStream } from "../helpers/event-stream.js";
import { createUser, startTestService, type TestApi, type TestService } from "../helpers/service.js";
import { type Auth, textOf, type XmlNode } from "../helpers/xml.js";

type User = { id: number; auth: Auth };

async function createConference(api: TestApi, owner: User): Promise<number> {
  const created = await api.request("POST", `/users/${owner.id}/conferences`, {
    auth: owner.auth,
    body: '<conference><name>Events</name><scheduled-to-start-at>2030-01-01T10:00:00Z</scheduled-to-start-at><no-moderator type="boolean">true</no-moderator></conference>',
  });
  assert.equal(created.status, 201, created.text);
  return Number(textOf(created.xml.conference as XmlNode, "id"));
}

// The service with the streams that run together, the one stopped under a stream, and the one on
// PostgreSQL share nothing, and mostly wait: they run at once.
describe("events", { concurrency: true }, () => {
  // One service for the stream's framing, scope, replay, slow clients and authentication: one test
  // after another (a test's events reach the user-wide streams of the others).
  describe("events stream", { concurrency: false }, () => {
    let api: TestService;
    let alice: User;
    let bob: User;
    const streams: EventStream[] = [];

    before(async () => {
      api = await startTestService();
      alice = await createUser(api);
      bob = await createUser(api);
    });
    after(async () => {
      for (const stream of streams) stream.close();
      await api.close();
    });

    async function open(
      path: string,
      options: { auth?: Auth; lastEventId?: number } = { auth: alice.auth },
    ): Promise<EventStream> {
      const stream = await EventStream.open(`${api.httpUrl}${path}`, options);
      streams.push(stream);
      return stream;
    }

    async function addAttendee(conferenceId: number, number: string): Promise<number> {
      const added = await api.request("POST", `/users/${alice.id}/conferences/${conferenceId}/attendees`, {
        auth: alice.auth,
        body: `<attendee><phone-number>${number}</phone-number></attendee>`,
      });
      assert.equal(added.status, 201, added.text);
      return Number(textOf(added.xml.attendee as XmlNode, "id"));
    }

    it("streams text/event-stream with id, event and JSON data, only of its scope", async () => {
      const first = await createConference(api, alice);
      const second = await createConference(api, alice);
      const one = await open(`/users/${alice.id}/conferences/${first}/events`);
      const all = await open(`/users/${alice.id}/events`);
      assert.equal(one.status, 200);
      assert.match(String(one.headers["content-type"]), /^text\/event-stream/);
      assert.equal(one.headers["cache-control"], "no-cache");

      const inFirst = await addAttendee(first, "6045550121");
      const inSecond = await addAttendee(second, "6045550122");
      const added = await one.waitFor("attendee-added", (event) => event.type === "attendee-added");
      assert.deepEqual(Object.keys(added.data).sort(), ["at", "attendeeId", "conferenceId"]);
      assert.equal(added.data.conferenceId, first);
      assert.equal(added.data.attendeeId, inFirst);
      assert.ok(Math.abs(Date.parse(added.data.at) - Date.now()) < 10_000, added.data.at);
      assert.ok(Number.isInteger(added.id) && added.id > 0);

      await all.waitFor("the second conference's event", (event) => event.data.attendeeId === inSecond);
      await all.waitFor("the first conference's event", (event) => event.data.attendeeId === inFirst);
      const removed = await api.request(
        "DELETE",
        `/users/${alice.id}/conferences/${second}/attendees/${inSecond}`,
        { auth: alice.auth },
      );
      assert.equal(removed.status, 204);
      await all.waitFor("attendee-removed", (event) => event.type === "attendee-removed");
      // The conference stream never carried the other conference's events.
      assert.ok(
        one.events.every((event) => event.data.conferenceId === first),
        one.types().join(),
      );
      assert.ok(one.lines.includes("retry: 1000"), "tells the browser to reconnect within a second");
    });

    it("gives a first connection only new events, and a reconnection everything after Last-Event-ID", async () => {
      const conference = await createConference(api, alice);
      const path = `/users/${alice.id}/conferences/${conference}/events`;
      const before = await open(path);
      const a = await addAttendee(conference, "6045550131");
      const seen = await before.waitFor("the first event", (event) => event.data.attendeeId === a);
      before.close();
      // Missed while disconnected:
      const b = await addAttendee(conference, "6045550132");
      const c = await addAttendee(conference, "6045550133");

      const fresh = await open(path);
      const resumed = await open(path, { auth: alice.auth, lastEventId: seen.id });
      await resumed.waitFor("the missed events", (event) => event.data.attendeeId === c);
      assert.deepEqual(
        resumed.events.map((event) => event.data.attendeeId),
        [b, c],
      );
      const d = await addAttendee(conference, "6045550134");
      await resumed.waitFor("a live event after the replay", (event) => event.data.attendeeId === d);
      await fresh.waitFor("a live event", (event) => event.data.attendeeId === d);
      assert.deepEqual(
        fresh.events.map((event) => event.data.attendeeId),
        [d],
        "a first connection is not sent what happened before it",
      );
      const ids = resumed.events.map((event) => event.id);
      assert.deepEqual(
        ids,
        [...new Set(ids)].sort((x, y) => x - y),
        "each event once, in order",
      );
    });

    it("drops a client that does not read, while a reading client gets every event", async () => {
      const conference = await createConference(api, alice);
      const path = `/users/${alice.id}/conferences/${conference}/events`;
      const reader = await open(path);
      // A client that sends its request and then never reads: its socket buffers fill up.
      const stalled = net.connect(Number(new URL(api.httpUrl).port), "127.0.0.1");
      const credentials = Buffer.from(`${alice.auth[0]}:${alice.auth[1]}`).toString("base64");
      stalled.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Basic ${credentials}\r\n\r\n`,
      );
      stalled.pause();
      let stalledClosed = false;
      stalled.on("close", () => {
        stalledClosed = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Paced batches of 50 events of 1 KiB, which a reading client keeps up with, until the stalled one
      // has more waiting than the kernel's socket buffers and the 256 KiB a client may leave unread.
      const reason = "x".repeat(1024);
      const dropped = () => api.logs.some((line) => line.includes("events client too slow: dropped"));
      let sent = 0;
      while (!dropped() && sent < 40_000) {
        const events = Array.from({ length: 50 }, (_, index) => ({
          userId: alice.id,
          conferenceId: conference,
          attendeeId: sent + index + 1,
          type: "attendee-failed" as const,
          reason,
          encryption: null,
        }));
        await api.inspect((db) => appendEvents(db, events, new Date()));
        sent += events.length;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.ok(dropped(), `the stalled client was dropped (after ${sent} events)`);
      await reader.waitFor("the last event", (event) => event.data.attendeeId === sent, 20_000);
      assert.equal(reader.events.length, sent, "the reading client got every event, each once");
      // Its connection is closed: reading now, it gets what the kernel held, then the end.
      stalled.resume();
      const deadline = Date.now() + 15_000;
      while (!stalledClosed && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 100));
      assert.ok(stalledClosed, "the stalled client's connection was closed");
      stalled.destroy();
    });

    it("authenticates like the API: 401 without credentials, 403 for another user's, 404 for no conference", async () => {
      const conference = await createConference(api, alice);
      const anonymous = await open(`/users/${alice.id}/conferences/${conference}/events`, {});
      assert.equal(anonymous.status, 401);
      const other = await open(`/users/${alice.id}/events`, { auth: bob.auth });
      assert.equal(other.status, 403);
      const missing = await open(`/users/${alice.id}/conferences/999999/events`);
      assert.equal(missing.status, 404);
      const notAccepted = await api.request("GET", `/users/${alice.id}/events`, {
        auth: alice.auth,
        headers: { accept: "application/json" },
      });
      assert.equal(notAccepted.status, 406);
    });
  });

  // Its own service, stopped while a stream is open.
  it("ends open streams when the service stops", async () => {
    const own = await startTestService();
    const user = await createUser(own);
    const stream = await EventStream.open(`${own.httpUrl}/users/${user.id}/events`, { auth: user.auth });
    assert.equal(stream.status, 200);
    const stopping = Date.now();
    await own.close();
    // The stream's connection, kept alive by the client, is closed once the stream has ended, not
    // waited for until it times out (that took 3 s): a bound far above the 50 ms it takes.
    const stopMs = Date.now() - stopping;
    assert.ok(stopMs < 1_500, `the service took ${stopMs} ms to stop with a stream open`);
    await stream
      .waitFor("the end", () => false, 5_000)
      .catch((error: Error) => {
        assert.match(error.message, /stream closed/);
      });
    assert.ok(stream.ended);
  });

  // SQLite has one writer at a time: ids commit in order there.
  describe("events stream on PostgreSQL", postgresOnly, () => {
    let api: TestService;
    let alice: User;
    const streams: EventStream[] = [];

    before(async () => {
      api = await startTestService({}, { store: "postgres" });
      alice = await createUser(api);
    });
    after(async () => {
      for (const stream of streams) stream.close();
      await api.close();
    });

    it("delivers an event whose transaction commits after one with a higher id", async () => {
      const conference = await createConference(api, alice);
      const stream = await EventStream.open(
        `${api.httpUrl}/users/${alice.id}/conferences/${conference}/events`,
        { auth: alice.auth },
      );
      streams.push(stream);
      const event = (attendeeId: number) => ({
        userId: alice.id,
        conferenceId: conference,
        attendeeId,
        type: "attendee-added" as const,
        reason: null,
        encryption: null,
      });
      // The slow transaction takes the lower id and commits second.
      let slowInserted = () => {};
      const inserted = new Promise<void>((resolve) => {
        slowInserted = resolve;
      });
      const slow = api.inspect((db) =>
        db.transaction().execute(async (trx) => {
          await appendEvents(trx, [event(-1)], new Date());
          slowInserted();
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }),
      );
      await inserted;
      const quick = api.inspect((db) => appendEvents(db, [event(-2)], new Date()));
      await Promise.all([slow, quick]);
      const quickEvent = await stream.waitFor("the quick event", (e) => e.data.attendeeId === -2);
      const slowEvent = await stream.waitFor("the slow event", (e) => e.data.attendeeId === -1);
      assert.ok(slowEvent.id < quickEvent.id, "the slow transaction holds the lower id");
      assert.ok(stream.events.indexOf(slowEvent) > stream.events.indexOf(quickEvent), "and commits second");
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(stream.events.length, 2, stream.types().join());
    });
  });
});
