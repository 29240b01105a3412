import assert from "node:assert/strict";
import { test } from "node:test";
import { attendee, flush } from "./fakes.js";
import { startRoom } from "./harness.js";

const GREETED = { conference: { directDial: false } };

test("a dialled attendee hears the invitation and joins by pressing 1", async () => {
  const h = await startRoom(GREETED);
  const call = h.call(2);
  call.answer();
  await flush();
  assert.deepEqual(call.prompts, ["invitation"]);
  assert.equal(call.room, undefined, "not in the room before pressing 1");
  call.press("1");
  await flush();
  assert.equal(call.room, h.media);
  assert.deepEqual(
    h.store
      .of("call")
      .filter((write) => write.attendeeId === 2)
      .map((write) => write.event.kind),
    ["calling", "connected"],
  );
  assert.deepEqual(h.spoken, ["Alice invites you to the telephone conference Weekly. Press 1 to join."]);
});

test("no 1 in two tries of 6 s: no-response and goodbye, hung up, stored no-answer", async () => {
  const h = await startRoom(GREETED);
  const call = h.call(2);
  call.answer();
  await flush();
  call.press("5");
  await flush();
  assert.deepEqual(call.prompts, ["invitation", "invitation"], "a wrong key is a try");
  await h.clock.pass(5_999);
  assert.equal(call.hungUp, false);
  await h.clock.pass(1);
  assert.deepEqual(call.prompts, ["invitation", "invitation", "no-response", "goodbye"]);
  assert.equal(call.hungUp, true);
  assert.equal(call.room, undefined);
  assert.deepEqual(h.store.of("call").at(-1), {
    op: "call",
    attendeeId: 2,
    event: { kind: "failed", state: "no-answer", result: "answered but did not press 1" },
  });
  assert.equal(h.room.state, "waiting-for-moderator", "the others still come");
});

test("silence: the invitation again after 6 s, and after 12 s goodbye (an answering machine)", async () => {
  const h = await startRoom(GREETED);
  const call = h.call(2);
  call.answer();
  await flush();
  await h.clock.pass(5_999);
  assert.deepEqual(call.prompts, ["invitation"]);
  await h.clock.pass(1);
  assert.deepEqual(call.prompts, ["invitation", "invitation"], "the second try at 6 s");
  assert.equal(call.stops, 1, "the first invitation stopped before the second");
  await h.clock.pass(5_999);
  assert.equal(call.hungUp, false);
  await h.clock.pass(1);
  assert.deepEqual(call.prompts, ["invitation", "invitation", "no-response", "goodbye"]);
  assert.equal(call.hungUp, true);
  assert.equal(h.store.of("call").at(-1)?.event.kind, "failed");
  assert.equal(h.clock.pending, 0, "no wait left behind");
});

test("1 pressed in the second try joins; a key pressed while the extension goes out counts", async () => {
  const h = await startRoom(GREETED);
  const late = h.call(2);
  late.answer();
  await flush();
  await h.clock.pass(6_000);
  late.press("1");
  await flush();
  assert.equal(late.room, h.media);
  assert.deepEqual(late.prompts, ["invitation", "invitation"]);

  const extension = await startRoom({
    ...GREETED,
    attendees: [attendee(4, { phoneNumberExtension: "22" })],
  });
  const call = extension.call(4);
  call.answer();
  call.press("1");
  await flush();
  assert.deepEqual(call.digitsSent, ["22"]);
  assert.equal(call.room, extension.media, "the 1 typed before the invitation was heard");
});

test("the spoken invitation is made once per room, and the recorded one is played when the machine cannot speak", async () => {
  let speaks = 0;
  const h = await startRoom({
    ...GREETED,
    speak: async () => {
      speaks++;
      return new Int16Array(160);
    },
  });
  h.call(1).answer();
  h.call(2).answer();
  await flush();
  assert.equal(speaks, 1);
  assert.deepEqual(h.call(1).prompts, ["samples"]);
  assert.deepEqual(h.call(2).prompts, ["samples"]);

  const mute = await startRoom({ ...GREETED, speak: () => Promise.reject(new Error("no espeak-ng")) });
  mute.call(2).answer();
  await flush();
  assert.deepEqual(mute.call(2).prompts, ["invitation"]);
});

test("with announcements, the caller records its name after the chime (up to 4 s, # ends it); nothing said is a chime", async () => {
  const h = await startRoom({ conference: { directDial: false, announceAttendees: true } });
  const quiet = h.call(3);
  quiet.answer();
  await flush();
  quiet.press("1");
  await flush();
  assert.deepEqual(quiet.prompts, ["invitation", "record-name", "tone:entry"]);
  assert.equal(quiet.recordings, 1);
  await h.clock.pass(3_999);
  assert.equal(quiet.room, undefined, "still recording");
  await h.clock.pass(1);
  assert.equal(quiet.room, h.media);
  assert.deepEqual(h.media.prompts, ["tone:entry"]);
});

test("a caller who hangs up in the greeting is stored disconnected and never joins", async () => {
  const h = await startRoom(GREETED);
  h.call(2).answer();
  await flush();
  h.call(2).hangUpFarEnd();
  await flush();
  await h.clock.pass(12_000);
  assert.equal(h.call(2).room, undefined);
  assert.deepEqual(
    h.store
      .of("call")
      .filter((write) => write.attendeeId === 2)
      .map((write) => write.event.kind),
    ["calling", "disconnected"],
  );
});
