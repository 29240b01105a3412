import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DateTime } from "luxon";
import { forEachStore } from "../helpers/databases.js";
import { createUser, startTestApi, type TestApi } from "../helpers/service.js";
import { type Auth, errorsOf, itemsOf, textOf, type XmlNode } from "../helpers/xml.js";

/** Query parameters as written (unencoded); "{Label}" in a value stands for that record's id. */
type Filters = [key: string, value: string][];

interface SearchCase {
  filters: Filters;
  /** Labels of the records the search answers, in any order. */
  expected: string[];
}

const describeFilters = (filters: Filters) => filters.map(([key, value]) => `${key}=${value}`).join("&");

/** An instant written with a fixed UTC offset, e.g. 2027-02-10T05:00:00-05:00. */
const withOffset = (instant: Date, offsetHours: number) =>
  DateTime.fromJSDate(instant)
    .setZone(`UTC${offsetHours >= 0 ? "+" : ""}${offsetHours}`)
    .toISO({ suppressMilliseconds: true }) as string;

const HOUR = 3_600_000;

forEachStore("searching collections", (kind) => {
  let api: TestApi;
  let userId: number;
  let auth: Auth;
  /** Label -> id of every record the fixture created. */
  const ids = new Map<string, number>();
  let attendeesPath: string;

  async function create(path: string, root: string, label: string, body: string): Promise<void> {
    const response = await api.request("POST", path, { auth, body: `<${root}>${body}</${root}>` });
    assert.equal(response.status, 201, response.text);
    ids.set(label, Number(textOf(response.xml[root] as XmlNode, "id")));
  }

  before(async () => {
    api = await startTestApi({}, { store: kind });
    ({ id: userId, auth } = await createUser(api));

    const contacts = `/users/${userId}/contacts`;
    await create(
      contacts,
      "contact",
      "Alice Smith",
      `<name>Alice Smith</name><email>alice@example.com</email><phone-number>604-555-0100</phone-number>
       <im>alice</im><im-network>aim</im-network><time-zone>Pacific Time (US &amp; Canada)</time-zone>`,
    );
    await create(
      contacts,
      "contact",
      "bob jones",
      "<name>bob jones</name><email>Bob.Jones@Example.ORG</email><im-network>xmpp</im-network><time-zone>Hawaii</time-zone>",
    );
    await create(
      contacts,
      "contact",
      "100% Carol",
      "<name>100% Carol</name><email>carol@example.net</email>",
    );
    await create(contacts, "contact", "Carol_x", "<name>Carol_x</name><im-network>msn</im-network>");
    await create(contacts, "contact", "Dave", "<name>Dave</name>");
    // One updated contact, so lock_version tells it apart.
    const bumped = await api.request("PUT", `${contacts}/${ids.get("bob jones")}`, {
      auth,
      body: "<contact><phone-number>250-555-0123</phone-number></contact>",
    });
    assert.equal(bumped.status, 200, bumped.text);

    const conferences = `/users/${userId}/conferences`;
    const conference = (name: string, start: string, fields: string) =>
      create(
        conferences,
        "conference",
        name,
        `<name>${name}</name><scheduled-to-start-at>${start}</scheduled-to-start-at>${fields}<no-moderator type="boolean">true</no-moderator>`,
      );
    await conference(
      "Weekly Sync",
      "2027-01-10T10:00:00Z",
      '<accounting-code type="integer">2</accounting-code><direct-dial type="boolean">false</direct-dial>',
    );
    await conference(
      "Board Review",
      "2027-02-10T10:00:00Z",
      '<accounting-code type="integer">9</accounting-code><direct-dial type="boolean">true</direct-dial>',
    );
    await conference(
      "sync-up",
      "2027-03-10T10:00:00Z",
      '<accounting-code type="integer">10</accounting-code><direct-dial type="boolean">true</direct-dial>',
    );
    await conference("Ad hoc", "2027-04-10T10:00:00Z", "");

    attendeesPath = `${conferences}/${ids.get("Weekly Sync")}/attendees`;
    await create(
      attendeesPath,
      "attendee",
      "Ann",
      '<phone-number>6045550100</phone-number><name>Ann</name><phone-number-location>Vancouver</phone-number-location><moderator type="boolean">true</moderator>',
    );
    await create(
      attendeesPath,
      "attendee",
      "Ben",
      "<phone-number>604-555-0199</phone-number><name>Ben</name><email>ben@example.com</email><extension>99</extension>",
    );
    await create(
      attendeesPath,
      "attendee",
      "Cy",
      "<phone-number>+1 250 555 0123</phone-number><name>Cy</name><phone-number-location>Victoria</phone-number-location>",
    );
    await create(attendeesPath, "attendee", "Dial-in", '<dial-in type="boolean">true</dial-in>');
  });
  after(() => api.close());

  function queryOf(filters: Filters): string {
    const resolve = (value: string) =>
      value.replace(/\{([^}]+)\}/g, (_placeholder, label: string) => {
        const id = ids.get(label);
        assert.ok(id, `fixture has ${label}`);
        return String(id);
      });
    return filters.map(([key, value]) => `${key}=${encodeURIComponent(resolve(value))}`).join("&");
  }

  /** Runs each case against a collection; `labelOf` names a listed record. */
  function searchCases(
    collection: () => string,
    root: string,
    item: string,
    labelOf: (record: XmlNode) => string,
    cases: SearchCase[],
  ): void {
    for (const { filters, expected } of cases) {
      it(`?${describeFilters(filters)} -> ${expected.length === 0 ? "nothing" : expected.join(", ")}`, async () => {
        const path = collection();
        const separator = path.includes("?") ? "&" : "?";
        const response = await api.request("GET", `${path}${separator}${queryOf(filters)}`, { auth });
        const labels = itemsOf(response, root, item).map(labelOf);
        assert.deepEqual(labels.sort(), [...expected].sort());
      });
    }
  }

  const byName = (record: XmlNode) => textOf(record, "name") ?? "";

  describe("contacts", () => {
    const everyContact = ["Alice Smith", "bob jones", "100% Carol", "Carol_x", "Dave"];
    searchCases(() => `/users/${userId}/contacts`, "contacts", "contact", byName, [
      { filters: [["name", "ALICE SMITH"]], expected: ["Alice Smith"] },
      { filters: [["name_contains", "CAROL"]], expected: ["100% Carol", "Carol_x"] },
      { filters: [["name_starts_with", "Bob"]], expected: ["bob jones"] },
      { filters: [["email_ends_with", ".org"]], expected: ["bob jones"] },
      { filters: [["time_zone", "pacific time (us & canada)"]], expected: ["Alice Smith"] },
      { filters: [["lock_version_gt", "0"]], expected: ["bob jones"] },
      { filters: [["id_lt", "{100% Carol}"]], expected: ["Alice Smith", "bob jones"] },
      {
        filters: [
          ["id_gte", "{bob jones}"],
          ["id_lte", "{Carol_x}"],
        ],
        expected: ["bob jones", "100% Carol", "Carol_x"],
      },
      // ne keeps the records without a value.
      { filters: [["im_network_ne", "aim"]], expected: ["bob jones", "100% Carol", "Carol_x", "Dave"] },
      {
        filters: [["phone_number_ne", "604-555-0100"]],
        expected: ["bob jones", "100% Carol", "Carol_x", "Dave"],
      },
      // LIKE wildcards in a value match only themselves.
      { filters: [["name_contains", "%"]], expected: ["100% Carol"] },
      { filters: [["name_contains", "_"]], expected: ["Carol_x"] },
      { filters: [["name_starts_with", "%"]], expected: [] },
      { filters: [["name_ends_with", "_"]], expected: [] },
      {
        filters: [
          ["im_network", "xmpp"],
          ["name_contains", "o"],
        ],
        expected: ["bob jones"],
      },
      {
        filters: [
          ["name_contains", "carol"],
          ["im_network", "MSN"],
        ],
        expected: ["Carol_x"],
      },
      {
        filters: [
          ["name_contains", "o"],
          ["im_network", "aim"],
        ],
        expected: [],
      },
      { filters: [["created_at_gte", "2000-01-01T00:00:00Z"]], expected: everyContact },
      { filters: [["created_at_gte", "2999-01-01T00:00:00+05:00"]], expected: [] },
    ]);

    // Compared as instants: written with an offset, the text order would differ from time order.
    it("compares created_at as an instant, whatever offset the value is written with", async () => {
      const path = `/users/${userId}/contacts`;
      const inAnHour = new Date(Date.now() + HOUR);
      const anHourAgo = new Date(Date.now() - HOUR);
      const search = async (filters: Filters) =>
        itemsOf(await api.request("GET", `${path}?${queryOf(filters)}`, { auth }), "contacts", "contact")
          .map(byName)
          .sort();
      assert.deepEqual(await search([["created_at_gt", withOffset(inAnHour, -8)]]), []);
      assert.deepEqual(await search([["created_at_lt", withOffset(inAnHour, -8)]]), [...everyContact].sort());
      assert.deepEqual(await search([["created_at_lt", withOffset(anHourAgo, 8)]]), []);
      assert.deepEqual(
        await search([["created_at_gte", withOffset(anHourAgo, 8)]]),
        [...everyContact].sort(),
      );
    });
  });

  describe("conferences", () => {
    const everyConference = ["Weekly Sync", "Board Review", "sync-up", "Ad hoc"];
    searchCases(() => `/users/${userId}/conferences`, "conferences", "conference", byName, [
      // Integers compare as numbers: "10" > "9" although it sorts before it as text.
      { filters: [["accounting_code_gt", "9"]], expected: ["sync-up"] },
      { filters: [["accounting_code_lt", "10"]], expected: ["Weekly Sync", "Board Review"] },
      { filters: [["accounting_code_gte", "9"]], expected: ["Board Review", "sync-up"] },
      { filters: [["accounting_code_lte", "9"]], expected: ["Weekly Sync", "Board Review"] },
      { filters: [["accounting_code", "10"]], expected: ["sync-up"] },
      { filters: [["accounting_code_ne", "9"]], expected: ["Weekly Sync", "sync-up", "Ad hoc"] },
      { filters: [["direct_dial", "true"]], expected: ["Board Review", "sync-up"] },
      { filters: [["direct_dial", "false"]], expected: ["Weekly Sync", "Ad hoc"] },
      { filters: [["direct_dial_ne", "true"]], expected: ["Weekly Sync", "Ad hoc"] },
      { filters: [["name_contains", "SYNC"]], expected: ["Weekly Sync", "sync-up"] },
      { filters: [["name_starts_with", "SYNC"]], expected: ["sync-up"] },
      { filters: [["name_ends_with", "sync"]], expected: ["Weekly Sync"] },
      { filters: [["state", "NEW"]], expected: everyConference },
      { filters: [["state_ne", "new"]], expected: [] },
      { filters: [["started_at_ne", "2027-01-01T00:00:00Z"]], expected: everyConference },
      {
        filters: [["scheduled_to_start_at_gte", "2027-02-10T05:00:00-05:00"]],
        expected: ["Board Review", "sync-up", "Ad hoc"],
      },
      { filters: [["scheduled_to_start_at_lt", "2027-02-10T11:00:00+01:00"]], expected: ["Weekly Sync"] },
      { filters: [["created_at_gte", "2001-02-03T04:05:06Z"]], expected: everyConference },
      {
        filters: [
          ["direct_dial", "true"],
          ["accounting_code_gt", "9"],
          ["name_contains", "sync"],
        ],
        expected: ["sync-up"],
      },
      {
        filters: [
          ["direct_dial", "true"],
          ["name_contains", "weekly"],
        ],
        expected: [],
      },
    ]);
  });

  describe("attendees", () => {
    const everyAttendee = ["Ann", "Ben", "Cy", "Dial-in"];
    /** Basic attendees carry no name, so they are told apart by id. */
    const byId = (record: XmlNode) => {
      const id = Number(textOf(record, "id"));
      return everyAttendee.find((label) => ids.get(label) === id) ?? `unknown id ${id}`;
    };
    const phoneCases: SearchCase[] = [
      { filters: [["phone_number", "+1 604 555 0100"]], expected: ["Ann"] },
      { filters: [["phone_number", "604-555-0100"]], expected: ["Ann"] },
      { filters: [["phone_number_starts_with", "+1 604 555"]], expected: ["Ann", "Ben"] },
      { filters: [["phone_number_starts_with", "604-555"]], expected: ["Ann", "Ben"] },
      { filters: [["phone_number_ends_with", "0123"]], expected: ["Cy"] },
      { filters: [["phone_number_contains", "555-01"]], expected: ["Ann", "Ben", "Cy"] },
      { filters: [["phone_number_ne", "(604) 555-0100"]], expected: ["Ben", "Cy", "Dial-in"] },
    ];
    describe("extended representation", () => {
      searchCases(() => attendeesPath, "attendees", "attendee", byId, [
        ...phoneCases,
        { filters: [["phone_number_subscriber_number_starts_with", "250"]], expected: ["Cy"] },
        { filters: [["name", "ANN"]], expected: ["Ann"] },
        { filters: [["name_ne", "ann"]], expected: ["Ben", "Cy", "Dial-in"] },
        { filters: [["email_contains", "EXAMPLE"]], expected: ["Ben"] },
        { filters: [["phone_number_location_starts_with", "vic"]], expected: ["Cy"] },
        { filters: [["moderator", "true"]], expected: ["Ann"] },
        { filters: [["moderator_ne", "true"]], expected: ["Ben", "Cy", "Dial-in"] },
        { filters: [["dial_in", "true"]], expected: ["Dial-in"] },
        { filters: [["muted", "false"]], expected: [] },
        { filters: [["muted_ne", "true"]], expected: everyAttendee },
        { filters: [["duration_gt", "0"]], expected: [] },
        { filters: [["duration_ne", "5"]], expected: everyAttendee },
        {
          filters: [
            ["id_gt", "{Ann}"],
            ["id_lt", "{Dial-in}"],
          ],
          expected: ["Ben", "Cy"],
        },
        { filters: [["id_gte", "{Cy}"]], expected: ["Cy", "Dial-in"] },
        { filters: [["id_lte", "{Ann}"]], expected: ["Ann"] },
        { filters: [["lock_version_gte", "0"]], expected: everyAttendee },
        {
          filters: [
            ["phone_number_starts_with", "604"],
            ["moderator", "false"],
          ],
          expected: ["Ben"],
        },
      ]);
    });
    describe("basic representation", () => {
      const basicLabel = (record: XmlNode) => {
        assert.ok("phone-number" in record && !("name" in record), "a basic attendee");
        return byId(record);
      };
      searchCases(
        () => `${attendeesPath}?representation=basic`,
        "attendees",
        "attendee",
        basicLabel,
        phoneCases,
      );
    });
  });

  describe("billing packages", () => {
    searchCases(() => "/billing-packages", "billing-packages", "billing-package", byName, [
      { filters: [["name", "basic"]], expected: ["Basic"] },
      { filters: [["name_contains", "ESS"]], expected: ["Professional"] },
      { filters: [["name_starts_with", "ent"]], expected: ["Enterprise"] },
      { filters: [["name_ends_with", "IC"]], expected: ["Basic"] },
      { filters: [["name_contains", "%"]], expected: [] },
      { filters: [["id", "3"]], expected: ["Enterprise"] },
      { filters: [["id_gt", "1"]], expected: ["Professional", "Enterprise"] },
      { filters: [["id_lt", "3"]], expected: ["Basic", "Professional"] },
      {
        filters: [
          ["id_gte", "2"],
          ["id_lte", "2"],
        ],
        expected: ["Professional"],
      },
      { filters: [["id_ne", "2"]], expected: ["Basic", "Enterprise"] },
    ]);
  });

  describe("refused searches: 400 naming the attribute", () => {
    const refusals: [collection: () => string, filters: Filters, named: string][] = [
      [() => `/users/${userId}/contacts`, [["colour", "red"]], "colour"],
      [() => `/users/${userId}/contacts`, [["name_near", "x"]], "name_near"],
      [() => `/users/${userId}/contacts`, [["lock_version_gt", "1.5"]], "lock_version_gt"],
      [() => `/users/${userId}/conferences`, [["accounting_code_gt", "abc"]], "accounting_code_gt"],
      [() => `/users/${userId}/conferences`, [["direct_dial", "maybe"]], "direct_dial"],
      [() => `/users/${userId}/conferences`, [["created_at_gt", "yesterday"]], "created_at_gt"],
      [() => `/users/${userId}/conferences`, [["accounting_code_contains", "1"]], "accounting_code"],
      [
        () => `/users/${userId}/conferences`,
        [
          ["name_contains", "sync"],
          ["colour", "red"],
        ],
        "colour",
      ],
      [() => attendeesPath, [["duration_starts_with", "1"]], "duration"],
      [() => attendeesPath, [["moderator_gt", "false"]], "moderator"],
      [() => attendeesPath, [["nickname", "x"]], "nickname"],
      [() => "/billing-packages", [["price", "10"]], "price"],
      [() => "/billing-packages", [["id_ends_with", "1"]], "id"],
    ];
    for (const [collection, filters, named] of refusals) {
      it(`?${describeFilters(filters)} -> 400 naming ${named}`, async () => {
        const response = await api.request("GET", `${collection()}?${queryOf(filters)}`, { auth });
        assert.equal(response.status, 400, response.text);
        const errors = errorsOf(response);
        assert.ok(
          errors.some((error) => error.includes(`"${named}"`)),
          `an error naming "${named}": ${errors}`,
        );
      });
    }
  });
});
