import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { forEachStore } from "../helpers/databases.js";
import { createUser, startTestApi, type TestApi, type TestResponse } from "../helpers/service.js";
import { type Auth, errorsOf, itemsOf, textOf, typesOf, type XmlNode } from "../helpers/xml.js";

const BASIC_TYPES = {
  id: "integer",
  "created-at": "datetime",
  "updated-at": "datetime",
  "lock-version": "integer",
  state: "text",
  name: "text",
  "scheduled-to-start-at": "datetime",
  "started-at": "datetime",
  "ended-at": "datetime",
};

const EXTENDED_TYPES = {
  ...BASIC_TYPES,
  "direct-dial": "boolean",
  "dial-in-locked": "boolean",
  "record-audio": "boolean",
  "lecture-mode": "boolean",
  "encrypted-only": "boolean",
  "accounting-code": "integer",
  "member-pin": "text",
  "moderator-pin": "text",
};

const CREATED_TYPES = {
  ...EXTENDED_TYPES,
  "send-notification-emails": "boolean",
  "announce-attendees": "boolean",
};

/** The boolean options of a conference that both create and update set. */
const FLAGS = ["direct-dial", "dial-in-locked", "record-audio", "lecture-mode", "encrypted-only"];

const EVERY_FIELD = `<?xml version="1.0" encoding="UTF-8"?>
<conference>
  <name>Quarterly Review</name>
  <scheduled-to-start-at>2027-03-01T10:30:00Z</scheduled-to-start-at>
  <direct-dial type="boolean">true</direct-dial>
  <dial-in-locked type="boolean">true</dial-in-locked>
  <record-audio type="boolean">true</record-audio>
  <lecture-mode type="boolean">true</lecture-mode>
  <encrypted-only type="boolean">true</encrypted-only>
  <accounting-code type="integer">4711</accounting-code>
  <send-notification-emails type="boolean">true</send-notification-emails>
  <announce-attendees type="boolean">false</announce-attendees>
  <no-moderator type="boolean">false</no-moderator>
</conference>`;

const OWNER_PHONES = `<time-zone>Eastern Time (US &amp; Canada)</time-zone>
<phone-numbers type="array">
  <phone-number><subscriber-number>604-555-0100</subscriber-number><location>Office</location><extension>12</extension></phone-number>
  <phone-number><subscriber-number>604-555-0199</subscriber-number><location>Mobile</location></phone-number>
</phone-numbers>`;

forEachStore("conferences API", (kind) => {
  let api: TestApi;
  /** Eastern time, two phone numbers. */
  let owner: { id: number; auth: Auth; user: XmlNode };
  /** No phone number and no time zone (UTC). */
  let phoneless: { id: number; auth: Auth };
  let conferencesPath: string;

  before(async () => {
    api = await startTestApi({}, { store: kind });
    const created = await createUser(api, OWNER_PHONES);
    owner = { id: created.id, auth: created.auth, user: created.response.xml.user as XmlNode };
    phoneless = await createUser(api);
    conferencesPath = `/users/${owner.id}/conferences`;
  });
  after(() => api.close());

  const post = (body: string, query = "") =>
    api.request("POST", `${conferencesPath}${query}`, { auth: owner.auth, body });

  /** Creates a conference without the automatic moderator; returns its path and document. */
  async function createConference(
    name: string,
    extra = '<no-moderator type="boolean">true</no-moderator>',
  ): Promise<{ path: string; conference: XmlNode }> {
    const response = await post(
      `<conference><name>${name}</name><scheduled-to-start-at>2027-05-05T12:00:00Z</scheduled-to-start-at>${extra}</conference>`,
    );
    assert.equal(response.status, 201, response.text);
    return { path: response.headers.location as string, conference: response.xml.conference as XmlNode };
  }

  const show = async (conferencePath: string, auth = owner.auth) =>
    (await api.request("GET", conferencePath, { auth })).xml.conference as XmlNode;

  const put = (conferencePath: string, body: string, query = "") =>
    api.request("PUT", `${conferencePath}${query}`, { auth: owner.auth, body });

  const conferenceCount = async () =>
    itemsOf(await api.request("GET", conferencesPath, { auth: owner.auth }), "conferences", "conference")
      .length;

  describe("create with every field", () => {
    let created: TestResponse;
    let conference: XmlNode;
    let location: string;

    before(async () => {
      created = await post(EVERY_FIELD);
      conference = created.xml.conference as XmlNode;
      location = created.headers.location as string;
    });

    it("answers 201 with a Location naming the new conference", () => {
      assert.equal(created.status, 201, created.text);
      assert.equal(location, `${conferencesPath}/${textOf(conference, "id")}`);
    });

    it("carries every extended element with its type, plus the create-only flags, not no-moderator", () => {
      assert.deepEqual(typesOf(conference), CREATED_TYPES);
      assert.equal(textOf(conference, "name"), "Quarterly Review");
      assert.equal(textOf(conference, "state"), "new");
      assert.equal(textOf(conference, "lock-version"), "0");
      assert.equal(textOf(conference, "scheduled-to-start-at"), "2027-03-01T10:30:00Z");
      assert.equal(textOf(conference, "started-at"), null);
      assert.equal(textOf(conference, "ended-at"), null);
      for (const flag of FLAGS) {
        assert.equal(textOf(conference, flag), "true", flag);
      }
      assert.equal(textOf(conference, "accounting-code"), "4711");
      assert.equal(textOf(conference, "send-notification-emails"), "true");
      assert.equal(textOf(conference, "announce-attendees"), "false");
    });

    it("defaults the flags when they are not given", async () => {
      const { conference: defaults } = await createConference("Defaults", "");
      for (const flag of FLAGS) {
        assert.equal(textOf(defaults, flag), "false", flag);
      }
      assert.equal(textOf(defaults, "accounting-code"), null);
      assert.equal(textOf(defaults, "send-notification-emails"), "false");
      assert.equal(textOf(defaults, "announce-attendees"), "true");
    });

    it("show and list carry the extended elements without the create-only flags", async () => {
      const shown = await api.request("GET", location, { auth: owner.auth });
      assert.equal(shown.status, 200);
      const shownConference = shown.xml.conference as XmlNode;
      assert.deepEqual(typesOf(shownConference), EXTENDED_TYPES);
      for (const field of Object.keys(EXTENDED_TYPES)) {
        assert.equal(textOf(shownConference, field), textOf(conference, field), field);
      }
      const listed = itemsOf(
        await api.request("GET", conferencesPath, { auth: owner.auth }),
        "conferences",
        "conference",
      );
      const entry = listed.find((item) => textOf(item, "id") === textOf(conference, "id"));
      assert.ok(entry, "the conference is listed");
      assert.deepEqual(entry, shownConference);
    });

    it("the update response carries the extended elements without the create-only flags", async () => {
      const updated = await put(location, "<conference><name>Quarterly Review (moved)</name></conference>");
      assert.equal(updated.status, 200, updated.text);
      assert.deepEqual(typesOf(updated.xml.conference as XmlNode), EXTENDED_TYPES);
    });
  });

  describe("the owner as moderator", () => {
    const attendeesOf = async (conferencePath: string, auth: Auth) =>
      itemsOf(await api.request("GET", `${conferencePath}/attendees`, { auth }), "attendees", "attendee");

    it("adds the owner as moderator, called at the owner's first phone number", async () => {
      const { path: conferencePath } = await createConference("With Moderator", "");
      const attendees = await attendeesOf(conferencePath, owner.auth);
      assert.equal(attendees.length, 1);
      const [moderator] = attendees as [XmlNode];
      assert.equal(textOf(moderator, "moderator"), "true");
      assert.equal(textOf(moderator, "dial-in"), "false");
      assert.equal(textOf(moderator, "phone-number-subscriber-number"), "6045550100");
      assert.equal(textOf(moderator, "phone-number-country-code"), "1");
      assert.equal(textOf(moderator, "phone-number-extension"), "12");
      assert.equal(textOf(moderator, "phone-number-location"), "Office");
      assert.equal(textOf(moderator, "name"), textOf(owner.user, "name"));
      assert.equal(textOf(moderator, "email"), textOf(owner.user, "email"));
    });

    it("adds a dial-in moderator without a phone when the owner has none", async () => {
      const response = await api.request("POST", `/users/${phoneless.id}/conferences`, {
        auth: phoneless.auth,
        body: "<conference><name>Phoneless</name><scheduled-to-start-at>2027-05-05T12:00:00Z</scheduled-to-start-at></conference>",
      });
      assert.equal(response.status, 201, response.text);
      const attendees = await attendeesOf(response.headers.location as string, phoneless.auth);
      assert.equal(attendees.length, 1);
      const [moderator] = attendees as [XmlNode];
      assert.equal(textOf(moderator, "moderator"), "true");
      assert.equal(textOf(moderator, "dial-in"), "true");
      assert.equal(textOf(moderator, "phone-number-subscriber-number"), null);
    });

    it("adds nobody when no-moderator is true", async () => {
      const { path: conferencePath } = await createConference("No Moderator");
      assert.deepEqual(await attendeesOf(conferencePath, owner.auth), []);
    });
  });

  it("gives every conference distinct digit PINs of at least 6 digits, unlike the user's", async () => {
    const pins: string[] = [];
    for (const name of ["Pins One", "Pins Two"]) {
      const { conference } = await createConference(name);
      const memberPin = textOf(conference, "member-pin") ?? "";
      const moderatorPin = textOf(conference, "moderator-pin") ?? "";
      assert.match(memberPin, /^\d{6,}$/);
      assert.match(moderatorPin, /^\d{6,}$/);
      assert.notEqual(memberPin, moderatorPin);
      pins.push(memberPin, moderatorPin);
    }
    pins.push(textOf(owner.user, "member-pin") ?? "", textOf(owner.user, "moderator-pin") ?? "");
    assert.equal(new Set(pins).size, pins.length, `all distinct: ${pins}`);
  });

  describe("scheduled-to-start-at", () => {
    const startOf = async (expression: string, user: { id: number; auth: Auth } = owner) => {
      const response = await api.request("POST", `/users/${user.id}/conferences`, {
        auth: user.auth,
        body: `<conference><name>Timed</name><scheduled-to-start-at>${expression}</scheduled-to-start-at><no-moderator type="boolean">true</no-moderator></conference>`,
      });
      assert.equal(response.status, 201, response.text);
      return textOf(response.xml.conference as XmlNode, "scheduled-to-start-at");
    };

    it("reads an ISO datetime with an offset or Z as that instant, written in UTC", async () => {
      assert.equal(await startOf("2027-01-15T09:00:00-08:00"), "2027-01-15T17:00:00Z");
      assert.equal(await startOf("2027-01-15T09:00:00+05:30"), "2027-01-15T03:30:00Z");
      assert.equal(await startOf("2027-01-15T09:00:00Z"), "2027-01-15T09:00:00Z");
    });

    it("reads a time without offset in the owner's zone, DST-correct", async () => {
      assert.equal(await startOf("2027-01-15T09:00:00"), "2027-01-15T14:00:00Z");
      assert.equal(await startOf("2027-07-15T09:00:00"), "2027-07-15T13:00:00Z");
    });

    it("reads a time without offset in UTC when the owner has no zone", async () => {
      assert.equal(await startOf("2027-07-15T09:00:00", phoneless), "2027-07-15T09:00:00Z");
    });

    it("answers 422 quoting an unreadable expression and stores nothing", async () => {
      const before = await conferenceCount();
      const expression = "blursday the 45th of Smarch";
      const response = await post(
        `<conference><name>Never</name><scheduled-to-start-at>${expression}</scheduled-to-start-at></conference>`,
      );
      assert.equal(response.status, 422, response.text);
      assert.ok(
        errorsOf(response).some((error) => error.includes(`"${expression}"`)),
        String(errorsOf(response)),
      );
      assert.equal(await conferenceCount(), before);
    });

    it("answers 422 naming name and scheduled-to-start-at when they are missing", async () => {
      const before = await conferenceCount();
      const response = await post("<conference><accounting-code>1</accounting-code></conference>");
      assert.equal(response.status, 422, response.text);
      const errors = errorsOf(response);
      assert.ok(
        errors.some((error) => error.startsWith("name")),
        String(errors),
      );
      assert.ok(
        errors.some((error) => error.startsWith("scheduled-to-start-at")),
        String(errors),
      );
      assert.equal(await conferenceCount(), before);
    });

    it("refuses an unreadable expression on update and keeps the start", async () => {
      const { path: conferencePath } = await createConference("Keeps Start");
      const response = await put(
        conferencePath,
        "<conference><scheduled-to-start-at>whenever</scheduled-to-start-at></conference>",
      );
      assert.equal(response.status, 422, response.text);
      assert.ok(errorsOf(response).some((error) => error.includes('"whenever"')));
      assert.equal(textOf(await show(conferencePath), "scheduled-to-start-at"), "2027-05-05T12:00:00Z");
    });
  });

  describe("state", () => {
    it("moves new to pending; pending again is a no-op", async () => {
      const { path: conferencePath } = await createConference("To Pending");
      const first = await put(conferencePath, "<conference><state>pending</state></conference>");
      assert.equal(first.status, 200, first.text);
      assert.equal(textOf(first.xml.conference as XmlNode, "state"), "pending");
      const again = await put(conferencePath, "<conference><state>pending</state></conference>");
      assert.equal(again.status, 200, again.text);
      assert.equal(textOf(again.xml.conference as XmlNode, "state"), "pending");
      assert.equal(textOf(await show(conferencePath), "state"), "pending");
    });

    it("answers 422 to any other state and changes nothing", async () => {
      const { path: newPath } = await createConference("Stays New");
      const { path: pendingPath } = await createConference("Stays Pending");
      assert.equal((await put(pendingPath, "<conference><state>pending</state></conference>")).status, 200);
      for (const [conferencePath, state] of [
        [newPath, "new"],
        [pendingPath, "pending"],
      ] as const) {
        const before = await show(conferencePath);
        for (const requested of ["started", "ended", "new", "cancelled"]) {
          const response = await put(
            conferencePath,
            `<conference><state>${requested}</state><name>Renamed</name></conference>`,
          );
          assert.equal(response.status, 422, `${state} -> ${requested}: ${response.text}`);
          assert.ok(errorsOf(response).some((error) => error.includes("state")));
        }
        const afterward = await show(conferencePath);
        assert.equal(textOf(afterward, "state"), state);
        assert.deepEqual(afterward, before);
      }
    });
  });

  describe("update", () => {
    it("changes the updatable fields and increments lock-version", async () => {
      const { path: conferencePath, conference: created } = await createConference("Before");
      const response = await put(
        conferencePath,
        `<conference>
          <name>After</name>
          <scheduled-to-start-at>2027-06-01T08:15:00Z</scheduled-to-start-at>
          <direct-dial type="boolean">true</direct-dial>
          <dial-in-locked type="boolean">true</dial-in-locked>
          <record-audio type="boolean">true</record-audio>
          <lecture-mode type="boolean">true</lecture-mode>
          <encrypted-only type="boolean">true</encrypted-only>
          <accounting-code type="integer">99</accounting-code>
        </conference>`,
      );
      assert.equal(response.status, 200, response.text);
      const updated = response.xml.conference as XmlNode;
      assert.equal(textOf(updated, "name"), "After");
      assert.equal(textOf(updated, "scheduled-to-start-at"), "2027-06-01T08:15:00Z");
      for (const flag of FLAGS) {
        assert.equal(textOf(updated, flag), "true", flag);
      }
      assert.equal(textOf(updated, "accounting-code"), "99");
      assert.equal(textOf(updated, "lock-version"), "1");
      assert.equal(textOf(updated, "member-pin"), textOf(created, "member-pin"));
      assert.equal(textOf(updated, "moderator-pin"), textOf(created, "moderator-pin"));
      assert.deepEqual(await show(conferencePath), updated);

      const cleared = await put(conferencePath, '<conference><accounting-code nil="true"/></conference>');
      assert.equal(cleared.status, 200, cleared.text);
      assert.equal(textOf(cleared.xml.conference as XmlNode, "accounting-code"), null);
      assert.equal(textOf(cleared.xml.conference as XmlNode, "lock-version"), "2");
    });

    it("encrypted-only: false by default, true or false only, searchable", async () => {
      const { path: secure } = await createConference(
        "Encrypted Only",
        '<no-moderator type="boolean">true</no-moderator><encrypted-only type="boolean">true</encrypted-only>',
      );
      assert.equal(textOf(await show(secure), "encrypted-only"), "true");
      const refused = await put(
        secure,
        '<conference><encrypted-only type="boolean">maybe</encrypted-only></conference>',
      );
      assert.equal(refused.status, 422, refused.text);
      assert.deepEqual(errorsOf(refused), ['encrypted-only must be true or false, got "maybe"']);
      const names = async (value: string) =>
        itemsOf(
          await api.request("GET", `${conferencesPath}?encrypted_only=${value}`, { auth: owner.auth }),
          "conferences",
          "conference",
        ).map((conference) => textOf(conference, "name"));
      assert.ok((await names("true")).includes("Encrypted Only"));
      assert.ok(!(await names("false")).includes("Encrypted Only"));
      const turnedOff = await put(
        secure,
        '<conference><encrypted-only type="boolean">false</encrypted-only></conference>',
      );
      assert.equal(turnedOff.status, 200, turnedOff.text);
      assert.equal(textOf(await show(secure), "encrypted-only"), "false");
    });

    it("ignores the create-only fields", async () => {
      const { path: conferencePath } = await createConference(
        "Create Only",
        '<send-notification-emails type="boolean">true</send-notification-emails><announce-attendees type="boolean">false</announce-attendees>',
      );
      const response = await put(
        conferencePath,
        `<conference>
          <send-notification-emails type="boolean">false</send-notification-emails>
          <announce-attendees type="boolean">true</announce-attendees>
          <no-moderator type="boolean">true</no-moderator>
        </conference>`,
      );
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(typesOf(response.xml.conference as XmlNode), EXTENDED_TYPES);
      const id = Number(conferencePath.split("/").pop());
      // Create-only flags appear in no response after creation: read them from the database.
      const stored = await api.inspect((db) =>
        db
          .selectFrom("conferences")
          .select(["send_notification_emails", "announce_attendees"])
          .where("id", "=", id)
          .executeTakeFirstOrThrow(),
      );
      assert.deepEqual(
        { send: Boolean(stored.send_notification_emails), announce: Boolean(stored.announce_attendees) },
        { send: true, announce: false },
      );
      const attendees = await api.request("GET", `${conferencePath}/attendees`, { auth: owner.auth });
      const moderators = itemsOf(attendees, "attendees", "attendee").filter(
        (attendee) => textOf(attendee, "moderator") === "true",
      );
      assert.equal(moderators.length, 1, "the owner stays moderator");
    });

    it("answers 409 to a stale lock-version and changes nothing", async () => {
      const { path: conferencePath } = await createConference("Locked");
      const first = await put(
        conferencePath,
        '<conference><lock-version type="integer">0</lock-version><name>Locked v1</name></conference>',
      );
      assert.equal(first.status, 200, first.text);
      assert.equal(textOf(first.xml.conference as XmlNode, "lock-version"), "1");
      const stale = await put(
        conferencePath,
        '<conference><lock-version type="integer">0</lock-version><name>Lost</name><state>pending</state></conference>',
      );
      assert.equal(stale.status, 409, stale.text);
      const shown = await show(conferencePath);
      assert.equal(textOf(shown, "name"), "Locked v1");
      assert.equal(textOf(shown, "state"), "new");
      assert.equal(textOf(shown, "lock-version"), "1");
      const current = await put(
        conferencePath,
        '<conference><lock-version type="integer">1</lock-version><name>Locked v2</name></conference>',
      );
      assert.equal(current.status, 200, current.text);
      assert.equal(textOf(current.xml.conference as XmlNode, "lock-version"), "2");
    });
  });

  it("deletes a conference: 204, then it and its attendees answer 404", async () => {
    const { path: conferencePath, conference } = await createConference("Doomed", "");
    const attendees = itemsOf(
      await api.request("GET", `${conferencePath}/attendees`, { auth: owner.auth }),
      "attendees",
      "attendee",
    );
    assert.equal(attendees.length, 1);
    const attendeePath = `${conferencePath}/attendees/${textOf(attendees[0] as XmlNode, "id")}`;
    assert.equal((await api.request("GET", attendeePath, { auth: owner.auth })).status, 200);

    const deleted = await api.request("DELETE", conferencePath, { auth: owner.auth });
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, "");
    assert.equal((await api.request("GET", conferencePath, { auth: owner.auth })).status, 404);
    assert.equal((await api.request("GET", attendeePath, { auth: owner.auth })).status, 404);
    assert.equal((await api.request("GET", `${conferencePath}/attendees`, { auth: owner.auth })).status, 404);
    assert.equal((await api.request("DELETE", conferencePath, { auth: owner.auth })).status, 404);
    const id = Number(textOf(conference, "id"));
    const remaining = await api.inspect((db) =>
      db.selectFrom("attendees").select("id").where("conference_id", "=", id).execute(),
    );
    assert.deepEqual(remaining, []);
  });

  describe("?representation=basic", () => {
    it("create answers exactly the basic fields and ignores the extended ones in the body", async () => {
      const response = await post(
        `<conference>
          <name>Basic</name>
          <scheduled-to-start-at>2027-02-02T10:00:00Z</scheduled-to-start-at>
          <accounting-code type="integer">77</accounting-code>
          <direct-dial type="boolean">true</direct-dial>
        </conference>`,
        "?representation=basic",
      );
      assert.equal(response.status, 201, response.text);
      const conference = response.xml.conference as XmlNode;
      assert.deepEqual(typesOf(conference), BASIC_TYPES);
      assert.equal(textOf(conference, "name"), "Basic");
      assert.equal(textOf(conference, "scheduled-to-start-at"), "2027-02-02T10:00:00Z");
      const extended = await show(response.headers.location as string);
      assert.equal(textOf(extended, "accounting-code"), null);
      assert.equal(textOf(extended, "direct-dial"), "false");
    });

    it("show, list and update answer exactly the basic fields", async () => {
      const { path: conferencePath } = await createConference("Basic Views");
      const shown = await api.request("GET", `${conferencePath}?representation=basic`, { auth: owner.auth });
      assert.equal(shown.status, 200);
      assert.deepEqual(typesOf(shown.xml.conference as XmlNode), BASIC_TYPES);

      const listed = itemsOf(
        await api.request("GET", `${conferencesPath}?representation=basic`, { auth: owner.auth }),
        "conferences",
        "conference",
      );
      assert.ok(listed.length > 0);
      for (const conference of listed) assert.deepEqual(typesOf(conference), BASIC_TYPES);

      const updated = await put(
        conferencePath,
        `<conference>
          <name>Basic Renamed</name>
          <scheduled-to-start-at>2027-02-03T10:00:00Z</scheduled-to-start-at>
          <accounting-code type="integer">5</accounting-code>
        </conference>`,
        "?representation=basic",
      );
      assert.equal(updated.status, 200, updated.text);
      const conference = updated.xml.conference as XmlNode;
      assert.deepEqual(typesOf(conference), BASIC_TYPES);
      assert.equal(textOf(conference, "name"), "Basic Renamed");
      assert.equal(textOf(conference, "scheduled-to-start-at"), "2027-02-03T10:00:00Z");
      assert.equal(textOf(await show(conferencePath), "accounting-code"), null);
    });

    it("answers 400 to a representation other than basic or extended, and creates nothing", async () => {
      const { path: conferencePath } = await createConference("Bad Representation");
      const before = await conferenceCount();
      const responses = [
        await api.request("GET", `${conferencePath}?representation=full`, { auth: owner.auth }),
        await api.request("GET", `${conferencesPath}?representation=full`, { auth: owner.auth }),
        await post(
          "<conference><name>X</name><scheduled-to-start-at>2027-02-02T10:00:00Z</scheduled-to-start-at></conference>",
          "?representation=full",
        ),
        await put(conferencePath, "<conference><name>X</name></conference>", "?representation=full"),
      ];
      for (const response of responses) {
        assert.equal(response.status, 400, response.text);
        assert.ok(errorsOf(response).some((error) => error.includes("representation")));
      }
      assert.equal(await conferenceCount(), before);
      assert.equal(textOf(await show(conferencePath), "name"), "Bad Representation");
    });
  });

  it("answers paths with a .xml suffix, also before a query string", async () => {
    const { path: conferencePath } = await createConference("Suffix xylophone");
    const shown = await api.request("GET", `${conferencePath}.xml`, { auth: owner.auth });
    assert.equal(shown.status, 200, shown.text);
    assert.equal(textOf(shown.xml.conference as XmlNode, "name"), "Suffix xylophone");

    const listed = itemsOf(
      await api.request("GET", `/users/${owner.id}/conferences.xml?name_contains=xylophone`, {
        auth: owner.auth,
      }),
      "conferences",
      "conference",
    );
    assert.deepEqual(
      listed.map((conference) => textOf(conference, "name")),
      ["Suffix xylophone"],
    );
  });
});
