/**
 * Browsers joining by PIN (the join page, issue 28), through ConferenceRuntime.joinFromBrowser: the
 * same PINs, lock, encrypted-only rule and wrong-PIN throttle as dial-in, the page's call answered
 * next to the room and admitted as an added dial-in attendee, or carried to the room's instance.
 */
import assert from "node:assert/strict";
import path from "node:path";
import { after, test } from "node:test";
import { ConferenceRuntime, type ConferenceRuntimeOptions } from "../../src/conference/conference-runtime.js";
import type { AdmittedCaller } from "../../src/conference/ports.js";
import type { BrowserJoined, BrowserJoinRefusal, BrowserJoinRequest } from "../../src/domain/browser-join.js";
import type { Conference } from "../../src/domain/conference.js";
import { attemptCounts } from "../../src/store/attempt-counts.js";
import { openSqliteStore, type Store } from "../../src/store/database.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { attendee, conference, type FakeCall, FakeLogger, FakeStore, FakeTelephone, flush } from "./fakes.js";
import { DATA_DIR, EMPTY_PERIODS } from "./harness.js";

const ACCESS_NUMBER = "+16045550199";
const PAGE = "198.51.100.7";
/** Wrong PINs are counted in a real store, a fresh one per runtime. */
const attemptStores: Store[] = [];
after(() => Promise.all(attemptStores.map((store) => store.close())));

/**
 * A runtime over fakes running conference 7 (its dial-in moderator 1 without a number, member 2 with
 * one); PIN 3333 opens conference 8, which runs nowhere, and 4444 conference 9, which runs elsewhere.
 */
async function runtime(
  changes: Partial<Conference> = {},
  options: Pick<ConferenceRuntimeOptions, "pinFailures" | "serviceWrongPins"> = {},
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
  store.pins.set("4444", { role: "member", conferenceId: 9 });
  store.elsewhere.set(9, {
    userId: 5,
    sipUri: "sip:10.0.0.2:5060",
    dialInLocked: false,
    encryptedOnly: false,
  });
  const logger = new FakeLogger();
  const attemptStore = await openSqliteStore(path.join(DATA_DIR, `browser-attempts-${attemptStores.length}`));
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
  const media = telephone.rooms[0] ?? assert.fail("the room opened no media");
  return { telephone, store, logger, conferences, clock, media };
}

/** A page joining with `pin`; from PAGE over HTTPS unless told otherwise. */
async function join(
  conferences: ConferenceRuntime,
  pin: string,
  request: Partial<BrowserJoinRequest> = {},
): Promise<BrowserJoined | BrowserJoinRefusal> {
  const result = await conferences.joinFromBrowser({
    pin,
    offer: "offer",
    source: PAGE,
    signallingTls: true,
    ...request,
  });
  // The wrong PINs are counted in the background: let the counts land before the next try.
  await flush();
  return result;
}

function joined(result: BrowserJoined | BrowserJoinRefusal): BrowserJoined {
  if ("refused" in result) return assert.fail(`refused: ${JSON.stringify(result)}`);
  return result;
}

/** The browser call the telephone answered last. */
function lastBrowserCall(telephone: FakeTelephone): FakeCall {
  return telephone.browserCalls.at(-1)?.call ?? assert.fail("no browser call answered");
}

/** Records the store's withdrawAdmission calls (and still withdraws). */
function spyWithdrawals(store: FakeStore): { token: string | undefined; attendeeId: number | null }[] {
  const withdrawals: { token: string | undefined; attendeeId: number | null }[] = [];
  const withdraw = store.withdrawAdmission.bind(store);
  store.withdrawAdmission = (token, attendeeId) => {
    withdrawals.push({ token, attendeeId });
    return withdraw(token, attendeeId);
  };
  return withdrawals;
}

test("a member PIN admits the browser into the running room as an added dial-in attendee, muted in lecture mode like a phone", async () => {
  const { telephone, store, logger, conferences, media } = await runtime({ lectureMode: true });
  const result = joined(await join(conferences, "1111", { offer: "the page's offer" }));
  const added = store.attendees.at(-1) ?? assert.fail("no attendee");
  assert.equal(added.dialIn, true);
  assert.equal(added.phoneNumberSubscriberNumber, null, "a page has no number");
  assert.deepEqual(result, {
    userId: 3,
    conferenceId: 7,
    attendeeId: added.id,
    moderator: false,
    answer: "answer to the page's offer",
    token: result.token,
  });
  assert.ok(result.token.length >= 32, "a token nobody guesses");
  assert.equal(telephone.browserCalls.length, 1);
  assert.equal(telephone.browserCalls[0]?.room, media, "its media opened next to the room's");
  const call = lastBrowserCall(telephone);
  assert.equal(call.room, media);
  assert.equal(call.joinedMuted, true, "lecture mode");
  assert.deepEqual(store.of("call").at(-1), {
    op: "call",
    attendeeId: added.id,
    event: { kind: "connected", muted: true, encryption: "tls+srtp" },
  });
  assert.ok(logger.messages().includes("browser join: admitted"));
  await conferences.close();
});

test("the token names the participant while its call lasts, and nothing once it ended", async () => {
  const { telephone, conferences } = await runtime();
  const result = joined(await join(conferences, "1111"));
  const { userId, conferenceId, attendeeId, moderator } = result;
  assert.deepEqual(conferences.browserParticipant(result.token), {
    userId,
    conferenceId,
    attendeeId,
    moderator,
  });
  assert.equal(conferences.browserParticipant("no-such-token"), undefined);
  lastBrowserCall(telephone).hangUpFarEnd();
  await flush();
  assert.equal(conferences.browserParticipant(result.token), undefined);
  await conferences.close();
});

test("leave hangs the page's call up, once; unknown tokens are false", async () => {
  const { telephone, store, conferences, media } = await runtime();
  const result = joined(await join(conferences, "1111"));
  const call = lastBrowserCall(telephone);
  assert.equal(conferences.leaveBrowser("no-such-token"), false);
  assert.equal(call.hungUp, false);
  assert.equal(conferences.leaveBrowser(result.token), true);
  assert.equal(call.hungUp, true);
  await flush();
  assert.equal(call.state, "ended");
  assert.deepEqual(store.of("call").at(-1), {
    op: "call",
    attendeeId: result.attendeeId,
    event: { kind: "disconnected", result: "local: hung up" },
  });
  assert.equal(conferences.leaveBrowser(result.token), false, "its call is over");
  assert.equal(conferences.browserParticipant(result.token), undefined);
  assert.equal(media.closed, 0, "the room goes on");
  await conferences.close();
});

test("a moderator PIN joins as the moderator, unmuted in lecture mode", async () => {
  const { telephone, store, conferences, media } = await runtime({ lectureMode: true });
  const result = joined(await join(conferences, "2222"));
  assert.equal(result.moderator, true);
  assert.equal(result.attendeeId, 1, "the conference's dial-in moderator");
  const call = lastBrowserCall(telephone);
  assert.equal(call.room, media);
  assert.equal(call.joinedMuted, false);
  assert.deepEqual(store.of("call").at(-1), {
    op: "call",
    attendeeId: 1,
    event: { kind: "connected", muted: false, encryption: "tls+srtp" },
  });
  assert.deepEqual(conferences.browserParticipant(result.token), {
    userId: 3,
    conferenceId: 7,
    attendeeId: 1,
    moderator: true,
  });
  await conferences.close();
});

test("a wrong PIN is refused and counted; past the caller limit the page's address is refused until the window ends, others are not", async () => {
  const { telephone, store, logger, conferences, clock } = await runtime(
    {},
    { pinFailures: { limit: 3, windowMs: 60_000 } },
  );
  for (let n = 1; n <= 3; n++) {
    assert.deepEqual(await join(conferences, "9999"), { refused: "wrong-pin" });
    assert.equal(conferences.wrongPins, n);
  }
  const warned = logger.lines.filter((line) => line.message === "browser join: wrong PIN");
  assert.deepEqual(
    warned.map((line) => line.fields.source),
    [PAGE, PAGE, PAGE],
    "warned with the address fail2ban-style tools match",
  );
  // Refused before the PIN is looked at: the right one too.
  assert.deepEqual(await join(conferences, "1111"), {
    refused: "too-many-wrong-pins",
    retryAfterSeconds: 60,
  });
  await clock.pass(45_000);
  assert.deepEqual(await join(conferences, "1111"), {
    refused: "too-many-wrong-pins",
    retryAfterSeconds: 15,
  });
  assert.equal(conferences.wrongPins, 3, "a refused try is no wrong PIN");
  assert.equal(telephone.browserCalls.length, 0, "no offer answered");
  assert.equal(store.attendees.length, 2);

  joined(await join(conferences, "1111", { source: "198.51.100.8" }));
  await clock.pass(15_000);
  joined(await join(conferences, "1111"));
  await conferences.close();
});

test("past the wrong PINs the service takes in its window, every page is refused until it ends", async () => {
  const { telephone, conferences, clock } = await runtime(
    {},
    { serviceWrongPins: { limit: 3, windowMs: 60_000 } },
  );
  for (const n of [1, 2, 3])
    assert.deepEqual(await join(conferences, "9999", { source: `203.0.113.${n}` }), { refused: "wrong-pin" });
  assert.deepEqual(await join(conferences, "1111", { source: "203.0.113.4" }), {
    refused: "service-wrong-pins",
    retryAfterSeconds: 60,
  });
  await clock.pass(50_000);
  assert.deepEqual(await join(conferences, "1111", { source: "203.0.113.4" }), {
    refused: "service-wrong-pins",
    retryAfterSeconds: 10,
  });
  assert.equal(telephone.browserCalls.length, 0);
  await clock.pass(10_000);
  joined(await join(conferences, "1111", { source: "203.0.113.4" }));
  await conferences.close();
});

test("a phone's wrong PINs and a browser's count towards the same service limit", async () => {
  const { telephone, conferences } = await runtime({}, { serviceWrongPins: { limit: 3, windowMs: 60_000 } });
  const phone = telephone.dialIn("+17785550201", ACCESS_NUMBER);
  await flush();
  phone.press("11#22#");
  await flush();
  assert.equal(conferences.wrongPins, 2);
  phone.hangUpFarEnd();
  assert.deepEqual(await join(conferences, "9999"), { refused: "wrong-pin" });
  // The browser's wrong PIN was the service's third: pages and phones alike are refused.
  assert.deepEqual(await join(conferences, "1111", { source: "203.0.113.9" }), {
    refused: "service-wrong-pins",
    retryAfterSeconds: 60,
  });
  const next = telephone.dialIn("+17785550202", ACCESS_NUMBER);
  await flush();
  assert.equal(next.rejected?.status, 503);
  await conferences.close();
});

test("a PIN whose conference is not in progress is refused not-started, nothing answered nor written", async () => {
  const { telephone, store, conferences } = await runtime();
  assert.deepEqual(await join(conferences, "3333"), { refused: "not-started" });
  assert.equal(telephone.browserCalls.length, 0);
  assert.equal(store.attendees.length, 2);
  assert.equal(conferences.wrongPins, 0, "a right PIN, however early");
  await conferences.close();
});

test("a locked conference refuses a member's page, and lets the moderator's in", async () => {
  const { telephone, store, conferences, media } = await runtime({ dialInLocked: true });
  assert.deepEqual(await join(conferences, "1111"), { refused: "locked" });
  assert.equal(telephone.browserCalls.length, 0);
  assert.equal(store.attendees.length, 2);
  const moderator = joined(await join(conferences, "2222"));
  assert.equal(moderator.moderator, true);
  assert.equal(lastBrowserCall(telephone).room, media);
  await conferences.close();
});

test("an encrypted-only conference refuses a page on plain HTTP before answering it, and takes one over HTTPS", async () => {
  const { telephone, store, conferences, media } = await runtime({ encryptedOnly: true });
  assert.deepEqual(await join(conferences, "1111", { signallingTls: false }), { refused: "encrypted-only" });
  assert.equal(telephone.browserCalls.length, 0);
  assert.equal(store.attendees.length, 2);
  const result = joined(await join(conferences, "1111", { signallingTls: true }));
  assert.equal(lastBrowserCall(telephone).room, media);
  assert.deepEqual(store.of("call").at(-1), {
    op: "call",
    attendeeId: result.attendeeId,
    event: { kind: "connected", muted: false, encryption: "tls+srtp" },
  });
  await conferences.close();
});

test("a conference the store finds full is refused full, and the page's call hung up", async () => {
  const { telephone, store, conferences } = await runtime();
  store.admitCaller = async () => undefined;
  assert.deepEqual(await join(conferences, "1111"), { refused: "full" });
  const call = lastBrowserCall(telephone);
  assert.equal(call.hungUp, true);
  assert.equal(call.room, undefined);
  await conferences.close();
});

test("an offer the telephone cannot answer is refused bad-offer with why, and nothing is admitted", async () => {
  const { telephone, store, conferences } = await runtime();
  telephone.refuseOffer = "the offer's audio has no Opus";
  assert.deepEqual(await join(conferences, "1111"), {
    refused: "bad-offer",
    reason: "the offer's audio has no Opus",
  });
  assert.equal(store.attendees.length, 2);
  assert.deepEqual(store.of("call"), []);
  await conferences.close();
});

test("a page whose call ends while the store admits it joins nothing, and the attendee added for it is withdrawn", async () => {
  const { telephone, store, conferences } = await runtime();
  const withdrawals = spyWithdrawals(store);
  let admit: () => void = () => {};
  const admitting = new Promise<void>((resolve) => {
    admit = resolve;
  });
  const admitCaller = store.admitCaller.bind(store);
  let admitted: AdmittedCaller | undefined;
  store.admitCaller = async (...args) => {
    await admitting;
    admitted = await admitCaller(...args);
    return admitted;
  };
  const joining = conferences.joinFromBrowser({
    pin: "1111",
    offer: "offer",
    source: PAGE,
    signallingTls: true,
  });
  await flush();
  const call = lastBrowserCall(telephone);
  call.hangUpFarEnd();
  admit();
  const result = await joining;
  await flush();
  assert.equal("refused" in result, true, "no token for a call that is over");
  const addedId = admitted?.attendee.id ?? assert.fail("not admitted");
  assert.deepEqual(withdrawals, [{ token: undefined, attendeeId: addedId }]);
  assert.equal(
    store.attendees.some((each) => each.id === addedId),
    false,
  );
  assert.equal(call.room, undefined);
  assert.deepEqual(store.of("call"), [], "nothing written for it");
  await conferences.close();
});

test("a PIN whose room runs on another instance: the page's call is carried there with a one-time token, relayed once answered", async () => {
  const { telephone, store, conferences } = await runtime();
  const result = joined(await join(conferences, "4444"));
  assert.equal(result.conferenceId, 9);
  assert.equal(result.userId, 5);
  assert.equal(telephone.browserCalls[0]?.room, undefined, "no room here to open next to");
  const call = lastBrowserCall(telephone);
  const leg = telephone.callTo("sip:conference-9@10.0.0.2:5060");
  const token = leg.header("X-Bridgeline-Handoff") ?? assert.fail("no handoff token");
  assert.deepEqual(store.handoffs.get(token), {
    conferenceId: 9,
    attendeeId: result.attendeeId,
    moderator: false,
    encryption: "tls+srtp",
  });
  assert.equal(leg.ringTimeoutMs, 5_000);
  assert.equal(call.relayedWith, undefined, "not before the room's instance answers");
  leg.answer();
  assert.equal(call.relayedWith, leg);
  assert.deepEqual(conferences.browserParticipant(result.token), {
    userId: 5,
    conferenceId: 9,
    attendeeId: result.attendeeId,
    moderator: false,
  });
  assert.equal(conferences.leaveBrowser(result.token), true);
  await flush();
  assert.equal(leg.hungUp, true, "the page leaving ends the internal call");
  await conferences.close();
});

test("a page the room's instance refuses is told, hung up, and leaves no attendee nor handoff behind", async () => {
  const { telephone, store, conferences } = await runtime();
  const withdrawals = spyWithdrawals(store);
  const result = joined(await join(conferences, "4444"));
  const call = lastBrowserCall(telephone);
  const leg = telephone.callTo("sip:conference-9@10.0.0.2:5060");
  const token = leg.header("X-Bridgeline-Handoff");
  leg.fail(404, "Not Found");
  await flush();
  assert.deepEqual(withdrawals, [{ token, attendeeId: result.attendeeId }]);
  assert.equal(store.handoffs.size, 0);
  assert.equal(
    store.attendees.some((each) => each.id === result.attendeeId),
    false,
  );
  assert.deepEqual(call.prompts, ["not-started", "goodbye"]);
  assert.equal(call.hungUp, true);
  assert.equal(conferences.browserParticipant(result.token), undefined);
  await conferences.close();
});

test("a store that cannot answer makes the page try again shortly", async () => {
  const { telephone, store, logger, conferences } = await runtime();
  store.findPinTarget = () => Promise.reject(new Error("connection refused"));
  assert.deepEqual(await join(conferences, "1111"), { refused: "unavailable", retryAfterSeconds: 5 });
  assert.equal(logger.lines.find((line) => line.message === "browser join failed")?.fields.source, PAGE);
  assert.equal(telephone.browserCalls.length, 0);
  await conferences.close();
});

test("a store that fails once the offer is answered hangs the page's call up and takes back what it admitted", async () => {
  const { telephone, store, conferences } = await runtime();
  const withdrawals = spyWithdrawals(store);
  const admitCaller = store.admitCaller.bind(store);
  store.admitCaller = () => Promise.reject(new Error("connection lost"));
  assert.deepEqual(await join(conferences, "1111"), { refused: "unavailable", retryAfterSeconds: 5 });
  assert.equal(lastBrowserCall(telephone).hungUp, true, "no call left answered for a page told to retry");
  assert.deepEqual(withdrawals, [], "nothing was admitted");

  // Admitted, then the handoff to the room's instance cannot be written.
  let added: number | undefined;
  store.admitCaller = async (...args) => {
    const admitted = await admitCaller(...args);
    added = admitted?.attendee.id;
    return admitted;
  };
  store.createHandoff = () => Promise.reject(new Error("connection lost"));
  assert.deepEqual(await join(conferences, "4444"), { refused: "unavailable", retryAfterSeconds: 5 });
  assert.equal(lastBrowserCall(telephone).hungUp, true);
  assert.notEqual(added, undefined);
  assert.deepEqual(withdrawals, [{ token: undefined, attendeeId: added }]);
  assert.equal(store.attendees.length, 2, "the attendee added for it is withdrawn");
  assert.equal(telephone.calls.length, 0, "no internal call placed");
  await conferences.close();
});

test("wrong PINs sent at once from one page's address pass the limit no faster than one after another", async () => {
  const { conferences } = await runtime({}, { pinFailures: { limit: 3, windowMs: 60_000 } });
  const results = await Promise.all(
    Array.from({ length: 20 }, () =>
      conferences.joinFromBrowser({ pin: "9999", offer: "offer", source: PAGE, signallingTls: true }),
    ),
  );
  await flush();
  const refusals = results.map((result) => ("refused" in result ? result.refused : "joined"));
  assert.equal(refusals.filter((refused) => refused === "wrong-pin").length, 3, refusals.join(", "));
  assert.equal(refusals.filter((refused) => refused === "too-many-wrong-pins").length, 17);
  // A right PIN from another address is no wrong try: it neither counts nor is refused.
  for (let attempt = 0; attempt < 5; attempt++)
    joined(await join(conferences, "1111", { source: "198.51.100.8" }));
});

test("a PIN the store could not look up is no wrong try: the page may try again", async () => {
  const { store, conferences } = await runtime({}, { pinFailures: { limit: 1, windowMs: 60_000 } });
  const findPinTarget = store.findPinTarget.bind(store);
  store.findPinTarget = async () => {
    throw new Error("the store is unreachable");
  };
  const failed = await join(conferences, "9999");
  assert.equal("refused" in failed && failed.refused, "unavailable");
  store.findPinTarget = findPinTarget;
  // The limit is one wrong PIN: the lookup that failed did not spend it.
  assert.deepEqual(await join(conferences, "9999"), { refused: "wrong-pin" });
  const after = await join(conferences, "9999");
  assert.equal("refused" in after && after.refused, "too-many-wrong-pins");
});
