import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { flush, flushUntil } from "./fakes.js";
import { answer, DATA_DIR, type Harness, startRoom } from "./harness.js";

/** A room with the moderator (1) and two members (2, 3) in it. */
async function roomOfThree(conference: Parameters<typeof startRoom>[0] = {}): Promise<Harness> {
  const h = await startRoom(conference);
  await answer(h, 1, 2, 3);
  h.store.writes.length = 0;
  return h;
}

async function press(h: Harness, id: number, keys: string): Promise<void> {
  h.call(id).press(keys);
  await flush();
}

test("*6 mutes and unmutes oneself, stored and told", async () => {
  const h = await roomOfThree();
  await press(h, 2, "*6");
  await press(h, 2, "*6");
  assert.deepEqual(h.call(2).mutes, [true, false]);
  assert.deepEqual(h.call(2).prompts, ["muted", "unmuted"]);
  assert.deepEqual(h.store.writes, [
    { op: "attendee-controls", attendeeId: 2, controls: { muted: true } },
    { op: "attendee-controls", attendeeId: 2, controls: { muted: false } },
  ]);
});

test("*6 is refused to a member in lecture mode, not to the moderator", async () => {
  const h = await roomOfThree({ conference: { lectureMode: true } });
  assert.equal(h.call(2).joinedMuted, true, "members join muted in lecture mode");
  assert.equal(h.call(1).joinedMuted, false, "the moderator joins unmuted");
  await press(h, 2, "*6");
  assert.deepEqual(h.call(2).mutes, []);
  assert.deepEqual(h.call(2).prompts, ["muting-not-allowed"]);
  await press(h, 1, "*6");
  assert.deepEqual(h.call(1).mutes, [true]);
  assert.deepEqual(h.store.writes, [{ op: "attendee-controls", attendeeId: 1, controls: { muted: true } }]);
});

test("*7 raises and lowers one's hand", async () => {
  const h = await roomOfThree();
  await press(h, 3, "*7");
  await press(h, 3, "*7");
  assert.deepEqual(h.call(3).prompts, ["hand-raised", "hand-lowered"]);
  assert.deepEqual(h.store.writes, [
    { op: "attendee-controls", attendeeId: 3, controls: { handUp: true } },
    { op: "attendee-controls", attendeeId: 3, controls: { handUp: false } },
  ]);
});

test("*5 tells how many are in the room, not counting a caller still in the greeting", async () => {
  const h = await startRoom({ conference: { directDial: false } });
  for (const id of [1, 2, 3]) h.call(id).answer();
  await flush();
  h.call(1).press("1");
  h.call(2).press("1");
  await flush();
  await press(h, 2, "*5");
  assert.deepEqual(h.call(2).prompts.slice(-2), ["participants", "number-2"]);
  h.call(3).press("1");
  await flush();
  await press(h, 1, "*5");
  assert.deepEqual(h.call(1).prompts.slice(-2), ["participants", "number-3"]);
});

test("** is help: the member's keys to a member, the moderator's too to the moderator; members' moderator keys do nothing", async () => {
  const h = await roomOfThree();
  await press(h, 2, "**");
  await press(h, 1, "**");
  assert.deepEqual(h.call(2).prompts, ["help-member"]);
  assert.deepEqual(h.call(1).prompts, ["help-member", "help-moderator"]);
  await press(h, 2, "*1*2*3*9");
  assert.deepEqual(h.call(2).prompts, ["help-member"]);
  assert.deepEqual(h.store.writes, []);
  assert.equal(h.room.state, "in-session");
});

test("*1 locks and unlocks dial-in", async () => {
  const h = await roomOfThree();
  await press(h, 1, "*1");
  assert.equal(h.room.conference.dialInLocked, true);
  await press(h, 1, "*1");
  assert.equal(h.room.conference.dialInLocked, false);
  assert.deepEqual(h.call(1).prompts, ["conference-locked-now", "conference-unlocked"]);
  assert.deepEqual(h.store.writes, [
    { op: "conference-controls", controls: { dialInLocked: true } },
    { op: "conference-controls", controls: { dialInLocked: false } },
  ]);
});

test("*2 lecture mode mutes the members (stored before the mode) but not the moderator, and unmutes them when off", async () => {
  const h = await roomOfThree();
  await press(h, 1, "*2");
  assert.equal(h.call(2).muted, true);
  assert.equal(h.call(3).muted, true);
  assert.deepEqual(h.call(1).mutes, []);
  assert.equal(h.room.conference.lectureMode, true);
  assert.deepEqual(h.store.writes, [
    { op: "attendee-controls", attendeeId: 2, controls: { muted: true } },
    { op: "attendee-controls", attendeeId: 3, controls: { muted: true } },
    { op: "conference-controls", controls: { lectureMode: true } },
  ]);
  await press(h, 1, "*2");
  assert.equal(h.call(2).muted, false);
  assert.equal(h.call(3).muted, false);
  assert.deepEqual(h.call(1).prompts, ["lecture-on", "lecture-off"]);
});

test("*3 mutes everyone else", async () => {
  const h = await roomOfThree();
  await press(h, 3, "*6");
  h.store.writes.length = 0;
  await press(h, 1, "*3");
  assert.equal(h.call(2).muted, true);
  assert.equal(h.call(3).muted, true);
  assert.deepEqual(h.call(1).mutes, []);
  assert.deepEqual(h.call(1).prompts, ["all-muted"]);
  assert.deepEqual(h.store.writes, [{ op: "attendee-controls", attendeeId: 2, controls: { muted: true } }]);
});

test("*4 unmutes and lowers the hand raised earliest", async () => {
  const h = await roomOfThree();
  await press(h, 1, "*3");
  await press(h, 3, "*7");
  await press(h, 2, "*7");
  h.store.writes.length = 0;
  await press(h, 1, "*4");
  assert.equal(h.call(3).muted, false);
  assert.equal(h.call(2).muted, true);
  assert.deepEqual(h.call(3).prompts.at(-1), "unmuted");
  assert.deepEqual(h.store.writes, [
    { op: "attendee-controls", attendeeId: 3, controls: { muted: false, handUp: false } },
  ]);
  await press(h, 1, "*4");
  assert.equal(h.call(2).muted, false);
  h.store.writes.length = 0;
  await press(h, 1, "*4");
  assert.deepEqual(h.store.writes, [], "no hand left");
});

test("*8 starts, pauses and resumes the recording of one file through the room's media", async () => {
  const h = await roomOfThree({ conference: { name: "Weekly / review" } });
  await press(h, 1, "*8");
  await flushUntil(() => h.media.recording.length > 0);
  const fileName = "Weekly review 2027-03-01 (7).wav";
  const file = path.join(DATA_DIR, "recordings", fileName);
  assert.deepEqual(h.media.recording, [`start ${file}`]);
  assert.deepEqual(h.store.writes, [
    { op: "conference-controls", controls: { recordAudio: true } },
    { op: "recording-file", fileName },
  ]);
  assert.ok(h.logger.lines.some((line) => line.message === "recording started" && line.fields.file === file));
  await press(h, 1, "*8");
  await press(h, 1, "*8");
  assert.deepEqual(h.media.recording, [`start ${file}`, "pause", `start ${file}`]);
  assert.deepEqual(h.media.prompts, ["recording-started", "recording-stopped", "recording-started"]);
  assert.equal(h.store.of("recording-file").length, 1);
  assert.deepEqual(
    h.store.of("conference-controls").map((write) => write.controls),
    [{ recordAudio: true }, { recordAudio: false }, { recordAudio: true }],
  );
});

test("a recording that cannot start is logged and tried again on the next *8", async () => {
  const h = await roomOfThree();
  h.media.failRecording = true;
  await press(h, 1, "*8");
  await flushUntil(() => h.logger.messages().includes("recording could not start"));
  assert.ok(
    h.logger.lines.some((line) => line.level === "warn" && line.message === "recording could not start"),
  );
  assert.deepEqual(h.store.of("recording-file"), []);
  h.media.failRecording = false;
  await press(h, 1, "*8");
  await flushUntil(() => h.media.recording.length > 0);
  assert.equal(h.media.recording.length, 1);
  assert.equal(h.store.of("recording-file").length, 1);
});

test("*9 announces the end to everyone and ends the conference 2.5 s later", async () => {
  const h = await roomOfThree();
  await press(h, 1, "*9");
  assert.deepEqual(h.media.prompts, ["conference-ending"]);
  assert.equal(h.room.state, "ending");
  await h.clock.pass(2_499);
  assert.equal(h.call(2).hungUp, false);
  await h.clock.pass(1);
  assert.equal(h.room.state, "ended");
  assert.equal(h.call(2).hungUp, true);
  assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "the moderator ended it from the keypad" }]);
});

test("the moderator hanging up during the ending announcement ends it at once, once, its timer cleared", async () => {
  const h = await roomOfThree();
  await press(h, 1, "*9");
  await h.clock.pass(1_000);
  h.call(1).hangUpFarEnd();
  await flush();
  assert.equal(h.room.state, "ended");
  assert.equal(h.clock.pending, 0, "the announcement's timer is gone");
  await h.clock.pass(2_500);
  assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "the moderator left" }]);
  assert.equal(h.endedCalls(), 1);
});
