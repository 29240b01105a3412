/**
 * The per-user limits on placed calls (toll fraud), through the API on the real store: a conference
 * may not dial more attendees than its owner may have calls in progress (422 when adding one), a
 * call again past the hourly limit is 422 and logged, and the room refuses to place a call past it
 * (the attendee fails "403 Not Called"). No trunk: each call fails at once but still counts.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { loadConfig } from "../../src/config.js";
import { EventStream } from "../helpers/event-stream.js";
import {
  createConference as createTestConference,
  createUser,
  startTestService,
  type TestService,
} from "../helpers/service.js";
import { type Auth, assertErrorMatches, textOf, type XmlNode } from "../helpers/xml.js";

describe("per-user call limits", () => {
  let api: TestService;
  let owner: { id: number; auth: Auth };
  const streams: EventStream[] = [];

  before(async () => {
    const defaults = loadConfig({});
    api = await startTestService({
      // An access number keeps a started conference whose calls all failed open for callers.
      sip: { ...defaults.sip, bindAddress: "127.0.0.1", port: 0, accessNumbers: ["+16045550199"] },
      conferences: { ...defaults.conferences, maxCallsInProgressPerUser: 2, maxCallsPerHourPerUser: 3 },
    });
    owner = await createUser(api);
  });
  after(async () => {
    for (const stream of streams) stream.close();
    await api.close();
  });

  function createConference(startAt: string): Promise<{ path: string; id: number }> {
    return createTestConference(api, owner, startAt, "Limits");
  }

  function addAttendee(conferencePath: string, body: string) {
    return api.request("POST", `${conferencePath}/attendees`, { auth: owner.auth, body });
  }

  async function start(conference: { path: string; id: number }): Promise<EventStream> {
    const stream = await EventStream.open(
      `${api.httpUrl}/users/${owner.id}/conferences/${conference.id}/events`,
      { auth: owner.auth },
    );
    streams.push(stream);
    const pending = await api.request("PUT", conference.path, {
      auth: owner.auth,
      body: "<conference><state>pending</state></conference>",
    });
    assert.equal(pending.status, 200, pending.text);
    await stream.waitFor("conference-started", (event) => event.type === "conference-started");
    return stream;
  }

  it("refuses, with 422 and nothing written, an attendee to dial past the calls its owner may have at once", async () => {
    const conference = await createConference("2030-01-01T10:00:00Z");
    for (const number of ["6045550111", "6045550112"]) {
      const added = await addAttendee(
        conference.path,
        `<attendee><phone-number>${number}</phone-number></attendee>`,
      );
      assert.equal(added.status, 201, added.text);
    }
    const third = await addAttendee(
      conference.path,
      "<attendee><phone-number>6045550113</phone-number></attendee>",
    );
    assert.equal(third.status, 422, third.text);
    assertErrorMatches(third, /phone-number: a conference can call at most 2 attendees/);
    // One who dials in is not called: still welcome.
    const dialIn = await addAttendee(
      conference.path,
      '<attendee><phone-number>6045550113</phone-number><dial-in type="boolean">true</dial-in></attendee>',
    );
    assert.equal(dialIn.status, 201, dialIn.text);
    const listed = await api.request("GET", `${conference.path}/attendees`, { auth: owner.auth });
    const numbers = JSON.stringify(listed.xml);
    assert.equal(numbers.split("6045550113").length - 1, 1, "the refused attendee was not written");
  });

  it("refuses, with 422 and nothing written, a change that makes a dial-in attendee one to call past the limit", async () => {
    const conference = await createConference("2030-01-01T10:00:00Z");
    const attendeePaths: string[] = [];
    for (const body of [
      "<attendee><phone-number>6045550121</phone-number></attendee>",
      "<attendee><phone-number>6045550122</phone-number></attendee>",
      '<attendee><phone-number>6045550123</phone-number><dial-in type="boolean">true</dial-in></attendee>',
      '<attendee><name>No number</name><dial-in type="boolean">true</dial-in></attendee>',
    ]) {
      const added = await addAttendee(conference.path, body);
      assert.equal(added.status, 201, added.text);
      attendeePaths.push(new URL(String(added.headers.location), "http://localhost").pathname);
    }
    const [first, , dialIn, withoutNumber] = attendeePaths as [string, string, string, string];
    const put = (path: string, body: string) => api.request("PUT", path, { auth: owner.auth, body });
    for (const [path, body] of [
      [dialIn, '<attendee><dial-in type="boolean">false</dial-in></attendee>'],
      [
        withoutNumber,
        '<attendee><phone-number>6045550124</phone-number><dial-in type="boolean">false</dial-in></attendee>',
      ],
    ] as const) {
      const refused = await put(path, body);
      assert.equal(refused.status, 422, refused.text);
      assertErrorMatches(refused, /phone-number: a conference can call at most 2 attendees/);
      const unchanged = await api.request("GET", path, { auth: owner.auth });
      assert.equal(
        textOf(unchanged.xml.attendee as XmlNode, "dial-in"),
        "true",
        "the refused change was not written",
      );
    }
    // An attendee already called keeps its place: a new number for it is not one more call.
    const renumbered = await put(first, "<attendee><phone-number>6045550125</phone-number></attendee>");
    assert.equal(renumbered.status, 200, renumbered.text);
  });

  it("refuses a call again past the hourly limit (422, logged), and the room places no call past it", async () => {
    const conference = await createConference(new Date().toISOString());
    const callee = await addAttendee(
      conference.path,
      "<attendee><phone-number>6045550121</phone-number></attendee>",
    );
    assert.equal(callee.status, 201, callee.text);
    const calleePath = new URL(String(callee.headers.location), "http://localhost").pathname;
    const calleeId = Number(calleePath.split("/").pop());
    const stream = await start(conference);
    const failures = () =>
      stream.events.filter((event) => event.type === "attendee-failed" && event.data.attendeeId === calleeId);
    await stream.waitFor("the first call failing (no trunk)", () => failures().length === 1);

    // Calls placed this hour: 1. Two more are allowed.
    for (const placed of [2, 3]) {
      const again = await api.request("POST", `${calleePath}/call`, { auth: owner.auth, body: "" });
      assert.equal(again.status, 200, again.text);
      await stream.waitFor(`call ${placed} failing`, () => failures().length === placed);
    }
    const refused = await api.request("POST", `${calleePath}/call`, { auth: owner.auth, body: "" });
    assert.equal(refused.status, 422, refused.text);
    assertErrorMatches(refused, /call: the account has placed 3 calls in the last hour/);
    assert.ok(
      api.logs.some(
        (line) => line.includes("call refused (toll fraud)") && line.includes(`"attendeeId":${calleeId}`),
      ),
      "the refusal is logged",
    );

    // Another conference of the same owner: its attendee is not called at all.
    const next = await createConference(new Date().toISOString());
    const other = await addAttendee(
      next.path,
      "<attendee><phone-number>6045550122</phone-number></attendee>",
    );
    assert.equal(other.status, 201, other.text);
    const otherPath = new URL(String(other.headers.location), "http://localhost").pathname;
    const otherId = Number(otherPath.split("/").pop());
    const nextStream = await start(next);
    const failed = await nextStream.waitFor(
      "the attendee refused",
      (event) => event.type === "attendee-failed" && event.data.attendeeId === otherId,
    );
    assert.equal(
      failed.data.reason,
      "403 Not Called: the account has placed 3 calls in the last hour, the most it may place in an hour",
    );
    assert.ok(
      !nextStream.events.some(
        (event) => event.type === "attendee-calling" && event.data.attendeeId === otherId,
      ),
      "no call was placed",
    );
    const shown = await api.request("GET", otherPath, { auth: owner.auth });
    assert.equal(textOf(shown.xml.attendee as XmlNode, "state"), "failed");
  });
});
