/**
 * A room's call records over fakes: one per call once it is over, with the SIP outcome, the cause,
 * who hung up and why (the room's own reason when it hung up), none for an abandoned room's calls.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { FIGURES_WAIT_MS } from "../../src/conference/call-records.js";
import { attendee, FakeCall, flush } from "./fakes.js";
import { answer, startRoom } from "./harness.js";

test("the moderator hangs up: their record says the attendee hung up, the others' that the conference ended", async () => {
  const h = await startRoom();
  const invitedAt = new Date(h.clock.now()).toISOString();
  await h.clock.pass(3_000);
  await answer(h, 1, 2, 3);
  const answeredAt = new Date(h.clock.now()).toISOString();
  await h.clock.pass(61_000);
  h.call(1).state = "ended";
  h.call(1).emit("ended", {
    by: "remote",
    reason: "BYE",
    cause: { protocol: "Q.850", cause: 16, text: null },
  });
  await flush();
  const endedAt = new Date(h.clock.now()).toISOString();
  const byAttendee = new Map(h.store.callRecords.map((record) => [record.attendeeId, record]));
  assert.equal(h.store.callRecords.length, 3);
  assert.deepEqual(byAttendee.get(1), {
    attendeeId: 1,
    direction: "outbound",
    number: h.call(1).to,
    route: "sip:trunk.example",
    instance: "test-instance",
    invitedAt,
    answeredAt,
    endedAt,
    codec: "PCMU",
    srtp: false,
    tls: false,
    quality: null,
    callerVerification: null,
    sipStatus: 200,
    sipReason: "OK",
    cause: { protocol: "Q.850", cause: 16, text: null },
    hungUpBy: "attendee",
    endReason: "BYE",
  });
  for (const id of [2, 3]) {
    const record = byAttendee.get(id);
    assert.equal(record?.hungUpBy, "service");
    assert.equal(record?.endReason, "the conference ended: the moderator left");
    assert.equal(record?.sipStatus, 200);
  }
});

test("a call that fails is recorded with its status, reason and cause, never answered", async () => {
  const h = await startRoom();
  h.call(2).state = "failed";
  h.call(2).emit("failed", {
    status: 486,
    reason: "Busy Here",
    cause: { protocol: "Q.850", cause: 17, text: "User busy" },
  });
  await flush();
  const [record] = h.store.callRecords;
  assert.equal(h.store.callRecords.length, 1);
  assert.equal(record?.attendeeId, 2);
  assert.equal(record?.sipStatus, 486);
  assert.equal(record?.sipReason, "Busy Here");
  assert.deepEqual(record?.cause, { protocol: "Q.850", cause: 17, text: "User busy" });
  assert.equal(record?.answeredAt, null);
  assert.equal(record?.hungUpBy, null);
  assert.equal(record?.codec, null);
  assert.equal(record?.endReason, "486 Busy Here");
});

test("an attendee who answers but never presses 1 is recorded with that reason, hung up by the service", async () => {
  const h = await startRoom({ conference: { directDial: false } });
  h.call(2).answer();
  await flush();
  await h.clock.pass(12_000);
  await flush();
  const record = h.store.callRecords.find((each) => each.attendeeId === 2);
  assert.equal(record?.hungUpBy, "service");
  assert.equal(record?.endReason, "answered but did not press 1");
});

test("an attendee deleted through the API is recorded with why the room hung up", async () => {
  const h = await startRoom();
  await answer(h, 1, 2);
  h.store.attendees = h.store.attendees.filter((each) => each.id !== 2);
  await h.room.refresh();
  await flush();
  const record = h.store.callRecords.find((each) => each.attendeeId === 2);
  assert.equal(record?.endReason, "the attendee was deleted");
  assert.equal(record?.hungUpBy, "service");
});

test("a caller who dialled in is recorded inbound, from their number, through the number dialled", async () => {
  const h = await startRoom({ attendees: [attendee(1, { moderator: true }), attendee(4, { dialIn: true })] });
  await answer(h, 1);
  const caller = new FakeCall("inbound", "+16045550199", "+17785550123", h.clock);
  caller.verification = { status: "passed", attestation: "B", reason: null };
  await caller.accept();
  h.room.admit(caller, 4, false);
  await flush();
  caller.hangUpFarEnd();
  await flush();
  const record = h.store.callRecords.find((each) => each.attendeeId === 4);
  assert.equal(record?.direction, "inbound");
  assert.equal(record?.number, "+17785550123");
  assert.equal(record?.route, "+16045550199");
  assert.deepEqual(record?.callerVerification, { status: "passed", attestation: "B", reason: null });
  assert.equal(record?.hungUpBy, "attendee");
});

test("a room that gives its conference up writes no record of the calls it hangs up", async () => {
  const h = await startRoom();
  await answer(h, 1, 2, 3);
  h.store.lease = 2;
  await h.room.refresh();
  await flush();
  assert.equal(h.room.ended, true);
  for (const id of [1, 2, 3]) assert.equal(h.call(id).hungUp, true);
  assert.equal(h.store.callRecordAttempts, 0, "not even tried: the writes would be refused");
});

const QUALITY = {
  packetsSent: 500,
  packetsReceived: 490,
  lossShare: 0.02,
  remoteLossShare: 0.01,
  jitterMs: 4,
  remoteJitterMs: 5,
  roundTripMs: 30,
  concealmentShare: 0.02,
  mos: 4.2,
};

test("a call's record carries its quality as its media told it once over", async () => {
  const h = await startRoom();
  await answer(h, 1, 2, 3);
  const timers = h.clock.pending;
  h.call(2).finalQuality = QUALITY;
  h.call(2).hangUpFarEnd();
  await flush();
  assert.deepEqual(h.store.callRecords.find((each) => each.attendeeId === 2)?.quality, QUALITY);
  assert.equal(h.clock.pending, timers, "the wait's timer cleared once the quality came");
});

test("a call's record lands after its attendee's own write of the end, never before", async () => {
  const h = await startRoom();
  await answer(h, 1, 2, 3);
  h.call(2).hangUpFarEnd();
  h.call(3).fail(486, "Busy Here");
  await flush();
  const log = h.store.callLog;
  assert.ok(log.indexOf("disconnected 2") < log.indexOf("record 2"), log.join(", "));
  assert.ok(log.indexOf("record 2") >= 0);
});

test("a call whose media never tells its quality is recorded without it after the wait, holding up no other write", async () => {
  const h = await startRoom();
  await answer(h, 1, 2, 3);
  h.call(2).quality = () => new Promise(() => {});
  h.call(2).hangUpFarEnd();
  await flush();
  assert.ok(h.store.callLog.includes("disconnected 2"), "the attendee's end is written at once");
  assert.equal(h.store.callRecords.length, 0, "its record waits for the quality");
  h.call(3).finalQuality = QUALITY;
  h.call(3).hangUpFarEnd();
  await flush();
  assert.deepEqual(
    h.store.callRecords.map((each) => each.attendeeId),
    [3],
    "another call's record is not held up",
  );
  await h.clock.pass(FIGURES_WAIT_MS);
  await flush();
  assert.deepEqual(
    h.store.callRecords.map((each) => [each.attendeeId, each.quality]),
    [
      [3, QUALITY],
      [2, null],
    ],
  );
});

test("closing the room (shutdown) waits for the records of the calls it hangs up", async () => {
  const h = await startRoom();
  await answer(h, 1, 2, 3);
  await h.room.close("the service is stopping");
  assert.deepEqual(h.store.callRecords.map((each) => each.attendeeId).sort(), [1, 2, 3]);
  assert.ok(
    h.store.callRecords.every((each) => each.endReason === "the conference ended: the service is stopping"),
  );
});

test("a call admitted after the room gave its conference up gets no record", async () => {
  const h = await startRoom({ attendees: [attendee(1, { moderator: true }), attendee(4, { dialIn: true })] });
  await answer(h, 1);
  h.store.lease = 2;
  await h.room.refresh();
  await flush();
  const caller = new FakeCall("inbound", "+16045550199", "+17785550123", h.clock);
  await caller.accept();
  h.room.admit(caller, 4, false);
  await flush();
  assert.equal(caller.hungUp, true);
  assert.equal(h.store.callRecordAttempts, 0);
});

test("a call waiting at a trunk's limit is told as attendee-queued, with which limit", async () => {
  const h = await startRoom();
  h.call(2).queue("max-channels");
  await flush();
  assert.deepEqual(
    h.store.writes.filter((write) => write.op === "event"),
    [{ op: "event", attendeeId: 2, type: "attendee-queued", reason: "max-channels" }],
  );
});

test("a trunk's redirect is allowed only to a number the conference could call itself", async () => {
  const h = await startRoom();
  const allow = h.call(2).allowRedirect;
  assert.ok(allow !== undefined);
  assert.equal(allow("+16045550199"), true);
  assert.equal(allow("+19005550199"), false, "premium rate");
  assert.equal(allow("+16049765555"), false, "976 exchange");
  assert.equal(allow("+442071234567"), false, "not North American");
});

test("a record's event is dated when it is written (after the call's end, which the record keeps)", async () => {
  const h = await startRoom();
  await answer(h, 1, 2);
  let tell: (quality: typeof QUALITY) => void = () => undefined;
  h.call(2).quality = () =>
    new Promise((resolve) => {
      tell = resolve;
    });
  h.call(2).hangUpFarEnd();
  const endedAt = h.clock.now();
  await flush();
  await h.clock.pass(300);
  tell(QUALITY);
  await flush();
  assert.equal(h.store.callRecords[0]?.endedAt, new Date(endedAt).toISOString());
  assert.deepEqual(h.store.callRecordTimes, [endedAt + 300]);
});
