/**
 * Rooms under a lease: a room that took its conference over calls back the attendees the service had
 * called, tells them they are being reconnected and joins them without the press-1 greeting (the
 * others are dialled as ever); a room whose lease is lost (found on a refresh, or a write refused)
 * is abandoned: every call hung up, its audio closed, nothing written. And the runtime: rooms whose
 * lease a renewal no longer holds are abandoned, a take-over replaces a room of an older lease, and
 * a hand-over abandons every room.
 */
import assert from "node:assert/strict";
import path from "node:path";
import { after, test } from "node:test";
import { ConferenceRuntime } from "../../src/conference/conference-runtime.js";
import type { Conference } from "../../src/domain/conference.js";
import type { RecoveryDetails } from "../../src/domain/event.js";
import { attemptCounts } from "../../src/store/attempt-counts.js";
import { openSqliteStore, type Store } from "../../src/store/database.js";
import { FakeClock } from "../helpers/fake-clock.js";
import {
  attendee,
  conference,
  FakeLeaseLost,
  FakeLogger,
  FakeStore,
  FakeTelephone,
  flush,
  numberOf,
} from "./fakes.js";
import { answer, DATA_DIR, EMPTY_PERIODS, startRoom } from "./harness.js";

const GIVEN_UP = "conference room given up";

test("a room that took its conference over calls back its list: 'reconnecting', joined without the greeting; new attendees are dialled and greeted as ever", async () => {
  let firstJoined = 0;
  const h = await startRoom({
    conference: { directDial: false },
    attendees: [
      attendee(1, { moderator: true, state: "disconnected" }),
      attendee(2, { state: "disconnected" }),
      attendee(3),
      attendee(4, { dialIn: true, state: "disconnected" }),
      // Left before the take-over: not called back.
      attendee(5, { state: "disconnected" }),
    ],
    takenOver: { callBack: [1, 2], onFirstJoined: () => firstJoined++ },
  });
  assert.deepEqual(h.telephone.calls.map((call) => call.to).sort(), [numberOf(1), numberOf(2), numberOf(3)]);
  h.call(1).answer();
  await flush();
  assert.deepEqual(h.call(1).prompts, ["reconnecting"]);
  assert.equal(h.call(1).room, h.media, "joined at once");
  assert.equal(firstJoined, 1);
  h.call(2).answer();
  h.call(3).answer();
  await flush();
  assert.deepEqual(h.call(2).prompts, ["reconnecting"]);
  assert.equal(h.call(2).room, h.media);
  assert.equal(firstJoined, 1, "told once, at the first");
  assert.deepEqual(h.call(3).prompts, ["invitation"], "greeted as ever");
  assert.equal(h.call(3).room, undefined, "in the room only after pressing 1");
  h.call(3).press("1");
  await flush();
  assert.equal(h.call(3).room, h.media);
  assert.deepEqual(h.spoken, ["Alice invites you to the telephone conference Weekly. Press 1 to join."]);
  for (const id of [1, 2, 3])
    assert.deepEqual(
      h.store
        .of("call")
        .filter((write) => write.attendeeId === id)
        .map((write) => write.event.kind),
      ["calling", "connected"],
    );
  assert.equal(h.room.state, "in-session");
  await h.room.refresh();
  assert.equal(h.telephone.calls.length, 3, "each called back once");
});

test("one the old room was still calling is called again as at first, greeted; a moderator whose call had failed is not waited for on hold", async () => {
  const h = await startRoom({
    conference: { directDial: false },
    attendees: [
      // The moderator's call failed before the take-over: nobody is calling them any more.
      attendee(1, { moderator: true, state: "no-answer" }),
      attendee(2, { state: "disconnected" }),
      attendee(3, { state: "disconnected" }),
    ],
    takenOver: { callBack: [2], redial: [3] },
  });
  assert.deepEqual(h.telephone.calls.map((call) => call.to).sort(), [numberOf(2), numberOf(3)]);
  h.call(2).answer();
  h.call(3).answer();
  await flush();
  assert.deepEqual(h.call(2).prompts, ["reconnecting"]);
  assert.deepEqual(h.call(3).prompts, ["invitation"], "greeted: it had accepted nothing yet");
  assert.equal(h.call(3).room, undefined);
  assert.equal(h.room.state, "in-session", "not on hold for a moderator nobody is calling");
  assert.equal(h.media.onHold, false);
});

test("a taken-over room waits on hold for a moderator it calls back", async () => {
  const h = await startRoom({
    attendees: [
      attendee(1, { moderator: true, state: "disconnected" }),
      attendee(2, { state: "disconnected" }),
    ],
    takenOver: { callBack: [1, 2] },
  });
  h.call(2).answer();
  await flush();
  assert.equal(h.room.state, "waiting-for-moderator");
  h.call(1).answer();
  await flush();
  assert.equal(h.room.state, "in-session");
});

test("a refresh that finds another lease abandons the room: every call hung up, its audio closed, nothing written", async () => {
  const h = await startRoom();
  await answer(h, 1, 2);
  const writes = h.store.writes.length;
  h.store.lease = 2;
  await h.room.refresh();
  await flush();
  assert.equal(h.room.ended, true);
  assert.equal(h.endedCalls(), 1);
  for (const id of [1, 2, 3]) assert.equal(h.call(id).hungUp, true, `attendee ${id} hung up`);
  assert.equal(h.media.closed, 1);
  assert.deepEqual(h.store.writes.slice(writes), [], "no end, no disconnected");
  assert.equal(h.store.conference?.state, "started", "the conference goes on elsewhere");
  assert.ok(h.logger.messages().includes(GIVEN_UP));
});

test("a write refused for a lost lease abandons the room, and nothing more is written", async () => {
  const h = await startRoom();
  await answer(h, 1);
  h.store.recordAttendeeCall = () => Promise.reject(new FakeLeaseLost("lease 1 lost"));
  h.call(2).answer();
  await flush();
  assert.equal(h.room.ended, true);
  assert.equal(h.endedCalls(), 1);
  for (const id of [1, 2, 3]) assert.equal(h.call(id).hungUp, true, `attendee ${id} hung up`);
  assert.equal(h.media.closed, 1);
  assert.deepEqual(h.store.of("end"), []);
  assert.ok(h.logger.messages().includes(GIVEN_UP));
  assert.ok(!h.logger.messages().includes("conference state not saved"));
});

test("after the room is abandoned its calls' own ends write nothing", async () => {
  const h = await startRoom();
  await answer(h, 1, 2);
  h.call(2).talk(true);
  await flush();
  const writes = h.store.writes.length;
  h.room.abandon("lease lost");
  // The hung-up calls' "ended" events, and a far end's own, all come after.
  h.call(2).hangUpFarEnd();
  h.call(3).fail(487, "Request Terminated");
  h.call(1).talk(false);
  await flush();
  await h.clock.pass(60_000);
  assert.deepEqual(h.store.writes.slice(writes), []);
  assert.equal(h.endedCalls(), 1);
});

/** Wrong PINs are counted in a real store, one for the runtimes here. */
let attemptStore: Store | undefined;
after(() => attemptStore?.close());

const RECOVERY: RecoveryDetails = {
  previousInstance: "gone",
  instance: "here",
  gapSeconds: 4,
  calledBack: 1,
  cause: "runner-silent",
};

/** A runtime over fakes running conferences 7 and 8 under lease 1, attendee 2 and 9 dialled in each. */
async function runtime() {
  const clock = new FakeClock();
  const telephone = new FakeTelephone(clock);
  const store = new FakeStore(conference(), [attendee(2), attendee(9, { conferenceId: 8 })]);
  store.otherConferences.set(8, conference({ id: 8 }));
  const logger = new FakeLogger();
  attemptStore ??= await openSqliteStore(path.join(DATA_DIR, "take-over-attempts"));
  const heard: number[] = [];
  const conferences = new ConferenceRuntime({
    telephone,
    store,
    instance: "test-instance",
    speak: async () => null,
    logger,
    clock,
    dataDir: DATA_DIR,
    accessNumbers: [],
    emptyPeriods: EMPTY_PERIODS,
    attempts: attemptCounts(attemptStore),
    refreshIntervalMs: 3_600_000,
    onTakeOverHeard: (seconds) => heard.push(seconds),
  });
  conferences.run(store.conference as Conference, 1, 1);
  conferences.run(conference({ id: 8 }), 1, 1);
  await flush();
  for (const id of [2, 9]) telephone.callTo(numberOf(id)).answer();
  await flush();
  assert.equal(conferences.legs.joined, 2);
  return { clock, telephone, store, logger, conferences, heard };
}

test("a renewal asked for before a room opened does not judge it: the room goes on though not among its leases", async () => {
  const { telephone, conferences, clock } = await runtime();
  // Asked for as the rooms opened: a claim may have landed after its snapshot.
  conferences.leasesRenewed([], 4_500, clock.now());
  await flush();
  assert.equal(conferences.runningRooms, 2);
  assert.equal(telephone.callTo(numberOf(2)).hungUp, false);
  assert.equal(telephone.callTo(numberOf(9)).hungUp, false);
});

test("a renewal abandons the rooms whose lease it no longer holds and keeps the others", async () => {
  const { telephone, store, conferences, clock } = await runtime();
  const writes = store.writes.length;
  // Asked for after the rooms opened.
  const askedAt = clock.now() + 1;
  // Conference 8 is at another lease now.
  conferences.leasesRenewed(
    [
      { conferenceId: 7, lease: 1 },
      { conferenceId: 8, lease: 2 },
    ],
    4_500,
    askedAt,
  );
  await flush();
  assert.equal(telephone.callTo(numberOf(9)).hungUp, true);
  assert.equal(telephone.rooms[1]?.closed, 1);
  assert.equal(telephone.callTo(numberOf(2)).hungUp, false, "conference 7's room goes on");
  assert.equal(telephone.rooms[0]?.closed, 0);
  assert.deepEqual(conferences.leases, [{ conferenceId: 7, lease: 1 }]);
  conferences.leasesRenewed([], 4_500, askedAt);
  await flush();
  assert.equal(telephone.callTo(numberOf(2)).hungUp, true, "not held at all");
  assert.equal(conferences.runningRooms, 0);
  assert.deepEqual(store.writes.slice(writes), []);
});

test("taking over a conference whose room of an older lease is still here abandons that room first, then calls back", async () => {
  const { clock, telephone, store, conferences, heard } = await runtime();
  const writes = store.writes.length;
  const oldCall = telephone.callTo(numberOf(2));
  // This instance was paused past its lease; another took conference 7 over, then this one took it back.
  store.lease = 3;
  store.attendee(2).state = "disconnected";
  conferences.takeOver(store.conference as Conference, 1, 3, { callBack: [2], recovery: RECOVERY });
  await flush();
  assert.equal(oldCall.hungUp, true);
  assert.equal(telephone.rooms[0]?.closed, 1, "the old room's audio closed");
  assert.equal(telephone.rooms.length, 3, "a new room opened");
  const callBack = telephone.callTo(numberOf(2));
  assert.notEqual(callBack, oldCall, "called back");
  assert.deepEqual(
    store.writes.slice(writes).map((write) => write.op),
    ["call"],
    "the new room's 'calling', nothing of the old room's",
  );
  assert.deepEqual(
    conferences.leases.sort((a, b) => a.conferenceId - b.conferenceId),
    [
      { conferenceId: 7, lease: 3 },
      { conferenceId: 8, lease: 1 },
    ],
  );
  await clock.pass(1_000);
  callBack.answer();
  await flush();
  assert.equal(callBack.room, telephone.rooms[2]);
  assert.deepEqual(callBack.prompts, ["reconnecting"]);
  assert.deepEqual(heard, [5], "4 s silent before the take-over, and 1 s to the answer");
  assert.deepEqual(conferences.takeOvers, { "runner-silent": 1, "handed-over": 0 });
});

test("a hand-over abandons every room and writes nothing", async () => {
  const { telephone, store, conferences } = await runtime();
  const writes = store.writes.length;
  await conferences.handOver();
  await flush();
  for (const id of [2, 9]) assert.equal(telephone.callTo(numberOf(id)).hungUp, true);
  assert.deepEqual(
    telephone.rooms.map((room) => room.closed),
    [1, 1],
  );
  assert.equal(conferences.runningRooms, 0);
  assert.deepEqual(store.writes.slice(writes), []);
});
