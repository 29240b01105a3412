/**
 * Webhooks end to end: the resource in the XML API on both stores (validation, 422, lock-version,
 * 403/404, the secret shown once), a real HTTP receiver getting every event of a conference signed the Standard Webhooks
 * way and once per webhook-id, the attempts it refused (500, no answer) made again and logged, 410
 * disabling a webhook, the refusal of private destinations when created and when delivering, the
 * day-long retry schedule on a moved clock ending in the webhook disabled and its owner e-mailed, and
 * two instances on one database sending each delivery once.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { simpleParser } from "mailparser";
import { type Config, loadConfig } from "../../src/config.js";
import { CONFERENCE_EVENT_TYPES } from "../../src/domain/event.js";
import { RETRY_MULTIPLES } from "../../src/domain/webhook.js";
import { createTestDatabase, forEachStore, postgresOnly, type TestDatabase } from "../helpers/databases.js";
import { claimableFromNowOn } from "../helpers/outbox.js";
import {
  createUser,
  scrapeMetrics,
  startTestApi,
  startTestService,
  type TestApi,
  type TestService,
  totalOf,
} from "../helpers/service.js";
import { until } from "../helpers/until.js";
import { verifyStandardWebhook, WebhookReceiver } from "../helpers/webhook-receiver.js";
import {
  type Auth,
  assertErrorMatches,
  errorMessages,
  itemsIn,
  itemsOf,
  textOf,
  type XmlNode,
} from "../helpers/xml.js";

type User = { id: number; auth: Auth };

/** Loopback receivers need private destinations allowed; attempts are given 2 s, retries start at 0.2 s. */
function fastWebhooks(overrides: Partial<Config["webhooks"]> = {}): Partial<Config> {
  return { webhooks: { allowPrivate: true, timeoutSeconds: 2, retrySeconds: 0.2, ...overrides } };
}

async function createWebhook(
  api: TestApi,
  user: User,
  url: string,
  extra = "",
): Promise<{ id: number; path: string; secret: string; element: XmlNode }> {
  const created = await api.request("POST", `/users/${user.id}/webhooks`, {
    auth: user.auth,
    body: `<webhook><url>${url}</url>${extra}</webhook>`,
  });
  assert.equal(created.status, 201, created.text);
  const element = created.xml.webhook as XmlNode;
  const id = Number(textOf(element, "id"));
  assert.equal(created.headers.location, `/users/${user.id}/webhooks/${id}`);
  return { id, path: `/users/${user.id}/webhooks/${id}`, secret: textOf(element, "secret") ?? "", element };
}

async function createConference(api: TestService, user: User, startAt: string, extra = ""): Promise<string> {
  const created = await api.request("POST", `/users/${user.id}/conferences`, {
    auth: user.auth,
    body: `<conference><name>Hooked</name><scheduled-to-start-at>${startAt}</scheduled-to-start-at>${extra}</conference>`,
  });
  assert.equal(created.status, 201, created.text);
  return String(created.headers.location);
}

async function addAttendee(
  api: TestService,
  user: User,
  conference: string,
  number: string,
): Promise<number> {
  const added = await api.request("POST", `${conference}/attendees`, {
    auth: user.auth,
    body: `<attendee><phone-number>${number}</phone-number></attendee>`,
  });
  assert.equal(added.status, 201, added.text);
  return Number(textOf(added.xml.attendee as XmlNode, "id"));
}

/** One event: an attendee added to a new conference that has no moderator, long before it starts. */
async function attendeeAdded(api: TestService, user: User, number: string): Promise<string> {
  const conference = await createConference(
    api,
    user,
    "2030-01-01T10:00:00Z",
    "<no-moderator>true</no-moderator>",
  );
  await addAttendee(api, user, conference, number);
  return conference;
}

async function deliveries(api: TestService, user: User, webhookPath: string, query = ""): Promise<XmlNode[]> {
  return itemsOf(
    await api.request("GET", `${webhookPath}/deliveries${query}`, { auth: user.auth }),
    "deliveries",
    "delivery",
  );
}

function attemptsOf(delivery: XmlNode): XmlNode[] {
  return itemsIn(delivery, "attempts", "attempt");
}

/** The e-mail telling an owner a webhook was disabled, once the notification worker has written it. */
async function disabledNotice(api: TestService) {
  const folder = path.join(api.dataDir, "mail");
  const file = await until("the e-mail to the owner", async () =>
    fs.existsSync(folder)
      ? fs.readdirSync(folder).find((name) => name.endsWith("-webhook-disabled.eml"))
      : undefined,
  );
  return simpleParser(fs.readFileSync(path.join(folder, file)));
}

/**
 * The deliveries of `webhookIds` once each is settled for good (none pending nor claimed), after
 * checking that the outbox's own claim gives a worker none of them, now or later: no attempt is left
 * to make, so what the receiver has then is all it gets (a request is recorded as it arrives, before
 * its attempt can end).
 */
async function settledForGood(api: TestApi, webhookIds: readonly number[], databaseUrl?: string) {
  const rows = await until("every delivery settled", async () => {
    const found = await api.inspect((db) =>
      db.selectFrom("webhook_deliveries").selectAll().where("webhook_id", "in", webhookIds).execute(),
    );
    return found.every((row) => row.state !== "pending" && row.state !== "sending") ? found : undefined;
  });
  assert.deepEqual(await claimableFromNowOn("webhook_deliveries", { dataDir: api.dataDir, databaseUrl }), []);
  return rows;
}

/**
 * A public address literal for webhooks that are never called: the API alone (no webhook worker)
 * keeps its default policy, no private destinations, and an address literal needs no DNS.
 */
const PUBLIC_RECEIVER = "https://93.184.215.14";

// The describes share nothing (each its own service or API, receiver and data) and mostly wait on
// the webhook worker's polls and retries: they run at once.
describe("webhooks", { concurrency: true }, () => {
  describe("the webhooks API on each store", { concurrency: false }, () => {
    forEachStore("webhooks API", (kind) => {
      let api: TestApi;
      let alice: User;
      let bob: User;

      before(async () => {
        api = await startTestApi({}, { store: kind });
        alice = await createUser(api);
        bob = await createUser(api);
      });
      after(() => api.close());

      it("creates, shows, updates with lock-version, searches and deletes a webhook; the secret is shown once", async () => {
        const webhook = await createWebhook(
          api,
          alice,
          `${PUBLIC_RECEIVER}/crud`,
          '<event-types type="array"><event-type>conference-ended</event-type><event-type>attendee-added</event-type></event-types>',
        );
        assert.match(webhook.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
        // In the order of the event stream's list of types.
        assert.deepEqual(itemsIn(webhook.element, "event-types", "event-type"), [
          "conference-ended",
          "attendee-added",
        ]);
        assert.equal(textOf(webhook.element, "enabled"), "true");
        assert.equal(textOf(webhook.element, "lock-version"), "0");
        assert.equal(textOf(webhook.element, "disabled-at"), null);

        const shown = await api.request("GET", webhook.path, { auth: alice.auth });
        assert.equal(shown.status, 200, shown.text);
        assert.ok(
          !shown.text.includes("secret") && !shown.text.includes(webhook.secret),
          "the secret is never shown again",
        );
        const listed = itemsOf(
          await api.request("GET", `/users/${alice.id}/webhooks`, { auth: alice.auth }),
          "webhooks",
          "webhook",
        );
        assert.ok(listed.every((element) => !("secret" in element)));

        const stale = await api.request("PUT", webhook.path, {
          auth: alice.auth,
          body: '<webhook><lock-version type="integer">7</lock-version><enabled type="boolean">false</enabled></webhook>',
        });
        assert.equal(stale.status, 409, stale.text);
        assertErrorMatches(stale, /webhook was changed by someone else/);
        const disabled = await api.request("PUT", webhook.path, {
          auth: alice.auth,
          body: '<webhook><lock-version type="integer">0</lock-version><enabled type="boolean">false</enabled><event-types type="array" nil="true"/></webhook>',
        });
        assert.equal(disabled.status, 200, disabled.text);
        const element = disabled.xml.webhook as XmlNode;
        assert.equal(textOf(element, "lock-version"), "1");
        assert.equal(textOf(element, "enabled"), "false");
        assert.notEqual(textOf(element, "disabled-at"), null);
        assert.equal(textOf(element, "disabled-reason"), null, "disabled by its owner");
        assert.equal((element["event-types"] as XmlNode)["@_nil"], "true", "every type");

        const search = await api.request(
          "GET",
          `/users/${alice.id}/webhooks?enabled=false&url_ends_with=/crud`,
          {
            auth: alice.auth,
          },
        );
        assert.deepEqual(
          itemsOf(search, "webhooks", "webhook").map((found) => textOf(found, "id")),
          [String(webhook.id)],
        );
        const enabled = await api.request("PUT", webhook.path, {
          auth: alice.auth,
          body: '<webhook><enabled type="boolean">true</enabled></webhook>',
        });
        assert.equal(textOf(enabled.xml.webhook as XmlNode, "disabled-at"), null);

        assert.equal((await api.request("GET", webhook.path, { auth: bob.auth })).status, 403);
        assert.equal(
          (await api.request("GET", `/users/${bob.id}/webhooks/${webhook.id}`, { auth: bob.auth })).status,
          404,
        );
        assert.equal(
          (await api.request("GET", `${webhook.path}/deliveries/999999`, { auth: alice.auth })).status,
          404,
        );
        assert.equal((await api.request("DELETE", webhook.path, { auth: alice.auth })).status, 204);
        assert.equal((await api.request("GET", webhook.path, { auth: alice.auth })).status, 404);
        const wrongMethod = await api.request("PATCH", `/users/${alice.id}/webhooks`, { auth: alice.auth });
        assert.equal(wrongMethod.status, 405);
        assert.equal(wrongMethod.headers.allow, "GET, POST, HEAD");
      });

      it("answers 422 with every problem of the document, and at the twenty-first webhook", async () => {
        const invalid = await api.request("POST", `/users/${alice.id}/webhooks`, {
          auth: alice.auth,
          body: '<webhook><url>ftp://files.example.com/</url><event-types type="array"><event-type>calls</event-type></event-types><enabled>perhaps</enabled></webhook>',
        });
        assert.equal(invalid.status, 422, invalid.text);
        assert.deepEqual(errorMessages(invalid), [
          "url must be an http:// or https:// URL, not ftp:",
          `event-types: "calls" is not an event type; the types are ${CONFERENCE_EVENT_TYPES.join(", ")}`,
          'enabled must be true or false, got "perhaps"',
        ]);
        const blank = await api.request("POST", `/users/${alice.id}/webhooks`, {
          auth: alice.auth,
          body: "<webhook/>",
        });
        assert.equal(blank.status, 422);
        assert.deepEqual(errorMessages(blank), ["url can't be blank"]);

        const carol = await createUser(api);
        for (let index = 0; index < 20; index++)
          await createWebhook(api, carol, `${PUBLIC_RECEIVER}/many/${index}`, "<enabled>false</enabled>");
        const tooMany = await api.request("POST", `/users/${carol.id}/webhooks`, {
          auth: carol.auth,
          body: `<webhook><url>${PUBLIC_RECEIVER}/one-more</url></webhook>`,
        });
        assert.equal(tooMany.status, 422, tooMany.text);
        assert.deepEqual(errorMessages(tooMany), ["a user may have at most 20 webhooks"]);
      });
    });
  });

  // One service and receiver: one test after another, each deciding the receiver's answers.
  describe("webhook deliveries", { concurrency: false }, () => {
    let api: TestService;
    let receiver: WebhookReceiver;

    before(async () => {
      // With an access number the owner, who has no number to be called on, can dial in: a started
      // conference whose calls all failed stays open until it is ended.
      api = await startTestService({
        ...fastWebhooks(),
        metricsPort: 0,
        sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0, accessNumbers: ["+16045550199"] },
      });
      receiver = await WebhookReceiver.start();
    });
    after(async () => {
      await api.close();
      await receiver.close();
    });

    it("delivers every event of a conference, signed, once per id; what the receiver refused comes again", async () => {
      const owner = await createUser(api);
      const all = await createWebhook(api, owner, `${receiver.url}/all`);
      const filtered = await createWebhook(
        api,
        owner,
        `${receiver.url}/filtered`,
        '<event-types type="array"><event-type>conference-started</event-type><event-type>conference-ended</event-type></event-types>',
      );
      const secrets: Record<string, string> = { "/all": all.secret, "/filtered": filtered.secret };
      // The first attempt of each attendee-added gets a 500, that of conference-started no answer in time.
      receiver.answer((request) => {
        const id = request.headers["webhook-id"];
        const earlier = receiver.received.some((seen) => seen.headers["webhook-id"] === id);
        if (earlier || request.path !== "/all") return 204;
        if (request.payload.type === "attendee-added") return 500;
        if (request.payload.type === "conference-started") return { holdMs: 4000 };
        return 204;
      });

      const metricsBefore = await scrapeMetrics(api);
      const conference = await createConference(api, owner, new Date().toISOString());
      const conferenceId = Number(conference.split("/").pop());
      await addAttendee(api, owner, conference, "6045550142");
      const pending = await api.request("PUT", conference, {
        auth: owner.auth,
        body: "<conference><state>pending</state></conference>",
      });
      assert.equal(pending.status, 200, pending.text);
      const eventsOf = () =>
        api.inspect((db) =>
          db
            .selectFrom("events")
            .select(["id", "type"])
            .where("conference_id", "=", conferenceId)
            .orderBy("id")
            .execute(),
        );
      await until("the failed call", async () =>
        (await eventsOf()).some((event) => event.type === "attendee-failed") ? true : undefined,
      );
      const ended = await api.request("POST", `${conference}/end`, { auth: owner.auth, body: "" });
      assert.equal(ended.status, 200, ended.text);
      await until("conference-ended", async () =>
        (await eventsOf()).some((event) => event.type === "conference-ended") ? true : undefined,
      );
      const events = await eventsOf();
      const eventIds = events.map((event) => event.id);
      await until(
        "every event accepted by the receiver",
        async () => {
          const accepted = new Set(receiver.accepted("/all").map((request) => request.payload.data.eventId));
          return eventIds.every((id) => accepted.has(id)) ? true : undefined;
        },
        { detail: () => JSON.stringify(receiver.received.map((r) => [r.path, r.payload.type, r.answer])) },
      );
      // Anything sent twice by mistake would have arrived by now.
      await settledForGood(api, [all.id, filtered.id]);
      assert.deepEqual(
        events
          .map((event) => event.type)
          .filter((type) => type.startsWith("conference") || type === "attendee-added"),
        ["attendee-added", "conference-started", "conference-ended"],
      );

      const requests = receiver.received.filter(
        (request) => request.path === "/all" || request.path === "/filtered",
      );
      for (const request of requests) {
        assert.equal(
          verifyStandardWebhook(secrets[request.path] as string, request.headers, request.body),
          undefined,
        );
        assert.equal(request.headers["content-type"], "application/json");
        assert.equal(request.payload.data.conferenceId, conferenceId);
        assert.match(request.payload.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      }
      // Each event once per id: a receiver that drops repeated ids has every event exactly once, and an
      // id always carries the same body.
      const once = new Map(
        receiver.accepted("/all").map((request) => [request.headers["webhook-id"], request]),
      );
      assert.deepEqual(
        [...once.values()].map((request) => request.payload.data.eventId).sort((a, b) => a - b),
        eventIds,
      );
      const bodies = new Map<unknown, Set<string>>();
      for (const request of requests)
        bodies.set(
          request.headers["webhook-id"],
          (bodies.get(request.headers["webhook-id"]) ?? new Set()).add(request.body),
        );
      assert.ok(
        [...bodies.values()].every((seen) => seen.size === 1),
        "an id always carries the same body",
      );
      const again = (type: string) =>
        requests
          .filter((request) => request.path === "/all" && request.payload.type === type)
          .map((request) => request.answer);
      assert.deepEqual(again("attendee-added"), [500, 204], "refused with 500, then delivered");
      assert.deepEqual(
        again("conference-started"),
        ["no answer", 204],
        "not answered in time, then delivered",
      );
      assert.deepEqual(
        receiver.accepted("/filtered").map((request) => request.payload.type),
        ["conference-started", "conference-ended"],
        "a webhook gets only the event types it takes",
      );

      // The delivery log tells the same story.
      const log = await deliveries(api, owner, all.path);
      assert.equal(log.length, eventIds.length);
      assert.ok(log.every((delivery) => textOf(delivery, "state") === "delivered"));
      const [started] = await deliveries(api, owner, all.path, "?event_type=conference-started");
      assert.ok(started);
      const startedAttempts = attemptsOf(started);
      assert.equal(textOf(started, "attempt-count"), "2");
      assert.equal(textOf(startedAttempts[0] as XmlNode, "status-code"), null);
      assert.equal(textOf(startedAttempts[0] as XmlNode, "error"), "no answer within 2 s");
      assert.ok(Number(textOf(startedAttempts[0] as XmlNode, "duration-ms")) >= 2000);
      assert.equal(textOf(startedAttempts[1] as XmlNode, "status-code"), "204");
      const startedRequest = requests.find((request) => request.payload.type === "conference-started");
      assert.equal(textOf(started, "message-id"), startedRequest?.headers["webhook-id"]);
      assert.deepEqual(JSON.parse(textOf(started, "payload") ?? ""), startedRequest?.payload);
      const [added] = await deliveries(api, owner, all.path, "?event_type=attendee-added");
      assert.deepEqual(
        attemptsOf(added as XmlNode).map((attempt) => textOf(attempt, "status-code")),
        ["500", "204"],
      );
      const id = textOf(added as XmlNode, "id");
      const one = await api.request("GET", `${all.path}/deliveries/${id}`, { auth: owner.auth });
      assert.equal(one.status, 200, one.text);
      assert.equal(textOf(one.xml.delivery as XmlNode, "event-type"), "attendee-added");

      // And so do the metrics: every attempt counted by its result, none left in the queue.
      const metrics = await scrapeMetrics(api);
      const attempts = (result: string) =>
        totalOf(metrics, "bridgeline_webhook_attempts_total", `result="${result}"`) -
        totalOf(metricsBefore, "bridgeline_webhook_attempts_total", `result="${result}"`);
      assert.equal(attempts("failed"), 2, "the 500 and the unanswered attempt");
      assert.equal(
        attempts("delivered"),
        receiver.accepted("/all").length + receiver.accepted("/filtered").length,
      );
      assert.equal(totalOf(metrics, "bridgeline_webhook_deliveries", 'state="pending"'), 0);
      assert.ok(totalOf(metrics, "bridgeline_webhook_deliveries", 'state="delivered"') >= log.length);
      // Each delivery that got through, its time from the event to the 2xx.
      const lag = "bridgeline_webhook_delivery_lag_seconds_count";
      assert.equal(totalOf(metrics, lag) - totalOf(metricsBefore, lag), attempts("delivered"));
    });

    it("disables a webhook whose receiver answers 410 Gone, and tells its owner", async () => {
      const owner = await createUser(api);
      const webhook = await createWebhook(api, owner, `${receiver.url}/gone`);
      receiver.answer((request) => (request.path === "/gone" ? 410 : 204));
      const conference = await attendeeAdded(api, owner, "6045550143");
      const disabled = await until("the webhook disabled", async () => {
        const shown = await api.request("GET", webhook.path, { auth: owner.auth });
        const element = shown.xml.webhook as XmlNode;
        return textOf(element, "enabled") === "false" ? element : undefined;
      });
      assert.equal(textOf(disabled, "disabled-reason"), "the receiver answered 410 Gone");
      const [delivery] = await deliveries(api, owner, webhook.path);
      assert.equal(textOf(delivery as XmlNode, "state"), "failed");
      await addAttendee(api, owner, conference, "6045550144");
      assert.equal((await deliveries(api, owner, webhook.path)).length, 1, "a disabled webhook gets nothing");
      const message = await disabledNotice(api);
      assert.equal(message.subject, `Webhook disabled: ${receiver.url}/gone`);
      assert.equal(
        message.to && !Array.isArray(message.to) ? message.to.value[0]?.address : undefined,
        owner.auth[0],
      );
      assert.match(message.text ?? "", /the receiver answered 410 Gone/);
    });
  });

  describe("webhook destinations (server-side request forgery)", { concurrency: false }, () => {
    let api: TestService;
    let receiver: WebhookReceiver;
    let user: User;

    before(async () => {
      api = await startTestService(fastWebhooks({ allowPrivate: false }));
      receiver = await WebhookReceiver.start();
      user = await createUser(api);
    });
    after(async () => {
      await api.close();
      await receiver.close();
    });

    it("refuses private, loopback and link-local URLs with 422", async () => {
      const refused: [string, RegExp][] = [
        [
          `${receiver.url}/hook`,
          /^url leads to 127\.0\.0\.1, a loopback address: webhooks may not call private, loopback or link-local networks$/,
        ],
        ["http://localhost:8080/hook", /^url leads to localhost \((127\.0\.0\.1|::1)\), a loopback address/],
        ["https://10.1.2.3/hook", /leads to 10\.1\.2\.3, a private address/],
        ["https://192.168.0.10/hook", /a private address/],
        ["http://169.254.169.254/latest/meta-data/", /a link-local address/],
        ["http://[::1]:8080/", /leads to ::1, a loopback address/],
        ["http://[fd00::5]/", /a unique local address/],
        ["http://[::ffff:10.0.0.1]/", /a private \(in an IPv6 address\) address/],
        ["http://100.64.0.1/", /a shared \(carrier-grade NAT\) address/],
      ];
      for (const [url, message] of refused) {
        const response = await api.request("POST", `/users/${user.id}/webhooks`, {
          auth: user.auth,
          body: `<webhook><url>${url}</url></webhook>`,
        });
        assert.equal(response.status, 422, `${url}: ${response.text}`);
        assertErrorMatches(response, message);
      }
      assert.equal(
        (
          await api.inspect((db) =>
            db.selectFrom("webhooks").selectAll().where("user_id", "=", user.id).execute(),
          )
        ).length,
        0,
        "nothing written",
      );
    });

    it("checks again at delivery: an address that turned private is not called", async () => {
      // A public address literal needs no DNS; nothing is ever sent to it (no event happens before the
      // URL changes below).
      const webhook = await createWebhook(api, user, "https://93.184.215.14/hook");
      const moved = await api.request("PUT", webhook.path, {
        auth: user.auth,
        body: `<webhook><url>${receiver.url}/hook</url></webhook>`,
      });
      assert.equal(moved.status, 422, "a new URL is checked like a first one");
      // As if its DNS now answered with a private address: the stored URL leads to the loopback.
      await api.inspect((db) =>
        db
          .updateTable("webhooks")
          .set({ url: `${receiver.url}/hook` })
          .where("id", "=", webhook.id)
          .execute(),
      );
      await attendeeAdded(api, user, "6045550145");
      const [attempt] = await until("a refused attempt", async () => {
        const [delivery] = await deliveries(api, user, webhook.path);
        return delivery && attemptsOf(delivery).length > 0 ? attemptsOf(delivery) : undefined;
      });
      assert.equal(textOf(attempt as XmlNode, "status-code"), null);
      assert.match(
        textOf(attempt as XmlNode, "error") ?? "",
        /^refused: url leads to 127\.0\.0\.1, a loopback address/,
      );
      assert.equal(receiver.received.length, 0, "the receiver got nothing");
    });
  });

  describe("webhook retries on a moved clock", { concurrency: false }, () => {
    let api: TestService;
    let receiver: WebhookReceiver;
    /** How far the webhook worker's clock is ahead of the wall clock. */
    let ahead = 0;

    before(async () => {
      api = await startTestService(fastWebhooks({ retrySeconds: 5 }), {
        webhookClock: () => new Date(Date.now() + ahead),
      });
      receiver = await WebhookReceiver.start();
      receiver.answer(() => 500);
    });
    after(async () => {
      await api.close();
      await receiver.close();
    });

    it("tries for a day on the real schedule, then disables the webhook and e-mails its owner", async () => {
      const owner = await createUser(api);
      const webhook = await createWebhook(
        api,
        owner,
        `${receiver.url}/failing`,
        '<event-types type="array"><event-type>attendee-added</event-type></event-types>',
      );
      await attendeeAdded(api, owner, "6045550146");
      // 5 s, 1 min, 5 min, 30 min, 1 h, 2 h, 4 h, 8 h, then the last attempt when the day is up.
      const waits: (number | "day up" | undefined)[] = [
        ...RETRY_MULTIPLES.map((multiple) => 5 * multiple),
        "day up",
        undefined,
      ];
      let createdAt = 0;
      for (const [index, wait] of waits.entries()) {
        const attempts = index + 1;
        const delivery = await until(`attempt ${attempts}`, async () => {
          const [found] = await deliveries(api, owner, webhook.path);
          return found && attemptsOf(found).length === attempts && textOf(found, "state") !== "sending"
            ? found
            : undefined;
        });
        createdAt = Date.parse(textOf(delivery, "created-at") ?? "");
        if (wait === undefined) {
          assert.equal(textOf(delivery, "state"), "failed");
          assert.equal(textOf(delivery, "next-attempt-at"), null);
          const last = Date.parse(textOf(attemptsOf(delivery)[index] as XmlNode, "attempted-at") ?? "");
          assert.ok(last - createdAt >= 86_400_000, "the last attempt is a day after the event");
          break;
        }
        assert.equal(textOf(delivery, "state"), "pending");
        const attemptedAt = Date.parse(textOf(attemptsOf(delivery)[index] as XmlNode, "attempted-at") ?? "");
        const next = Date.parse(textOf(delivery, "next-attempt-at") ?? "");
        if (wait === "day up") assert.equal(next, createdAt + 86_400_000, "the last try when the day is up");
        else {
          // Shown to the second: the wait, up to a tenth more, give or take the truncated seconds.
          const waited = (next - attemptedAt) / 1000;
          assert.ok(
            waited >= wait - 1 && waited <= wait * 1.1 + 2,
            `attempt ${attempts}: waited ${waited} s, not ~${wait} s`,
          );
        }
        // Nothing happens before it is due...
        ahead = next - 2000 - Date.now();
        await new Promise((resolve) => setTimeout(resolve, 700));
        const [unchanged] = await deliveries(api, owner, webhook.path);
        assert.equal(attemptsOf(unchanged as XmlNode).length, attempts, `attempt ${attempts + 1} came early`);
        // ...and the next attempt comes once it is.
        ahead = next + 1000 - Date.now();
      }
      const shown = await api.request("GET", webhook.path, { auth: owner.auth });
      const element = shown.xml.webhook as XmlNode;
      assert.equal(textOf(element, "enabled"), "false");
      assert.equal(textOf(element, "disabled-reason"), "every delivery failed for a day; the last: HTTP 500");
      assert.equal(receiver.received.length, 10, "ten attempts in all");
      assert.equal(new Set(receiver.received.map((request) => request.headers["webhook-id"])).size, 1);

      const message = await disabledNotice(api);
      assert.equal(message.subject, `Webhook disabled: ${receiver.url}/failing`);
      assert.match(message.text ?? "", /every delivery failed for a day; the last: HTTP 500/);
      assert.match(message.text ?? "", new RegExp(`PUT to /users/${owner.id}/webhooks/${webhook.id}`));
    });
  });

  describe("webhooks with two instances on one PostgreSQL database", postgresOnly, () => {
    let database: TestDatabase;
    let first: TestService;
    let second: TestService;
    let receiver: WebhookReceiver;

    before(async () => {
      database = await createTestDatabase();
      // A generous timeout: an attempt answered too late is legitimately sent again, which is not what
      // this test looks for.
      const shared = { ...fastWebhooks({ timeoutSeconds: 10 }), databaseUrl: database.url };
      first = await startTestService(shared, { store: "postgres" });
      second = await startTestService(shared, { store: "postgres" });
      receiver = await WebhookReceiver.start();
    });
    after(async () => {
      await first?.close();
      await second?.close();
      await database?.drop();
      await receiver?.close();
    });

    it("sends each delivery once, whichever instance claims it", async () => {
      const owner = await createUser(first);
      const webhook = await createWebhook(first, owner, `${receiver.url}/shared`);
      const conference = await createConference(
        first,
        owner,
        "2030-01-01T10:00:00Z",
        "<no-moderator>true</no-moderator>",
      );
      const count = 40;
      await Promise.all(
        Array.from({ length: count }, (_, index) =>
          addAttendee(index % 2 === 0 ? first : second, owner, conference, `604555${String(1000 + index)}`),
        ),
      );
      await until("every delivery", async () => (receiver.received.length >= count ? true : undefined));
      await settledForGood(first, [webhook.id], database.url);
      const errors = await first.inspect((db) =>
        db
          .selectFrom("webhook_attempts")
          .select(["delivery_id", "error", "status_code", "duration_ms"])
          .execute(),
      );
      assert.equal(
        receiver.received.length,
        count,
        `no delivery sent twice; attempts not answered 204: ${JSON.stringify(errors.filter((e) => e.status_code !== 204))}`,
      );
      assert.equal(new Set(receiver.received.map((request) => request.headers["webhook-id"])).size, count);
    });
  });
});
