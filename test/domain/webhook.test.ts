/**
 * Webhook rules: the document (URL, event types, enabled), the addresses a webhook may never reach,
 * the payload, and the day-long retry schedule.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ValidationFailed } from "../../src/domain/errors.js";
import {
  attemptResult,
  DELIVERY_WINDOW_MS,
  nextAttemptAt,
  readWebhookChanges,
  refusedAddressKind,
  retryAfterMs,
  urlProblem,
  webhookPayload,
} from "../../src/domain/webhook.js";

function problems(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ValidationFailed, String(error));
    return error.messages;
  }
  assert.fail("expected a ValidationFailed");
}

describe("webhook document", () => {
  it("reads url, event types (in the stream's order, once each) and enabled", () => {
    const changes = readWebhookChanges(
      {
        url: " https://hooks.example.com/bridgeline?k=1 ",
        "event-types": ["conference-ended", "attendee-added", "conference-ended"],
        enabled: "false",
      },
      "create",
    );
    assert.deepEqual(changes, {
      url: "https://hooks.example.com/bridgeline?k=1",
      eventTypes: ["conference-ended", "attendee-added"],
      enabled: false,
    });
    assert.deepEqual(readWebhookChanges({ url: "http://a.example", "event-types": null }, "create"), {
      url: "http://a.example/",
      eventTypes: null,
    });
    assert.deepEqual(readWebhookChanges({ enabled: "true" }, "update"), { enabled: true });
  });

  it("reports every problem at once", () => {
    assert.deepEqual(
      problems(() => readWebhookChanges({ "event-types": [], enabled: "maybe" }, "create")),
      [
        "url can't be blank",
        'event-types names no event type: leave it out, or send it nil="true", for every type',
        'enabled must be true or false, got "maybe"',
      ],
    );
    const [unknown] = problems(() =>
      readWebhookChanges(
        { url: "https://a.example", "event-types": ["call-made", "attendee-added"] },
        "create",
      ),
    );
    assert.match(
      unknown ?? "",
      /^event-types: "call-made" is not an event type; the types are conference-started, /,
    );
    assert.deepEqual(
      problems(() => readWebhookChanges({ url: "x".repeat(2049) }, "update")),
      ["url is too long (maximum is 2048 characters)"],
    );
  });

  it("takes http and https URLs without credentials", () => {
    assert.equal(urlProblem("https://hooks.example.com:8443/in"), undefined);
    assert.equal(urlProblem("ftp://example.com/"), "must be an http:// or https:// URL, not ftp:");
    assert.equal(urlProblem("not a url"), 'is not a URL: "not a url"');
    assert.equal(
      urlProblem("https://user:pw@example.com/"),
      "must not carry a user name or password (receivers check the signature instead)",
    );
  });
});

describe("addresses a webhook may not reach", () => {
  const refused: [string, string][] = [
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["10.20.30.40", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "link-local"],
    ["100.64.0.1", "shared (carrier-grade NAT)"],
    ["0.0.0.0", "'this network' (0.0.0.0/8)"],
    ["224.0.0.251", "multicast"],
    ["255.255.255.255", "reserved"],
    ["198.18.0.1", "benchmarking"],
    ["203.0.113.7", "documentation"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fd00::1", "unique local"],
    ["FC12:3456::1", "unique local"],
    ["fe80::1%eth0", "link-local"],
    ["ff02::1", "multicast"],
    ["2001:db8::5", "documentation"],
    ["::ffff:127.0.0.1", "loopback (in an IPv6 address)"],
    ["::ffff:a00:1", "private (in an IPv6 address)"],
    ["64:ff9b::a9fe:a9fe", "link-local (in an IPv6 address)"],
    ["2002:c0a8:101::1", "private (in a 6to4 address)"],
    ["::7f00:1", "IPv4-compatible (deprecated)"],
  ];
  for (const [address, kind] of refused) {
    it(`refuses ${address} (${kind})`, () => {
      assert.equal(refusedAddressKind(address), kind);
    });
  }

  it("lets public addresses through, including IPv4 ones inside IPv6", () => {
    for (const address of [
      "93.184.215.14",
      "8.8.8.8",
      "172.32.0.1",
      "100.128.0.1",
      "2606:4700::6810:84e5",
      "::ffff:8.8.8.8",
      "64:ff9b::808:808",
      "2002:808:808::1",
    ])
      assert.equal(refusedAddressKind(address), undefined, address);
  });
});

describe("deliveries", () => {
  it("sends the Standard Webhooks shape: type, timestamp, data with the event's id", () => {
    const event = {
      id: 42,
      userId: 1,
      conferenceId: 7,
      attendeeId: null,
      type: "conference-ended" as const,
      reason: "moderator hung up",
      encryption: null,
      recovery: null,
      call: null,
      at: "2030-01-01T10:00:00.123Z",
    };
    assert.deepEqual(JSON.parse(webhookPayload(event)), {
      type: "conference-ended",
      timestamp: "2030-01-01T10:00:00.123Z",
      data: { eventId: 42, conferenceId: 7, attendeeId: null, reason: "moderator hung up" },
    });
    assert.ok(!("reason" in JSON.parse(webhookPayload({ ...event, reason: null })).data));
    assert.ok(!("encryption" in JSON.parse(webhookPayload(event)).data));
    const connected = { ...event, type: "attendee-connected" as const, attendeeId: 5, reason: null };
    assert.deepEqual(JSON.parse(webhookPayload({ ...connected, encryption: "tls+srtp" })).data, {
      eventId: 42,
      conferenceId: 7,
      attendeeId: 5,
      encryption: "tls+srtp",
    });
    assert.ok(!("call" in JSON.parse(webhookPayload(event)).data));
    const call = {
      id: 9,
      conferenceId: 7,
      attendeeId: 5,
      durationSeconds: 0,
      direction: "outbound" as const,
      number: "+16045550123",
      route: "sip:carrier.example",
      instance: "a",
      invitedAt: "2030-01-01T09:59:58.000Z",
      answeredAt: null,
      endedAt: "2030-01-01T10:00:00.000Z",
      sipStatus: 486,
      sipReason: "Busy Here",
      cause: { protocol: "Q.850" as const, cause: 17, text: null },
      hungUpBy: null,
      endReason: "486 Busy Here",
      codec: null,
      srtp: false,
      tls: false,
      quality: null,
      callerVerification: null,
    };
    const ended = { ...event, type: "call-ended" as const, attendeeId: 5, reason: "486 Busy Here", call };
    assert.deepEqual(JSON.parse(webhookPayload(ended)).data.call, call, "the call's record, whole");
  });

  it("waits 5 s, 1 min, 5 min, 30 min, 1 h, 2 h, 4 h, 8 h, then tries a last time when the day is up", () => {
    const createdAt = Date.parse("2030-01-01T00:00:00Z");
    let now = createdAt;
    const times: number[] = [];
    for (let attempts = 1; ; attempts++) {
      const next = nextAttemptAt({ createdAt, attempts, now, baseMs: 5000, random: 0 });
      if (next === undefined) break;
      times.push(next - createdAt);
      now = next;
    }
    const minutes = times.map((ms) => ms / 60_000);
    assert.deepEqual(
      minutes.map((m) => Math.round(m * 1000) / 1000),
      [5 / 60, 65 / 60, 365 / 60, 2165 / 60, 5765 / 60, 12965 / 60, 27365 / 60, 56165 / 60, 1440].map(
        (m) => Math.round(m * 1000) / 1000,
      ),
    );
    assert.equal(times.at(-1), DELIVERY_WINDOW_MS, "the last attempt is a day after the event");
    assert.equal(times.length + 1, 10, "ten attempts in all");
  });

  it("adds up to a tenth at random, honours Retry-After up to an hour, and never passes the day", () => {
    const createdAt = 0;
    assert.equal(
      nextAttemptAt({ createdAt, attempts: 2, now: 1000, baseMs: 5000, random: 1 }),
      1000 + 66_000,
    );
    assert.equal(
      nextAttemptAt({ createdAt, attempts: 1, now: 1000, baseMs: 5000, random: 0, retryAfterMs: 120_000 }),
      121_000,
    );
    assert.equal(
      nextAttemptAt({ createdAt, attempts: 1, now: 1000, baseMs: 5000, random: 0, retryAfterMs: 86_400_000 }),
      1000 + 3_600_000,
    );
    const late = DELIVERY_WINDOW_MS - 60_000;
    assert.equal(
      nextAttemptAt({ createdAt, attempts: 8, now: late, baseMs: 5000, random: 0 }),
      DELIVERY_WINDOW_MS,
    );
    assert.equal(
      nextAttemptAt({ createdAt, attempts: 9, now: DELIVERY_WINDOW_MS, baseMs: 5000, random: 0 }),
      undefined,
    );
  });

  it("reads Retry-After as seconds or a date, and sorts outcomes", () => {
    const now = Date.parse("2030-01-01T00:00:00Z");
    assert.equal(retryAfterMs("120", now), 120_000);
    assert.equal(retryAfterMs("Tue, 01 Jan 2030 00:01:00 GMT", now), 60_000);
    assert.equal(retryAfterMs("soon", now), undefined);
    assert.equal(retryAfterMs(undefined, now), undefined);
    assert.equal(attemptResult({ status: 204 }), "delivered");
    assert.equal(attemptResult({ status: 301 }), "failed");
    assert.equal(attemptResult({ status: 500 }), "failed");
    assert.equal(attemptResult({ status: 410 }), "gone");
    assert.equal(attemptResult({ error: "connection refused" }), "failed");
  });
});
