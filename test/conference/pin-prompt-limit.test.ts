import assert from "node:assert/strict";
import path from "node:path";
import { after, test } from "node:test";
import { ConferenceRuntime, type ConferenceRuntimeOptions } from "../../src/conference/conference-runtime.js";
import type { Conference } from "../../src/domain/conference.js";
import { attemptCounts } from "../../src/store/attempt-counts.js";
import { openSqliteStore } from "../../src/store/database.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { attendee, conference, FakeLogger, FakeStore, FakeTelephone, flush, flushUntil } from "./fakes.js";
import { DATA_DIR, EMPTY_PERIODS } from "./harness.js";

const ACCESS_NUMBER = "+16045550199";

/** A runtime taking dial-in calls on a fake telephone, its wrong PINs counted in SQLite. */
async function dialInRuntime(
  name: string,
  limits: Pick<ConferenceRuntimeOptions, "pinPrompt" | "serviceWrongPins">,
) {
  const attemptStore = await openSqliteStore(path.join(DATA_DIR, name));
  after(() => attemptStore.close());
  const telephone = new FakeTelephone();
  const store = new FakeStore(conference(), [attendee(1, { dialIn: true })]);
  const logger = new FakeLogger();
  const conferences = new ConferenceRuntime({
    telephone,
    store,
    instance: "test-instance",
    speak: async () => null,
    logger,
    clock: new FakeClock(),
    dataDir: DATA_DIR,
    accessNumbers: [ACCESS_NUMBER],
    emptyPeriods: EMPTY_PERIODS,
    attempts: attemptCounts(attemptStore),
    refreshIntervalMs: 3_600_000,
    ...limits,
  });
  return { telephone, store, logger, conferences };
}

test("past the callers answered at the PIN prompt a caller is refused 503, unACKed calls not counted; one who leaves makes room", async () => {
  const { telephone, store, conferences } = await dialInRuntime("attempts-pin-prompt-limit", {
    pinPrompt: { total: 2, perSource: 2 },
  });
  store.pins.set("1111", { role: "member", conferenceId: 7 });
  conferences.run(store.conference as Conference, 0, 1);
  await flush();
  // Each from a source of its own: the total is what refuses.
  const from = (n: number) => ({ source: `192.0.2.${n}`, peer: false, callId: `call-${n}` });
  // A scanner's INVITEs, answered and never ACKed, from sources of their own: they cost no prompt.
  const scanners = [11, 12, 13].map((n) => telephone.dialIn(`+17785550${n}0`, ACCESS_NUMBER, {}, from(n)));
  for (const call of scanners) call.acks = false;
  const first = telephone.dialIn("+17785550101", ACCESS_NUMBER, {}, from(1));
  const second = telephone.dialIn("+17785550102", ACCESS_NUMBER, {}, from(2));
  await flush();
  assert.equal(first.rang && second.rang, true);
  assert.deepEqual(conferences.atPinPrompt, { held: 5, answered: 2 });
  const third = telephone.dialIn("+17785550103", ACCESS_NUMBER, {}, from(3));
  assert.deepEqual(third.rejected, { status: 503, reason: "Service Unavailable", retryAfterSeconds: 10 });
  // One types the PIN and goes into the room, one hangs up: both leave the prompt.
  first.press("1111#");
  second.hangUpFarEnd();
  await flush();
  assert.ok(first.room !== undefined, "the first caller is in the room");
  const fourth = telephone.dialIn("+17785550104", ACCESS_NUMBER, {}, from(4));
  const fifth = telephone.dialIn("+17785550105", ACCESS_NUMBER, {}, from(5));
  await flush();
  assert.equal(fourth.rejected, undefined);
  assert.equal(fifth.rejected, undefined);
  assert.equal(fourth.rang && fifth.rang, true);
  for (const call of [first, fourth, fifth]) call.hangUpFarEnd();
  // The unACKed calls end (64*T1 later, in life): their places come back too.
  for (const call of scanners) call.fail(408, "no ACK");
  await flush();
  assert.deepEqual(conferences.atPinPrompt, { held: 0, answered: 0 });
  await conferences.close();
});

test("one stranger's source holds only its share of the PIN prompt; other sources and a configured peer still get in", async () => {
  const { telephone, conferences } = await dialInRuntime("attempts-pin-prompt-source", {
    pinPrompt: { total: 6, perSource: 2 },
  });
  const scanner = { source: "203.0.113.9", peer: false, callId: "scan" };
  const edge = { source: "198.51.100.1", peer: true, callId: "edge" };
  const held = [1, 2].map((n) => telephone.dialIn(`+1778555010${n}`, ACCESS_NUMBER, {}, scanner));
  const refused = telephone.dialIn("+17785550109", ACCESS_NUMBER, {}, scanner);
  await flush();
  assert.equal(
    held.every((call) => call.rang),
    true,
  );
  assert.deepEqual(refused.rejected, { status: 503, reason: "Service Unavailable", retryAfterSeconds: 10 });
  assert.equal(conferences.dialInsRefused["source-full"], 1);
  const other = telephone.dialIn("+16045550150", ACCESS_NUMBER, {}, { ...scanner, source: "203.0.113.10" });
  const viaEdge = [1, 2, 3].map((n) => telephone.dialIn(`+1604555016${n}`, ACCESS_NUMBER, {}, edge));
  await flush();
  assert.equal(other.rejected, undefined);
  assert.equal(
    viaEdge.every((call) => call.rejected === undefined),
    true,
    "a configured peer's callers are many people: only the total caps them",
  );
  assert.equal(conferences.atPinPrompt.held, 6);
  // The scanner's calls leave: its places come back.
  for (const call of held) call.hangUpFarEnd();
  await flush();
  assert.equal(conferences.atPinPrompt.held, 4);
  const again = telephone.dialIn("+17785550108", ACCESS_NUMBER, {}, scanner);
  await flush();
  assert.equal(again.rejected, undefined);
  for (const call of [other, again, ...viaEdge]) call.hangUpFarEnd();
  await flush();
  assert.equal(conferences.atPinPrompt.held, 0);
  await conferences.close();
});

test("past the wrong PINs the whole service may take in its window, every new caller is refused 503 until it ends", async () => {
  const { telephone, logger, conferences } = await dialInRuntime("attempts-service-wrong-pins", {
    serviceWrongPins: { limit: 3, windowMs: 60_000 },
  });
  // Three guessers, each with a caller ID of its own (under the per-caller limit), one guess each.
  const guessers = [1, 2, 3].map((n) => telephone.dialIn(`+1778555020${n}`, ACCESS_NUMBER));
  await flush();
  for (const guesser of guessers) guesser.press("424242#");
  await flushUntil(() => conferences.wrongPins === 3);
  for (const guesser of guessers) guesser.hangUpFarEnd();
  await flush();
  const next = telephone.dialIn("+17785550299", ACCESS_NUMBER);
  await flushUntil(() => next.rejected !== undefined);
  assert.equal(next.rejected?.status, 503);
  const retryAfter = next.rejected?.retryAfterSeconds ?? 0;
  assert.ok(retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter} within the window`);
  assert.equal(next.rang, false, "refused before it rings");
  assert.equal(conferences.dialInsRefused["service-wrong-pins"], 1);
  assert.ok(
    logger.lines.some((line) => line.message === "dial-in: call refused, too many wrong PINs to the service"),
  );
  await conferences.close();
});
