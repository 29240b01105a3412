/**
 * Live control of a conference whose attendees are real phones (baresip playing tones), watched on
 * its events stream: everyone connects and is heard talking, a hand is raised from the keypad, a
 * PUT mutes a phone and its tone no longer reaches the others, a phone that hung up is called again
 * through the API, and a POST ends the conference, hanging everyone up.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { goertzelLevelDb, heardThroughout, SAMPLE_RATE } from "../../helpers/audio.js";
import { Baresip, heardUntil } from "../../helpers/baresip.js";
import { EventStream } from "../../helpers/event-stream.js";
import { createUser, startTestService } from "../../helpers/service.js";
import { rtpPortRange, skipWithout } from "../../helpers/sipp.js";
import { textOf, type XmlNode } from "../../helpers/xml.js";

const skip = skipWithout("baresip");
const cleanups: Array<() => Promise<unknown> | unknown> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function phone(user: string, toneHz: number): Promise<Baresip> {
  const started = await Baresip.start({ user, toneHz });
  cleanups.push(() => started.stop());
  return started;
}

/** The level of a frequency in its loudest 200 ms window. */
function loudestDb(samples: Int16Array, hz: number): number {
  const window = SAMPLE_RATE / 5;
  let loudest = Number.NEGATIVE_INFINITY;
  for (let start = 0; start + window <= samples.length; start += window / 2)
    loudest = Math.max(loudest, goertzelLevelDb(samples.subarray(start, start + window), hz));
  return loudest;
}

describe("live control of a conference of phones", { skip }, () => {
  test("events show joins, talking and a raised hand; mute, call again and end obey the API", async () => {
    const lead = await phone("+16045550140", 660);
    const low = await phone("+16045550141", 440);
    const high = await phone("+16045550142", 880);
    const api = await startTestService({
      sip: {
        ...loadConfig({}).sip,
        bindAddress: "127.0.0.1",
        port: 0,
        callerId: "+16045550000",
        routes: [
          { prefix: "+16045550140", trunk: lead.trunk },
          { prefix: "+16045550141", trunk: low.trunk },
          { prefix: "+16045550142", trunk: high.trunk },
        ],
        rtpPorts: rtpPortRange(),
      },
    });
    cleanups.push(() => api.close());
    const owner = await createUser(
      api,
      '<phone-numbers type="array"><phone-number><subscriber-number>604-555-0140</subscriber-number></phone-number></phone-numbers>',
    );
    const created = await api.request("POST", `/users/${owner.id}/conferences`, {
      auth: owner.auth,
      body: `<conference><name>Live</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at>
        <announce-attendees type="boolean">false</announce-attendees><direct-dial type="boolean">true</direct-dial></conference>`,
    });
    assert.equal(created.status, 201, created.text);
    const conferenceId = Number(textOf(created.xml.conference as XmlNode, "id"));
    const conferencePath = `/users/${owner.id}/conferences/${conferenceId}`;
    const stream = await EventStream.open(`${api.httpUrl}${conferencePath}/events`, { auth: owner.auth });
    cleanups.push(() => stream.close());
    const attendeeIds: number[] = [];
    for (const number of ["604-555-0141", "604-555-0142"]) {
      const added = await api.request("POST", `${conferencePath}/attendees`, {
        auth: owner.auth,
        body: `<attendee><phone-number>${number}</phone-number></attendee>`,
      });
      assert.equal(added.status, 201, added.text);
      attendeeIds.push(Number(textOf(added.xml.attendee as XmlNode, "id")));
    }
    const [lowId, highId] = attendeeIds as [number, number];
    const pending = await api.request("PUT", conferencePath, {
      auth: owner.auth,
      body: "<conference><state>pending</state></conference>",
    });
    assert.equal(pending.status, 200, pending.text);

    const of =
      (type: string, attendeeId: number) => (event: { type: string; data: { attendeeId: number | null } }) =>
        event.type === type && event.data.attendeeId === attendeeId;
    await stream.waitFor("conference-started", (event) => event.type === "conference-started");
    for (const id of attendeeIds) {
      await stream.waitFor("attendee-calling", of("attendee-calling", id));
      await stream.waitFor("attendee-connected", of("attendee-connected", id));
      // Each phone sends its tone all the time.
      await stream.waitFor("talking-started", of("talking-started", id));
    }
    // A view opened now learns who is talking without waiting for them to pause.
    const late = await EventStream.open(`${api.httpUrl}${conferencePath}/events`, { auth: owner.auth });
    for (const id of attendeeIds) await late.waitFor("talking now", of("talking-started", id));
    late.close();

    // *7 from the keypad raises a hand.
    assert.equal((await high.command("sndcode", "*7")).ok, true);
    await stream.waitFor("hand-raised", of("hand-raised", highId));
    // The moderator lowers it through the API; the room's *4 would no longer pick this leg.
    const lower = await api.request("PUT", `${conferencePath}/attendees/${highId}`, {
      auth: owner.auth,
      body: '<attendee><hand-up type="boolean">false</hand-up></attendee>',
    });
    assert.equal(lower.status, 200, lower.text);
    await stream.waitFor("hand-lowered", of("hand-lowered", highId));

    const mute = await api.request("PUT", `${conferencePath}/attendees/${lowId}`, {
      auth: owner.auth,
      body: '<attendee><muted type="boolean">true</muted></attendee>',
    });
    assert.equal(mute.status, 200, mute.text);
    await stream.waitFor("attendee-muted", of("attendee-muted", lowId));
    // A muted phone is never talking: the room says so once it applied the mute.
    const stopped = await stream.waitFor("talking-stopped", of("talking-stopped", lowId));
    const muted = stream.events.find(of("attendee-muted", lowId));
    assert.ok(muted && stopped.id > muted.id);

    // The 880 Hz phone hangs up and is called again through the API.
    assert.equal((await high.command("hangup")).ok, true);
    await stream.waitFor("attendee-disconnected", of("attendee-disconnected", highId));
    const again = await api.request("POST", `${conferencePath}/attendees/${highId}/call`, {
      auth: owner.auth,
      body: "",
    });
    assert.equal(again.status, 200, again.text);
    await stream.waitFor("the second call connected", (event) => {
      const connections = stream.events.filter(of("attendee-connected", highId));
      return connections.length === 2 && event === connections[1];
    });
    // What the moderator hears with the mute and the 880 Hz phone back: the first second in which it
    // hears the 880 Hz phone all along.
    const reconnectedAt = lead.heardSoFar().length;
    const back = (
      await heardUntil(lead, "a second of the phone called again", (heard) =>
        heardThroughout(heard.subarray(reconnectedAt), 880, 1),
      )
    ).subarray(-SAMPLE_RATE);
    assert.ok(goertzelLevelDb(back, 440) < -40, "a muted phone's tone does not reach the moderator");
    assert.ok(goertzelLevelDb(back, 880) > -20, "the phone called again is heard");

    const ended = await api.request("POST", `${conferencePath}/end`, { auth: owner.auth, body: "" });
    assert.equal(ended.status, 200, ended.text);
    await Promise.all([lead.waitForEvent("CALL_CLOSED"), low.waitForEvent("CALL_CLOSED")]);
    const endEvent = await stream.waitFor("conference-ended", (event) => event.type === "conference-ended");
    for (const id of [lowId, highId])
      assert.ok(
        stream.events.some((event) => of("attendee-disconnected", id)(event) && event.id <= endEvent.id),
        `attendee ${id} disconnected with the end`,
      );
    const read = await api.request("GET", conferencePath, { auth: owner.auth });
    assert.equal(textOf(read.xml.conference as XmlNode, "state"), "ended");

    // The moderator heard the 440 Hz phone until it was muted (and not after, as measured above).
    assert.ok(loudestDb(lead.heard(), 440) > -20, "the 440 Hz phone was heard before the mute");
  });
});
