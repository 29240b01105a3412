/**
 * RTP ports exhausted: the media port range (BRIDGELINE_RTP_PORTS) holds two port pairs, and a
 * conference of two phones takes both. A third attendee added to it is not called: its state is
 * failed, and the conference's events say why (503, no free RTP port pair). A caller dialling the
 * access number is refused "503 No Free Media Port". The two phones in the room keep hearing each
 * other throughout.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { EventStream } from "../helpers/event-stream.js";
import { createUser, startTestService } from "../helpers/service.js";
import { rtpPortRange, Sipp, skipWithout } from "../helpers/sipp.js";
import { until } from "../helpers/until.js";
import { textOf } from "../helpers/xml.js";
import {
  allConnected,
  assertHeardEachOther,
  attendeeStates,
  conferenceOf,
  sipCallingPhones,
  startPhone,
  startRoom,
} from "./rooms.js";

const ACCESS_NUMBER = "+16045550199";
const skip = skipWithout("baresip") || skipWithout("sipp");
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe("RTP ports exhausted", { skip }, () => {
  test("new calls fail with the reason, placed and taken; the calls in progress go on", async () => {
    const phones = [
      await startPhone(cleanups, "+16045550501", 440),
      await startPhone(cleanups, "+16045550502", 880),
    ];
    const late = await startPhone(cleanups, "+16045550503", 660);
    const { min } = rtpPortRange();
    const rtpPorts = { min, max: min + 3 };
    const api = await startTestService({
      sip: {
        ...sipCallingPhones([...phones, late]),
        rtpPorts,
        // One thread holds the whole range (threads share it out between them).
        mediaThreads: 1,
        accessNumbers: [ACCESS_NUMBER],
      },
    });
    cleanups.push(() => api.close());
    const owner = await createUser(api);
    const room = await startRoom(api, owner, phones);
    await allConnected(api, owner, [room]);

    // A third attendee: the room calls it, and there is no port pair left for the call.
    const added = await api.request("POST", `${room.path}/attendees`, {
      auth: owner.auth,
      body: `<attendee><phone-number>${late.baresip.user}</phone-number></attendee>`,
    });
    assert.equal(added.status, 201, added.text);
    const attendeeId = Number(
      new URL(String(added.headers.location), "http://localhost").pathname.split("/").pop(),
    );
    await until("the third attendee's call failed", async () => {
      const states = await attendeeStates(api, owner, room);
      const third = states.find((item) => textOf(item, "phone-number-subscriber-number") === "6045550503");
      return third !== undefined && textOf(third, "state") === "failed" ? true : undefined;
    });
    const events = await EventStream.open(`${api.httpUrl}${room.path}/events`, {
      auth: owner.auth,
      lastEventId: 0,
    });
    cleanups.push(async () => events.close());
    const failed = await events.waitFor(
      "the third attendee's failure",
      (event) => event.type === "attendee-failed" && event.data.attendeeId === attendeeId,
    );
    assert.match(
      failed.data.reason ?? "",
      new RegExp(`^503 no media port: no free RTP port pair in ${min}-${min + 3}`),
    );
    assert.equal(late.baresip.events.filter((event) => event.type === "CALL_INCOMING").length, 0);

    // A caller dialling in: refused before any media, with the reason in the status line.
    const caller = await Sipp.start({
      scenario: "uac-unavailable.xml",
      remote: `127.0.0.1:${api.service.sipPort}`,
      keys: { caller: "+16045550177" },
      args: ["-s", ACCESS_NUMBER],
    });
    cleanups.push(() => caller.stop());
    await caller.expectSuccess();
    assert.match(caller.messages(), /SIP\/2\.0 503 No Free Media Port/);
    assert.ok(api.logs.some((line) => line.includes("incoming call refused: no media port")));

    // The two phones in the room never noticed: still connected, still hearing each other.
    assert.deepEqual((await attendeeStates(api, owner, room)).map((item) => textOf(item, "state")).sort(), [
      "connected",
      "connected",
      "failed",
    ]);
    assert.equal(textOf(await conferenceOf(api, owner, room), "state"), "started");
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await assertHeardEachOther(room, 2);
  });
});
