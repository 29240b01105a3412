/**
 * The recording of a room that took its conference over: a part file of its own, named for its lease,
 * stored under that lease; the earlier room's file is never opened again (that would truncate it).
 */
import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { flushUntil } from "./fakes.js";
import { DATA_DIR, startRoom } from "./harness.js";

const TAKEN_OVER = { callBack: [], onFirstJoined: () => {} };
const recording = (fileName: string) => path.join(DATA_DIR, "recordings", fileName);

test("a room that took its conference over records into a part file of its own lease", async () => {
  const h = await startRoom({ conference: { recordAudio: true }, lease: 3, takenOver: TAKEN_OVER });
  await flushUntil(() => h.store.of("recording-file").length > 0);
  const fileName = "Weekly 2027-03-01 (7)-part3.wav";
  assert.deepEqual(h.media.recording, [`start ${recording(fileName)}`]);
  assert.deepEqual(h.store.of("recording-file"), [{ op: "recording-file", fileName }]);
  // Paused and resumed, the part goes on in the same file.
  h.store.conference = { ...h.room.conference, recordAudio: false };
  await h.room.refresh();
  h.store.conference = { ...h.room.conference, recordAudio: true };
  await h.room.refresh();
  await flushUntil(() => h.media.recording.length === 3);
  assert.deepEqual(h.media.recording, [
    `start ${recording(fileName)}`,
    "pause",
    `start ${recording(fileName)}`,
  ]);
});

test("a room that did not take its conference over records into the conference's file, whatever its lease", async () => {
  const h = await startRoom({ conference: { recordAudio: true }, lease: 3 });
  await flushUntil(() => h.store.of("recording-file").length > 0);
  const fileName = "Weekly 2027-03-01 (7).wav";
  assert.deepEqual(h.media.recording, [`start ${recording(fileName)}`]);
  assert.deepEqual(h.store.of("recording-file"), [{ op: "recording-file", fileName }]);
});

test("a part file stored under a lease lost is refused, and the room gives up", async () => {
  const h = await startRoom({
    conference: { recordAudio: true },
    lease: 3,
    takenOver: TAKEN_OVER,
    beforeStart: (store) => {
      store.lease = 4;
    },
  });
  await flushUntil(() => h.endedCalls() > 0);
  assert.deepEqual(h.store.of("recording-file"), []);
  assert.ok(h.logger.messages().includes("conference room given up"));
  assert.equal(h.media.closed, 1);
});
