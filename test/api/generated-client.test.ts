/**
 * Every operation of /openapi.json, called in JSON through a client made by openapi-fetch and typed
 * by console/src/api-schema.ts (npm run openapi:types), against the whole service with its default
 * routes (browser joins on): a user signs up through it and, with Basic credentials, keeps contacts,
 * schedules conferences, adds attendees, runs a conference (started by the scheduler, recorded,
 * called into through no trunk, ended), reads its call records, events and recording, and keeps a
 * webhook whose deliveries reach a receiver on loopback. Each answer's status and a field that shows
 * it did what was asked are checked; at the end, the operations called are the document's, so a
 * route added without a call here fails. The join page's token routes are called with a token no
 * call has (404): a real token needs a WebRTC peer, which the browser-join tests have.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DateTime } from "luxon";
import createClient, { type Client } from "openapi-fetch";
import type { paths } from "../../console/src/api-schema.js";
import { loadConfig } from "../../src/config.js";
import { USER_TIME_ZONES } from "../../src/domain/reference-data.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { until } from "../helpers/until.js";
import { WebhookReceiver } from "../helpers/webhook-receiver.js";

const JSON_MEDIA = "application/json";
const ACCESS_NUMBER = "+16045550199";
const TIME_ZONE = "Pacific Time (US & Canada)";
const METHODS = ["get", "put", "post", "delete", "patch", "options", "head", "trace"];

/** A text/event-stream body as it arrives, for waiting on its events. */
class EventText {
  text = "";
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(body: ReadableStream<Uint8Array>) {
    this.#reader = body.getReader();
    void this.#read();
  }

  async #read(): Promise<void> {
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await this.#reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      this.text += decoder.decode(value, { stream: true });
    }
  }

  /** Waits for an event of `type` whose data has `"attendeeId":<id>` when given. */
  waitFor(type: string, attendeeId?: number): Promise<true> {
    const pattern = new RegExp(
      `event: ${type}\\ndata: [^\\n]*${attendeeId === undefined ? "" : `"attendeeId":${attendeeId}\\b`}`,
    );
    return until(`the event ${type}`, async () => (pattern.test(this.text) ? true : undefined));
  }

  close(): Promise<void> {
    return this.#reader.cancel();
  }
}

describe("generated client", () => {
  let api: TestService;
  let receiver: WebhookReceiver;
  /** "GET /users/{userId}", for each request the clients sent. */
  const called = new Set<string>();
  const streams: EventText[] = [];

  before(async () => {
    receiver = await WebhookReceiver.start();
    api = await startTestService({
      browserJoin: true,
      // The owner can dial in: a conference whose calls all failed (no trunk) stays started.
      sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0, accessNumbers: [ACCESS_NUMBER] },
      // The receiver is on loopback; a failed attempt is tried again soon.
      webhooks: { allowPrivate: true, timeoutSeconds: 2, retrySeconds: 0.2 },
    });
  });
  after(async () => {
    for (const stream of streams) await stream.close();
    await api.close();
    await receiver.close();
  });

  /** A client of the API's JSON: its answers typed by their application/json content. */
  function client(headers: Record<string, string> = {}): Client<paths, typeof JSON_MEDIA> {
    const made = createClient<paths, typeof JSON_MEDIA>({
      baseUrl: api.httpUrl,
      headers: { accept: JSON_MEDIA, ...headers },
    });
    made.use({
      onRequest({ request, schemaPath }) {
        called.add(`${request.method} ${schemaPath}`);
      },
    });
    return made;
  }

  it("calls every operation of /openapi.json in JSON, each doing what it says", async () => {
    const anyone = client();

    const described = await anyone.GET("/openapi.json");
    assert.equal(described.response.status, 200);
    const document = described.data as { openapi: string; paths: Record<string, Record<string, unknown>> };
    assert.equal(document.openapi, "3.1.0");
    const page = await anyone.GET("/docs", { headers: { accept: "text/html" }, parseAs: "text" });
    assert.equal(page.response.status, 200);
    assert.match(String(page.data), /<title>Bridgeline API reference<\/title>/);

    const live = await anyone.GET("/health/live");
    assert.equal(live.response.status, 200);
    assert.deepEqual(live.data, { status: "live" });
    const ready = await anyone.GET("/health/ready");
    assert.equal(ready.response.status, 200);
    assert.equal((ready.data as { status: string }).status, "ready");

    const packages = await anyone.GET("/billing-packages");
    assert.equal(packages.response.status, 200);
    const billingPackage = packages.data?.[0];
    assert.ok(billingPackage, "a billing package to sign up with");
    const numbers = await anyone.GET("/access-numbers");
    assert.equal(numbers.response.status, 200);
    assert.deepEqual(numbers.data, [{ number: ACCESS_NUMBER }]);

    // Signing up, then Basic credentials.
    const email = `generated-${process.pid}@example.com`;
    const password = "correct horse battery";
    const signedUp = await anyone.POST("/users", {
      body: {
        name: "Ada",
        email,
        password,
        "password-confirmation": password,
        "terms-of-service": true,
        "billing-package": { id: billingPackage.id },
        "time-zone": TIME_ZONE,
      },
    });
    assert.equal(signedUp.response.status, 201, JSON.stringify(signedUp.error));
    assert.equal(signedUp.data?.email, email);
    assert.equal(signedUp.response.headers.get("content-type"), "application/json; charset=utf-8");
    const userId = signedUp.data?.id as number;
    const owner = client({
      authorization: `Basic ${Buffer.from(`${email}:${password}`).toString("base64")}`,
    });
    const user = { params: { path: { userId } } };

    const current = await owner.GET("/current");
    assert.equal(current.response.status, 200);
    assert.equal(current.data?.id, userId);
    const read = await owner.GET("/users/{userId}", user);
    assert.equal(read.data?.["time-zone"], TIME_ZONE);
    const renamed = await owner.PUT("/users/{userId}", {
      ...user,
      body: { name: "Ada Lovelace", email },
    });
    assert.equal(renamed.response.status, 200, JSON.stringify(renamed.error));
    assert.equal(renamed.data?.name, "Ada Lovelace");

    // Contacts.
    const contact = await owner.POST("/users/{userId}/contacts", {
      ...user,
      body: { name: "Grace", "phone-number": "+1 604 555 0150", email: "grace@example.com" },
    });
    assert.equal(contact.response.status, 201, JSON.stringify(contact.error));
    assert.equal(contact.data?.name, "Grace");
    const contactPath = { params: { path: { userId, contactId: contact.data?.id as number } } };
    const contacts = await owner.GET("/users/{userId}/contacts", {
      params: { path: { userId }, query: { name: "Grace" } },
    });
    assert.deepEqual(
      contacts.data?.map((each) => each.name),
      ["Grace"],
    );
    const changedContact = await owner.PUT("/users/{userId}/contacts/{contactId}", {
      ...contactPath,
      body: { name: "Grace Hopper" },
    });
    assert.equal(changedContact.data?.name, "Grace Hopper");
    assert.equal(
      (await owner.GET("/users/{userId}/contacts/{contactId}", contactPath)).data?.name,
      "Grace Hopper",
    );
    assert.equal(
      (await owner.DELETE("/users/{userId}/contacts/{contactId}", contactPath)).response.status,
      204,
    );
    const goneContact = await owner.GET("/users/{userId}/contacts/{contactId}", contactPath);
    assert.equal(goneContact.response.status, 404);
    assert.ok(goneContact.error?.errors.length, "the 404 says why");

    // A conference for next Tuesday at 3pm, read in the owner's zone.
    const preview = await owner.GET("/users/{userId}/start-time", {
      params: { path: { userId }, query: { text: "next Tuesday at 3pm" } },
    });
    assert.equal(preview.response.status, 200, JSON.stringify(preview.error));
    const zone = USER_TIME_ZONES.get(TIME_ZONE) as string;
    const tuesday = DateTime.fromISO(preview.data?.["scheduled-to-start-at"] as string).setZone(zone);
    assert.deepEqual([tuesday.weekday, tuesday.hour, tuesday.minute], [2, 15, 0]);
    const planned = await owner.POST("/users/{userId}/conferences", {
      ...user,
      body: { name: "Planning", "scheduled-to-start-at": "next Tuesday at 3pm" },
    });
    assert.equal(planned.response.status, 201, JSON.stringify(planned.error));
    assert.equal(planned.data?.name, "Planning");
    assert.equal(planned.data?.["scheduled-to-start-at"], preview.data?.["scheduled-to-start-at"]);
    const conferenceId = planned.data?.id as number;
    const conference = { params: { path: { userId, conferenceId } } };
    const listed = await owner.GET("/users/{userId}/conferences", user);
    assert.deepEqual(
      listed.data?.map((each) => each.id),
      [conferenceId],
    );
    const basic = await owner.GET("/users/{userId}/conferences/{conferenceId}", {
      params: { path: { userId, conferenceId }, query: { representation: "basic" } },
    });
    assert.equal(basic.data?.name, "Planning");
    assert.ok(basic.data && !("member-pin" in basic.data), "the basic representation has no PINs");
    const moved = await owner.PUT("/users/{userId}/conferences/{conferenceId}", {
      ...conference,
      body: { name: "Planning, moved", "scheduled-to-start-at": "next Wednesday at 10am" },
    });
    assert.equal(moved.response.status, 200, JSON.stringify(moved.error));
    assert.equal(moved.data?.name, "Planning, moved");
    assert.equal(DateTime.fromISO(moved.data?.["scheduled-to-start-at"] as string).setZone(zone).weekday, 3);

    const added = await owner.POST("/users/{userId}/conferences/{conferenceId}/attendees", {
      ...conference,
      body: { "phone-number": "+1 604 555 0101", name: "Alan" },
    });
    assert.equal(added.response.status, 201, JSON.stringify(added.error));
    // The extended representation (the default) has the name; the basic one would not.
    assert.equal(added.data && "name" in added.data ? added.data.name : undefined, "Alan");
    const attendee = { params: { path: { userId, conferenceId, attendeeId: added.data?.id as number } } };
    const attendees = await owner.GET("/users/{userId}/conferences/{conferenceId}/attendees", conference);
    assert.ok(attendees.data?.some((each) => each.id === added.data?.id));
    // The owner, the moderator, was added with the conference.
    assert.ok(attendees.data?.some((each) => each.moderator === true));
    const located = await owner.PUT("/users/{userId}/conferences/{conferenceId}/attendees/{attendeeId}", {
      ...attendee,
      body: { "phone-number-location": "Office" },
    });
    assert.equal(located.response.status, 200, JSON.stringify(located.error));
    const locationOf = (data: typeof located.data) =>
      data && "phone-number-location" in data ? data["phone-number-location"] : undefined;
    assert.equal(locationOf(located.data), "Office");
    const readAttendee = await owner.GET(
      "/users/{userId}/conferences/{conferenceId}/attendees/{attendeeId}",
      attendee,
    );
    assert.equal(locationOf(readAttendee.data), "Office");
    const noCalls = await owner.GET(
      "/users/{userId}/conferences/{conferenceId}/attendees/{attendeeId}/calls",
      attendee,
    );
    assert.deepEqual(noCalls.data, []);
    const removed = await owner.DELETE(
      "/users/{userId}/conferences/{conferenceId}/attendees/{attendeeId}",
      attendee,
    );
    assert.equal(removed.response.status, 204);
    assert.equal(
      (await owner.GET("/users/{userId}/conferences/{conferenceId}/attendees/{attendeeId}", attendee))
        .response.status,
      404,
    );
    // Not started, so not recorded: the recording is 404.
    const noRecording = await owner.GET("/users/{userId}/conferences/{conferenceId}/recording", {
      ...conference,
      headers: { accept: "audio/wav" },
    });
    assert.equal(noRecording.response.status, 404);

    // A webhook for conferences that start, delivered to the receiver.
    const hooked = await owner.POST("/users/{userId}/webhooks", {
      ...user,
      body: { url: `${receiver.url}/bridgeline`, "event-types": ["conference-started"] },
    });
    assert.equal(hooked.response.status, 201, JSON.stringify(hooked.error));
    assert.match(String(hooked.data?.secret), /^whsec_/);
    const webhook = { params: { path: { userId, webhookId: hooked.data?.id as number } } };
    const hooks = await owner.GET("/users/{userId}/webhooks", user);
    assert.deepEqual(
      hooks.data?.map((each) => each.url),
      [`${receiver.url}/bridgeline`],
    );

    // A conference that runs: started by the scheduler, recorded.
    const userStream = await owner.GET("/users/{userId}/events", {
      ...user,
      headers: { accept: "text/event-stream" },
      parseAs: "stream",
    });
    assert.equal(userStream.response.status, 200);
    assert.match(String(userStream.response.headers.get("content-type")), /^text\/event-stream/);
    const userEvents = new EventText(userStream.data as ReadableStream<Uint8Array>);
    streams.push(userEvents);
    const running = await owner.POST("/users/{userId}/conferences", {
      ...user,
      body: { name: "Stand-up", "scheduled-to-start-at": new Date().toISOString(), "record-audio": true },
    });
    assert.equal(running.response.status, 201, JSON.stringify(running.error));
    const runningId = running.data?.id as number;
    const runningConference = { params: { path: { userId, conferenceId: runningId } } };
    const conferenceStream = await owner.GET("/users/{userId}/conferences/{conferenceId}/events", {
      ...runningConference,
      headers: { accept: "text/event-stream" },
      parseAs: "stream",
    });
    assert.equal(conferenceStream.response.status, 200);
    assert.match(String(conferenceStream.response.headers.get("content-type")), /^text\/event-stream/);
    const conferenceEvents = new EventText(conferenceStream.data as ReadableStream<Uint8Array>);
    streams.push(conferenceEvents);
    const callee = await owner.POST("/users/{userId}/conferences/{conferenceId}/attendees", {
      ...runningConference,
      body: { "phone-number": "+1 604 555 0112" },
    });
    assert.equal(callee.response.status, 201, JSON.stringify(callee.error));
    const calleeId = callee.data?.id as number;
    const pending = await owner.PUT("/users/{userId}/conferences/{conferenceId}", {
      ...runningConference,
      body: {
        name: "Stand-up",
        "scheduled-to-start-at": running.data?.["scheduled-to-start-at"] ?? undefined,
        state: "pending",
      },
    });
    assert.equal(pending.response.status, 200, JSON.stringify(pending.error));
    assert.equal(pending.data?.state, "pending");
    await conferenceEvents.waitFor("conference-started");
    await userEvents.waitFor("conference-started");
    // No trunk: the callee's call fails at once; called again, it is asked for again.
    await conferenceEvents.waitFor("attendee-failed", calleeId);
    const calledAgain = await owner.POST(
      "/users/{userId}/conferences/{conferenceId}/attendees/{attendeeId}/call",
      {
        params: { path: { userId, conferenceId: runningId, attendeeId: calleeId } },
        // No body, but a POST says its Content-Type (415 otherwise, as the document says).
        headers: { "content-type": JSON_MEDIA },
      },
    );
    assert.equal(calledAgain.response.status, 200, JSON.stringify(calledAgain.error));
    assert.equal(calledAgain.data?.id, calleeId);
    const calleeCalls = await until("the callee's call records", async () => {
      const records = await owner.GET(
        "/users/{userId}/conferences/{conferenceId}/attendees/{attendeeId}/calls",
        {
          params: { path: { userId, conferenceId: runningId, attendeeId: calleeId } },
        },
      );
      return records.data?.length ? records.data : undefined;
    });
    // Never answered: no trunk to reach it through.
    assert.equal(calleeCalls[0]?.["answered-at"], null);
    const recording = await until("the recording", async () => {
      const answer = await owner.GET("/users/{userId}/conferences/{conferenceId}/recording", {
        ...runningConference,
        headers: { accept: "audio/wav" },
        parseAs: "arrayBuffer",
      });
      return answer.response.status === 200 ? answer : undefined;
    });
    assert.equal(recording.response.headers.get("content-type"), "audio/wav");
    assert.equal(
      Buffer.from(recording.data as ArrayBuffer)
        .subarray(0, 4)
        .toString("latin1"),
      "RIFF",
    );

    const delivered = await until("the webhook's delivery", async () => {
      const deliveries = await owner.GET("/users/{userId}/webhooks/{webhookId}/deliveries", webhook);
      return deliveries.data?.find((each) => each.state === "delivered");
    });
    const delivery = await owner.GET("/users/{userId}/webhooks/{webhookId}/deliveries/{deliveryId}", {
      params: { path: { userId, webhookId: hooked.data?.id as number, deliveryId: delivered.id } },
    });
    assert.equal(delivery.response.status, 200);
    assert.equal(delivery.data?.["message-id"], delivered["message-id"]);
    assert.ok(
      receiver.accepted("/bridgeline").some((sent) => sent.headers["webhook-id"] === delivered["message-id"]),
      "the receiver got the delivery the log shows",
    );
    const disabled = await owner.PUT("/users/{userId}/webhooks/{webhookId}", {
      ...webhook,
      body: { url: `${receiver.url}/bridgeline`, enabled: false },
    });
    assert.equal(disabled.data?.enabled, false);
    assert.equal((await owner.GET("/users/{userId}/webhooks/{webhookId}", webhook)).data?.enabled, false);
    assert.equal((await owner.DELETE("/users/{userId}/webhooks/{webhookId}", webhook)).response.status, 204);
    assert.equal((await owner.GET("/users/{userId}/webhooks/{webhookId}", webhook)).response.status, 404);

    // The join page: a wrong PIN is refused by the running conferences; no call has this token.
    const joinPage = await anyone.GET("/join", { headers: { accept: "text/html" }, parseAs: "text" });
    assert.equal(joinPage.response.status, 200);
    assert.match(String(joinPage.response.headers.get("content-type")), /^text\/html/);
    const iceServers = await anyone.GET("/join/ice-servers");
    assert.deepEqual(iceServers.data, { iceServers: [] });
    const wrongPin = await anyone.POST("/join/calls", {
      body: { pin: "000000000000", offer: "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" },
    });
    assert.equal(wrongPin.response.status, 403);
    assert.equal((wrongPin.error as unknown as { error: string }).error, "wrong-pin");
    const token = { params: { path: { token: "no-such-token" } } };
    for (const answer of [
      await anyone.GET("/join/calls/{token}", token),
      await anyone.GET("/join/calls/{token}/events", { ...token, headers: { accept: "text/event-stream" } }),
      await anyone.DELETE("/join/calls/{token}", token),
    ]) {
      assert.equal(answer.response.status, 404);
      assert.equal((answer.error as unknown as { error: string }).error, "no-such-call");
    }

    // The call records, as documents and as CSV; then the conference is ended, and deleted.
    const records = await owner.GET("/users/{userId}/conferences/{conferenceId}/calls", runningConference);
    assert.ok(records.data?.some((each) => each["attendee-id"] === calleeId));
    const csv = await owner.GET("/users/{userId}/conferences/{conferenceId}/calls.csv", {
      ...runningConference,
      headers: { accept: "text/csv" },
      parseAs: "text",
    });
    assert.equal(csv.response.status, 200);
    assert.match(String(csv.response.headers.get("content-type")), /^text\/csv/);
    assert.ok(String(csv.data).split("\r\n").length > 2, "a header row and the calls'");
    const ended = await owner.POST("/users/{userId}/conferences/{conferenceId}/end", {
      ...runningConference,
      headers: { "content-type": JSON_MEDIA },
    });
    assert.equal(ended.response.status, 200, JSON.stringify(ended.error));
    assert.equal(ended.data?.id, runningId);
    await conferenceEvents.waitFor("conference-ended");
    for (const deleted of [conference, runningConference]) {
      const answer = await owner.DELETE("/users/{userId}/conferences/{conferenceId}", deleted);
      assert.equal(answer.response.status, 204);
      assert.equal(
        (await owner.GET("/users/{userId}/conferences/{conferenceId}", deleted)).response.status,
        404,
      );
    }

    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((key) => METHODS.includes(key))
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    assert.deepEqual([...called].sort(), operations.sort());
  });
});
