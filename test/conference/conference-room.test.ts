import assert from "node:assert/strict";
import { test } from "node:test";
import { OPEN_CALLING_POLICY } from "../../src/domain/phone.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { attendee, FakeCall, flush } from "./fakes.js";
import { answer, EMPTY_PERIODS, type Harness, startRoom } from "./harness.js";

/** Each attendee's call recorded as failed, with the event. */
function failedCalls(h: Harness) {
  return h.store
    .of("call")
    .filter((write) => write.event.kind === "failed")
    .map((write) => [write.attendeeId, write.event]);
}

/** The room after a refresh and the writes it queued. */
async function refreshed(h: Harness): Promise<void> {
  await h.room.refresh();
  await flush();
}

/** A caller who dialled in and was answered. */
async function answeredCaller(): Promise<FakeCall> {
  const call = new FakeCall("inbound", "+16045550199", "+17785550123");
  await call.accept();
  return call;
}

test("every attendee that is not dial-in is called once, into the room's media, with its extension sent on answer", async () => {
  const h = await startRoom({
    attendees: [
      attendee(1, { moderator: true }),
      attendee(2, { phoneNumberExtension: "12w3" }),
      attendee(3, { dialIn: true }),
      attendee(4, { state: "disconnected" }),
    ],
  });
  await refreshed(h);
  await flush();
  assert.deepEqual(
    h.telephone.calls.map((call) => call.to),
    ["+16045550101", "+16045550102"],
  );
  for (const call of h.telephone.calls) assert.equal(h.telephone.placedInto.get(call), h.media);
  assert.deepEqual(
    h.store.of("call").map((write) => [write.attendeeId, write.event.kind]),
    [
      [1, "calling"],
      [2, "calling"],
    ],
  );
  assert.deepEqual(
    h.logger.lines
      .filter((line) => line.message === "calling attendee")
      .map((line) => line.fields.attendeeId),
    [1, 2],
  );
  h.call(2).answer();
  await flush();
  assert.deepEqual(h.call(2).digitsSent, ["12,3"]);
});

test("an attendee's call that waits its turn at its trunk is still calling: nothing is written for the wait, and it joins once answered", async () => {
  const h = await startRoom({ attendees: [attendee(2), attendee(3)] });
  h.call(3).queue("max-channels");
  await flush();
  assert.equal(h.room.state, "in-session");
  await answer(h, 2, 3);
  assert.equal(h.call(3).room, h.media);
  assert.deepEqual(
    h.store.of("call").map((write) => [write.attendeeId, write.event.kind]),
    [
      [2, "calling"],
      [3, "calling"],
      [2, "connected"],
      [3, "connected"],
    ],
  );
});

test("the room is on hold while it waits for its moderator, and off once the moderator joins", async () => {
  const h = await startRoom();
  assert.equal(h.room.state, "waiting-for-moderator");
  assert.deepEqual(h.media.holds, [true]);
  await answer(h, 2);
  assert.equal(h.call(2).room, h.media);
  assert.equal(h.room.state, "waiting-for-moderator");
  assert.deepEqual(h.media.holds, [true]);
  await answer(h, 1);
  assert.equal(h.room.state, "in-session");
  assert.deepEqual(h.media.holds, [true, false]);
  assert.deepEqual(
    h.store.of("call").map((write) => [write.attendeeId, write.event.kind]),
    [
      [1, "calling"],
      [2, "calling"],
      [3, "calling"],
      [2, "connected"],
      [1, "connected"],
    ],
  );
});

test("a conference without a moderator attendee is never on hold", async () => {
  const h = await startRoom({ attendees: [attendee(2), attendee(3)] });
  assert.equal(h.room.state, "in-session");
  assert.deepEqual(h.media.holds, []);
});

test("the moderator hanging up ends the conference: the others are hung up, the end stored with its reason, the media closed", async () => {
  const h = await startRoom();
  await answer(h, 1, 2, 3);
  h.call(1).hangUpFarEnd();
  await flush();
  assert.equal(h.room.state, "ended");
  assert.equal(h.call(2).hungUp, true);
  assert.equal(h.call(3).hungUp, true);
  assert.equal(h.call(2).room, undefined, "left the room's audio");
  assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "the moderator left" }]);
  assert.deepEqual(h.store.writes.at(-1), { op: "end", reason: "the moderator left" });
  assert.deepEqual(
    h.store.of("call").filter((write) => write.event.kind === "disconnected"),
    [{ op: "call", attendeeId: 1, event: { kind: "disconnected", result: "remote: BYE" } }],
  );
  assert.equal(h.media.closed, 1);
  assert.equal(h.endedCalls(), 1);
  const ended = h.logger.lines.find((line) => line.message === "conference ended");
  assert.deepEqual(ended?.fields, { conferenceId: 7, reason: "the moderator left" });
});

test("a member hanging up does not end the conference; the last attendee leaving does", async () => {
  const h = await startRoom({ attendees: [attendee(2), attendee(3)] });
  await answer(h, 2, 3);
  h.call(2).hangUpFarEnd();
  await flush();
  assert.equal(h.room.state, "in-session");
  assert.equal(h.call(3).hungUp, false);
  h.call(3).hangUpFarEnd();
  await flush();
  assert.equal(h.room.state, "ended");
  assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "no attendee left" }]);
});

test("with nobody able to dial in, the last one leaving ends it at once, a dial-in attendee or not", async () => {
  const h = await startRoom({ attendees: [attendee(2), attendee(3, { dialIn: true })] });
  await answer(h, 2);
  h.call(2).hangUpFarEnd();
  await flush();
  assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "no attendee left" }]);
});

test("nobody answering ends the conference at once when nobody can dial in", async () => {
  const h = await startRoom({ attendees: [attendee(2), attendee(3, { dialIn: true })] });
  h.call(2).fail(486, "Busy Here");
  await flush();
  assert.deepEqual(
    h.store
      .of("call")
      .filter((write) => write.event.kind === "failed")
      .map((write) => write.event),
    [{ kind: "failed", state: "busy", result: "486 Busy Here" }],
  );
  assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "no attendee left" }]);
});

test("a stored number the calling rules refuse is never dialled: the attendee fails 403 and the others are called", async () => {
  const h = await startRoom({
    attendees: [
      attendee(1, { moderator: true }),
      attendee(2, { phoneNumberSubscriberNumber: "9005550123" }),
      attendee(3, { phoneNumberSubscriberNumber: "8765550123" }),
    ],
    callingPolicy: { ...OPEN_CALLING_POLICY, deniedPrefixes: ["+1876"] },
  });
  await flush();
  assert.deepEqual(
    h.telephone.calls.map((call) => call.to),
    ["+16045550101"],
  );
  assert.deepEqual(failedCalls(h), [
    [
      2,
      {
        kind: "failed",
        state: "failed",
        result: "403 Not Called: premium-rate numbers (900, 976) are not called",
      },
    ],
    [
      3,
      {
        kind: "failed",
        state: "failed",
        result: "403 Not Called: numbers starting +1876 are not called here",
      },
    ],
  ]);
  assert.deepEqual(h.notPlaced, ["denied-number", "denied-number"]);
});

test("with dial-in open, the last one leaving ends it only after the grace period, and a caller within it keeps it going", async () => {
  const h = await startRoom({ attendees: [attendee(2), attendee(3)], acceptsDialIn: true });
  await answer(h, 2, 3);
  h.call(2).hangUpFarEnd();
  h.call(3).hangUpFarEnd();
  await flush();
  await h.clock.pass(EMPTY_PERIODS.emptyGraceMs - 1);
  await refreshed(h);
  assert.equal(h.room.state, "in-session");
  assert.deepEqual(h.store.of("end"), []);

  // Attendee 3 calls back just in time; the grace starts again when it leaves.
  const again = await answeredCaller();
  h.room.admit(again, 3, false);
  await h.clock.pass(EMPTY_PERIODS.emptyGraceMs);
  await refreshed(h);
  assert.deepEqual(h.store.of("end"), []);
  again.hangUpFarEnd();
  await flush();
  await h.clock.pass(EMPTY_PERIODS.emptyGraceMs - 1);
  await refreshed(h);
  assert.deepEqual(h.store.of("end"), []);
  await h.clock.pass(1);
  await refreshed(h);
  assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "no attendee left" }]);
});

test("with dial-in open, a conference nobody joins waits for callers until the no-show period after its start", async () => {
  const clock = new FakeClock();
  const pinOnly = await startRoom({ attendees: [], acceptsDialIn: true, clock });
  assert.equal(pinOnly.room.state, "in-session");
  const unanswered = await startRoom({ attendees: [attendee(2)], acceptsDialIn: true, clock });
  unanswered.call(2).fail(480, "Temporarily Unavailable");
  await flush();
  await clock.pass(EMPTY_PERIODS.noShowMs - 1);
  for (const h of [pinOnly, unanswered]) {
    await refreshed(h);
    assert.deepEqual(h.store.of("end"), []);
  }
  await clock.pass(1);
  for (const h of [pinOnly, unanswered]) {
    await refreshed(h);
    assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "nobody joined" }]);
  }
});

test("locked dial-in still lets the moderator in, so an empty locked conference waits for callers too", async () => {
  const h = await startRoom({ attendees: [], acceptsDialIn: true, conference: { dialInLocked: true } });
  assert.equal(h.room.state, "in-session");
  assert.deepEqual(h.store.of("end"), []);
});

test("a moderator who dialled in hanging up ends the conference for everyone (the seed's rule)", async () => {
  const h = await startRoom({ attendees: [], acceptsDialIn: true });
  const moderator = await answeredCaller();
  const member = await answeredCaller();
  h.room.admit(moderator, 1, true);
  h.room.admit(member, 2, false);
  member.hangUpFarEnd();
  await flush();
  assert.deepEqual(h.store.of("end"), [], "a member leaving ends nothing");
  const another = await answeredCaller();
  h.room.admit(another, 3, false);
  moderator.hangUpFarEnd();
  await flush();
  assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "the moderator left" }]);
  assert.equal(another.hungUp, true);
});

test("a caller whose call ended before it was admitted is not taken into the room", async () => {
  const h = await startRoom({ attendees: [], acceptsDialIn: true });
  const caller = await answeredCaller();
  caller.hangUpFarEnd();
  await flush();
  h.room.admit(caller, 1, false);
  await flush();
  assert.equal(caller.room, undefined, "never joined the mix");
  assert.deepEqual(
    h.store.writes.filter((write) => write.op === "call"),
    [],
    "nothing recorded as connected",
  );
  assert.equal(h.room.participants, 0);
});

test("the moderator's call failing lets the room go on without hold", async () => {
  const h = await startRoom();
  await answer(h, 2);
  assert.equal(h.media.onHold, true);
  h.call(1).fail(603, "Decline");
  await flush();
  assert.equal(h.room.state, "in-session");
  assert.deepEqual(h.media.holds, [true, false]);
  assert.equal(h.call(2).hungUp, false);
  const warned = h.logger.lines.find((line) => line.message === "attendee call busy");
  assert.equal(warned?.level, "warn");
  // A refresh does not put it back on hold.
  await refreshed(h);
  assert.deepEqual(h.media.holds, [true, false]);
});

test("talking is written as events, and a talking caller who hangs up stops talking", async () => {
  const h = await startRoom({ attendees: [attendee(2), attendee(3)] });
  await answer(h, 2, 3);
  h.call(2).talk(true);
  h.call(2).talk(false);
  h.call(3).talk(true);
  await flush();
  h.call(3).hangUpFarEnd();
  await flush();
  const events = h.store.writes.filter(
    (write) => write.op === "event" || (write.op === "call" && write.event.kind === "disconnected"),
  );
  assert.deepEqual(events, [
    { op: "event", attendeeId: 2, type: "talking-started" },
    { op: "event", attendeeId: 2, type: "talking-stopped" },
    { op: "event", attendeeId: 3, type: "talking-started" },
    { op: "event", attendeeId: 3, type: "talking-stopped" },
    { op: "call", attendeeId: 3, event: { kind: "disconnected", result: "remote: BYE" } },
  ]);
});

test("the room's audio failing ends this conference with the reason, hangs everyone up and logs a warning", async () => {
  const h = await startRoom();
  await answer(h, 1, 2);
  h.media.fail("worker 2 died");
  await flush();
  assert.equal(h.room.state, "ended");
  assert.equal(h.call(1).hungUp, true);
  assert.equal(h.call(2).hungUp, true);
  assert.equal(h.call(3).hungUp, true, "a call still ringing is cancelled");
  assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "the room's audio failed: worker 2 died" }]);
  const warned = h.logger.lines.find(
    (line) => line.level === "warn" && line.fields.reason === "worker 2 died",
  );
  assert.equal(warned?.fields.conferenceId, 7);
  assert.equal(h.media.closed, 1);
});

test("close ends the conference with the reason given and closes the room's media", async () => {
  const h = await startRoom();
  await answer(h, 1);
  await h.room.close("the service is stopping");
  assert.equal(h.call(1).hungUp, true);
  assert.deepEqual(h.store.of("end"), [{ op: "end", reason: "the service is stopping" }]);
  assert.equal(h.media.closed, 1);
});

test("entry and exit are announced to the room (the recorded name) only with announce-attendees and not direct dial", async () => {
  const announced = await startRoom({ conference: { directDial: false, announceAttendees: true } });
  const member = announced.call(2);
  member.voice = new Int16Array(800);
  member.answer();
  await flush();
  member.press("1");
  await flush();
  member.press("#");
  await flush();
  assert.equal(member.room, announced.media);
  assert.deepEqual(announced.media.prompts, ["samples"], "its recorded name");
  member.hangUpFarEnd();
  await flush();
  assert.deepEqual(announced.media.prompts, ["samples", "samples"]);

  const direct = await startRoom({ conference: { directDial: true, announceAttendees: true } });
  await answer(direct, 2);
  assert.deepEqual(direct.media.played, []);
});

test("calls past the owner's limit of calls in progress are not placed; a call that ends frees its place", async () => {
  const h = await startRoom({
    attendees: [attendee(1, { moderator: true }), attendee(2), attendee(3)],
    callingPolicy: { ...OPEN_CALLING_POLICY, maxCallsInProgressPerUser: 2 },
  });
  await flush();
  assert.deepEqual(
    h.telephone.calls.map((call) => call.to),
    ["+16045550101", "+16045550102"],
  );
  assert.deepEqual(failedCalls(h), [
    [
      3,
      {
        kind: "failed",
        state: "failed",
        result: "403 Not Called: the account has 2 calls in progress, the most it may have at once",
      },
    ],
  ]);
  assert.ok(h.logger.lines.some((line) => line.level === "warn" && line.fields.attendeeId === 3));
  assert.deepEqual(h.notPlaced, ["user-limit"]);
  // Attendee 2 is busy: its place is free again, and the API's call-again for 3 goes out.
  h.telephone.calls[1]?.fail(486, "Busy Here");
  await flush();
  h.store.callRequests.set(3, "2026-11-26T12:00:00.000Z");
  await h.room.refresh();
  await flush();
  assert.deepEqual(
    h.telephone.calls.map((call) => call.to),
    ["+16045550101", "+16045550102", "+16045550103"],
  );
});

test("calls past the owner's hourly limit are not placed, though none is in progress", async () => {
  const h = await startRoom({
    attendees: [attendee(1, { moderator: true }), attendee(2)],
    callingPolicy: { ...OPEN_CALLING_POLICY, maxCallsPerHourPerUser: 1 },
  });
  await flush();
  h.telephone.calls[0]?.fail(486, "Busy Here");
  await flush();
  assert.deepEqual(
    h.telephone.calls.map((call) => call.to),
    ["+16045550101"],
  );
  assert.deepEqual(
    h.store
      .of("call")
      .filter((write) => write.attendeeId === 2)
      .map((write) => write.event),
    [
      {
        kind: "failed",
        state: "failed",
        result:
          "403 Not Called: the account has placed 1 calls in the last hour, the most it may place in an hour",
      },
    ],
  );
  assert.deepEqual(h.notPlaced, ["user-limit"]);
});

test("a refresh while the first calls are still being reserved does not find the room empty", async () => {
  const h = await startRoom({
    attendees: [attendee(1, { moderator: true }), attendee(2)],
    // The first calls wait on a slow store; the runtime's next refresh of the room comes meanwhile.
    beforeStart: (store, room) => {
      let release: () => void = () => {};
      store.reserveGate = new Promise((resolve) => {
        release = resolve;
      });
      setImmediate(() => void room.refresh().finally(release));
    },
  });
  await flush();
  assert.equal(h.room.ended, false, "the room ended before its calls were placed");
  assert.deepEqual(
    h.telephone.calls.map((call) => call.to),
    ["+16045550101", "+16045550102"],
  );
});

test("an encrypted-only conference places its calls with TLS and SRTP required: a 488 fails the attendee saying why, an answer without both is refused", async () => {
  const plain = await startRoom();
  assert.deepEqual(
    [1, 2, 3].map((id) => plain.call(id).encryptionRequired),
    [false, false, false],
  );
  const h = await startRoom({ conference: { encryptedOnly: true } });
  assert.deepEqual(
    [1, 2, 3].map((id) => h.call(id).encryptionRequired),
    [true, true, true],
  );
  Object.assign(h.call(1), { signallingTls: true, encrypted: true });
  await answer(h, 1);
  h.call(2).fail(488, "Not Acceptable Here");
  // A peer that answered without SRTP all the same (the fake ignores what the offer required).
  Object.assign(h.call(3), { signallingTls: true, encrypted: false });
  h.call(3).answer();
  await flush();
  assert.deepEqual(
    h.store
      .of("call")
      .filter((write) => write.event.kind !== "calling")
      .map((write) => [write.attendeeId, write.event]),
    [
      [1, { kind: "connected", muted: false, encryption: "tls+srtp" }],
      [
        2,
        {
          kind: "failed",
          state: "failed",
          result: "488 Not Acceptable Here (the conference takes encrypted calls only)",
        },
      ],
      [
        3,
        {
          kind: "failed",
          state: "failed",
          result: "not encrypted (tls): the conference takes encrypted calls only",
        },
      ],
    ],
  );
  assert.deepEqual(h.call(3).prompts, ["encrypted-only", "goodbye"]);
  assert.equal(h.call(3).hungUp, true);
  assert.equal(h.call(3).room, undefined);
});
