import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { JitterBuffer } from "../../../src/telephony/media/jitter-buffer.js";

const SAMPLES = 160;
/** A frame whose samples all carry `value`, so the played frame identifies itself. */
const frame = (value: number) => new Int16Array(SAMPLES).fill(value);

function pullAll(buffer: JitterBuffer, ticks: number): Array<[string, number, number]> {
  const out = new Int16Array(SAMPLES);
  return Array.from({ length: ticks }, () => {
    const kind = buffer.pull(out);
    return [kind, out[0] as number, out[SAMPLES - 1] as number];
  });
}

describe("JitterBuffer", () => {
  it("delays playout by the configured frames and reorders", () => {
    const buffer = new JitterBuffer({ delayFrames: 2 });
    for (const seq of [100, 102, 101, 103]) buffer.push(seq, frame(seq));
    assert.deepEqual(pullAll(buffer, 6), [
      ["silence", 0, 0],
      ["silence", 0, 0],
      ["frame", 100, 100],
      ["frame", 101, 101],
      ["frame", 102, 102],
      ["frame", 103, 103],
    ]);
  });

  it("drops duplicates and packets that arrive after their playout tick", () => {
    const buffer = new JitterBuffer({ delayFrames: 1 });
    buffer.push(65535, frame(1));
    buffer.push(1, frame(3));
    assert.equal(buffer.push(65535, frame(9)), false);
    pullAll(buffer, 3); // priming, 65535, then 0 concealed
    assert.equal(buffer.push(0, frame(2)), false);
    assert.deepEqual(pullAll(buffer, 1), [["frame", 3, 3]]);
    assert.deepEqual(buffer.stats, {
      played: 2,
      concealed: 1,
      late: 1,
      duplicate: 1,
      restarts: 0,
      trimmed: 0,
    });
  });

  it("conceals a lost frame by repeating the last one, fading to silence after 60 ms", () => {
    const buffer = new JitterBuffer({ delayFrames: 0 });
    buffer.push(7, frame(1000));
    const played = pullAll(buffer, 5);
    // Gain 1 for the first 10 ms (80 samples), then −0.2 per 10 ms: 0.8 at the end of frame 1,
    // 0.4 at the end of frame 2, 0 at the end of frame 3.
    assert.deepEqual(played, [
      ["frame", 1000, 1000],
      ["concealed", 1000, 802],
      ["concealed", 800, 402],
      ["concealed", 400, 2],
      ["silence", 0, 0],
    ]);
  });

  it("restarts playout when packets resume after the buffer ran dry", () => {
    const buffer = new JitterBuffer({ delayFrames: 1 });
    buffer.push(10, frame(10));
    pullAll(buffer, 10);
    buffer.push(11, frame(11));
    assert.deepEqual(pullAll(buffer, 2).at(-1), ["frame", 11, 11]);
    assert.equal(buffer.stats.restarts, 1);
  });

  it("drops the oldest frames when playout falls behind, so the delay stays bounded", () => {
    const buffer = new JitterBuffer({ delayFrames: 2 });
    const out = new Int16Array(SAMPLES);
    buffer.push(0, frame(0));
    for (let tick = 0; tick < 2; tick++) buffer.pull(out);
    // Twenty frames arrive while playout was stalled (skipped ticks): more than half the capacity,
    // so only the newest five (the delay plus three of slack) are kept.
    for (let sequence = 1; sequence <= 20; sequence++) buffer.push(sequence, frame(sequence));
    assert.equal(buffer.pull(out), "frame");
    assert.equal(out[0], 16);
    assert.equal(buffer.stats.trimmed, 16);
  });

  it("holds at most its capacity: a packet that far ahead restarts playout at it, the rest let go", () => {
    const buffer = new JitterBuffer({ delayFrames: 2, capacityFrames: 32 });
    buffer.push(0, frame(1));
    buffer.push(1, frame(2));
    buffer.push(32, frame(3));
    assert.equal(buffer.stats.restarts, 1);
    const played = pullAll(buffer, 4).filter(([kind]) => kind === "frame");
    assert.deepEqual(played, [["frame", 3, 3]], "only the frame that restarted playout is left");
  });

  it("rejects a capacity that is not a power of two above the delay", () => {
    assert.throws(() => new JitterBuffer({ capacityFrames: 24 }), RangeError);
    assert.throws(() => new JitterBuffer({ delayFrames: 8, capacityFrames: 8 }), RangeError);
  });
});
