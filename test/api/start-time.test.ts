/**
 * GET /users/{id}/start-time: a start time read as a conference's scheduled-to-start-at would be, in
 * the owner's zone, without anything created; its answer and its refusals are those of a create.
 */
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { DateTime } from "luxon";
import { forEachStore } from "../helpers/databases.js";
import { createUser, startTestApi, type TestApi } from "../helpers/service.js";
import { type Auth, errorMessages, itemsOf, textOf, type XmlNode } from "../helpers/xml.js";

forEachStore("reading a start time before creating a conference", (kind) => {
  let api: TestApi;
  let pacific: { id: number; auth: Auth };
  let zoneless: { id: number; auth: Auth };

  before(async () => {
    api = await startTestApi({}, { store: kind });
    pacific = await createUser(api, "<time-zone>Pacific Time (US &amp; Canada)</time-zone>");
    zoneless = await createUser(api);
  });
  after(() => api.close());

  const read = (user: { id: number; auth: Auth }, query: string) =>
    api.request("GET", `/users/${user.id}/start-time${query}`, { auth: user.auth });
  const readText = (user: { id: number; auth: Auth }, text: string) =>
    read(user, `?text=${encodeURIComponent(text)}`);
  const create = (user: { id: number; auth: Auth }, start: string) =>
    api.request("POST", `/users/${user.id}/conferences`, {
      auth: user.auth,
      body: `<conference><name>Planning</name><scheduled-to-start-at>${start}</scheduled-to-start-at></conference>`,
    });

  const conferenceCount = async (user: { id: number; auth: Auth }) =>
    itemsOf(
      await api.request("GET", `/users/${user.id}/conferences`, { auth: user.auth }),
      "conferences",
      "conference",
    ).length;

  it("reads free-form text in the owner's zone, names the zone, and creates nothing", async () => {
    const conferencesBefore = await conferenceCount(pacific);
    const before = DateTime.now().setZone("America/Los_Angeles");
    const response = await readText(pacific, "next Tuesday at 3pm");
    const after = DateTime.now().setZone("America/Los_Angeles");
    assert.equal(response.status, 200, response.text);
    assert.match(String(response.headers["content-type"]), /^application\/xml/);
    const answer = response.xml["start-time"] as XmlNode;
    assert.equal(textOf(answer, "text"), "next Tuesday at 3pm");
    assert.equal(textOf(answer, "time-zone"), "America/Los_Angeles");
    assert.equal((answer["scheduled-to-start-at"] as XmlNode)["@_type"], "datetime");
    // The Tuesday after today in Los Angeles (never today), at 15:00 there: either side of the request.
    const expected = [before, after].map((now) =>
      now
        .plus({ days: (2 - now.weekday + 7) % 7 || 7 })
        .set({ hour: 15, minute: 0, second: 0, millisecond: 0 })
        .toUTC()
        .toISO({ suppressMilliseconds: true }),
    );
    assert.ok(expected.includes(textOf(answer, "scheduled-to-start-at")), JSON.stringify(expected));
    assert.equal(await conferenceCount(pacific), conferencesBefore);
  });

  it("answers the instant a create with the same text stores, ISO and free-form alike", async () => {
    for (const [user, text] of [
      [pacific, "2030-01-05T09:30"],
      [pacific, "January 5 2030 at 7pm"],
      [pacific, "2030-01-05T09:30:00+01:00"],
      [zoneless, "January 5 2030 at 7pm"],
      [zoneless, "3rd wednesday in november"],
    ] as const) {
      const answer = (await readText(user, text)).xml["start-time"] as XmlNode;
      const created = (await create(user, text)).xml.conference as XmlNode;
      assert.equal(
        textOf(answer, "scheduled-to-start-at"),
        textOf(created, "scheduled-to-start-at"),
        `${text} for ${user === pacific ? "Pacific" : "no zone"}`,
      );
    }
    const read = (await readText(pacific, "2030-01-05T09:30")).xml["start-time"] as XmlNode;
    assert.equal(textOf(read, "scheduled-to-start-at"), "2030-01-05T17:30:00Z");
    const utc = (await readText(zoneless, "January 5 2030 at 7pm")).xml["start-time"] as XmlNode;
    assert.equal(textOf(utc, "scheduled-to-start-at"), "2030-01-05T19:00:00Z");
    assert.equal(textOf(utc, "time-zone"), "UTC");
  });

  it("refuses unreadable or blank text with the 422 a create gives", async () => {
    for (const text of ["next blursday", "   "]) {
      const read = await readText(pacific, text);
      const created = await create(pacific, text);
      assert.equal(read.status, 422, read.text);
      assert.equal(created.status, 422, created.text);
      assert.deepEqual(errorMessages(read), errorMessages(created));
    }
    assert.deepEqual(errorMessages(await readText(pacific, "next blursday")), [
      'scheduled-to-start-at is not a time that can be read: "next blursday"',
    ]);
    const absent = await read(pacific, "");
    assert.equal(absent.status, 422, absent.text);
    assert.deepEqual(errorMessages(absent), ["scheduled-to-start-at can't be blank"]);
    const twice = await read(pacific, "?text=now&text=tomorrow");
    assert.equal(twice.status, 422, twice.text);
    assert.deepEqual(errorMessages(twice), ["scheduled-to-start-at must be text"]);
  });

  it("is the owner's alone, and only GET", async () => {
    const anonymous = await api.request("GET", `/users/${pacific.id}/start-time?text=now`);
    assert.equal(anonymous.status, 401, anonymous.text);
    const other = await api.request("GET", `/users/${pacific.id}/start-time?text=now`, {
      auth: zoneless.auth,
    });
    assert.equal(other.status, 403, other.text);
    const post = await api.request("POST", `/users/${pacific.id}/start-time`, {
      auth: pacific.auth,
      body: "<start-time/>",
    });
    assert.equal(post.status, 405, post.text);
    assert.equal(post.headers.allow, "GET, HEAD");
  });
});
