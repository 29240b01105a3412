import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Static, Type } from "@sinclair/typebox";
import { XMLValidator } from "fast-xml-parser";
import { documentType, readJsonInput } from "../../src/api/documents.js";
import {
  attendeeDocument,
  callDocument,
  conferenceDocument,
  Documents,
  userDocument,
  webhookDocument,
} from "../../src/api/representations.js";
import { errorsDocument, MAX_ELEMENT_DEPTH, parseDocument } from "../../src/api/xml.js";
import type { Attendee } from "../../src/domain/attendee.js";
import type { CallRecord } from "../../src/domain/call-record.js";
import type { Conference } from "../../src/domain/conference.js";
import { BadRequest, ValidationFailed } from "../../src/domain/errors.js";
import type { User } from "../../src/domain/user.js";
import type { Webhook } from "../../src/domain/webhook.js";

describe("documentType", () => {
  const Phone = Type.Object({ id: Type.Integer() }, { xml: { name: "phone-number" } });
  const Sample = Type.Object(
    {
      id: Type.Integer(),
      name: Type.Union([Type.String(), Type.Null()]),
      im: Type.Union([Type.String(), Type.Null()]),
      "started-at": Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
      "created-at": Type.String({ format: "date-time" }),
      "terms-of-service": Type.Boolean(),
      mos: Type.Union([Type.Number(), Type.Null()]),
      "credit-card": Type.Union([Type.Object({ brand: Type.String() }), Type.Null()]),
      address: Type.Union([Type.Object({ country: Type.String() }), Type.Null()]),
      "phone-numbers": Type.Array(Phone),
      contacts: Type.Array(Phone),
      tags: Type.Union([Type.Array(Type.String({ xml: { name: "tag" } })), Type.Null()]),
      secret: Type.Optional(Type.String()),
    },
    { xml: { name: "user" } },
  );
  const sample = documentType<Static<typeof Sample>>(Sample);
  const value: Static<typeof Sample> = {
    id: 7,
    name: "Ann",
    im: null,
    "started-at": null,
    "created-at": "2026-11-21T10:00:05Z",
    "terms-of-service": true,
    mos: 4.25,
    "credit-card": null,
    address: { country: "CA" },
    "phone-numbers": [{ id: 1 }, { id: 2 }],
    contacts: [],
    tags: null,
  };

  it("writes Rails-style typed, nil, nested and array elements, indented, from the schema", () => {
    assert.equal(
      sample.xml(value),
      `<?xml version="1.0" encoding="UTF-8"?>
<user>
  <id type="integer">7</id>
  <name>Ann</name>
  <im nil="true"/>
  <started-at type="datetime" nil="true"/>
  <created-at type="datetime">2026-11-21T10:00:05Z</created-at>
  <terms-of-service type="boolean">true</terms-of-service>
  <mos type="float">4.25</mos>
  <credit-card nil="true"/>
  <address>
    <country>CA</country>
  </address>
  <phone-numbers type="array">
    <phone-number>
      <id type="integer">1</id>
    </phone-number>
    <phone-number>
      <id type="integer">2</id>
    </phone-number>
  </phone-numbers>
  <contacts type="array"/>
  <tags type="array" nil="true"/>
</user>
`,
    );
  });

  it("writes the same document as JSON with native types, and an optional field only when given", () => {
    assert.deepEqual(JSON.parse(sample.json({ ...value, secret: "s" })), { ...value, secret: "s" });
    assert.doesNotMatch(sample.xml(value), /secret/);
    assert.match(sample.xml({ ...value, secret: "s" }), /<secret>s<\/secret>\n<\/user>/);
  });

  it("escapes markup in text, and reads back what it wrote", () => {
    const name = 'Pacific Time (US & Canada) <b> "quoted" & more';
    const document = sample.xml({ ...value, name });
    assert.match(document, /<name>Pacific Time \(US &amp; Canada\) &lt;b&gt; "quoted" &amp; more<\/name>/);
    assert.equal(parseDocument(document, "user").name, name);
  });

  it("writes characters XML 1.0 forbids, stored before they were refused, as U+FFFD", () => {
    const document = sample.xml({ ...value, name: "a\u0000b\u001Fc\uFFFEd\uD800e\u{1F600}" });
    assert.equal(XMLValidator.validate(document), true);
    assert.match(document, /<name>a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\u{1F600}<\/name>/u);
    assert.match(errorsDocument(["x\u000By <"]), /<error>x\uFFFDy &lt;<\/error>/);
  });
});

describe("readJsonInput", () => {
  const Write = Type.Object(
    {
      name: Type.Union([Type.String(), Type.Null()]),
      count: Type.Optional(Type.Integer()),
      on: Type.Optional(Type.Boolean()),
      card: Type.Optional(Type.Object({ month: Type.Integer() })),
    },
    { xml: { name: "thing" } },
  );

  it("gives the domain the text the XML reader would, null for null, unknown fields passed on", () => {
    assert.deepEqual(
      readJsonInput(
        { name: "A", count: 3, on: false, card: { month: 12 }, other: 1.5, list: [true] },
        Write,
        "thing",
      ),
      { name: "A", count: "3", on: "false", card: { month: "12" }, other: "1.5", list: ["true"] },
    );
    assert.deepEqual(readJsonInput({ name: null }, Write, "thing"), { name: null });
  });

  it("refuses a JSON type other than the field's, naming every field (422)", () => {
    assert.throws(
      () => readJsonInput({ name: 5, count: "3", on: "true", card: { month: "x" } }, Write, "thing"),
      (error: ValidationFailed) => {
        assert.ok(error instanceof ValidationFailed);
        assert.deepEqual(error.messages, [
          "name must be a string or null, not a number",
          "count must be an integer (a JSON number), not a string",
          "on must be true or false, not a string",
          "card month must be an integer (a JSON number), not a string",
        ]);
        return true;
      },
    );
  });

  it("refuses a body that is not an object, or the fields wrapped in the root's name (400)", () => {
    for (const body of [[], "x", 3, null])
      assert.throws(() => readJsonInput(body, Write, "thing"), BadRequest);
    assert.throws(
      () => readJsonInput({ thing: { name: "A" } }, Write, "thing"),
      (error: BadRequest) => /at the top level/.test(error.messages[0] ?? ""),
    );
  });
});

/*
 * The XML of real resources, byte for byte as the service wrote it before its documents were
 * described as schemas (checked against the former builders): the contract of the original API.
 */
describe("the resources' XML", () => {
  const conference = {
    id: 7,
    userId: 3,
    createdAt: "2026-11-21T10:00:05.123Z",
    updatedAt: "2026-11-21T10:01:00.000Z",
    lockVersion: 2,
    name: "Weekly <sync> & review",
    state: "ended",
    scheduledToStartAt: "2026-12-01T17:30:00.000Z",
    startedAt: "2026-12-01T17:30:02.500Z",
    endedAt: "2026-12-01T18:00:00.000Z",
    directDial: false,
    dialInLocked: true,
    recordAudio: true,
    lectureMode: false,
    encryptedOnly: false,
    accountingCode: null,
    memberPin: "123456",
    moderatorPin: "654321",
    sendNotificationEmails: true,
    announceAttendees: false,
  };
  const attendee = {
    id: 11,
    conferenceId: 7,
    createdAt: "2026-11-21T10:00:05.000Z",
    updatedAt: "2026-11-21T10:00:05.000Z",
    lockVersion: 0,
    state: "disconnected",
    phoneNumberCountryCode: "1",
    phoneNumberSubscriberNumber: "6045550101",
    phoneNumberExtension: null,
    phoneNumberLocation: "",
    moderator: false,
    muted: true,
    handUp: null,
    dialIn: false,
    name: "Ann",
    email: null,
    duration: 1799,
    encryption: "tls+srtp",
  };
  const call = {
    id: 5,
    conferenceId: 7,
    attendeeId: 11,
    direction: "outbound",
    number: "+16045550101",
    route: "default",
    instance: "a",
    invitedAt: "2026-12-01T17:30:00.250Z",
    answeredAt: "2026-12-01T17:30:03.000Z",
    endedAt: "2026-12-01T18:00:00.000Z",
    durationSeconds: 1797,
    sipStatus: 200,
    sipReason: "OK",
    cause: { protocol: "Q.850", cause: 16, text: null },
    hungUpBy: "service",
    endReason: "the conference ended",
    codec: "opus",
    srtp: true,
    tls: true,
    quality: {
      packetsSent: 89850,
      packetsReceived: 89700,
      lossShare: 0.0016694490818,
      remoteLossShare: null,
      jitterMs: 3.08,
      remoteJitterMs: 0,
      roundTripMs: 12.05,
      concealmentShare: 0.0001,
      mos: 4.4012,
    },
    callerVerification: null,
  };
  const user = {
    id: 3,
    createdAt: "2026-11-21T10:00:05.000Z",
    updatedAt: "2026-11-21T10:00:05.000Z",
    lockVersion: 1,
    name: "Pat",
    email: "pat@example.com",
    im: null,
    imNetwork: null,
    timeZone: "Pacific Time (US & Canada)",
    memberPin: "111111",
    moderatorPin: "222222",
    termsOfService: true,
    creditCard: {
      id: 1,
      createdAt: "2026-11-21T10:00:05.000Z",
      updatedAt: "2026-11-21T10:00:05.000Z",
      lockVersion: 0,
      name: "Pat",
      expiryMonth: 12,
      expiryYear: 2030,
      brand: "visa",
      lastFour: "4242",
    },
    address: null,
    phoneNumbers: [
      {
        id: 4,
        createdAt: "2026-11-21T10:00:05.000Z",
        updatedAt: "2026-11-21T10:00:05.000Z",
        lockVersion: 0,
        countryCode: 1,
        subscriberNumber: "6045550100",
        location: "Office",
        extension: null,
      },
    ],
  };
  const webhook = {
    id: 2,
    userId: 3,
    createdAt: "2026-11-21T10:00:05.000Z",
    updatedAt: "2026-11-21T10:00:05.000Z",
    lockVersion: 0,
    url: "https://example.com/hook?a=1&b=2",
    eventTypes: ["conference-started", "call-ended"],
    enabled: true,
    disabledAt: null,
    disabledReason: null,
  };

  it("writes a created conference, an attendee, a call record, a user and a webhook as before", () => {
    assert.equal(
      Documents.conference.xml(conferenceDocument(conference as Conference, true)),
      `<?xml version="1.0" encoding="UTF-8"?>
<conference>
  <id type="integer">7</id>
  <created-at type="datetime">2026-11-21T10:00:05Z</created-at>
  <updated-at type="datetime">2026-11-21T10:01:00Z</updated-at>
  <lock-version type="integer">2</lock-version>
  <state>ended</state>
  <name>Weekly &lt;sync&gt; &amp; review</name>
  <scheduled-to-start-at type="datetime">2026-12-01T17:30:00Z</scheduled-to-start-at>
  <started-at type="datetime">2026-12-01T17:30:02Z</started-at>
  <ended-at type="datetime">2026-12-01T18:00:00Z</ended-at>
  <direct-dial type="boolean">false</direct-dial>
  <dial-in-locked type="boolean">true</dial-in-locked>
  <record-audio type="boolean">true</record-audio>
  <lecture-mode type="boolean">false</lecture-mode>
  <encrypted-only type="boolean">false</encrypted-only>
  <accounting-code type="integer" nil="true"/>
  <member-pin>123456</member-pin>
  <moderator-pin>654321</moderator-pin>
  <send-notification-emails type="boolean">true</send-notification-emails>
  <announce-attendees type="boolean">false</announce-attendees>
</conference>
`,
    );
    assert.equal(
      Documents.attendee.xml(attendeeDocument(attendee as Attendee)),
      `<?xml version="1.0" encoding="UTF-8"?>
<attendee>
  <id type="integer">11</id>
  <created-at type="datetime">2026-11-21T10:00:05Z</created-at>
  <updated-at type="datetime">2026-11-21T10:00:05Z</updated-at>
  <lock-version type="integer">0</lock-version>
  <state>disconnected</state>
  <phone-number-subscriber-number>6045550101</phone-number-subscriber-number>
  <phone-number-country-code>1</phone-number-country-code>
  <phone-number-extension nil="true"/>
  <phone-number-location/>
  <moderator type="boolean">false</moderator>
  <muted type="boolean">true</muted>
  <hand-up type="boolean" nil="true"/>
  <dial-in type="boolean">false</dial-in>
  <name>Ann</name>
  <email nil="true"/>
  <duration type="integer">1799</duration>
  <encryption>tls+srtp</encryption>
</attendee>
`,
    );
    assert.equal(
      Documents.calls.xml([callDocument(call as CallRecord)]),
      `<?xml version="1.0" encoding="UTF-8"?>
<calls type="array">
  <call>
    <id type="integer">5</id>
    <conference-id type="integer">7</conference-id>
    <attendee-id type="integer">11</attendee-id>
    <direction>outbound</direction>
    <number>+16045550101</number>
    <route>default</route>
    <instance>a</instance>
    <invited-at type="datetime">2026-12-01T17:30:00Z</invited-at>
    <answered-at type="datetime">2026-12-01T17:30:03Z</answered-at>
    <ended-at type="datetime">2026-12-01T18:00:00Z</ended-at>
    <duration type="integer">1797</duration>
    <sip-status type="integer">200</sip-status>
    <sip-reason>OK</sip-reason>
    <cause>
      <protocol>Q.850</protocol>
      <code type="integer">16</code>
      <text nil="true"/>
    </cause>
    <hung-up-by>service</hung-up-by>
    <end-reason>the conference ended</end-reason>
    <codec>opus</codec>
    <srtp type="boolean">true</srtp>
    <tls type="boolean">true</tls>
    <quality>
      <packets-sent type="integer">89850</packets-sent>
      <packets-received type="integer">89700</packets-received>
      <loss-share type="float">0.0017</loss-share>
      <remote-loss-share type="float" nil="true"/>
      <jitter-ms type="float">3.1</jitter-ms>
      <remote-jitter-ms type="float">0</remote-jitter-ms>
      <round-trip-ms type="float">12.1</round-trip-ms>
      <concealment-share type="float">0.0001</concealment-share>
      <mos type="float">4.4</mos>
    </quality>
    <caller-verification nil="true"/>
  </call>
</calls>
`,
    );
    assert.equal(
      Documents.user.xml(userDocument(user as User)),
      `<?xml version="1.0" encoding="UTF-8"?>
<user>
  <id type="integer">3</id>
  <created-at type="datetime">2026-11-21T10:00:05Z</created-at>
  <updated-at type="datetime">2026-11-21T10:00:05Z</updated-at>
  <lock-version type="integer">1</lock-version>
  <name>Pat</name>
  <email>pat@example.com</email>
  <im nil="true"/>
  <im-network nil="true"/>
  <time-zone>Pacific Time (US &amp; Canada)</time-zone>
  <member-pin>111111</member-pin>
  <moderator-pin>222222</moderator-pin>
  <terms-of-service type="boolean">true</terms-of-service>
  <credit-card>
    <id type="integer">1</id>
    <created-at type="datetime">2026-11-21T10:00:05Z</created-at>
    <updated-at type="datetime">2026-11-21T10:00:05Z</updated-at>
    <lock-version type="integer">0</lock-version>
    <name>Pat</name>
    <expiry-month type="integer">12</expiry-month>
    <expiry-year type="integer">2030</expiry-year>
    <brand>visa</brand>
    <last-four-digits>4242</last-four-digits>
  </credit-card>
  <address nil="true"/>
  <phone-numbers type="array">
    <phone-number>
      <id type="integer">4</id>
      <created-at type="datetime">2026-11-21T10:00:05Z</created-at>
      <updated-at type="datetime">2026-11-21T10:00:05Z</updated-at>
      <lock-version type="integer">0</lock-version>
      <country-code type="integer">1</country-code>
      <subscriber-number>6045550100</subscriber-number>
      <location>Office</location>
      <extension nil="true"/>
    </phone-number>
  </phone-numbers>
</user>
`,
    );
    assert.equal(
      Documents.webhook.xml(webhookDocument(webhook as Webhook, "whsec_x")),
      `<?xml version="1.0" encoding="UTF-8"?>
<webhook>
  <id type="integer">2</id>
  <created-at type="datetime">2026-11-21T10:00:05Z</created-at>
  <updated-at type="datetime">2026-11-21T10:00:05Z</updated-at>
  <lock-version type="integer">0</lock-version>
  <url>https://example.com/hook?a=1&amp;b=2</url>
  <event-types type="array">
    <event-type>conference-started</event-type>
    <event-type>call-ended</event-type>
  </event-types>
  <enabled type="boolean">true</enabled>
  <disabled-at type="datetime" nil="true"/>
  <disabled-reason nil="true"/>
  <secret>whsec_x</secret>
</webhook>
`,
    );
  });
});

describe("parseDocument", () => {
  it("reads text, nil, empty elements, arrays of one and many, and character references", () => {
    const input = parseDocument(
      `<?xml version="1.0"?><user><name>A &amp; B &#233;&#x41;</name><im nil="true"/><e/>
        <one type="array"><p><id>1</id></p></one><many type="array"><p><id>1</id></p><p><id>2</id></p></many></user>`,
      "user",
    );
    assert.deepEqual(input, {
      name: "A & B éA",
      im: null,
      e: "",
      one: [{ id: "1" }],
      many: [{ id: "1" }, { id: "2" }],
    });
  });

  it("refuses a wrong root, malformed XML and any DOCTYPE", () => {
    assert.throws(() => parseDocument("<contact/>", "user"), /root element must be <user>/);
    assert.throws(() => parseDocument("<user><name>x</user>", "user"), /malformed XML/);
    assert.throws(() => parseDocument('<!DOCTYPE user [<!ENTITY a "b">]><user/>', "user"), /DOCTYPE/);
  });

  it("refuses elements nested deeper than any document holds as a bad request (it was a 500)", () => {
    const deep = `<user><name>${"<a>".repeat(MAX_ELEMENT_DEPTH)}x${"</a>".repeat(MAX_ELEMENT_DEPTH)}</name></user>`;
    assert.throws(
      () => parseDocument(deep, "user"),
      (error) => error instanceof BadRequest && /nested/.test(error.messages.join()),
    );
    const deepest = `<user>${"<a>".repeat(MAX_ELEMENT_DEPTH - 1)}x${"</a>".repeat(MAX_ELEMENT_DEPTH - 1)}</user>`;
    assert.deepEqual(Object.keys(parseDocument(deepest, "user")), ["a"]);
  });
});
