import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TalkDetector } from "../../../src/telephony/media/talk-detector.js";

const SPEECH_DB = -20;
const QUIET_DB = -70;

/** Feeds frame levels; returns the indexes of the frames that changed the state. */
function changes(detector: TalkDetector, levels: readonly number[], muted = false): number[] {
  const at: number[] = [];
  levels.forEach((level, frame) => {
    if (detector.update(level, muted)) at.push(frame);
  });
  return at;
}

const frames = (count: number, level: number) => new Array<number>(count).fill(level);

describe("talk detector", () => {
  it("starts after three loud frames in a row and stops after 25 quiet ones", () => {
    const detector = new TalkDetector();
    assert.deepEqual(changes(detector, frames(2, SPEECH_DB)), []);
    assert.equal(detector.talking, false);
    assert.deepEqual(changes(detector, frames(1, SPEECH_DB)), [0]);
    assert.equal(detector.talking, true);
    assert.deepEqual(changes(detector, frames(24, QUIET_DB)), []);
    assert.equal(detector.talking, true);
    assert.deepEqual(changes(detector, frames(1, QUIET_DB)), [0]);
    assert.equal(detector.talking, false);
  });

  it("does not flicker through the pauses between words or on a click", () => {
    const detector = new TalkDetector();
    // Two words with a 300 ms pause, then a 40 ms click after a long silence.
    const levels = [
      ...frames(20, SPEECH_DB),
      ...frames(15, QUIET_DB),
      ...frames(20, SPEECH_DB),
      ...frames(40, QUIET_DB),
      ...frames(2, -10),
      ...frames(10, QUIET_DB),
    ];
    assert.deepEqual(changes(detector, levels), [2, 79]);
    assert.equal(detector.talking, false);
  });

  it("counts silence (nothing received) as quiet and takes the threshold as given", () => {
    const detector = new TalkDetector({ thresholdDb: -30, startFrames: 1, stopFrames: 2 });
    assert.deepEqual(
      changes(detector, [-35, -30, Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY]),
      [1, 3],
    );
  });

  it("never has a muted participant talking, and stops one at once when muted", () => {
    const detector = new TalkDetector();
    assert.deepEqual(changes(detector, frames(10, SPEECH_DB), true), []);
    assert.equal(detector.talking, false);
    changes(detector, frames(3, SPEECH_DB));
    assert.equal(detector.talking, true);
    assert.deepEqual(changes(detector, frames(1, SPEECH_DB), true), [0]);
    assert.equal(detector.talking, false);
  });
});
