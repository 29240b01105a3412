import assert from "node:assert/strict";
import { test } from "node:test";
import { attendee, flush, flushUntil } from "./fakes.js";
import { answer, type Harness, startRoom } from "./harness.js";

/** The moderator (1) and two members (2, 3) in the room. */
async function roomOfThree(conference: Parameters<typeof startRoom>[0] = {}): Promise<Harness> {
  const h = await startRoom(conference);
  await answer(h, 1, 2, 3);
  h.store.writes.length = 0;
  return h;
}

test("the API's muted flag is applied on refresh and told to the caller", async () => {
  const h = await roomOfThree();
  h.store.attendee(2).muted = true;
  await h.room.refresh();
  assert.deepEqual(h.call(2).mutes, [true]);
  assert.deepEqual(h.call(2).prompts, ["muted"]);
  await h.room.refresh();
  assert.deepEqual(h.call(2).mutes, [true], "once");
  h.store.attendee(2).muted = false;
  await h.room.refresh();
  assert.deepEqual(h.call(2).prompts, ["muted", "unmuted"]);
  assert.deepEqual(h.store.writes, [], "the API stored it already");
});

test("the API's raised hand is applied on refresh: *4 then unmutes it", async () => {
  const h = await roomOfThree();
  h.call(1).press("*3");
  await flush();
  h.store.attendee(3).handUp = true;
  await h.room.refresh();
  h.call(1).press("*4");
  await flush();
  assert.equal(h.call(3).muted, false);
  assert.equal(h.call(2).muted, true);
});

test("lecture mode set through the API mutes the members the store does not show muted, not the moderator", async () => {
  const h = await roomOfThree();
  // The API muted member 2 in its transaction; member 3's join was not stored as connected yet.
  h.store.attendee(2).muted = true;
  h.store.attendee(3).muted = null;
  h.store.conference = { ...h.room.conference, lectureMode: true };
  await h.room.refresh();
  await flush();
  assert.equal(h.call(2).muted, true);
  assert.equal(h.call(3).muted, true);
  assert.deepEqual(h.call(1).mutes, []);
  assert.deepEqual(h.store.writes, [{ op: "attendee-controls", attendeeId: 3, controls: { muted: true } }]);
  h.call(2).press("*6");
  await flush();
  assert.equal(h.call(2).prompts.at(-1), "muting-not-allowed");
});

test("record-audio set through the API starts and pauses the recording, announced to the room", async () => {
  const h = await roomOfThree();
  h.store.conference = { ...h.room.conference, recordAudio: true };
  await h.room.refresh();
  await flushUntil(() => h.media.recording.length > 0);
  assert.equal(h.media.recording.length, 1);
  assert.equal(h.store.of("recording-file").length, 1);
  h.store.conference = { ...h.room.conference, recordAudio: false };
  await h.room.refresh();
  await flush();
  assert.deepEqual(h.media.recording.at(-1), "pause");
  assert.deepEqual(h.media.prompts, ["recording-started", "recording-stopped"]);
});

test("a conference that starts with record-audio records from the start", async () => {
  const h = await startRoom({ conference: { recordAudio: true } });
  await flushUntil(() => h.media.recording.length > 0);
  assert.equal(h.media.recording.length, 1);
});

test("the API's end request is announced and ends the conference 2.5 s later", async () => {
  const h = await roomOfThree();
  h.store.endRequestedAt = new Date().toISOString();
  await h.room.refresh();
  assert.equal(h.room.state, "ending");
  assert.deepEqual(h.media.prompts, ["conference-ending"]);
  await h.room.refresh();
  assert.deepEqual(h.media.prompts, ["conference-ending"], "announced once");
  await h.clock.pass(2_500);
  assert.equal(h.room.state, "ended");
  assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "ended through the API" }]);
});

test("an end request while the room waits for its moderator lifts the hold so the announcement is heard", async () => {
  const h = await startRoom();
  await answer(h, 2);
  h.store.endRequestedAt = new Date().toISOString();
  await h.room.refresh();
  assert.deepEqual(h.media.holds, [true, false]);
  h.call(1).answer();
  await flush();
  assert.equal(h.room.state, "ending", "a moderator joining now changes nothing");
});

test("a call-again request dials the attendee again, once per request, and not while its call runs", async () => {
  const h = await startRoom({ attendees: [attendee(2), attendee(3)] });
  await answer(h, 2);
  h.call(3).fail(486, "Busy Here");
  await flush();
  h.store.callRequests.set(3, "2027-03-01T10:05:00.000Z");
  h.store.callRequests.set(2, "2027-03-01T10:05:00.000Z");
  await h.room.refresh();
  await h.room.refresh();
  assert.deepEqual(
    h.telephone.calls.map((call) => call.to),
    ["+16045550102", "+16045550103", "+16045550103"],
  );
  h.call(3).fail(486, "Busy Here");
  await flush();
  await h.room.refresh();
  assert.equal(h.telephone.calls.length, 3, "the same request is not taken twice");
  h.store.callRequests.set(3, "2027-03-01T10:06:00.000Z");
  await h.room.refresh();
  assert.equal(h.telephone.calls.length, 4);
});

test("an attendee added through the API is called on the next refresh", async () => {
  const h = await roomOfThree();
  h.store.attendees.push(attendee(4));
  await h.room.refresh();
  assert.equal(h.call(4).direction, "outbound");
});

test("an attendee deleted through the API is hung up and leaves without ending the conference", async () => {
  const h = await roomOfThree();
  h.store.attendees = h.store.attendees.filter((candidate) => candidate.id !== 2);
  await h.room.refresh();
  await flush();
  assert.equal(h.call(2).hungUp, true);
  assert.equal(h.call(2).room, undefined);
  assert.equal(h.room.state, "in-session");
  assert.ok(
    h.logger.lines.some(
      (line) => line.message === "attendee deleted: hanging up" && line.fields.attendeeId === 2,
    ),
  );
  assert.deepEqual(h.store.of("call"), [], "its own hang-up is not stored as a disconnection");
});

test("a deleted conference ends, and so does one no longer started", async () => {
  const deleted = await roomOfThree();
  deleted.store.conference = undefined;
  await deleted.room.refresh();
  await flush();
  assert.equal(deleted.room.state, "ended");
  assert.equal(deleted.call(1).hungUp, true);
  assert.deepEqual(deleted.store.of("end"), [{ op: "end", reason: "conference deleted" }]);

  const ended = await roomOfThree();
  ended.store.conference = { ...ended.room.conference, state: "ended" };
  await ended.room.refresh();
  await flush();
  assert.deepEqual(ended.store.of("end"), [{ op: "end", reason: "conference ended" }]);
});

test("a refresh that read the store while the room's own change was on its way leaves the room's controls as they are", async () => {
  const h = await roomOfThree();
  let release = () => {};
  h.store.loadGate = new Promise((resolve) => {
    release = resolve;
  });
  const refreshing = h.room.refresh();
  await flush();
  h.call(1).press("*1");
  await flush();
  h.store.loadGate = undefined;
  release();
  await refreshing;
  assert.equal(h.room.conference.dialInLocked, true, "the stale read did not undo *1");
  await h.room.refresh();
  assert.equal(h.room.conference.dialInLocked, true);
});

test("encrypted-only set through the API mid-conference: the answered calls not over TLS with SRTP hear why and are hung up; the encrypted one stays", async () => {
  const h = await startRoom();
  Object.assign(h.call(2), { signallingTls: true, encrypted: true });
  Object.assign(h.call(3), { signallingTls: true, encrypted: false });
  await answer(h, 1, 2, 3);
  h.store.writes.length = 0;
  h.store.conference = { ...h.room.conference, encryptedOnly: true };
  await h.room.refresh();
  await flush();
  for (const id of [1, 3]) {
    assert.deepEqual(h.call(id).prompts.slice(-2), ["encrypted-only", "goodbye"]);
    assert.equal(h.call(id).hungUp, true);
  }
  assert.equal(h.call(2).hungUp, false);
  assert.equal(h.call(2).room, h.media);
  assert.deepEqual(
    h.store.of("call").map((write) => [write.attendeeId, write.event]),
    [
      [
        1,
        { kind: "disconnected", result: "not encrypted (none): the conference takes encrypted calls only" },
      ],
      [3, { kind: "disconnected", result: "not encrypted (tls): the conference takes encrypted calls only" }],
    ],
  );
  assert.equal(h.endedCalls(), 0, "the conference goes on with the encrypted call");
  await h.room.refresh();
  assert.equal(h.store.of("call").length, 2, "once");
});
