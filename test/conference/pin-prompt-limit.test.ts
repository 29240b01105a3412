import assert from "node:assert/strict";
import path from "node:path";
import { after, test } from "node:test";
import { ConferenceRuntime } from "../../src/conference/conference-runtime.js";
import type { Conference } from "../../src/domain/conference.js";
import { attemptCounts } from "../../src/store/attempt-counts.js";
import { openSqliteStore } from "../../src/store/database.js";
import { attendee, conference, FakeLogger, FakeStore, FakeTelephone, flush } from "./fakes.js";
import { DATA_DIR, EMPTY_PERIODS } from "./harness.js";

const ACCESS_NUMBER = "+16045550199";

test("past the callers allowed at the PIN prompt a caller is refused 503; one who leaves makes room", async () => {
  const attemptStore = await openSqliteStore(path.join(DATA_DIR, "attempts-pin-prompt-limit"));
  after(() => attemptStore.close());
  const telephone = new FakeTelephone();
  const store = new FakeStore(conference(), [attendee(1, { dialIn: true })]);
  store.pins.set("1111", { role: "member", conferenceId: 7 });
  const conferences = new ConferenceRuntime({
    telephone,
    store,
    speak: async () => null,
    logger: new FakeLogger(),
    dataDir: DATA_DIR,
    accessNumbers: [ACCESS_NUMBER],
    emptyPeriods: EMPTY_PERIODS,
    attempts: attemptCounts(attemptStore),
    refreshIntervalMs: 3_600_000,
    maxCallersAtPinPrompt: 2,
  });
  conferences.run(store.conference as Conference);
  await flush();
  const first = telephone.dialIn("+17785550101", ACCESS_NUMBER);
  const second = telephone.dialIn("+17785550102", ACCESS_NUMBER);
  await flush();
  assert.equal(first.rang && second.rang, true);
  const third = telephone.dialIn("+17785550103", ACCESS_NUMBER);
  assert.deepEqual(third.rejected, { status: 503, reason: "Service Unavailable" });
  // One types the PIN and goes into the room, one hangs up: both leave the prompt.
  first.press("1111#");
  second.hangUpFarEnd();
  await flush();
  assert.ok(first.room !== undefined, "the first caller is in the room");
  const fourth = telephone.dialIn("+17785550104", ACCESS_NUMBER);
  const fifth = telephone.dialIn("+17785550105", ACCESS_NUMBER);
  await flush();
  assert.equal(fourth.rejected, undefined);
  assert.equal(fifth.rejected, undefined);
  assert.equal(fourth.rang && fifth.rang, true);
  for (const call of [first, fourth, fifth]) call.hangUpFarEnd();
  await conferences.close();
});
