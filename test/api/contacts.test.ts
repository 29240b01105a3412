import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { forEachStore } from "../helpers/databases.js";
import { createUser, startTestApi, type TestApi } from "../helpers/service.js";
import { type Auth, errorsOf, itemsOf, textOf, typesOf, type XmlNode } from "../helpers/xml.js";

/** True when the message names the field as a whole word ("im" is not named by "im-network"). */
function names(message: string, field: string): boolean {
  return new RegExp(`(^|[^\\w-])${field}($|[^\\w-])`).test(message);
}

const CONTACT_TYPES = {
  id: "integer",
  "created-at": "datetime",
  "updated-at": "datetime",
  "lock-version": "integer",
  name: "text",
  email: "text",
  "phone-number": "text",
  im: "text",
  "im-network": "text",
  "time-zone": "text",
};

const FULL_CONTACT = `<?xml version="1.0" encoding="UTF-8"?>
<contact>
  <name>Ada Lovelace</name>
  <email>ada@example.com</email>
  <phone-number>+1 604 555 0100</phone-number>
  <im>ada@jabber.example.com</im>
  <im-network>xmpp</im-network>
  <time-zone>Pacific Time (US &amp; Canada)</time-zone>
</contact>`;

forEachStore("contacts API", (kind) => {
  let api: TestApi;
  let userId: number;
  let auth: Auth;
  let contactsPath: string;

  before(async () => {
    api = await startTestApi({}, { store: kind });
    ({ id: userId, auth } = await createUser(api));
    contactsPath = `/users/${userId}/contacts`;
  });
  after(() => api.close());

  const post = (body: string) => api.request("POST", contactsPath, { auth, body });

  async function createContact(name: string): Promise<{ id: number; path: string }> {
    const response = await post(`<contact><name>${name}</name></contact>`);
    assert.equal(response.status, 201, response.text);
    const id = Number(textOf(response.xml.contact as XmlNode, "id"));
    return { id, path: `${contactsPath}/${id}` };
  }

  it("creates a contact: 201, Location, every field with its type", async () => {
    const response = await post(FULL_CONTACT);
    assert.equal(response.status, 201, response.text);
    const contact = response.xml.contact as XmlNode;
    const id = Number(textOf(contact, "id"));
    assert.ok(Number.isInteger(id) && id > 0);
    assert.equal(response.headers.location, `${contactsPath}/${id}`);
    assert.deepEqual(typesOf(contact), CONTACT_TYPES);
    assert.equal(textOf(contact, "name"), "Ada Lovelace");
    assert.equal(textOf(contact, "email"), "ada@example.com");
    assert.equal(textOf(contact, "phone-number"), "+1 604 555 0100");
    assert.equal(textOf(contact, "im"), "ada@jabber.example.com");
    assert.equal(textOf(contact, "im-network"), "xmpp");
    assert.equal(textOf(contact, "time-zone"), "Pacific Time (US & Canada)");
    assert.equal(textOf(contact, "lock-version"), "0");
    assert.match(textOf(contact, "created-at") ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(textOf(contact, "updated-at"), textOf(contact, "created-at"));
  });

  it("creates a contact with only a name; the other fields are nil", async () => {
    const response = await post("<contact><name>Only Name</name></contact>");
    assert.equal(response.status, 201, response.text);
    const contact = response.xml.contact as XmlNode;
    assert.deepEqual(typesOf(contact), CONTACT_TYPES);
    for (const field of ["email", "phone-number", "im", "im-network", "time-zone"]) {
      assert.equal(textOf(contact, field), null, field);
    }
  });

  it("shows a contact at its Location", async () => {
    const created = await post(FULL_CONTACT);
    const shown = await api.request("GET", created.headers.location as string, { auth });
    assert.equal(shown.status, 200);
    assert.match(String(shown.headers["content-type"]), /^application\/xml/);
    assert.equal(shown.text, created.text);
  });

  it("lists a user's contacts in a type=array wrapper, empty for a new user", async () => {
    const fresh = await createUser(api);
    const path = `/users/${fresh.id}/contacts`;
    const empty = await api.request("GET", path, { auth: fresh.auth });
    assert.deepEqual(itemsOf(empty, "contacts", "contact"), []);

    const names = ["First", "Second"];
    for (const name of names) {
      const response = await api.request("POST", path, {
        auth: fresh.auth,
        body: `<contact><name>${name}</name><im-network>aim</im-network></contact>`,
      });
      assert.equal(response.status, 201, response.text);
    }
    const listed = itemsOf(await api.request("GET", path, { auth: fresh.auth }), "contacts", "contact");
    assert.deepEqual(
      listed.map((contact) => textOf(contact, "name")),
      names,
    );
    for (const contact of listed) assert.deepEqual(typesOf(contact), CONTACT_TYPES);
  });

  it("updates name, email and phone-number; ignores im, im-network and time-zone", async () => {
    const created = await post(FULL_CONTACT);
    const path = created.headers.location as string;
    const response = await api.request("PUT", path, {
      auth,
      body: `<contact>
        <name>Ada King</name>
        <email>ada.king@example.com</email>
        <phone-number>604-555-0199</phone-number>
        <im>other@example.com</im>
        <im-network>aim</im-network>
        <time-zone>Hawaii</time-zone>
      </contact>`,
    });
    assert.equal(response.status, 200, response.text);
    const contact = response.xml.contact as XmlNode;
    assert.deepEqual(typesOf(contact), CONTACT_TYPES);
    assert.equal(textOf(contact, "name"), "Ada King");
    assert.equal(textOf(contact, "email"), "ada.king@example.com");
    assert.equal(textOf(contact, "phone-number"), "604-555-0199");
    assert.equal(textOf(contact, "im"), "ada@jabber.example.com");
    assert.equal(textOf(contact, "im-network"), "xmpp");
    assert.equal(textOf(contact, "time-zone"), "Pacific Time (US & Canada)");
    assert.equal(textOf(contact, "lock-version"), "1");

    const shown = await api.request("GET", path, { auth });
    assert.equal(shown.text, response.text);
  });

  it("ignores an invalid im-network or time-zone in an update body", async () => {
    const { path } = await createContact("Ignored Fields");
    const response = await api.request("PUT", path, {
      auth,
      body: "<contact><im-network>icq</im-network><time-zone>Mars</time-zone></contact>",
    });
    assert.equal(response.status, 200, response.text);
    const contact = response.xml.contact as XmlNode;
    assert.equal(textOf(contact, "im-network"), null);
    assert.equal(textOf(contact, "time-zone"), null);
  });

  it("deletes a contact: 204 without a body, then 404", async () => {
    const { path } = await createContact("Short Lived");
    const deleted = await api.request("DELETE", path, { auth });
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, "");
    assert.equal((await api.request("GET", path, { auth })).status, 404);
    assert.equal((await api.request("DELETE", path, { auth })).status, 404);
    const update = await api.request("PUT", path, { auth, body: "<contact><name>Back</name></contact>" });
    assert.equal(update.status, 404);
  });

  describe("validation", () => {
    async function assertRejected(body: string, field: string): Promise<void> {
      const before = itemsOf(await api.request("GET", contactsPath, { auth }), "contacts", "contact").length;
      const response = await post(body);
      assert.equal(response.status, 422, response.text);
      const errors = errorsOf(response);
      assert.ok(
        errors.some((error) => names(error, field)),
        `an error naming ${field}: ${errors}`,
      );
      const afterward = itemsOf(
        await api.request("GET", contactsPath, { auth }),
        "contacts",
        "contact",
      ).length;
      assert.equal(afterward, before, "nothing is stored");
    }

    it("refuses a missing or blank name", async () => {
      await assertRejected("<contact><email>x@example.com</email></contact>", "name");
      await assertRejected("<contact><name>   </name></contact>", "name");
      await assertRejected('<contact><name nil="true"/></contact>', "name");
    });

    it("refuses an im-network outside aim, xmpp, msn, yahoo", async () => {
      await assertRejected("<contact><name>N</name><im-network>icq</im-network></contact>", "im-network");
      for (const network of ["aim", "xmpp", "msn", "yahoo"]) {
        const response = await post(`<contact><name>N</name><im-network>${network}</im-network></contact>`);
        assert.equal(response.status, 201, `${network}: ${response.text}`);
      }
    });

    it("refuses a time-zone outside the contact list, accepts an escaped &", async () => {
      await assertRejected("<contact><name>N</name><time-zone>Mars</time-zone></contact>", "time-zone");
      // A user zone that is not one of the ten contact zones.
      await assertRejected("<contact><name>N</name><time-zone>London</time-zone></contact>", "time-zone");
      const accepted = await post(
        "<contact><name>N</name><time-zone>Eastern Time (US &amp; Canada)</time-zone></contact>",
      );
      assert.equal(accepted.status, 201, accepted.text);
      assert.equal(textOf(accepted.xml.contact as XmlNode, "time-zone"), "Eastern Time (US & Canada)");
    });

    it("refuses strings over 255 characters, accepts 255", async () => {
      await assertRejected(`<contact><name>${"n".repeat(256)}</name></contact>`, "name");
      await assertRejected(`<contact><name>N</name><im>${"i".repeat(256)}</im></contact>`, "im");
      const longest = "n".repeat(255);
      const accepted = await post(`<contact><name>${longest}</name></contact>`);
      assert.equal(accepted.status, 201, accepted.text);
      assert.equal(textOf(accepted.xml.contact as XmlNode, "name"), longest);
    });

    it("refuses a blank or too long name on update and changes nothing", async () => {
      const { path } = await createContact("Kept Name");
      for (const name of ["", "x".repeat(256)]) {
        const response = await api.request("PUT", path, {
          auth,
          body: `<contact><name>${name}</name></contact>`,
        });
        assert.equal(response.status, 422, response.text);
        assert.ok(errorsOf(response).some((error) => names(error, "name")));
      }
      const shown = (await api.request("GET", path, { auth })).xml.contact as XmlNode;
      assert.equal(textOf(shown, "name"), "Kept Name");
      assert.equal(textOf(shown, "lock-version"), "0");
    });
  });

  it("answers 409 to a stale lock-version and changes nothing; a current one succeeds", async () => {
    const { path } = await createContact("Locked");
    const first = await api.request("PUT", path, {
      auth,
      body: '<contact><lock-version type="integer">0</lock-version><name>Locked v1</name></contact>',
    });
    assert.equal(first.status, 200, first.text);
    assert.equal(textOf(first.xml.contact as XmlNode, "lock-version"), "1");

    const stale = await api.request("PUT", path, {
      auth,
      body: '<contact><lock-version type="integer">0</lock-version><name>Lost update</name></contact>',
    });
    assert.equal(stale.status, 409, stale.text);
    assert.ok(errorsOf(stale).length > 0);
    const shown = (await api.request("GET", path, { auth })).xml.contact as XmlNode;
    assert.equal(textOf(shown, "name"), "Locked v1");
    assert.equal(textOf(shown, "lock-version"), "1");

    const current = await api.request("PUT", path, {
      auth,
      body: '<contact><lock-version type="integer">1</lock-version><name>Locked v2</name></contact>',
    });
    assert.equal(current.status, 200, current.text);
    assert.equal(textOf(current.xml.contact as XmlNode, "lock-version"), "2");
  });

  it("answers 404 for another user's contact id under the own path, and leaves it alone", async () => {
    const other = await createUser(api);
    const created = await api.request("POST", `/users/${other.id}/contacts`, {
      auth: other.auth,
      body: "<contact><name>Not Yours</name></contact>",
    });
    assert.equal(created.status, 201, created.text);
    const foreignId = textOf(created.xml.contact as XmlNode, "id");
    const ownPath = `${contactsPath}/${foreignId}`;

    assert.equal((await api.request("GET", ownPath, { auth })).status, 404);
    const update = await api.request("PUT", ownPath, { auth, body: "<contact><name>Taken</name></contact>" });
    assert.equal(update.status, 404);
    assert.equal((await api.request("DELETE", ownPath, { auth })).status, 404);
    // The other user's own tree is forbidden, not hidden.
    assert.equal((await api.request("GET", created.headers.location as string, { auth })).status, 403);

    const intact = await api.request("GET", created.headers.location as string, { auth: other.auth });
    assert.equal(intact.status, 200);
    assert.equal(intact.text, created.text);
  });
});
