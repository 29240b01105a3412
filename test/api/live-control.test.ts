/**
 * Live control through the API on a conference that takes place (started by the scheduler; its
 * moderator is the owner dialling in, so it runs without phones; an attendee with a number is called
 * through no trunk and fails), each change seen on the conference's event stream: muted and hand-up,
 * the conference's controls, call again, end; and 409 on a conference that is not started.
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
import { until } from "../helpers/until.js";
import { type Auth, assertErrorMatches, textOf, type XmlNode } from "../helpers/xml.js";

describe("live control API", () => {
  let api: TestService;
  let owner: { id: number; auth: Auth };
  const streams: EventStream[] = [];

  before(async () => {
    // With an access number the owner, who has no number to be called on, can dial in: a started
    // conference whose calls all failed stays open for callers.
    api = await startTestService({
      sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0, accessNumbers: ["+16045550199"] },
    });
    owner = await createUser(api);
  });
  after(async () => {
    for (const stream of streams) stream.close();
    await api.close();
  });

  function createConference(startAt: string): Promise<{ path: string; id: number }> {
    return createTestConference(api, owner, startAt, "Live");
  }

  async function addAttendee(conferencePath: string, body: string): Promise<string> {
    const added = await api.request("POST", `${conferencePath}/attendees`, { auth: owner.auth, body });
    assert.equal(added.status, 201, added.text);
    return new URL(String(added.headers.location), "http://localhost").pathname;
  }

  async function stateOf(path: string, root: "conference" | "attendee"): Promise<string> {
    const response = await api.request("GET", path, { auth: owner.auth });
    assert.equal(response.status, 200, response.text);
    return textOf(response.xml[root] as XmlNode, "state") ?? "";
  }

  async function openStream(conferenceId: number): Promise<EventStream> {
    const stream = await EventStream.open(
      `${api.httpUrl}/users/${owner.id}/conferences/${conferenceId}/events`,
      {
        auth: owner.auth,
      },
    );
    streams.push(stream);
    assert.equal(stream.status, 200);
    return stream;
  }

  it("refuses live changes with 409 while the conference is not started, but takes them back unchanged", async () => {
    const conference = await createConference("2030-01-01T10:00:00Z");
    const attendee = await addAttendee(
      conference.path,
      "<attendee><phone-number>6045550111</phone-number></attendee>",
    );
    const muted = await api.request("PUT", attendee, {
      auth: owner.auth,
      body: '<attendee><muted type="boolean">true</muted></attendee>',
    });
    assert.equal(muted.status, 409, muted.text);
    assertErrorMatches(muted, /not started: muted can be changed only while it takes place/);
    const unchanged = await api.request("PUT", attendee, {
      auth: owner.auth,
      body: '<attendee><muted type="boolean">false</muted><hand-up type="boolean">false</hand-up><name>x</name></attendee>',
    });
    assert.equal(unchanged.status, 200, unchanged.text);
    const call = await api.request("POST", `${attendee}/call`, { auth: owner.auth, body: "" });
    assert.equal(call.status, 409, call.text);
    assertErrorMatches(call, /conference is new, not started/);
    const end = await api.request("POST", `${conference.path}/end`, { auth: owner.auth, body: "" });
    assert.equal(end.status, 409, end.text);
    assertErrorMatches(end, /conference is new, not started/);
    assert.equal(await stateOf(conference.path, "conference"), "new");
    // What a cross-site no-cors fetch can send (no Content-Type) is refused before anything runs.
    const bare = await api.request("POST", `${conference.path}/end`, { auth: owner.auth });
    assert.equal(bare.status, 415, bare.text);
  });

  it("mutes, raises hands, changes the controls, calls again and ends a started conference, with events", async () => {
    const conference = await createConference(new Date().toISOString());
    const stream = await openStream(conference.id);
    const callee = await addAttendee(
      conference.path,
      "<attendee><phone-number>6045550112</phone-number></attendee>",
    );
    const calleeId = Number(callee.split("/").pop());
    const listed = await api.request("GET", `${conference.path}/attendees?moderator=true`, {
      auth: owner.auth,
    });
    const moderator = listed.xml.attendees as XmlNode;
    const moderatorId = Number(textOf(moderator.attendee as XmlNode, "id"));
    const moderatorPath = `${conference.path}/attendees/${moderatorId}`;
    await stream.waitFor(
      "attendee-added",
      (event) => event.type === "attendee-added" && event.data.attendeeId === calleeId,
    );

    const pending = await api.request("PUT", conference.path, {
      auth: owner.auth,
      body: "<conference><state>pending</state></conference>",
    });
    assert.equal(pending.status, 200, pending.text);
    await stream.waitFor("conference-started", (event) => event.type === "conference-started");
    // No trunk: the call fails at once, with the reason on the event.
    const failed = await stream.waitFor(
      "the callee's call failing",
      (event) => event.type === "attendee-failed" && event.data.attendeeId === calleeId,
    );
    assert.ok(failed.data.reason, "a failed call says why");
    assert.equal(await stateOf(conference.path, "conference"), "started");

    // The moderator's call failed too (no trunk): with no call in the room there is nothing to mute.
    const muted = await api.request("PUT", moderatorPath, {
      auth: owner.auth,
      body: '<attendee><muted type="boolean">true</muted><hand-up type="boolean">true</hand-up></attendee>',
    });
    assert.equal(muted.status, 409, muted.text);
    assertErrorMatches(muted, /not connected: muted and hand-up can be changed only during its call/);

    const controls = await api.request("PUT", conference.path, {
      auth: owner.auth,
      body: `<conference><dial-in-locked type="boolean">true</dial-in-locked>
        <lecture-mode type="boolean">true</lecture-mode><record-audio type="boolean">true</record-audio>
        <encrypted-only type="boolean">true</encrypted-only></conference>`,
    });
    assert.equal(controls.status, 200, controls.text);
    for (const type of ["dial-in-locked", "lecture-mode-on", "recording-started", "encrypted-only-on"])
      await stream.waitFor(type, (event) => event.type === type);
    // The room took recording on: the file exists and is served.
    await until("the recording", async () => {
      const recording = await api.request("GET", `${conference.path}/recording`, {
        auth: owner.auth,
        headers: { accept: "audio/wav" },
      });
      return recording.status === 200 ? recording : undefined;
    });

    const called = await api.request("POST", `${callee}/call`, { auth: owner.auth, body: "" });
    assert.equal(called.status, 200, called.text);
    assert.equal(textOf(called.xml.attendee as XmlNode, "id"), String(calleeId));
    const callings = () =>
      stream.events.filter(
        (event) => event.type === "attendee-calling" && event.data.attendeeId === calleeId,
      );
    await until("the second call", async () => (callings().length === 2 ? true : undefined));
    const noNumber = await api.request("POST", `${moderatorPath}/call`, { auth: owner.auth, body: "" });
    assert.equal(noNumber.status, 422, noNumber.text);
    assertErrorMatches(noNumber, /no number to call/);

    const ended = await api.request("POST", `${conference.path}/end`, { auth: owner.auth, body: "" });
    assert.equal(ended.status, 200, ended.text);
    assert.equal(textOf(ended.xml.conference as XmlNode, "id"), String(conference.id));
    const endEvent = await stream.waitFor("conference-ended", (event) => event.type === "conference-ended");
    assert.equal(endEvent.data.conferenceId, conference.id);
    assert.equal(await stateOf(conference.path, "conference"), "ended");
    const again = await api.request("POST", `${conference.path}/end`, { auth: owner.auth, body: "" });
    assert.equal(again.status, 409, again.text);
    assertErrorMatches(again, /conference is ended/);

    // Every event came once (PostgreSQL may deliver a late-committed lower id after a higher one).
    const ids = stream.events.map((event) => event.id);
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(
      !stream.events.some((event) => event.type === "attendee-muted"),
      "a refused mute sends no event",
    );
  });
});
