import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { forEachStore } from "../helpers/databases.js";
import { createUser, startTestApi, type TestApi, type TestResponse } from "../helpers/service.js";

type XmlNode = Record<string, unknown>;
type Auth = [string, string];

function conferenceXml(start: string, name = "Planning"): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<conference><name>${name}</name><scheduled-to-start-at>${start}</scheduled-to-start-at></conference>`;
}

/** A conference element's text (typed elements carry it as #text). */
function field(response: TestResponse, name: string): string {
  const element = (response.xml.conference as XmlNode)[name];
  return typeof element === "string" ? element : String((element as XmlNode)["#text"]);
}

function errorsOf(response: TestResponse): string[] {
  const errors = (response.xml.errors as XmlNode | undefined)?.error;
  return errors === undefined ? [] : ([] as unknown[]).concat(errors).map(String);
}

function conferenceCount(response: TestResponse): number {
  const list = response.xml.conferences as XmlNode;
  return list.conference === undefined ? 0 : ([] as unknown[]).concat(list.conference).length;
}

/** The API's datetime form: UTC, whole seconds. */
function apiTime(milliseconds: number): string {
  return `${new Date(milliseconds).toISOString().slice(0, 19)}Z`;
}

forEachStore("scheduled-to-start-at as a free-form expression", (kind) => {
  let api: TestApi;
  let newfoundland: { id: number; auth: Auth };
  let zoneless: { id: number; auth: Auth };

  before(async () => {
    api = await startTestApi({}, { store: kind });
    newfoundland = await createUser(api, "<time-zone>Newfoundland</time-zone>");
    zoneless = await createUser(api);
  });
  after(() => api.close());

  const create = (user: { id: number; auth: Auth }, start: string) =>
    api.request("POST", `/users/${user.id}/conferences`, { auth: user.auth, body: conferenceXml(start) });

  it("reads it in the owner's time zone on create and answers in UTC", async () => {
    const response = await create(newfoundland, "January 5 2030 at 7pm");
    assert.equal(response.status, 201, response.text);
    assert.equal(field(response, "scheduled-to-start-at"), "2030-01-05T22:30:00Z");
  });

  it("reads it in UTC for an owner without a time zone", async () => {
    const response = await create(zoneless, "January 5 2030 at 7pm");
    assert.equal(response.status, 201, response.text);
    assert.equal(field(response, "scheduled-to-start-at"), "2030-01-05T19:00:00Z");
  });

  it("reads relative expressions from the moment of the request", async () => {
    const offsets: [string, number][] = [
      ["in 3 hours", 3 * 3600 * 1000],
      ["meeting in 2 hours and 15 minutes", (2 * 60 + 15) * 60 * 1000],
    ];
    for (const [start, offset] of offsets) {
      const before = Date.now();
      const response = await create(newfoundland, start);
      const after = Date.now();
      assert.equal(response.status, 201, response.text);
      const shown = field(response, "scheduled-to-start-at");
      assert.ok(shown >= apiTime(before + offset) && shown <= apiTime(after + offset), `${start}: ${shown}`);
    }
  });

  it("accepts a time in the past", async () => {
    const response = await create(zoneless, "3 years ago");
    assert.equal(response.status, 201, response.text);
  });

  it("reads it on update with the DST offset of the target date", async () => {
    const created = await create(newfoundland, "2030-01-05T19:00");
    const location = created.headers.location as string;
    const response = await api.request("PUT", location, {
      auth: newfoundland.auth,
      body: conferenceXml("7/1/2030 9am"),
    });
    assert.equal(response.status, 200, response.text);
    // Newfoundland daylight time is UTC-02:30 in July (standard time UTC-03:30 in January).
    assert.equal(field(response, "scheduled-to-start-at"), "2030-07-01T11:30:00Z");
    assert.equal(field(created, "scheduled-to-start-at"), "2030-01-05T22:30:00Z");
  });

  it("reads the forms of issue 19 as written, skipping the words around them", async () => {
    const examples: [typeof newfoundland, string, string][] = [
      // Newfoundland daylight time (-02:30) in September, standard time (-03:30) in November.
      [newfoundland, "lunch with Ann on Fri Sep 4 2026 at 12:30", "2026-09-04T15:00:00Z"],
      [newfoundland, "20.11.2030 at 9am", "2030-11-20T12:30:00Z"],
      [newfoundland, "call on 4.9.2030 at 3pm", "2030-09-04T17:30:00Z"],
      [newfoundland, "2030:07:01 09:00:00", "2030-07-01T11:30:00Z"],
      [zoneless, "nov 5 2030 1045pm", "2030-11-05T22:45:00Z"],
      [zoneless, "2031 March 3rd at 9a.m.", "2031-03-03T09:00:00Z"],
      [zoneless, "jan '31", "2031-01-16T12:00:00Z"],
      [zoneless, "20-Nov-30 10:30", "2030-11-20T10:30:00Z"],
      [zoneless, "Mon Apr 02 17:00:00 PDT 2035", "2035-04-03T00:00:00Z"],
    ];
    for (const [user, start, stored] of examples) {
      const response = await create(user, start);
      assert.equal(response.status, 201, `${start}: ${response.text}`);
      assert.equal(field(response, "scheduled-to-start-at"), stored, start);
    }
  });

  it("answers 422 for text with no time in it, and for a time word it cannot place", async () => {
    for (const start of ["call Ann about the budget", "meeting in Boston tomorrow at 3"]) {
      const response = await create(zoneless, start);
      assert.equal(response.status, 422, response.text);
      assert.ok(
        errorsOf(response).some((error) => error.includes(`"${start}"`)),
        response.text,
      );
    }
  });

  it("answers 422 quoting an unreadable expression on create and stores nothing", async () => {
    const list = () => api.request("GET", `/users/${zoneless.id}/conferences`, { auth: zoneless.auth });
    const countBefore = conferenceCount(await list());
    const response = await create(zoneless, "next blursday at teatime");
    assert.equal(response.status, 422, response.text);
    assert.ok(
      errorsOf(response).some((error) => error.includes('"next blursday at teatime"')),
      response.text,
    );
    assert.equal(conferenceCount(await list()), countBefore);
  });

  it("answers 422 quoting an unreadable expression on update and changes nothing", async () => {
    const created = await create(newfoundland, "tomorrow at 9am");
    const location = created.headers.location as string;
    const response = await api.request("PUT", location, {
      auth: newfoundland.auth,
      body: conferenceXml("the 31st of february", "Renamed"),
    });
    assert.equal(response.status, 422, response.text);
    assert.ok(
      errorsOf(response).some((error) => error.includes('"the 31st of february"')),
      response.text,
    );
    const shown = await api.request("GET", location, { auth: newfoundland.auth });
    assert.equal(field(shown, "scheduled-to-start-at"), field(created, "scheduled-to-start-at"));
    assert.equal(field(shown, "name"), "Planning");
    assert.equal(field(shown, "lock-version"), field(created, "lock-version"));
  });
});
