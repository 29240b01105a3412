import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { forEachStore } from "../helpers/databases.js";
import { createUser, startTestApi, type TestApi, type TestResponse } from "../helpers/service.js";
import { type Auth, assertErrorMatches, errorMessages, itemsIn, type XmlNode } from "../helpers/xml.js";

interface Field {
  type: string | undefined;
  nil: boolean;
  text: string;
}

/** An element of a parsed response: its type attribute, whether it is nil, and its text. */
function field(parent: unknown, name: string): Field {
  const node = (parent as XmlNode)[name];
  assert.notEqual(node, undefined, `<${name}> is missing`);
  if (typeof node === "string") return { type: undefined, nil: false, text: node };
  const record = node as XmlNode;
  return {
    type: record["@_type"] as string | undefined,
    nil: record["@_nil"] === "true",
    text: (record["#text"] as string | undefined) ?? "",
  };
}

const str = (text: string): Field => ({ type: undefined, nil: false, text });
const int = (value: number): Field => ({ type: "integer", nil: false, text: String(value) });
const bool = (value: boolean): Field => ({ type: "boolean", nil: false, text: String(value) });
const nilText: Field = { type: undefined, nil: true, text: "" };

const DATETIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

/** id, created-at, updated-at and lock-version, typed; created-at is about now. */
function assertVersioned(node: unknown, lockVersion: number): void {
  assert.equal(field(node, "id").type, "integer");
  assert.match(field(node, "id").text, /^[1-9]\d*$/);
  for (const name of ["created-at", "updated-at"]) {
    const value = field(node, name);
    assert.equal(value.type, "datetime", name);
    assert.match(value.text, DATETIME, name);
  }
  assert.ok(Math.abs(Date.parse(field(node, "created-at").text) - Date.now()) < 120_000);
  assert.deepEqual(field(node, "lock-version"), int(lockVersion));
}

function userOf(response: TestResponse): XmlNode {
  assert.ok(response.xml.user, `expected a <user> document, got ${response.status} ${response.text}`);
  return response.xml.user as XmlNode;
}

function assertValidationError(response: TestResponse, pattern: RegExp): void {
  assert.equal(response.status, 422, response.text);
  assertErrorMatches(response, pattern);
}

const PASSWORD = "correct horse";
const CARD_YEAR = new Date().getUTCFullYear() + 3;
const VALID_CARD = `<credit-card>
  <name>Pat Doe</name>
  <number>4111 1111 1111 1111</number>
  <security-code>737</security-code>
  <expiry-month type="integer">12</expiry-month>
  <expiry-year type="integer">${CARD_YEAR}</expiry-year>
</credit-card>`;
const VALID_ADDRESS = `<address>
  <street-address>1 Main Street</street-address>
  <postal-code>v6b 1a1</postal-code>
  <location>Vancouver</location>
  <subdivision>BC</subdivision>
  <country>CA</country>
</address>`;
const TWO_PHONES = `<phone-numbers type="array">
  <phone-number>
    <country-code type="integer">1</country-code>
    <subscriber-number>(604) 555-0100</subscriber-number>
    <location>Office</location>
    <extension>12</extension>
  </phone-number>
  <phone-number>
    <subscriber-number>+1 604 555 0101</subscriber-number>
    <location>Home</location>
  </phone-number>
</phone-numbers>`;
const FULL_PROFILE = `<im>pat.doe</im>
<im-network>xmpp</im-network>
<time-zone>Pacific Time (US &amp; Canada)</time-zone>
${VALID_CARD}
${VALID_ADDRESS}
${TWO_PHONES}`;

/**
 * A sign-up document: the valid required fields, with `changes` replacing an element's XML by
 * name (null leaves it out) or adding further elements.
 */
function signupBody(email: string, changes: Record<string, string | null> = {}): string {
  const fields: Record<string, string | null> = {
    name: "<name>Valid Person</name>",
    email: `<email>${email}</email>`,
    password: `<password>${PASSWORD}</password>`,
    "password-confirmation": `<password-confirmation>${PASSWORD}</password-confirmation>`,
    "terms-of-service": '<terms-of-service type="boolean">true</terms-of-service>',
    "billing-package": '<billing-package><id type="integer">1</id></billing-package>',
    ...changes,
  };
  const elements = Object.values(fields).filter((xml) => xml !== null);
  return `<?xml version="1.0" encoding="UTF-8"?>\n<user>\n${elements.join("\n")}\n</user>`;
}

let emailCounter = 0;
function freshEmail(label: string): string {
  emailCounter += 1;
  return `${label}-${emailCounter}-${process.pid}@example.com`;
}

forEachStore("users API", (kind) => {
  let api: TestApi;

  before(async () => {
    api = await startTestApi({}, { store: kind });
  });
  after(() => api.close());

  const put = (id: number, auth: Auth, xml: string) =>
    api.request("PUT", `/users/${id}`, { auth, body: `<?xml version="1.0"?>\n<user>${xml}</user>` });
  const show = async (id: number, auth: Auth) => {
    const response = await api.request("GET", `/users/${id}`, { auth });
    assert.equal(response.status, 200, response.text);
    return userOf(response);
  };

  describe("sign-up", () => {
    it("answers 201, a Location and every field of the user document with its type", async () => {
      const email = freshEmail("Full.Profile");
      const response = await api.request("POST", "/users", {
        body: signupBody(email, { extra: FULL_PROFILE }),
      });
      assert.equal(response.status, 201, response.text);
      assert.match(String(response.headers["content-type"]), /^application\/xml/);
      const user = userOf(response);
      const id = Number(field(user, "id").text);
      assert.equal(response.headers.location, `/users/${id}`);

      assertVersioned(user, 0);
      assert.deepEqual(field(user, "name"), str("Valid Person"));
      assert.deepEqual(field(user, "email"), str(email.toLowerCase()));
      assert.deepEqual(field(user, "im"), str("pat.doe"));
      assert.deepEqual(field(user, "im-network"), str("xmpp"));
      assert.deepEqual(field(user, "time-zone"), str("Pacific Time (US & Canada)"));
      const memberPin = field(user, "member-pin");
      const moderatorPin = field(user, "moderator-pin");
      assert.match(memberPin.text, /^\d{6,}$/);
      assert.match(moderatorPin.text, /^\d{6,}$/);
      assert.equal(memberPin.type, undefined);
      assert.notEqual(memberPin.text, moderatorPin.text);
      assert.deepEqual(field(user, "terms-of-service"), bool(true));

      const card = user["credit-card"];
      assertVersioned(card, 0);
      assert.deepEqual(field(card, "name"), str("Pat Doe"));
      assert.deepEqual(field(card, "expiry-month"), int(12));
      assert.deepEqual(field(card, "expiry-year"), int(CARD_YEAR));
      assert.deepEqual(field(card, "brand"), str("visa"));
      assert.deepEqual(field(card, "last-four-digits"), str("1111"));

      const address = user.address;
      assertVersioned(address, 0);
      assert.deepEqual(field(address, "street-address"), str("1 Main Street"));
      assert.deepEqual(field(address, "postal-code"), str("V6B 1A1"));
      assert.deepEqual(field(address, "location"), str("Vancouver"));
      assert.deepEqual(field(address, "subdivision"), str("BC"));
      assert.deepEqual(field(address, "country"), str("CA"));

      const phones = itemsIn(user, "phone-numbers", "phone-number");
      assert.equal(phones.length, 2);
      for (const phone of phones) {
        assertVersioned(phone, 0);
        assert.deepEqual(field(phone, "country-code"), int(1));
      }
      assert.deepEqual(field(phones[0], "subscriber-number"), str("6045550100"));
      assert.deepEqual(field(phones[0], "location"), str("Office"));
      assert.deepEqual(field(phones[0], "extension"), str("12"));
      assert.deepEqual(field(phones[1], "subscriber-number"), str("6045550101"));
      assert.deepEqual(field(phones[1], "location"), str("Home"));
      assert.deepEqual(field(phones[1], "extension"), nilText);
    });

    it("shows absent optional values as nil and no phone numbers as an empty array", async () => {
      const response = await api.request("POST", "/users", { body: signupBody(freshEmail("minimal")) });
      assert.equal(response.status, 201, response.text);
      const user = userOf(response);
      for (const name of ["im", "im-network", "time-zone", "credit-card", "address"]) {
        assert.deepEqual(field(user, name), nilText, name);
      }
      assert.deepEqual(itemsIn(user, "phone-numbers", "phone-number"), []);
      assert.match(response.text, /<credit-card nil="true"\/>/);
      assert.match(response.text, /<phone-numbers type="array"\/>/);
    });

    it("accepts POST /users/ with a trailing slash", async () => {
      const response = await api.request("POST", "/users/", { body: signupBody(freshEmail("slash")) });
      assert.equal(response.status, 201, response.text);
      assert.equal(response.headers.location, `/users/${field(userOf(response), "id").text}`);
    });

    describe("validation", () => {
      let takenEmail: string;
      before(async () => {
        takenEmail = freshEmail("taken");
        const response = await api.request("POST", "/users", { body: signupBody(takenEmail) });
        assert.equal(response.status, 201, response.text);
      });

      const card = (fields: Record<string, string>) =>
        `<credit-card>${Object.entries({
          number: "4111111111111111",
          "security-code": "737",
          "expiry-month": "12",
          "expiry-year": String(CARD_YEAR),
          ...fields,
        })
          .map(([name, value]) => `<${name}>${value}</${name}>`)
          .join("")}</credit-card>`;
      const address = (country: string, subdivision: string, postalCode: string) =>
        `<address><country>${country}</country><subdivision>${subdivision}</subdivision><postal-code>${postalCode}</postal-code></address>`;
      const phone = (inner: string) =>
        `<phone-numbers type="array"><phone-number>${inner}</phone-number></phone-numbers>`;

      const cases: Array<[string, (email: string) => Record<string, string | null>, RegExp]> = [
        ["name missing", () => ({ name: null }), /^name can't be blank/],
        ["name blank", () => ({ name: "<name>   </name>" }), /^name can't be blank/],
        [
          "name over 255 characters",
          () => ({ name: `<name>${"n".repeat(256)}</name>` }),
          /^name is too long/,
        ],
        ["email missing", () => ({ email: null }), /^email can't be blank/],
        ["email malformed", () => ({ email: "<email>not-an-email</email>" }), /^email is not a valid/],
        ["password missing", () => ({ password: null }), /^password can't be blank/],
        [
          "password of 7 characters",
          () => ({
            password: "<password>seven77</password>",
            "password-confirmation": "<password-confirmation>seven77</password-confirmation>",
          }),
          /^password is too short/,
        ],
        [
          "password-confirmation different",
          () => ({ "password-confirmation": "<password-confirmation>other horse</password-confirmation>" }),
          /^password-confirmation/,
        ],
        [
          "password-confirmation missing",
          () => ({ "password-confirmation": null }),
          /^password-confirmation/,
        ],
        [
          "terms-of-service false",
          () => ({ "terms-of-service": '<terms-of-service type="boolean">false</terms-of-service>' }),
          /^terms-of-service/,
        ],
        ["terms-of-service missing", () => ({ "terms-of-service": null }), /^terms-of-service/],
        ["billing-package missing", () => ({ "billing-package": null }), /^billing-package/],
        [
          "billing-package unknown",
          () => ({ "billing-package": '<billing-package><id type="integer">99</id></billing-package>' }),
          /^billing-package 99 does not exist/,
        ],
        [
          "billing-package id not an integer",
          () => ({ "billing-package": "<billing-package><id>basic</id></billing-package>" }),
          /^billing-package id/,
        ],
        ["im-network unknown", () => ({ extra: "<im-network>icq</im-network>" }), /^im-network/],
        ["time-zone unknown", () => ({ extra: "<time-zone>Mars/Olympus Mons</time-zone>" }), /^time-zone/],
        [
          "credit-card number failing Luhn",
          () => ({ extra: card({ number: "4111111111111112" }) }),
          /^credit-card number/,
        ],
        ["credit-card number missing", () => ({ extra: card({ number: "" }) }), /^credit-card number/],
        [
          "credit-card security-code of 2 digits",
          () => ({ extra: card({ "security-code": "73" }) }),
          /^credit-card security-code/,
        ],
        [
          "credit-card security-code not digits",
          () => ({ extra: card({ "security-code": "7a7" }) }),
          /^credit-card security-code/,
        ],
        [
          "credit-card expiry-month 13",
          () => ({ extra: card({ "expiry-month": "13" }) }),
          /^credit-card expiry-month/,
        ],
        [
          "credit-card expired",
          () => ({ extra: card({ "expiry-month": "1", "expiry-year": "2020" }) }),
          /^credit-card has expired/,
        ],
        [
          "address country outside CA and US",
          () => ({ extra: address("MX", "JA", "44100") }),
          /^address country/,
        ],
        [
          "address subdivision not in the country",
          () => ({ extra: address("US", "BC", "98101") }),
          /^address subdivision/,
        ],
        [
          "address subdivision unknown",
          () => ({ extra: address("CA", "ZZ", "V6B 1A1") }),
          /^address subdivision/,
        ],
        [
          "address postal-code of the wrong shape (US)",
          () => ({ extra: address("US", "WA", "V6B 1A1") }),
          /^address postal-code/,
        ],
        [
          "address postal-code of the wrong shape (CA)",
          () => ({ extra: address("CA", "BC", "98101") }),
          /^address postal-code/,
        ],
        [
          "address postal-code missing",
          () => ({ extra: "<address><country>US</country><subdivision>WA</subdivision></address>" }),
          /^address postal-code/,
        ],
        [
          "phone number outside North America",
          () => ({ extra: phone("<subscriber-number>+44 20 7946 0018</subscriber-number>") }),
          /^phone-numbers\[1\] subscriber-number/,
        ],
        [
          "phone number country-code 44",
          () => ({
            extra: phone(
              '<country-code type="integer">44</country-code><subscriber-number>6045550100</subscriber-number>',
            ),
          }),
          /^phone-numbers\[1\] country-code/,
        ],
        [
          "phone number extension with letters",
          () => ({
            extra: phone("<subscriber-number>6045550100</subscriber-number><extension>ext 5!</extension>"),
          }),
          /^phone-numbers\[1\] extension/,
        ],
        [
          "phone number 900, which no conference calls (toll fraud)",
          () => ({ extra: phone("<subscriber-number>1-900-555-0123</subscriber-number>") }),
          /^phone-numbers\[1\] subscriber-number "1-900-555-0123" cannot be called: premium-rate/,
        ],
        [
          "phone number NXX-976, which no conference calls (toll fraud)",
          () => ({ extra: phone("<subscriber-number>(604) 976-0123</subscriber-number>") }),
          /^phone-numbers\[1\] subscriber-number "\(604\) 976-0123" cannot be called: premium-rate/,
        ],
        [
          "phone number NXX-411, which no conference calls (toll fraud)",
          () => ({ extra: phone("<subscriber-number>604-411-0123</subscriber-number>") }),
          /^phone-numbers\[1\] subscriber-number "604-411-0123" cannot be called: service codes \(N11\)/,
        ],
        [
          "phone number of directory assistance, which no conference calls",
          () => ({ extra: phone("<subscriber-number>604-555-1212</subscriber-number>") }),
          /^phone-numbers\[1\] subscriber-number "604-555-1212" cannot be called: directory assistance/,
        ],
        [
          "phone number without subscriber-number",
          () => ({ extra: phone("<location>Office</location>") }),
          /^phone-numbers\[1\] subscriber-number/,
        ],
        [
          "email taken (in another case)",
          () => ({ email: `<email>${takenEmail.toUpperCase()}</email>` }),
          /^email has already been taken/,
        ],
      ];

      it("refuses each invalid sign-up with 422 naming the field, storing nothing", async (t) => {
        const refusedEmails: string[] = [];
        for (const [label, changes, pattern] of cases) {
          await t.test(label, async () => {
            const email = freshEmail("invalid");
            const response = await api.request("POST", "/users", { body: signupBody(email, changes(email)) });
            assertValidationError(response, pattern);
            refusedEmails.push(email);
          });
        }
        // Nothing was stored, also for refusals found while storing: every e-mail is still free.
        const retries = await Promise.all(
          refusedEmails.map((email) => api.request("POST", "/users", { body: signupBody(email) })),
        );
        assert.deepEqual(
          retries.map((response) => response.status),
          cases.map(() => 201),
        );
      });

      it("reports every problem of one document at once", async () => {
        const response = await api.request("POST", "/users", {
          body: signupBody(freshEmail("many"), {
            name: null,
            "terms-of-service": null,
            extra: card({ number: "1234" }),
          }),
        });
        assertValidationError(response, /^name/);
        assertValidationError(response, /^terms-of-service/);
        assertValidationError(response, /^credit-card number/);
      });
    });
  });

  describe("show", () => {
    it("answers the user document at /users/{id}, /users/{id}.xml and /current", async () => {
      const { id, auth, response } = await createUser(api, FULL_PROFILE);
      for (const urlPath of [`/users/${id}`, `/users/${id}.xml`, "/current", "/current.xml"]) {
        const shown = await api.request("GET", urlPath, { auth });
        assert.equal(shown.status, 200, `${urlPath}: ${shown.text}`);
        assert.match(String(shown.headers["content-type"]), /^application\/xml/);
        assert.equal(shown.text, response.text, urlPath);
      }
    });

    it("answers /current with the user whose credentials were sent", async () => {
      const [first, second] = await Promise.all([createUser(api), createUser(api)]);
      const current = await api.request("GET", "/current", { auth: second.auth });
      assert.equal(current.status, 200, current.text);
      assert.deepEqual(field(userOf(current), "id"), int(second.id));
      assert.notEqual(first.id, second.id);
    });
  });

  describe("update", () => {
    it("changes the name, keeps everything else and increments lock-version", async () => {
      const { id, auth, response } = await createUser(api, FULL_PROFILE);
      const created = userOf(response);
      const updated = await put(id, auth, "<name>Renamed Person</name>");
      assert.equal(updated.status, 200, updated.text);
      const user = userOf(updated);
      assert.deepEqual(field(user, "name"), str("Renamed Person"));
      assert.deepEqual(field(user, "lock-version"), int(1));
      for (const name of ["id", "created-at", "email", "im", "member-pin", "moderator-pin", "time-zone"]) {
        assert.deepEqual(field(user, name), field(created, name), name);
      }
      assert.deepEqual(user["credit-card"], created["credit-card"]);
      assert.deepEqual(user.address, created.address);
      assert.deepEqual(user["phone-numbers"], created["phone-numbers"]);
      assert.deepEqual(await show(id, auth), user);
    });

    it("changes the password: the old one stops working and the new one works", async () => {
      const { id, auth } = await createUser(api);
      const newPassword = "battery staple";

      const mismatch = await put(
        id,
        auth,
        `<password>${newPassword}</password><password-confirmation>other staple</password-confirmation>`,
      );
      assertValidationError(mismatch, /^password-confirmation/);
      const tooShort = await put(
        id,
        auth,
        "<password>short</password><password-confirmation>short</password-confirmation>",
      );
      assertValidationError(tooShort, /^password is too short/);
      assert.equal(
        (await api.request("GET", "/current", { auth })).status,
        200,
        "refused changes keep the old password",
      );

      const changed = await put(
        id,
        auth,
        `<password>${newPassword}</password><password-confirmation>${newPassword}</password-confirmation>`,
      );
      assert.equal(changed.status, 200, changed.text);
      const withOld = await api.request("GET", "/current", { auth });
      assert.equal(withOld.status, 401, withOld.text);
      const withNew = await api.request("GET", "/current", { auth: [auth[0], newPassword] });
      assert.equal(withNew.status, 200, withNew.text);
      assert.deepEqual(field(userOf(withNew), "id"), int(id));
    });

    it("merges a credit-card into the existing card and removes it with nil", async () => {
      const { id, auth, response } = await createUser(api, VALID_CARD);
      const original = userOf(response)["credit-card"];

      const expiryOnly = await put(
        id,
        auth,
        '<credit-card><expiry-month type="integer">6</expiry-month></credit-card>',
      );
      assert.equal(expiryOnly.status, 200, expiryOnly.text);
      let card = userOf(expiryOnly)["credit-card"];
      assert.deepEqual(field(card, "id"), field(original, "id"));
      assert.deepEqual(field(card, "expiry-month"), int(6));
      assert.deepEqual(field(card, "expiry-year"), int(CARD_YEAR));
      assert.deepEqual(field(card, "name"), str("Pat Doe"));
      assert.deepEqual(field(card, "brand"), str("visa"));
      assert.deepEqual(field(card, "last-four-digits"), str("1111"));
      assert.deepEqual(field(card, "lock-version"), int(1));

      const newNumber = await put(
        id,
        auth,
        "<credit-card><number>5555-5555-5555-4444</number><security-code>123</security-code></credit-card>",
      );
      assert.equal(newNumber.status, 200, newNumber.text);
      card = userOf(newNumber)["credit-card"];
      assert.deepEqual(field(card, "brand"), str("mastercard"));
      assert.deepEqual(field(card, "last-four-digits"), str("4444"));
      assert.deepEqual(field(card, "expiry-month"), int(6));
      assert.deepEqual(field(card, "name"), str("Pat Doe"));

      const expired = await put(
        id,
        auth,
        '<credit-card><expiry-year type="integer">2020</expiry-year></credit-card>',
      );
      assertValidationError(expired, /^credit-card has expired/);
      assert.deepEqual((await show(id, auth))["credit-card"], card, "a refused merge changes nothing");

      const removed = await put(id, auth, '<credit-card nil="true"/>');
      assert.equal(removed.status, 200, removed.text);
      assert.deepEqual(field(userOf(removed), "credit-card"), nilText);
      assert.deepEqual(field(await show(id, auth), "credit-card"), nilText);

      const incomplete = await put(
        id,
        auth,
        '<credit-card><expiry-month type="integer">5</expiry-month></credit-card>',
      );
      assertValidationError(incomplete, /^credit-card number can't be blank/);
    });

    it("replaces the address and removes it with nil", async () => {
      const { id, auth } = await createUser(api, VALID_ADDRESS);
      const replaced = await put(
        id,
        auth,
        "<address><postal-code>98101</postal-code><location>Seattle</location><subdivision>wa</subdivision><country>us</country></address>",
      );
      assert.equal(replaced.status, 200, replaced.text);
      const address = userOf(replaced).address;
      assert.deepEqual(field(address, "country"), str("US"));
      assert.deepEqual(field(address, "subdivision"), str("WA"));
      assert.deepEqual(field(address, "postal-code"), str("98101"));
      assert.deepEqual(field(address, "location"), str("Seattle"));
      assert.deepEqual(field(address, "street-address"), nilText);

      const removed = await put(id, auth, '<address nil="true"/>');
      assert.equal(removed.status, 200, removed.text);
      assert.deepEqual(field(userOf(removed), "address"), nilText);
      assert.deepEqual(field(await show(id, auth), "address"), nilText);
    });

    it("treats phone-numbers as the complete new list: ids update, others are added, unlisted go", async () => {
      const { id, auth, response } = await createUser(api, TWO_PHONES);
      const [office, home] = itemsIn(userOf(response), "phone-numbers", "phone-number");
      const officeId = Number(field(office, "id").text);
      const homeId = Number(field(home, "id").text);

      const replaced = await put(
        id,
        auth,
        `<phone-numbers type="array">
          <phone-number><id type="integer">${officeId}</id><subscriber-number>604-555-0100</subscriber-number><location>Desk</location><extension>34#</extension></phone-number>
          <phone-number><subscriber-number>416 555 0199</subscriber-number><location>Cell</location></phone-number>
        </phone-numbers>`,
      );
      assert.equal(replaced.status, 200, replaced.text);
      const phones = itemsIn(userOf(replaced), "phone-numbers", "phone-number");
      assert.equal(phones.length, 2);
      const kept = phones.find((phone) => field(phone, "id").text === String(officeId));
      const added = phones.find((phone) => field(phone, "id").text !== String(officeId));
      assert.ok(kept && added, replaced.text);
      assert.deepEqual(field(kept, "location"), str("Desk"));
      assert.deepEqual(field(kept, "extension"), str("34#"));
      assert.deepEqual(field(kept, "subscriber-number"), str("6045550100"));
      assert.deepEqual(field(kept, "lock-version"), int(1));
      assert.notEqual(Number(field(added, "id").text), homeId);
      assert.deepEqual(field(added, "subscriber-number"), str("4165550199"));
      assert.deepEqual(field(added, "location"), str("Cell"));
      assert.deepEqual(field(added, "lock-version"), int(0));

      const nameOnly = await put(id, auth, "<name>Still Has Phones</name>");
      assert.equal(nameOnly.status, 200, nameOnly.text);
      assert.deepEqual(
        userOf(nameOnly)["phone-numbers"],
        userOf(replaced)["phone-numbers"],
        "no list, no change",
      );

      const emptied = await put(id, auth, '<phone-numbers type="array"/>');
      assert.equal(emptied.status, 200, emptied.text);
      assert.deepEqual(itemsIn(userOf(emptied), "phone-numbers", "phone-number"), []);
      assert.deepEqual(itemsIn(await show(id, auth), "phone-numbers", "phone-number"), []);
    });

    it("refuses a phone number id of another user with 422 and changes nothing", async () => {
      const [owner, stranger] = await Promise.all([
        createUser(api, FULL_PROFILE),
        createUser(api, TWO_PHONES),
      ]);
      const ownerBefore = await show(owner.id, owner.auth);
      const strangerBefore = await show(stranger.id, stranger.auth);
      const [strangerPhone] = itemsIn(strangerBefore, "phone-numbers", "phone-number");
      const foreignId = field(strangerPhone, "id").text;

      for (const phoneId of [foreignId, "999999"]) {
        const response = await put(
          owner.id,
          owner.auth,
          // The card and address removals come before the phone check: the rollback must undo them.
          `<name>Should Not Stick</name><credit-card nil="true"/><address nil="true"/><phone-numbers type="array"><phone-number><id type="integer">${phoneId}</id><subscriber-number>6045550142</subscriber-number></phone-number></phone-numbers>`,
        );
        assertValidationError(response, new RegExp(`^phone-numbers.*\\b${phoneId}\\b`));
      }
      assert.deepEqual(await show(owner.id, owner.auth), ownerBefore);
      assert.deepEqual(await show(stranger.id, stranger.auth), strangerBefore);
    });

    it("refuses an owner's number that no conference calls (900, 976, N11, 555-1212) with 422, changing nothing", async () => {
      const owner = await createUser(api, TWO_PHONES);
      const before = await show(owner.id, owner.auth);
      for (const number of ["1-900-555-0123", "604-976-0123", "604-911-0123", "604-555-1212"]) {
        const response = await put(
          owner.id,
          owner.auth,
          `<phone-numbers type="array"><phone-number><subscriber-number>${number}</subscriber-number></phone-number></phone-numbers>`,
        );
        assertValidationError(response, /^phone-numbers\[1\] subscriber-number .* cannot be called: /);
      }
      assert.deepEqual(await show(owner.id, owner.auth), before);
    });

    it("answers 409 to a stale lock-version and changes nothing; a current one succeeds", async () => {
      const { id, auth } = await createUser(api);
      const stale = await put(
        id,
        auth,
        '<lock-version type="integer">5</lock-version><name>Stale Write</name>',
      );
      assert.equal(stale.status, 409, stale.text);
      assert.ok(errorMessages(stale).some((message) => /lock-version/.test(message)));
      let user = await show(id, auth);
      assert.deepEqual(field(user, "name"), str("Test User"));
      assert.deepEqual(field(user, "lock-version"), int(0));

      const current = await put(
        id,
        auth,
        '<lock-version type="integer">0</lock-version><name>Fresh Write</name>',
      );
      assert.equal(current.status, 200, current.text);
      assert.deepEqual(field(userOf(current), "lock-version"), int(1));
      const unlocked = await put(id, auth, "<im>no-lock</im>");
      assert.equal(unlocked.status, 200, unlocked.text);
      assert.deepEqual(field(userOf(unlocked), "lock-version"), int(2));

      const again = await put(
        id,
        auth,
        '<lock-version type="integer">1</lock-version><name>Late Write</name>',
      );
      assert.equal(again.status, 409, again.text);
      user = await show(id, auth);
      assert.deepEqual(field(user, "name"), str("Fresh Write"));
      assert.deepEqual(field(user, "lock-version"), int(2));
    });

    it("refuses an e-mail taken by another user and stores a new one in lower case", async () => {
      const [user, other] = await Promise.all([createUser(api), createUser(api)]);
      const taken = await put(user.id, user.auth, `<email>${other.auth[0].toUpperCase()}</email>`);
      assertValidationError(taken, /^email has already been taken/);
      assert.deepEqual(field(await show(user.id, user.auth), "email"), str(user.auth[0]));

      const newEmail = freshEmail("Moved.Person");
      const moved = await put(user.id, user.auth, `<email>${newEmail}</email>`);
      assert.equal(moved.status, 200, moved.text);
      assert.deepEqual(field(userOf(moved), "email"), str(newEmail.toLowerCase()));
      assert.equal((await api.request("GET", "/current", { auth: user.auth })).status, 401, "old e-mail");
      const withNew = await api.request("GET", "/current", { auth: [newEmail, user.auth[1]] });
      assert.equal(withNew.status, 200, withNew.text);
    });

    it("changes nothing when one part of the update is invalid", async () => {
      const { id, auth, response } = await createUser(api, FULL_PROFILE);
      const refused = await put(
        id,
        auth,
        `<name>Half Applied</name><credit-card nil="true"/><address nil="true"/><phone-numbers type="array"><phone-number><subscriber-number>12</subscriber-number></phone-number></phone-numbers>`,
      );
      assertValidationError(refused, /^phone-numbers\[1\] subscriber-number/);
      assert.deepEqual(await show(id, auth), userOf(response));
    });
  });
});
