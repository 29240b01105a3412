import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FrameAssembler } from "../../../src/telephony/media/frame-assembler.js";

/** Samples numbered by their position in the stream, so each frame shows where its samples came from. */
function ramp(start: number, count: number): Int16Array {
  return Int16Array.from({ length: count }, (_, i) => start + i);
}

function collect(): { frames: Array<[number, Int16Array]>; assembler: FrameAssembler } {
  const frames: Array<[number, Int16Array]> = [];
  const assembler = new FrameAssembler((index, frame) => frames.push([index, frame.slice()]), 160);
  return { frames, assembler };
}

describe("FrameAssembler", () => {
  it("passes aligned 20 ms packets through as frames indexed by timestamp", () => {
    const { frames, assembler } = collect();
    assembler.push(1000, ramp(0, 160), 160);
    assembler.push(1160, ramp(160, 160), 160);
    assembler.push(1480, ramp(480, 160), 160); // one packet lost: frame 2 is missing, frame 3 follows
    assert.deepEqual(
      frames.map(([index]) => index),
      [0, 1, 3],
    );
    assert.deepEqual(frames[2]?.[1], ramp(480, 160));
  });

  it("cuts 30 ms packets into 20 ms frames: two packets make three frames", () => {
    const { frames, assembler } = collect();
    assembler.push(0, ramp(0, 240), 240);
    assembler.push(240, ramp(240, 240), 240);
    assert.deepEqual(
      frames.map(([index]) => index),
      [0, 1, 2],
    );
    for (const [index, frame] of frames) assert.deepEqual(frame, ramp(160 * index, 160));
  });

  it("gathers 10 ms packets into 20 ms frames", () => {
    const { frames, assembler } = collect();
    for (let k = 0; k < 4; k++) assembler.push(80 * k, ramp(80 * k, 80), 80);
    assert.deepEqual(frames, [
      [0, ramp(0, 160)],
      [1, ramp(160, 160)],
    ]);
  });

  it("hands over a partial frame, zero-filled, when later audio arrives first", () => {
    const { frames, assembler } = collect();
    assembler.push(0, ramp(0, 240), 240); // frame 0 and half of frame 1
    assembler.push(480, ramp(480, 160), 160); // the packet with the rest of frame 1 was lost
    assert.deepEqual(
      frames.map(([index]) => index),
      [0, 1, 3],
    );
    const partial = frames[1]?.[1] as Int16Array;
    assert.deepEqual(partial.subarray(0, 80), ramp(160, 80));
    assert.ok(partial.subarray(80).every((sample) => sample === 0));
  });

  it("counts timestamps across the 32-bit wrap, drops packets from before the stream, and restarts on reset", () => {
    const { frames, assembler } = collect();
    assembler.push(0xffffff60, ramp(0, 160), 160);
    assembler.push(0, ramp(160, 160), 160);
    assembler.push(0xfffffe00, ramp(0, 160), 160);
    assert.deepEqual(
      frames.map(([index]) => index),
      [0, 1],
    );
    assembler.reset();
    assembler.push(5, ramp(0, 160), 160);
    assert.equal(frames.at(-1)?.[0], 0);
  });
});
