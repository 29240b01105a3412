import assert from "node:assert/strict";
import path from "node:path";
import { after, test } from "node:test";
import { ConferenceRuntime, type ConferenceRuntimeOptions } from "../../src/conference/conference-runtime.js";
import type { Conference } from "../../src/domain/conference.js";
import { attemptCounts } from "../../src/store/attempt-counts.js";
import { openSqliteStore, type Store } from "../../src/store/database.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { attendee, conference, type FakeCall, FakeLogger, FakeStore, FakeTelephone, flush } from "./fakes.js";
import { DATA_DIR, EMPTY_PERIODS } from "./harness.js";

const ACCESS_NUMBER = "+16045550199";
/** How long the PIN prompt waits for the next key. */
const PIN_WAIT_MS = 10_000;
/** Wrong PINs are counted in a real store, a fresh one per runtime. */
const attemptStores: Store[] = [];
after(() => Promise.all(attemptStores.map((store) => store.close())));

/** A runtime over fakes running conference 7, whose only attendee dials in. */
async function runtime(
  changes: Partial<Conference> = {},
  options: Pick<ConferenceRuntimeOptions, "pinFailures" | "refreshIntervalMs"> = {},
) {
  const clock = new FakeClock();
  const telephone = new FakeTelephone(clock);
  const store = new FakeStore(conference(changes), [
    attendee(1, { dialIn: true, moderator: true, phoneNumberSubscriberNumber: null }),
    attendee(2, { dialIn: true, phoneNumberSubscriberNumber: "7785550123" }),
  ]);
  store.pins.set("1111", { role: "member", conferenceId: 7 });
  store.pins.set("2222", { role: "moderator", conferenceId: 7 });
  store.pins.set("3333", { role: "member", conferenceId: 8 });
  const logger = new FakeLogger();
  const attemptStore = await openSqliteStore(path.join(DATA_DIR, `attempts-${attemptStores.length}`));
  attemptStores.push(attemptStore);
  const conferences = new ConferenceRuntime({
    telephone,
    store,
    instance: "test-instance",
    speak: async () => null,
    logger,
    clock,
    dataDir: DATA_DIR,
    accessNumbers: [ACCESS_NUMBER],
    emptyPeriods: EMPTY_PERIODS,
    attempts: attemptCounts(attemptStore),
    refreshIntervalMs: 3_600_000,
    ...options,
  });
  conferences.run(store.conference as Conference, 0, 1);
  await flush();
  return { telephone, store, logger, conferences, clock, media: telephone.rooms[0] };
}

async function dialIn(telephone: FakeTelephone, from: string, keys: string) {
  const call = telephone.dialIn(from, ACCESS_NUMBER);
  await flush();
  call.press(keys);
  await flush();
  return call;
}

test("calls to numbers not served are refused 404; the access number rings with or without +1", async () => {
  const { telephone, conferences } = await runtime();
  const other = telephone.dialIn("+17785550123", "+16045550100");
  assert.deepEqual(other.rejected, { status: 404, reason: "Not Found" });
  assert.equal(other.rang, false);
  const national = telephone.dialIn("+17785550123", "6045550199");
  await flush(); // it rings once the caller's wrong PINs are read from the store
  assert.equal(national.rang, true);
  assert.equal(national.rejected, undefined);
  national.hangUpFarEnd();
  await conferences.close();
});

test("three wrong PINs (a silent one included) end the call after goodbye", async () => {
  const { telephone, logger, conferences, clock } = await runtime();
  const call = await dialIn(telephone, "+17785550123", "99#");
  await clock.pass(10_000);
  call.press("1234#");
  await flush();
  assert.deepEqual(call.prompts, [
    "enter-pin",
    "invalid-pin",
    "enter-pin",
    "invalid-pin",
    "enter-pin",
    "goodbye",
  ]);
  assert.equal(call.hungUp, true);
  assert.equal(call.room, undefined);
  assert.deepEqual(
    logger.lines.filter((line) => line.message === "dial-in: wrong PIN").map((line) => line.fields.attempt),
    [1, 2, 3],
  );
  assert.ok(logger.messages().includes("dial-in: three wrong PINs"));
  await conferences.close();
});

test("silence at the PIN prompt: invalid-pin after 10 s each time, and the third silence ends the call at 30 s", async () => {
  const { telephone, logger, conferences, clock } = await runtime();
  const call = telephone.dialIn("+17785550123", ACCESS_NUMBER);
  await flush();
  await clock.pass(PIN_WAIT_MS - 1);
  assert.deepEqual(call.prompts, ["enter-pin"]);
  await clock.pass(1);
  assert.deepEqual(call.prompts, ["enter-pin", "invalid-pin", "enter-pin"], "the second try at 10 s");
  await clock.pass(PIN_WAIT_MS);
  assert.equal(call.prompts.length, 5, "the third try at 20 s");
  await clock.pass(PIN_WAIT_MS - 1);
  assert.equal(call.hungUp, false);
  await clock.pass(1);
  assert.deepEqual(call.prompts.slice(4), ["enter-pin", "goodbye"]);
  assert.equal(call.hungUp, true);
  assert.equal(conferences.wrongPins, 3, "a silent try counts as a wrong PIN");
  assert.ok(logger.messages().includes("dial-in: three wrong PINs"));
  await conferences.close();
});

test("a PIN typed slowly, each key within 10 s of the last, is one PIN; a wrong one and then the right one admits", async () => {
  const { telephone, conferences, clock, media } = await runtime();
  const call = telephone.dialIn("+17785550123", ACCESS_NUMBER);
  await flush();
  call.press("9");
  await clock.pass(PIN_WAIT_MS - 1);
  call.press("9#");
  await flush();
  assert.deepEqual(call.prompts, ["enter-pin", "invalid-pin", "enter-pin"], "99 was one wrong PIN");
  for (const key of "1111") {
    await clock.pass(PIN_WAIT_MS - 1);
    call.press(key);
  }
  await clock.pass(PIN_WAIT_MS);
  assert.equal(call.room, media, "the second try let the caller in");
  assert.deepEqual(call.prompts.slice(3), ["joining"]);
  assert.equal(conferences.wrongPins, 1);
  await conferences.close();
});

test("a PIN of a conference not in progress hears not-started and goodbye", async () => {
  const { telephone, logger, conferences } = await runtime();
  const call = await dialIn(telephone, "+17785550123", "3333#");
  assert.deepEqual(call.prompts, ["enter-pin", "not-started", "goodbye"]);
  assert.equal(call.hungUp, true);
  assert.ok(logger.messages().includes("dial-in: conference not in progress"));
  await conferences.close();
});

test("a locked conference refuses members but takes the moderator, who hears it is moderator and lifts the hold", async () => {
  const { telephone, store, logger, conferences, media } = await runtime({ dialInLocked: true });
  assert.deepEqual(media?.holds, [true], "waiting for the dial-in moderator");
  const member = await dialIn(telephone, "+17785550123", "1111#");
  assert.deepEqual(member.prompts, ["enter-pin", "conference-locked", "goodbye"]);
  assert.equal(member.hungUp, true);
  assert.ok(logger.messages().includes("dial-in: conference locked"));

  const moderator = await dialIn(telephone, "anonymous", "2222#");
  assert.deepEqual(moderator.prompts, ["enter-pin", "joining", "you-are-moderator"]);
  assert.equal(moderator.room, media);
  assert.deepEqual(media?.holds, [true, false]);
  const admitted = logger.lines.find((line) => line.message === "dial-in: caller admitted");
  assert.deepEqual(admitted?.fields, { conferenceId: 7, attendeeId: 1, moderator: true });
  assert.deepEqual(store.of("call").at(-1), {
    op: "call",
    attendeeId: 1,
    event: { kind: "connected", muted: false, encryption: "none" },
  });
  await conferences.close();
});

test("a member with the PIN is admitted as the dial-in attendee with its number, into the room", async () => {
  const { telephone, store, conferences, media } = await runtime({ lectureMode: true });
  const call = await dialIn(telephone, "+17785550123", "1111#");
  assert.deepEqual(call.prompts, ["enter-pin", "joining"]);
  assert.equal(call.room, media);
  assert.equal(call.joinedMuted, true, "lecture mode");
  assert.deepEqual(store.of("call").at(-1), {
    op: "call",
    attendeeId: 2,
    event: { kind: "connected", muted: true, encryption: "none" },
  });
  await conferences.close();
});

test("a conference runs once; a room whose audio fails ends alone; close ends the rest", async () => {
  const { telephone, store, logger, conferences, media } = await runtime();
  conferences.run(store.conference as Conference, 0, 1);
  assert.equal(telephone.rooms.length, 1);
  store.otherConferences.set(8, conference({ id: 8 }));
  store.attendees.push(attendee(9, { conferenceId: 8, dialIn: true }));
  conferences.run(conference({ id: 8 }), 0, 1);
  await flush();
  assert.equal(conferences.runningRooms, 2);
  telephone.rooms[1]?.fail("thread exited");
  await flush();
  assert.equal(conferences.runningRooms, 1);
  assert.ok(logger.lines.some((line) => line.level === "warn" && line.fields.conferenceId === 8));
  assert.equal(media?.closed, 0);
  await conferences.close();
  assert.deepEqual(store.of("end"), [
    { op: "end", reason: "the room's audio failed: thread exited" },
    { op: "end", reason: "the service is stopping" },
  ]);
  assert.equal(media?.closed, 1);
});

test("a PIN whose room runs on another instance: admitted here, then carried there by an internal call showing a one-time token, relayed once answered", async () => {
  const { telephone, store, conferences } = await runtime();
  store.pins.set("4444", { role: "member", conferenceId: 8 });
  store.elsewhere.set(8, {
    userId: 1,
    sipUri: "sip:10.0.0.2:5060",
    dialInLocked: false,
    encryptedOnly: false,
  });
  const caller = await dialIn(telephone, "+17785550188", "4444#");
  assert.deepEqual(caller.prompts, ["enter-pin", "joining"]);
  const admitted = store.attendees.at(-1);
  assert.equal(admitted?.conferenceId, 8);
  assert.equal(admitted?.phoneNumberSubscriberNumber, "7785550188");

  const leg = telephone.callTo("sip:conference-8@10.0.0.2:5060");
  const token = leg.header("X-Bridgeline-Handoff") ?? assert.fail("no handoff token");
  assert.deepEqual(store.handoffs.get(token), {
    conferenceId: 8,
    attendeeId: admitted.id,
    moderator: false,
    encryption: "none",
  });
  assert.equal(caller.relayedWith, undefined, "not before the room's instance answers");
  assert.equal(
    leg.ringTimeoutMs,
    5_000,
    "an instance that does not answer at once is gone: the caller is told soon",
  );
  leg.answer();
  assert.equal(caller.relayedWith, leg);
  caller.hangUpFarEnd();
  assert.equal(leg.hungUp, true, "the caller hanging up ends the internal call");
  await conferences.close();
});

test("the room's instance ending the internal call hangs up the caller; refusing it tells the caller", async () => {
  const { telephone, store, conferences } = await runtime();
  store.pins.set("4444", { role: "member", conferenceId: 8 });
  store.elsewhere.set(8, {
    userId: 1,
    sipUri: "sip:10.0.0.2:5060",
    dialInLocked: false,
    encryptedOnly: false,
  });
  const first = await dialIn(telephone, "+17785550188", "4444#");
  const firstLeg = telephone.calls.at(-1) as FakeCall;
  firstLeg.answer();
  firstLeg.hangUpFarEnd();
  assert.equal(first.hungUp, true);

  const second = await dialIn(telephone, "+17785550189", "4444#");
  (telephone.calls.at(-1) as FakeCall).fail(404, "Not Found");
  await flush();
  assert.deepEqual(second.prompts, ["enter-pin", "joining", "not-started", "goodbye"]);
  assert.equal(second.hungUp, true);
  await conferences.close();
});

test("a caller the room's instance refuses leaves no attendee added for them; an invited attendee they were matched to stays", async () => {
  const { telephone, store, conferences } = await runtime();
  store.pins.set("4444", { role: "member", conferenceId: 8 });
  store.elsewhere.set(8, {
    userId: 1,
    sipUri: "sip:10.0.0.2:5060",
    dialInLocked: false,
    encryptedOnly: false,
  });
  store.attendees.push(
    attendee(3, { conferenceId: 8, dialIn: true, phoneNumberSubscriberNumber: "7785550190" }),
  );
  for (const from of ["+17785550189", "+17785550190"]) {
    const caller = await dialIn(telephone, from, "4444#");
    (telephone.calls.at(-1) as FakeCall).fail(403, "Forbidden");
    await flush();
    assert.deepEqual(caller.prompts, ["enter-pin", "joining", "not-started", "goodbye"]);
  }
  assert.deepEqual(
    store.attendees.filter((each) => each.conferenceId === 8).map((each) => each.id),
    [3],
  );
  assert.equal(store.handoffs.size, 0, "the tokens are spent");
  await conferences.close();
});

test("a room elsewhere keeps its lock: members are refused before any internal call", async () => {
  const { telephone, store, conferences } = await runtime();
  store.pins.set("4444", { role: "member", conferenceId: 8 });
  store.elsewhere.set(8, {
    userId: 1,
    sipUri: "sip:10.0.0.2:5060",
    dialInLocked: true,
    encryptedOnly: false,
  });
  const member = await dialIn(telephone, "+17785550188", "4444#");
  assert.deepEqual(member.prompts, ["enter-pin", "conference-locked", "goodbye"]);
  assert.equal(telephone.calls.length, 0);
  await conferences.close();
});

test("an internal call with a handoff token joins the room as the attendee it names, once; unknown tokens are refused 403", async () => {
  const { telephone, store, logger, conferences, media } = await runtime();
  // The caller's own call was encrypted; the internal call carrying it here is not: the caller's counts.
  const token = await store.createHandoff({
    conferenceId: 7,
    attendeeId: 2,
    moderator: false,
    encryption: "tls+srtp",
  });
  const carried = telephone.dialIn("+16045550000", "conference-7", { "X-Bridgeline-Handoff": token });
  await flush();
  assert.equal(carried.room, media);
  assert.deepEqual(store.of("call").at(-1), {
    op: "call",
    attendeeId: 2,
    event: { kind: "connected", muted: false, encryption: "tls+srtp" },
  });
  assert.ok(logger.messages().includes("dial-in: caller handed over by another instance"));

  const replayed = telephone.dialIn("+16045550000", "conference-7", { "X-Bridgeline-Handoff": token });
  await flush();
  assert.deepEqual(replayed.rejected, { status: 403, reason: "Forbidden" });
  assert.equal(replayed.room, undefined);
  await conferences.close();
});

test("a room reserves its claimed attendees (one at least) on its instance; more calls count as they come", async () => {
  const { telephone, store, conferences } = await runtime();
  assert.equal(conferences.participants, 1, "claimed with no count: one caller reserved");
  store.otherConferences.set(9, conference({ id: 9 }));
  conferences.run(conference({ id: 9 }), 5, 1);
  assert.equal(conferences.participants, 6);
  await dialIn(telephone, "+17785550123", "1111#");
  await dialIn(telephone, "anonymous", "2222#");
  assert.equal(conferences.participants, 7, "two callers in room 7");
  await conferences.close();
});

test("a caller who typed too many wrong PINs, over several calls, is refused 403 until the window ends; others are not", async () => {
  const { telephone, logger, conferences } = await runtime(
    {},
    { pinFailures: { limit: 4, windowMs: 60_000 } },
  );
  const first = await dialIn(telephone, "+17785550123", "11#22#33#");
  assert.equal(first.hungUp, true, "three wrong PINs end the first call");
  const second = await dialIn(telephone, "+17785550123", "44#");
  assert.equal(second.rejected, undefined, "the fourth wrong PIN is still heard");
  second.hangUpFarEnd();
  await flush();
  const third = telephone.dialIn("+17785550123", ACCESS_NUMBER);
  await flush();
  assert.deepEqual(third.rejected, { status: 403, reason: "Forbidden" });
  assert.equal(third.rang, false);
  assert.ok(logger.messages().includes("dial-in: call refused, too many wrong PINs from this caller"));
  const other = await dialIn(telephone, "+17785550124", "1111#");
  assert.equal(other.rejected, undefined);
  assert.deepEqual(other.prompts, ["enter-pin", "joining"]);
  await conferences.close();
});

test("a caller refused for wrong PINs is heard again once the window of its first wrong PIN ends", async () => {
  const { telephone, conferences, clock } = await runtime(
    {},
    { pinFailures: { limit: 3, windowMs: 60_000 } },
  );
  await dialIn(telephone, "+17785550123", "11#22#33#");
  await clock.pass(59_999);
  const refused = telephone.dialIn("+17785550123", ACCESS_NUMBER);
  await flush();
  assert.deepEqual(refused.rejected, { status: 403, reason: "Forbidden" });
  await clock.pass(1);
  const heard = telephone.dialIn("+17785550123", ACCESS_NUMBER);
  await flush();
  assert.equal(heard.rejected, undefined);
  assert.deepEqual(heard.prompts, ["enter-pin"]);
  heard.hangUpFarEnd();
  await conferences.close();
});

test("on its refreshes, an empty room ends once the grace period after the last caller left is over", async () => {
  const { telephone, store, conferences, clock } = await runtime({}, { refreshIntervalMs: 1_000 });
  const member = await dialIn(telephone, "+17785550123", "1111#");
  await clock.pass(30_000);
  member.hangUpFarEnd();
  await clock.pass(EMPTY_PERIODS.emptyGraceMs - 1);
  assert.deepEqual(store.of("end"), []);
  assert.equal(conferences.runningRooms, 1);
  await clock.pass(1_000);
  assert.deepEqual(store.of("end"), [{ op: "end", reason: "no attendee left" }]);
  assert.equal(conferences.runningRooms, 0);
  await conferences.close();
});

test("on its refreshes, a room nobody dials in to ends once the no-show period after its start is over", async () => {
  const { store, conferences, clock } = await runtime({}, { refreshIntervalMs: 60_000 });
  await clock.pass(EMPTY_PERIODS.noShowMs - 1);
  assert.deepEqual(store.of("end"), []);
  await clock.pass(60_000);
  assert.deepEqual(store.of("end"), [{ op: "end", reason: "nobody joined" }]);
  assert.equal(conferences.runningRooms, 0);
  await conferences.close();
});

test("an encrypted-only conference refuses at the PIN a caller not over TLS with SRTP, writing no attendee; one over TLS with SRTP joins", async () => {
  const { telephone, store, logger, conferences, media } = await runtime({ encryptedOnly: true });
  const refused: FakeCall[] = [];
  for (const [signallingTls, encrypted] of [
    [false, false],
    [true, false],
    [false, true],
  ] as const) {
    const call = telephone.dialIn("+17785550177", ACCESS_NUMBER);
    Object.assign(call, { signallingTls, encrypted });
    await flush();
    call.press("1111#");
    await flush();
    assert.deepEqual(call.prompts, ["enter-pin", "encrypted-only", "goodbye"]);
    assert.equal(call.hungUp, true);
    assert.equal(call.room, undefined);
    refused.push(call);
  }
  assert.equal(store.attendees.length, 2, "no attendee written for a refused caller");
  assert.deepEqual(
    logger.lines
      .filter((line) => line.message === "dial-in: caller refused, the conference takes encrypted calls only")
      .map((line) => line.fields.encryption),
    ["none", "tls", "srtp"],
  );

  const secure = telephone.dialIn("+17785550123", ACCESS_NUMBER);
  Object.assign(secure, { signallingTls: true, encrypted: true });
  await flush();
  secure.press("1111#");
  await flush();
  assert.equal(secure.room, media);
  assert.deepEqual(store.of("call").at(-1), {
    op: "call",
    attendeeId: 2,
    event: { kind: "connected", muted: false, encryption: "tls+srtp" },
  });
  await conferences.close();
});

test("a room elsewhere that is encrypted only refuses a plain caller before any internal call", async () => {
  const { telephone, store, conferences } = await runtime();
  store.pins.set("4444", { role: "member", conferenceId: 8 });
  store.elsewhere.set(8, {
    userId: 1,
    sipUri: "sip:10.0.0.2:5060",
    dialInLocked: false,
    encryptedOnly: true,
  });
  const member = await dialIn(telephone, "+17785550188", "4444#");
  assert.deepEqual(member.prompts, ["enter-pin", "encrypted-only", "goodbye"]);
  assert.equal(telephone.calls.length, 0);
  await conferences.close();
});
