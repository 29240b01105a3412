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

  it("places 16 kHz samples on an 8 kHz clock (G.722): two samples a tick", () => {
    const frames: Array<[number, Int16Array]> = [];
    const assembler = new FrameAssembler((index, frame) => frames.push([index, frame.slice()]), 320, 16000);
    assembler.push(5000, ramp(0, 320), 320, 8000);
    assembler.push(5160, ramp(320, 320), 320, 8000);
    assembler.push(5480, ramp(960, 320), 320, 8000); // 20 ms lost
    assert.deepEqual(
      frames.map(([index]) => index),
      [0, 1, 3],
    );
    for (const [index, frame] of frames) assert.deepEqual(frame, ramp(320 * index, 320));
  });

  it("places 16 kHz samples on a 48 kHz clock (Opus): a third of a sample a tick, 10 ms packets too", () => {
    const frames: Array<[number, Int16Array]> = [];
    const assembler = new FrameAssembler((index, frame) => frames.push([index, frame.slice()]), 320, 16000);
    assembler.push(90_000, ramp(0, 320), 320, 48000);
    assembler.push(90_960, ramp(320, 160), 160, 48000);
    assembler.push(91_440, ramp(480, 160), 160, 48000);
    assembler.push(92_880, ramp(960, 320), 320, 48000);
    assert.deepEqual(frames, [
      [0, ramp(0, 320)],
      [1, ramp(320, 320)],
      [3, ramp(960, 320)],
    ]);
  });

  it("goes on at the next frame when the packets change clock, their timestamps not lining up", () => {
    const { frames, assembler } = collect();
    assembler.push(1000, ramp(0, 160), 160, 8000);
    assembler.push(1160, ramp(160, 160), 160, 8000);
    // The far end switches to a format on another clock (Opus's 48 kHz) and back.
    assembler.push(777_000, ramp(320, 160), 160, 48000);
    assembler.push(777_960, ramp(480, 160), 160, 48000);
    assembler.push(3000, ramp(640, 160), 160, 8000);
    assert.deepEqual(
      frames.map(([index]) => index),
      [0, 1, 2, 3, 4],
    );
    for (const [index, frame] of frames) assert.deepEqual(frame, ramp(160 * index, 160));
  });

  it("keeps counting frames past 2^31 ticks from the first (12 hours of Opus's 48 kHz clock)", () => {
    const { frames, assembler } = collect();
    const step = 960 * 300_000; // an hour and a half of 48 kHz ticks, in 160-sample frames at 8 kHz
    let timestamp = 123_456;
    for (let k = 0; k < 12; k++) {
      assembler.push(timestamp, ramp(0, 160), 160, 48000);
      timestamp = (timestamp + step) >>> 0;
    }
    assert.deepEqual(
      frames.map(([index]) => index),
      Array.from({ length: 12 }, (_, k) => (k * step) / 6 / 160),
    );
  });
});
