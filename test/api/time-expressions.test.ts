import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createUser, startTestService, type TestResponse, type TestService } from "../helpers/service.js";

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

describe("scheduled-to-start-at as a free-form expression", () => {
  let api: TestService;
  let newfoundland: { id: number; auth: Auth };
  let zoneless: { id: number; auth: Auth };

  before(async () => {
    api = await startTestService();
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
    const before = Date.now();
    const response = await create(newfoundland, "in 3 hours");
    const after = Date.now();
    assert.equal(response.status, 201, response.text);
    const hours = 3 * 3600 * 1000;
    const shown = field(response, "scheduled-to-start-at");
    assert.ok(shown >= apiTime(before + hours) && shown <= apiTime(after + hours), shown);
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
