import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  maxWavDataBytes,
  readWavHeader,
  sameWavFormat,
  writeWavHeader,
} from "../../src/domain/wav-header.js";
import { wavHeader } from "../../src/telephony/media/wav.js";

const MONO_16K = { channels: 1, sampleRate: 16_000, bitsPerSample: 16 };

describe("WAV headers", () => {
  it("writes the header the recorder writes, and reads its format and data size back", () => {
    for (const [sampleRate, dataBytes] of [
      [8000, 0],
      [16_000, 32_000],
    ] as const) {
      const format = { channels: 1, sampleRate, bitsPerSample: 16 };
      assert.deepEqual(writeWavHeader(format, dataBytes), wavHeader(sampleRate, dataBytes));
      assert.deepEqual(readWavHeader(wavHeader(sampleRate, dataBytes)), { format, dataBytes });
    }
  });

  it("writes block align and byte rate for stereo and wider samples", () => {
    const header = writeWavHeader({ channels: 2, sampleRate: 48_000, bitsPerSample: 24 }, 600);
    assert.equal(header.readUInt16LE(32), 6, "block align");
    assert.equal(header.readUInt32LE(28), 288_000, "byte rate");
    assert.deepEqual(readWavHeader(header).format, { channels: 2, sampleRate: 48_000, bitsPerSample: 24 });
  });

  it("refuses what is not a canonical PCM header", () => {
    assert.throws(() => readWavHeader(Buffer.alloc(44)), /not a canonical WAV header/);
    assert.throws(() => readWavHeader(wavHeader(8000, 0).subarray(0, 40)), /not a canonical WAV header/);
    const alaw = wavHeader(8000, 0);
    alaw.writeUInt16LE(6, 20);
    assert.throws(() => readWavHeader(alaw), /format 6 is not linear PCM/);
  });

  it("counts at most what the 32-bit RIFF size can hold, in whole blocks", () => {
    const max = maxWavDataBytes(MONO_16K);
    assert.equal(max % 2, 0);
    assert.ok(max + 36 <= 0xffff_ffff && max + 36 + 2 > 0xffff_ffff);
    assert.equal(writeWavHeader(MONO_16K, max).readUInt32LE(4), max + 36);
    assert.throws(() => writeWavHeader(MONO_16K, max + 2), RangeError);
  });

  it("tells formats apart by rate, channels and sample width", () => {
    assert.ok(sameWavFormat(MONO_16K, { ...MONO_16K }));
    assert.ok(!sameWavFormat(MONO_16K, { ...MONO_16K, sampleRate: 8000 }));
    assert.ok(!sameWavFormat(MONO_16K, { ...MONO_16K, channels: 2 }));
    assert.ok(!sameWavFormat(MONO_16K, { ...MONO_16K, bitsPerSample: 8 }));
  });
});
