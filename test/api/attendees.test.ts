import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { forEachStore } from "../helpers/databases.js";
import { createUser, startTestApi, type TestApi } from "../helpers/service.js";
import { type Auth, errorsOf, itemsOf, textOf, typesOf, type XmlNode } from "../helpers/xml.js";

const EXTENDED_TYPES = {
  id: "integer",
  "created-at": "datetime",
  "updated-at": "datetime",
  "lock-version": "integer",
  state: "text",
  "phone-number-subscriber-number": "text",
  "phone-number-country-code": "text",
  "phone-number-extension": "text",
  "phone-number-location": "text",
  moderator: "boolean",
  muted: "boolean",
  "hand-up": "boolean",
  "dial-in": "boolean",
  name: "text",
  email: "text",
  duration: "integer",
  encryption: "text",
};

const BASIC_TYPES = {
  id: "integer",
  "created-at": "datetime",
  "updated-at": "datetime",
  "lock-version": "integer",
  state: "text",
  "phone-number": "text",
  moderator: "boolean",
  duration: "integer",
};

forEachStore("attendees API", (kind) => {
  let api: TestApi;
  let userId: number;
  let auth: Auth;

  before(async () => {
    api = await startTestApi({}, { store: kind });
    ({ id: userId, auth } = await createUser(api));
  });
  after(() => api.close());

  /** A conference without the owner as moderator, so each test controls its attendees. */
  async function newConference(): Promise<string> {
    const response = await api.request("POST", `/users/${userId}/conferences`, {
      auth,
      body: `<conference><name>Call</name><scheduled-to-start-at>2027-04-01T15:00:00Z</scheduled-to-start-at><no-moderator type="boolean">true</no-moderator></conference>`,
    });
    assert.equal(response.status, 201, response.text);
    return `${response.headers.location}/attendees`;
  }

  const post = (attendeesPath: string, body: string, query = "") =>
    api.request("POST", `${attendeesPath}${query}`, { auth, body });

  async function createAttendee(
    attendeesPath: string,
    body: string,
  ): Promise<{ path: string; attendee: XmlNode }> {
    const response = await post(attendeesPath, body);
    assert.equal(response.status, 201, response.text);
    return { path: response.headers.location as string, attendee: response.xml.attendee as XmlNode };
  }

  const show = async (attendeePath: string) =>
    (await api.request("GET", attendeePath, { auth })).xml.attendee as XmlNode;

  const put = (attendeePath: string, body: string, query = "") =>
    api.request("PUT", `${attendeePath}${query}`, { auth, body });

  const countAt = async (attendeesPath: string) =>
    itemsOf(await api.request("GET", attendeesPath, { auth }), "attendees", "attendee").length;

  /** Posts a body that must be refused with 422 naming `field`, and checks nothing was stored. */
  async function assertRefused(attendeesPath: string, body: string, field: string): Promise<void> {
    const before = await countAt(attendeesPath);
    const response = await post(attendeesPath, body);
    assert.equal(response.status, 422, response.text);
    assert.ok(
      errorsOf(response).some((error) => error.includes(field)),
      `an error naming ${field}: ${errorsOf(response)}`,
    );
    assert.equal(await countAt(attendeesPath), before, "nothing is stored");
  }

  describe("create", () => {
    let attendeesPath: string;
    before(async () => {
      attendeesPath = await newConference();
    });

    it("refuses numbers a conference may not call (toll fraud): premium rate, N11, directory assistance", async () => {
      for (const [number, why] of [
        ["1-900-555-0123", "premium-rate numbers (900, 976) are not called"],
        ["(604) 976-0123", "premium-rate numbers (900, 976) are not called"],
        ["604-555-1212", "directory assistance (555-1212) is not called"],
      ]) {
        await assertRefused(
          attendeesPath,
          `<attendee><phone-number>${number}</phone-number></attendee>`,
          `phone-number "${number}" cannot be called: ${why}`,
        );
      }
    });

    it("normalizes common spellings of a North American number to 10 digits with country code 1", async () => {
      for (const spelling of ["604-555-0100", "(604) 555 0100", "+1 604 555 0100"]) {
        const response = await post(
          attendeesPath,
          `<attendee><phone-number>${spelling}</phone-number></attendee>`,
        );
        assert.equal(response.status, 201, `${spelling}: ${response.text}`);
        const attendee = response.xml.attendee as XmlNode;
        assert.equal(response.headers.location, `${attendeesPath}/${textOf(attendee, "id")}`);
        assert.equal(textOf(attendee, "phone-number-subscriber-number"), "6045550100", spelling);
        assert.equal(textOf(attendee, "phone-number-country-code"), "1", spelling);
      }
    });

    it("answers every extended element with its type; muted, hand-up and duration nil", async () => {
      const response = await post(
        attendeesPath,
        `<attendee>
          <phone-number>604 555 0142</phone-number>
          <extension>1234#,,9w*</extension>
          <phone-number-location>Boardroom</phone-number-location>
          <name>Grace Hopper</name>
          <email>grace@example.com</email>
          <dial-in type="boolean">false</dial-in>
          <moderator type="boolean">false</moderator>
        </attendee>`,
      );
      assert.equal(response.status, 201, response.text);
      const attendee = response.xml.attendee as XmlNode;
      assert.deepEqual(typesOf(attendee), EXTENDED_TYPES);
      assert.equal(textOf(attendee, "state"), "new");
      assert.equal(textOf(attendee, "lock-version"), "0");
      assert.equal(textOf(attendee, "phone-number-subscriber-number"), "6045550142");
      assert.equal(textOf(attendee, "phone-number-extension"), "1234#,,9w*");
      assert.equal(textOf(attendee, "phone-number-location"), "Boardroom");
      assert.equal(textOf(attendee, "name"), "Grace Hopper");
      assert.equal(textOf(attendee, "email"), "grace@example.com");
      assert.equal(textOf(attendee, "moderator"), "false");
      assert.equal(textOf(attendee, "dial-in"), "false");
      assert.equal(textOf(attendee, "muted"), null);
      assert.equal(textOf(attendee, "hand-up"), null);
      assert.equal(textOf(attendee, "encryption"), null, "nil until connected");
      assert.equal(textOf(attendee, "duration"), null);

      const shown = await api.request("GET", response.headers.location as string, { auth });
      assert.equal(shown.status, 200);
      assert.equal(shown.text, response.text);
    });

    it("leaves name, email, extension and location nil when not supplied", async () => {
      const { attendee } = await createAttendee(
        attendeesPath,
        "<attendee><phone-number>6045550143</phone-number></attendee>",
      );
      for (const field of ["name", "email", "phone-number-extension", "phone-number-location"]) {
        assert.equal(textOf(attendee, field), null, field);
      }
      assert.equal(textOf(attendee, "moderator"), "false");
      assert.equal(textOf(attendee, "dial-in"), "false");
    });

    it("accepts a dial-in attendee without a phone number", async () => {
      const { attendee } = await createAttendee(
        attendeesPath,
        '<attendee><dial-in type="boolean">true</dial-in><name>Caller</name></attendee>',
      );
      assert.deepEqual(typesOf(attendee), EXTENDED_TYPES);
      assert.equal(textOf(attendee, "dial-in"), "true");
      assert.equal(textOf(attendee, "phone-number-subscriber-number"), null);
      assert.equal(textOf(attendee, "state"), "new");
    });

    it("refuses a missing phone number unless dial-in is true", async () => {
      await assertRefused(attendeesPath, "<attendee><name>Nobody</name></attendee>", "phone-number");
      await assertRefused(
        attendeesPath,
        '<attendee><dial-in type="boolean">false</dial-in><phone-number>  </phone-number></attendee>',
        "phone-number",
      );
    });

    it("refuses numbers outside North America and invalid ones", async () => {
      await assertRefused(
        attendeesPath,
        "<attendee><phone-number>+44 20 7946 0958</phone-number></attendee>",
        "+44 20 7946 0958",
      );
      await assertRefused(
        attendeesPath,
        "<attendee><phone-number>555-0100</phone-number></attendee>",
        "phone-number",
      );
      await assertRefused(
        attendeesPath,
        "<attendee><phone-number>call me</phone-number></attendee>",
        "phone-number",
      );
    });

    it("refuses an extension with other characters than digits, *, #, comma and w", async () => {
      await assertRefused(
        attendeesPath,
        "<attendee><phone-number>6045550100</phone-number><extension>12a</extension></attendee>",
        "extension",
      );
      await assertRefused(
        attendeesPath,
        "<attendee><phone-number>6045550100</phone-number><extension>1 2</extension></attendee>",
        "extension",
      );
    });

    it("refuses an invalid e-mail and strings over 255 characters", async () => {
      await assertRefused(
        attendeesPath,
        "<attendee><phone-number>6045550100</phone-number><email>not-an-address</email></attendee>",
        "email",
      );
      await assertRefused(
        attendeesPath,
        `<attendee><phone-number>6045550100</phone-number><name>${"n".repeat(256)}</name></attendee>`,
        "name",
      );
    });
  });

  describe("moderator", () => {
    it("refuses a second moderator on create and on update", async () => {
      const attendeesPath = await newConference();
      const { path: moderatorPath } = await createAttendee(
        attendeesPath,
        '<attendee><phone-number>6045550100</phone-number><moderator type="boolean">true</moderator></attendee>',
      );
      await assertRefused(
        attendeesPath,
        '<attendee><phone-number>6045550101</phone-number><moderator type="boolean">true</moderator></attendee>',
        "moderator",
      );

      const { path: memberPath } = await createAttendee(
        attendeesPath,
        "<attendee><phone-number>6045550102</phone-number></attendee>",
      );
      const promoted = await put(
        memberPath,
        '<attendee><moderator type="boolean">true</moderator></attendee>',
      );
      assert.equal(promoted.status, 422, promoted.text);
      assert.ok(errorsOf(promoted).some((error) => error.includes("moderator")));
      const member = await show(memberPath);
      assert.equal(textOf(member, "moderator"), "false");
      assert.equal(textOf(member, "lock-version"), "0");

      // The moderator itself may say so again; once demoted, another may take the role.
      const same = await put(
        moderatorPath,
        '<attendee><moderator type="boolean">true</moderator></attendee>',
      );
      assert.equal(same.status, 200, same.text);
      const demoted = await put(
        moderatorPath,
        '<attendee><moderator type="boolean">false</moderator></attendee>',
      );
      assert.equal(demoted.status, 200, demoted.text);
      const handedOver = await put(
        memberPath,
        '<attendee><moderator type="boolean">true</moderator></attendee>',
      );
      assert.equal(handedOver.status, 200, handedOver.text);
      assert.equal(textOf(handedOver.xml.attendee as XmlNode, "moderator"), "true");
    });
  });

  it("refuses the 251st attendee of a conference", async () => {
    const attendeesPath = await newConference();
    for (let index = 0; index < 250; index++) {
      const subscriber = `604555${String(index).padStart(4, "0")}`;
      const response = await post(
        attendeesPath,
        `<attendee><phone-number>${subscriber}</phone-number></attendee>`,
      );
      assert.equal(response.status, 201, `attendee ${index + 1}: ${response.text}`);
    }
    const refused = await post(attendeesPath, "<attendee><phone-number>6045559999</phone-number></attendee>");
    assert.equal(refused.status, 422, refused.text);
    assert.ok(
      errorsOf(refused).some((error) => error.includes("250")),
      String(errorsOf(refused)),
    );
    assert.equal(await countAt(attendeesPath), 250);
    // A dial-in attendee counts as well.
    const dialIn = await post(attendeesPath, '<attendee><dial-in type="boolean">true</dial-in></attendee>');
    assert.equal(dialIn.status, 422, dialIn.text);
  });

  describe("update", () => {
    let attendeesPath: string;
    before(async () => {
      attendeesPath = await newConference();
    });

    it("changes phone, extension, location, dial-in and moderator; ignores name and email", async () => {
      const { path: attendeePath } = await createAttendee(
        attendeesPath,
        "<attendee><phone-number>6045550100</phone-number><name>Original</name><email>original@example.com</email></attendee>",
      );
      const response = await put(
        attendeePath,
        `<attendee>
          <phone-number>+1 (250) 555-0123</phone-number>
          <extension>42</extension>
          <phone-number-location>Home</phone-number-location>
          <dial-in type="boolean">true</dial-in>
          <moderator type="boolean">true</moderator>
          <name>Renamed</name>
          <email>renamed@example.com</email>
        </attendee>`,
      );
      assert.equal(response.status, 200, response.text);
      const attendee = response.xml.attendee as XmlNode;
      assert.deepEqual(typesOf(attendee), EXTENDED_TYPES);
      assert.equal(textOf(attendee, "phone-number-subscriber-number"), "2505550123");
      assert.equal(textOf(attendee, "phone-number-country-code"), "1");
      assert.equal(textOf(attendee, "phone-number-extension"), "42");
      assert.equal(textOf(attendee, "phone-number-location"), "Home");
      assert.equal(textOf(attendee, "dial-in"), "true");
      assert.equal(textOf(attendee, "moderator"), "true");
      assert.equal(textOf(attendee, "name"), "Original");
      assert.equal(textOf(attendee, "email"), "original@example.com");
      assert.equal(textOf(attendee, "lock-version"), "1");
      assert.deepEqual(await show(attendeePath), attendee);
    });

    it("refuses an invalid phone number or extension on update and changes nothing", async () => {
      const { path: attendeePath, attendee } = await createAttendee(
        attendeesPath,
        "<attendee><phone-number>6045550100</phone-number></attendee>",
      );
      for (const body of [
        "<attendee><phone-number>+44 20 7946 0958</phone-number></attendee>",
        "<attendee><extension>12a</extension></attendee>",
      ]) {
        const response = await put(attendeePath, body);
        assert.equal(response.status, 422, response.text);
      }
      assert.deepEqual(await show(attendeePath), attendee);
    });

    it("refuses to clear the phone of an attendee that is not dial-in", async () => {
      const { path: attendeePath, attendee } = await createAttendee(
        attendeesPath,
        "<attendee><phone-number>6045550100</phone-number></attendee>",
      );
      for (const body of [
        '<attendee><phone-number nil="true"/></attendee>',
        "<attendee><phone-number></phone-number></attendee>",
      ]) {
        const response = await put(attendeePath, body);
        assert.equal(response.status, 422, response.text);
        assert.ok(errorsOf(response).some((error) => error.includes("phone-number")));
      }
      assert.deepEqual(await show(attendeePath), attendee);

      // Together with dial-in the phone may go.
      const cleared = await put(
        attendeePath,
        '<attendee><phone-number nil="true"/><dial-in type="boolean">true</dial-in></attendee>',
      );
      assert.equal(cleared.status, 200, cleared.text);
      assert.equal(textOf(cleared.xml.attendee as XmlNode, "phone-number-subscriber-number"), null);
      // And a dial-in attendee without a phone cannot stop being dial-in.
      const undialed = await put(
        attendeePath,
        '<attendee><dial-in type="boolean">false</dial-in></attendee>',
      );
      assert.equal(undialed.status, 422, undialed.text);
    });

    it("answers 409 to a stale lock-version and changes nothing", async () => {
      const { path: attendeePath } = await createAttendee(
        attendeesPath,
        "<attendee><phone-number>6045550100</phone-number></attendee>",
      );
      const first = await put(
        attendeePath,
        '<attendee><lock-version type="integer">0</lock-version><phone-number-location>v1</phone-number-location></attendee>',
      );
      assert.equal(first.status, 200, first.text);
      const stale = await put(
        attendeePath,
        '<attendee><lock-version type="integer">0</lock-version><phone-number-location>lost</phone-number-location></attendee>',
      );
      assert.equal(stale.status, 409, stale.text);
      const shown = await show(attendeePath);
      assert.equal(textOf(shown, "phone-number-location"), "v1");
      assert.equal(textOf(shown, "lock-version"), "1");
      const current = await put(
        attendeePath,
        '<attendee><lock-version type="integer">1</lock-version><phone-number-location>v2</phone-number-location></attendee>',
      );
      assert.equal(current.status, 200, current.text);
      assert.equal(textOf(current.xml.attendee as XmlNode, "lock-version"), "2");
    });
  });

  it("deletes an attendee: 204 without a body, then 404", async () => {
    const attendeesPath = await newConference();
    const { path: attendeePath } = await createAttendee(
      attendeesPath,
      "<attendee><phone-number>6045550100</phone-number></attendee>",
    );
    const deleted = await api.request("DELETE", attendeePath, { auth });
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, "");
    assert.equal((await api.request("GET", attendeePath, { auth })).status, 404);
    assert.equal((await api.request("DELETE", attendeePath, { auth })).status, 404);
    assert.deepEqual(itemsOf(await api.request("GET", attendeesPath, { auth }), "attendees", "attendee"), []);
  });

  describe("?representation=basic", () => {
    let attendeesPath: string;
    before(async () => {
      attendeesPath = await newConference();
    });

    it("create, show, list and update answer exactly the basic fields", async () => {
      const created = await post(
        attendeesPath,
        '<attendee><phone-number>(604) 555-0100</phone-number><moderator type="boolean">true</moderator><name>Basic</name></attendee>',
        "?representation=basic",
      );
      assert.equal(created.status, 201, created.text);
      const attendee = created.xml.attendee as XmlNode;
      assert.deepEqual(typesOf(attendee), BASIC_TYPES);
      assert.equal(textOf(attendee, "phone-number"), "6045550100");
      assert.equal(textOf(attendee, "moderator"), "true");
      assert.equal(textOf(attendee, "state"), "new");
      assert.equal(textOf(attendee, "duration"), null);
      const attendeePath = created.headers.location as string;

      const shown = await api.request("GET", `${attendeePath}?representation=basic`, { auth });
      assert.equal(shown.status, 200);
      assert.equal(shown.text, created.text);

      const listed = itemsOf(
        await api.request("GET", `${attendeesPath}?representation=basic`, { auth }),
        "attendees",
        "attendee",
      );
      assert.deepEqual(listed, [attendee]);

      const updated = await put(
        attendeePath,
        "<attendee><phone-number>250-555-0123</phone-number></attendee>",
        "?representation=basic",
      );
      assert.equal(updated.status, 200, updated.text);
      const updatedAttendee = updated.xml.attendee as XmlNode;
      assert.deepEqual(typesOf(updatedAttendee), BASIC_TYPES);
      assert.equal(textOf(updatedAttendee, "phone-number"), "2505550123");
      assert.equal(textOf(updatedAttendee, "lock-version"), "1");
    });

    it("answers 400 to a representation other than basic or extended", async () => {
      const response = await api.request("GET", `${attendeesPath}?representation=compact`, { auth });
      assert.equal(response.status, 400, response.text);
      assert.ok(errorsOf(response).some((error) => error.includes("representation")));
    });
  });

  it("answers 404 for an attendee of another conference under this conference's path", async () => {
    const ownPath = await newConference();
    const otherPath = await newConference();
    const { path: foreignPath, attendee } = await createAttendee(
      otherPath,
      "<attendee><phone-number>6045550100</phone-number></attendee>",
    );
    const wrongPath = `${ownPath}/${textOf(attendee, "id")}`;
    assert.equal((await api.request("GET", wrongPath, { auth })).status, 404);
    const update = await put(
      wrongPath,
      "<attendee><phone-number-location>Hijacked</phone-number-location></attendee>",
    );
    assert.equal(update.status, 404, update.text);
    assert.equal((await api.request("DELETE", wrongPath, { auth })).status, 404);
    assert.deepEqual(await show(foreignPath), attendee);
  });
});
